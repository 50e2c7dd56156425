"""``warmstart mcp`` driven by the ``mcp`` package's own client: over stdio as MCP clients
spawn it, and once over streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from tests.gate.conftest import RunningGate

from warmstart.gate.client import GateClient
from warmstart.gate.settings import GateSettings
from warmstart.inject import ADDENDUM, validate_openai

LAUNCH = ["-m", "warmstart"]


def server_params(db: str, home: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[*LAUNCH, "mcp", "--db", db],
        env={"WARMSTART_HOME": str(home), "PYTHONPATH": os.environ.get("PYTHONPATH", ""), **env},
    )


def with_session(
    params: StdioServerParameters, scenario: Callable[[ClientSession], Awaitable[None]]
) -> None:
    async def run() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await scenario(session)

    asyncio.run(asyncio.wait_for(run(), timeout=60))


def payload(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_tools_and_resources_over_stdio(store_url: str, warmstart_home: Path) -> None:
    async def scenario(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"warm_session", "analyze_summary"}, "no gate, no request_approval"
        schema = tools["warm_session"].input_schema
        assert schema["properties"]["action"]["enum"] == ["build", "list", "load", "delete"]
        assert schema["required"] == ["action"]

        listed = payload(await session.call_tool("warm_session", {"action": "list"}))
        assert [t["name"] for t in listed["templates"]] == ["airline"]
        loaded = payload(
            await session.call_tool(
                "warm_session", {"action": "load", "name": "airline", "task": "change my flight"}
            )
        )
        validate_openai(loaded["messages"])
        assert loaded["messages"][0] == {"role": "system", "content": ADDENDUM}

        built = payload(
            await session.call_tool(
                "warm_session", {"action": "build", "name": "airline-small", "budget": 500}
            )
        )
        assert built["name"] == "airline-small" and built["examples"] > 0
        removed = payload(
            await session.call_tool("warm_session", {"action": "delete", "name": "airline-small"})
        )
        assert removed["deleted_versions"] == 1

        missing = await session.call_tool("warm_session", {"action": "load", "name": "nope"})
        assert missing.is_error and "no template 'nope'" in missing.content[0].text
        invalid = await session.call_tool("warm_session", {"action": "explode"})
        assert invalid.is_error

        summary = payload(await session.call_tool("analyze_summary", {"top": 3}))
        assert (summary["sessions"], summary["calls"], summary["failures"]) == (200, 1164, 81)
        rate = summary["error_rate"]
        assert (rate["k"], rate["n"]) == (81, 1164) and rate["low"] < 81 / 1164 < rate["high"]
        assert summary["sources"] == {"tau-bench": 200} and summary["recovery_pairs"] == 34
        assert len(summary["tools"]) == 3 and summary["tools"][0]["failures"] == max(
            t["failures"] for t in summary["tools"]
        )
        assert summary["errors"][0]["tool"] == "book_reservation"
        assert {v["status"] for v in summary["verdicts"]} >= {"not enough data"}
        none = payload(await session.call_tool("analyze_summary", {"source": "hermes"}))
        assert none["sessions"] == 0 and none["calls"] == 0 and none["tools"] == []

        resources = [str(r.uri) for r in (await session.list_resources()).resources]
        assert resources == ["warmstart://templates"]
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["warmstart://templates/{name}"]
        index = json.loads((await session.read_resource("warmstart://templates")).contents[0].text)
        assert index == [
            {
                "name": "airline",
                "version": 1,
                "task_type": "mixed",
                "tags": [],
                "examples": index[0]["examples"],
                "uri": "warmstart://templates/airline",
            }
        ]
        history = json.loads(
            (await session.read_resource("warmstart://templates/airline")).contents[0].text
        )
        validate_openai(history)
        assert any(m.get("tool_calls") for m in history)
        with pytest.raises(MCPError, match="no template 'nope'"):
            await session.read_resource("warmstart://templates/nope")

    with_session(server_params(store_url, warmstart_home), scenario)


def test_request_approval_waits_for_the_gate(
    store_url: str, warmstart_home: Path, tmp_path: Path
) -> None:
    gate = RunningGate(
        GateSettings(
            db_url=f"sqlite:///{tmp_path / 'gate.db'}",
            sweep_interval_seconds=0.2,
            public_url="http://gate.invalid",
        )
    ).start()
    decisions: list[dict[str, Any]] = []

    def approver() -> None:
        client = GateClient(gate.url, "")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(decisions) < 2:
            for request in client.list_requests("pending"):
                decisions.append(request)
                if request["action"] == "deploy_production":
                    client.approve(request["id"], comment="ok")
                else:
                    client.deny(request["id"], "not today")
            time.sleep(0.05)

    async def scenario(session: ClientSession) -> None:
        tools = {t.name for t in (await session.list_tools()).tools}
        assert "request_approval" in tools
        approved = payload(
            await session.call_tool(
                "request_approval",
                {
                    "action": "deploy_production",
                    "description": "Deploy billing",
                    "details": {"service": "billing"},
                    "timeout": 60,
                },
            )
        )
        assert approved["approved"] is True and approved["status"] == "approved"
        denied = payload(
            await session.call_tool(
                "request_approval",
                {"action": "delete_data", "description": "Drop the users table"},
            )
        )
        assert denied == {
            "approved": False,
            "status": "denied",
            "id": denied["id"],
            "decided_by": "local",
            "reason": "not today",
            "comment": None,
        }

    thread = threading.Thread(target=approver, daemon=True)
    thread.start()
    try:
        params = server_params(store_url, warmstart_home, WARMSTART_GATE_URL=gate.url)
        with_session(params, scenario)
        consumed = GateClient(gate.url, "").list_requests("consumed")
    finally:
        thread.join(5)
        gate.stop()
    assert [d["details"] for d in decisions] == [{"service": "billing"}, {}]
    assert [c["action"] for c in consumed] == ["deploy_production"], "an approval is used once"


def test_streamable_http(store_url: str, warmstart_home: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, *LAUNCH, "mcp", "--db", store_url, "--http", "--port", str(port)],
        env={**os.environ, "WARMSTART_HOME": str(warmstart_home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                assert time.monotonic() < deadline, "the MCP HTTP server did not start"
                time.sleep(0.1)

        async def run() -> list[str]:
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = payload(await session.call_tool("warm_session", {"action": "list"}))
                return [t["name"] for t in listed["templates"]]

        assert asyncio.run(asyncio.wait_for(run(), timeout=30)) == ["airline"]
    finally:
        process.terminate()
        process.wait(10)
