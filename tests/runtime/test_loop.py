"""The agent loop over real HTTP: tool execution, whitelist, bad calls, hints, warm history."""

from __future__ import annotations

import json
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.openai_double import OpenAIDouble, call, text, tool_calls

from warmstart.model import Session
from warmstart.runtime import Runtime, ToolRegistry, count_tokens, run_agent

NUMBER_ARGS = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


class Calculator:
    """Real tools that remember how they were called."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.release = threading.Event()

    def add(self, args: dict[str, Any]) -> Any:
        self.calls.append(("add", args))
        return args["a"] + args["b"]

    def multiply(self, args: dict[str, Any]) -> Any:
        self.calls.append(("multiply", args))
        return {"product": args["a"] * args["b"]}

    def explode(self, args: dict[str, Any]) -> Any:
        self.calls.append(("explode", args))
        raise ValueError("boom")

    def hang(self, args: dict[str, Any]) -> Any:
        self.calls.append(("hang", args))
        self.release.wait(10)
        return "too late"

    def wipe(self, args: dict[str, Any]) -> Any:
        self.calls.append(("wipe", args))
        return "wiped"

    def registry(self) -> ToolRegistry:
        registry = ToolRegistry()
        registry.register("add", self.add, description="Add two numbers", parameters=NUMBER_ARGS)
        registry.register("multiply", self.multiply, description="Multiply", parameters=NUMBER_ARGS)
        registry.register("explode", self.explode, description="Always fails")
        registry.register("hang", self.hang, description="Never returns", timeout=0.2)
        registry.register("wipe", self.wipe, description="Delete everything")
        return registry


@pytest.fixture
def calc() -> Iterator[Calculator]:
    calculator = Calculator()
    yield calculator
    calculator.release.set()


def runtime(double: OpenAIDouble, calc: Calculator, **options: Any) -> Runtime:
    options.setdefault("context_length", 128_000)  # no probe: request indices stay simple
    return Runtime(calc.registry(), model="double-model", base_url=double.base_url, **options)


def tool_message(request: dict[str, Any]) -> dict[str, Any]:
    message = request["messages"][-1]
    assert message["role"] == "tool"
    return message


def test_two_tool_calls_then_final_answer(openai_double: OpenAIDouble, calc: Calculator) -> None:
    openai_double.enqueue(
        tool_calls(call("add", {"a": 1, "b": 2}, id="c1")),
        tool_calls(call("multiply", {"a": 3, "b": 7}, id="c2")),
        text("The answer is 21."),
    )
    result = runtime(openai_double, calc).run("Add 1 and 2, then multiply 3 by 7.", seed=7)

    assert result.stop_reason == "final_answer"
    assert result.final_answer == "The answer is 21."
    assert result.turns == 3
    assert calc.calls == [("add", {"a": 1, "b": 2}), ("multiply", {"a": 3, "b": 7})]
    assert [(c.tool, c.ok, c.result) for c in result.calls] == [
        ("add", True, "3"),
        ("multiply", True, '{"product": 21}'),
    ]
    first, second, third = openai_double.chat_requests
    assert {t["function"]["name"] for t in first["tools"]} == {
        "add",
        "multiply",
        "explode",
        "hang",
        "wipe",
    }
    assert first["seed"] == 7
    assert second["messages"][-2]["tool_calls"][0]["id"] == "c1"
    assert tool_message(second) == {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "add",
        "content": "3",
    }
    assert tool_message(third)["content"] == '{"product": 21}'
    expected_prompt = sum(
        max(1, len(json.dumps(r["messages"])) // 4) for r in (first, second, third)
    )
    assert result.usage.prompt_tokens == expected_prompt
    assert result.usage.total_tokens > result.usage.prompt_tokens
    assert result.messages[-1] == {"role": "assistant", "content": "The answer is 21."}


def test_run_converts_to_a_session(openai_double: OpenAIDouble, calc: Calculator) -> None:
    openai_double.enqueue(tool_calls(call("add", {"a": 1, "b": 1}, id="k")), text("2"))
    warm: list[dict[str, Any]] = [
        {"role": "user", "content": "add 2 and 2"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "w1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":2,"b":2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "w1", "name": "add", "content": "4"},
    ]
    result = runtime(openai_double, calc).run("1+1?", warm=warm, arm="warm", seed=3)
    session = result.to_session()

    assert isinstance(session, Session)
    assert session.source == "warmstart-eval"
    assert session.external_id == result.run_id
    assert session.metadata["arm"] == "warm"
    assert session.metadata["model"] == "double-model"
    assert session.metadata["seed"] == 3
    assert session.metadata["warm_messages"] == 3
    # the warm history is priming, not experience: it is left out of the session
    assert [m.role for m in session.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert session.messages[1].content == "1+1?"
    assert session.messages[2].tool_calls[0].name == "add"
    assert session.messages[3].tool_call_id == "k"
    assert session.end_reason == "agent_close"
    assert session.fingerprint


def test_whitelist_denies_other_tools(openai_double: OpenAIDouble, calc: Calculator) -> None:
    openai_double.enqueue(
        tool_calls(call("wipe", {}, id="w")),
        tool_calls(call("add", {"a": 2, "b": 2}, id="a")),
        text("4"),
    )
    result = runtime(openai_double, calc).run("add 2 and 2", whitelist=["add"])

    assert calc.calls == [("add", {"a": 2, "b": 2})]
    denied = result.calls[0]
    assert (denied.tool, denied.ok, denied.error_kind) == ("wipe", False, "not_whitelisted")
    first, second, _ = openai_double.chat_requests
    assert [t["function"]["name"] for t in first["tools"]] == ["add"]
    seen = tool_message(second)
    assert seen["tool_call_id"] == "w"
    assert seen["content"].startswith("Error: tool 'wipe' is not allowed in this run")
    assert result.stop_reason == "final_answer"
    assert result.tools_offered == ["add"]


def test_unknown_tool_is_answered_with_an_error(
    openai_double: OpenAIDouble, calc: Calculator
) -> None:
    openai_double.enqueue(tool_calls(call("launch_rockets", {"n": 3})), text("sorry"))
    result = runtime(openai_double, calc).run("do it")

    record = result.calls[0]
    assert (record.ok, record.error_kind) == (False, "unknown_tool")
    seen = tool_message(openai_double.chat_requests[1])["content"]
    assert seen.startswith("Error: unknown tool 'launch_rockets'")
    assert "add" in seen  # the model is told what exists
    assert calc.calls == []


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [('{"a": 1, "b":', "invalid JSON"), ("[1, 2]", "expected an object, got list")],
)
def test_malformed_arguments_are_a_failed_call(
    openai_double: OpenAIDouble, calc: Calculator, arguments: str, reason: str
) -> None:
    openai_double.enqueue(tool_calls(call("add", arguments)), text("ok"))
    result = runtime(openai_double, calc).run("add")

    record = result.calls[0]
    assert (record.ok, record.error_kind, record.arguments) == (False, "bad_arguments", arguments)
    assert reason in (record.error or "")
    assert calc.calls == []
    assert tool_message(openai_double.chat_requests[1])["content"].startswith(
        "Error: arguments for 'add' are not a JSON object"
    )
    assert result.stop_reason == "final_answer"


def test_empty_arguments_mean_no_arguments(openai_double: OpenAIDouble) -> None:
    seen: list[dict[str, Any]] = []

    def now(args: dict[str, Any]) -> str:
        seen.append(args)
        return "noon"

    registry = ToolRegistry()
    registry.register("now", now)
    openai_double.enqueue(tool_calls(call("now", "")), text("noon"))
    result = Runtime(
        registry, model="m", base_url=openai_double.base_url, context_length=100_000
    ).run("time?")
    assert seen == [{}]
    assert result.calls[0].ok


def test_tool_exception_is_recorded(openai_double: OpenAIDouble, calc: Calculator) -> None:
    openai_double.enqueue(tool_calls(call("explode", {})), text("it failed"))
    result = runtime(openai_double, calc).run("explode")

    record = result.calls[0]
    assert (record.ok, record.error_kind, record.error) == (False, "exception", "ValueError: boom")
    assert "Traceback" in (record.detail or "")
    assert tool_message(openai_double.chat_requests[1])["content"] == "Error: ValueError: boom"
    assert result.stop_reason == "final_answer"


def test_hung_tool_times_out(openai_double: OpenAIDouble, calc: Calculator) -> None:
    openai_double.enqueue(tool_calls(call("hang", {})), text("gave up"))
    started = time.monotonic()
    result = runtime(openai_double, calc).run("hang")
    elapsed = time.monotonic() - started

    record = result.calls[0]
    assert (record.ok, record.error_kind) == (False, "timeout")
    assert elapsed < 3
    assert 0.15 < record.duration < 3
    assert "timed out after 0.2 s" in tool_message(openai_double.chat_requests[1])["content"]
    assert result.final_answer == "gave up"


def test_runtime_default_tool_timeout(openai_double: OpenAIDouble) -> None:
    gate = threading.Event()
    registry = ToolRegistry()
    registry.register("slow", lambda args: gate.wait(10) and "done")
    openai_double.enqueue(tool_calls(call("slow", {})), text("ok"))
    try:
        result = Runtime(
            registry,
            model="m",
            base_url=openai_double.base_url,
            context_length=100_000,
            tool_timeout=0.1,
        ).run("slow")
    finally:
        gate.set()
    assert result.calls[0].error_kind == "timeout"


def test_turn_limit(openai_double: OpenAIDouble, calc: Calculator) -> None:
    openai_double.responder = lambda request: tool_calls(call("add", {"a": 1, "b": 1}))
    result = runtime(openai_double, calc, max_turns=3).run("loop forever")

    assert result.stop_reason == "max_turns"
    assert result.turns == 3
    assert len(openai_double.chat_requests) == 3
    assert len(result.calls) == 3
    assert result.messages[-1]["role"] == "tool"  # every call id is still answered


def test_length_finish_is_truncated(openai_double: OpenAIDouble, calc: Calculator) -> None:
    openai_double.enqueue(text("The answer is", finish_reason="length"))
    result = runtime(openai_double, calc).run("long answer")
    assert result.stop_reason == "truncated"
    assert result.final_answer == "The answer is"


def test_runtime_hint_and_raw_task(openai_double: OpenAIDouble, calc: Calculator) -> None:
    picked_for: list[str] = []

    def select(task: str) -> list[dict[str, Any]]:
        picked_for.append(task)
        return []

    openai_double.enqueue(text("hi"))
    task = "  Book a flight to Lisbon\n"
    result = runtime(openai_double, calc, provider="acme-cloud").run(
        task, system="You are a travel agent.", warm=select
    )

    sent = openai_double.chat_requests[0]["messages"]
    assert sent[0]["role"] == "system"
    assert sent[0]["content"].startswith("You are a travel agent.\n\nRuntime:")
    assert "double-model" in sent[0]["content"]
    assert "acme-cloud" in sent[0]["content"]
    assert "128,000 tokens" in sent[0]["content"]
    assert sent[1] == {"role": "user", "content": task}
    assert result.task == task
    assert picked_for == [task]  # selection saw the raw task, not the hinted prompt
    assert result.runtime_hint is not None and result.runtime_hint in sent[0]["content"]


def test_provider_defaults_to_base_url_host(openai_double: OpenAIDouble, calc: Calculator) -> None:
    openai_double.enqueue(text("hi"))
    result = runtime(openai_double, calc).run("hello")
    assert result.provider == "127.0.0.1"
    assert "via 127.0.0.1" in openai_double.chat_requests[0]["messages"][0]["content"]


def test_hint_can_be_turned_off(openai_double: OpenAIDouble, calc: Calculator) -> None:
    openai_double.enqueue(text("hi"))
    runtime(openai_double, calc, hint=False).run("hello")
    assert openai_double.chat_requests[0]["messages"] == [{"role": "user", "content": "hello"}]


def warm_example(i: int) -> list[dict[str, Any]]:
    arguments = json.dumps({"a": i, "b": i, "note": "padding " * 12})
    return [
        {"role": "user", "content": f"Example {i}: add {i} and {i} please"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"w{i}",
                    "type": "function",
                    "function": {"name": "add", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"w{i}", "name": "add", "content": str(2 * i)},
    ]


def test_warm_history_is_shrunk_to_its_share(openai_double: OpenAIDouble, calc: Calculator) -> None:
    warm = [m for i in range(10) for m in warm_example(i)]
    budget = 400  # 10 % of a 4,000-token window
    assert count_tokens(warm) > budget
    openai_double.enqueue(text("ok"))
    result = runtime(openai_double, calc, context_length=4_000, min_context=None).run(
        "add 5 and 5", warm=warm
    )

    sent = openai_double.chat_requests[0]["messages"]
    sent_warm = sent[1:-1]
    assert sent_warm == warm[: len(sent_warm)]  # whole examples, from the front
    assert len(sent_warm) % 3 == 0 and len(sent_warm) >= 3
    assert count_tokens(sent_warm) <= budget
    assert count_tokens(warm[: len(sent_warm) + 3]) > budget  # nothing more would fit
    assert result.warm_count == len(sent_warm)
    assert result.warm_dropped == len(warm) - len(sent_warm)
    assert result.metadata["warm_budget"] == budget
    call_ids = {c["id"] for m in sent_warm for c in m.get("tool_calls", ())}
    answered = {m["tool_call_id"] for m in sent_warm if m["role"] == "tool"}
    assert call_ids == answered
    assert sent[-1] == {"role": "user", "content": "add 5 and 5"}


def test_custom_shrinker_is_used(openai_double: OpenAIDouble, calc: Calculator) -> None:
    warm = [m for i in range(10) for m in warm_example(i)]
    budgets: list[int] = []

    def keep_last(messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
        budgets.append(budget)
        return messages[-3:]

    openai_double.enqueue(text("ok"))
    runtime(openai_double, calc, context_length=4_000, min_context=None).run(
        "go", warm=warm, shrink=keep_last
    )
    assert budgets == [400]
    assert openai_double.chat_requests[0]["messages"][1:-1] == warm[-3:]


def test_warm_history_that_fits_is_untouched(openai_double: OpenAIDouble, calc: Calculator) -> None:
    warm = warm_example(1)
    openai_double.enqueue(text("ok"))
    result = runtime(openai_double, calc).run("go", warm=warm)
    assert openai_double.chat_requests[0]["messages"][1:-1] == warm
    assert result.warm_dropped == 0


def test_failing_warm_selector_runs_cold(openai_double: OpenAIDouble, calc: Calculator) -> None:
    def broken(task: str) -> list[dict[str, Any]]:
        raise RuntimeError("store is down")

    openai_double.enqueue(text("ok"))
    result = runtime(openai_double, calc).run("go", warm=broken)
    assert result.stop_reason == "final_answer"
    assert result.errors[0].kind == "warm_history"
    assert len(openai_double.chat_requests[0]["messages"]) == 2


def test_run_agent_one_shot(openai_double: OpenAIDouble, calc: Calculator) -> None:
    openai_double.enqueue(tool_calls(call("add", {"a": 2, "b": 3})), text("5"))
    result = run_agent(
        "2+3",
        calc.registry(),
        model="double-model",
        base_url=openai_double.base_url,
        context_length=100_000,
        whitelist=["add"],
    )
    assert result.final_answer == "5"
    assert result.tools_offered == ["add"]


def test_environment_configures_the_endpoint(
    openai_double: OpenAIDouble, calc: Calculator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARMSTART_ENDPOINT", openai_double.base_url)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # WARMSTART_* wins
    monkeypatch.setenv("WARMSTART_API_KEY", "sk-warm")
    monkeypatch.setenv("WARMSTART_MODEL", "env-model")
    monkeypatch.setenv("WARMSTART_CONTEXT_LENGTH", "100000")
    openai_double.enqueue(text("ok"))
    result = Runtime(calc.registry()).run("hi")

    assert result.stop_reason == "final_answer"
    request = openai_double.requests_to("/v1/chat/completions")[0]
    assert request.headers["authorization"] == "Bearer sk-warm"
    assert request.json["model"] == "env-model"
    assert result.context_source == "config"


def test_record_uses_ingest_when_present(
    openai_double: OpenAIDouble, calc: Calculator, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored: list[tuple[Session, str | None]] = []
    fake = types.ModuleType("warmstart.ingestion")
    fake.record_session = lambda session, db_url=None: stored.append((session, db_url))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "warmstart.ingestion", fake)
    openai_double.enqueue(text("ok"))
    result = runtime(openai_double, calc, record=True, db_url="sqlite:///x.db").run(
        "hi", arm="cold"
    )

    assert result.recorded
    assert len(stored) == 1
    assert stored[0][1] == "sqlite:///x.db"
    assert stored[0][0].metadata["arm"] == "cold"


def test_record_is_skipped_without_ingest(
    openai_double: OpenAIDouble, calc: Calculator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "warmstart.ingestion", None)  # import now fails
    openai_double.enqueue(text("ok"))
    result = runtime(openai_double, calc, record=True).run("hi")
    assert not result.recorded
    assert result.stop_reason == "final_answer"
    assert "record_skipped" in result.metadata


def test_record_failure_is_data(
    openai_double: OpenAIDouble, calc: Calculator, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(session: Session, db_url: str | None = None) -> None:
        raise OSError("disk full")

    fake = types.ModuleType("warmstart.ingestion")
    fake.record_session = broken  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "warmstart.ingestion", fake)
    openai_double.enqueue(text("ok"))
    result = runtime(openai_double, calc, record=True).run("hi")
    assert not result.recorded
    assert result.errors[-1].kind == "record"
    assert "disk full" in result.errors[-1].message


def test_missing_model_is_a_config_error(calc: Calculator) -> None:
    from warmstart.errors import ConfigError

    with pytest.raises(ConfigError, match="WARMSTART_MODEL"):
        Runtime(calc.registry())


def test_record_into_the_real_store(
    openai_double: OpenAIDouble, calc: Calculator, tmp_path: Path
) -> None:
    pytest.importorskip("warmstart.ingestion")
    openai_double.enqueue(tool_calls(call("explode", {})), text("failed"))
    result = runtime(openai_double, calc).run("explode", arm="cold")
    url = f"sqlite:///{tmp_path / 'store.db'}"
    assert result.record(url), result.errors
    assert result.recorded and result.errors == []
    from warmstart.store import Store

    stored = Store(url).get_session(f"warmstart-eval:{result.run_id}")
    assert [(c["tool"], c["ok"]) for c in stored["calls"]] == [("explode", False)]
