"""The registry and tool execution: schemas, results, worker reuse, hung workers."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from warmstart.errors import ConfigError
from warmstart.runtime import Tool, ToolRegistry, run_tool
from warmstart.runtime.tools import render_result


def test_register_builds_an_openai_schema() -> None:
    registry = ToolRegistry()
    params = {"type": "object", "properties": {"q": {"type": "string"}}}
    registry.register("search", lambda a: [], description="Search", parameters=params)
    registry.register("noop", lambda a: None, schema={"name": "noop", "description": "x"})
    assert registry.schemas() == [
        {
            "type": "function",
            "function": {"name": "search", "description": "Search", "parameters": params},
        },
        {
            "type": "function",
            "function": {
                "name": "noop",
                "description": "x",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]
    assert registry.schemas(["noop"])[0]["function"]["name"] == "noop"
    assert "search" in registry and len(registry) == 2


def test_registry_rejects_duplicates_and_mismatched_schemas() -> None:
    registry = ToolRegistry()
    registry.register("a", lambda x: 1)
    with pytest.raises(ConfigError, match="already registered"):
        registry.register("a", lambda x: 2)
    with pytest.raises(ConfigError, match="different tool"):
        registry.register("b", lambda x: 1, schema={"type": "function", "function": {"name": "c"}})


def test_render_result() -> None:
    assert render_result("plain") == "plain"
    assert render_result({"é": 1}) == '{"é": 1}'
    assert render_result(b"bytes") == "bytes"
    assert render_result(None) == "null"
    assert render_result({1, 2}) in ('"{1, 2}"', '"{2, 1}"')  # not JSON: str(), no crash


def thread_tool(seen: list[threading.Thread], gate: threading.Event | None = None) -> Tool:
    def record(args: dict[str, Any]) -> str:
        seen.append(threading.current_thread())
        if gate is not None and args.get("hang"):
            gate.wait(5)
        return "ok"

    return Tool("t", {}, record)


def test_workers_are_reused() -> None:
    seen: list[threading.Thread] = []
    tool = thread_tool(seen)
    for _ in range(3):
        assert run_tool(tool, {}, timeout=5).ok
    assert threading.main_thread() not in seen
    assert len({t.ident for t in seen}) == 1  # one idle worker picks up every call


def test_a_hung_worker_gets_no_new_work() -> None:
    seen: list[threading.Thread] = []
    gate = threading.Event()
    tool = thread_tool(seen, gate)
    try:
        hung = run_tool(tool, {"hang": True}, timeout=0.1)
        assert (hung.ok, hung.error_kind) == (False, "timeout")
        assert run_tool(tool, {}, timeout=5).ok
        assert seen[0] is not seen[1]
    finally:
        gate.set()


def test_no_timeout_runs_inline() -> None:
    seen: list[threading.Thread] = []
    outcome = run_tool(thread_tool(seen), {}, timeout=None)
    assert outcome.ok
    assert seen == [threading.current_thread()]


def test_inline_exceptions_are_still_outcomes() -> None:
    def fail(args: dict[str, Any]) -> None:
        raise SystemExit(3)

    outcome = run_tool(Tool("f", {}, fail), {}, timeout=None)
    assert (outcome.ok, outcome.error) == (False, "SystemExit: 3")
