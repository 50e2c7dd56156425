"""The approval hook: allow, deny, hold until another thread decides, default-deny off the
main thread."""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.support.openai_double import OpenAIDouble, call, text, tool_calls

from warmstart.runtime import (
    Decision,
    RunResult,
    Runtime,
    ToolRegistry,
    ToolRequest,
    allow_all,
    deny_all,
)


def transfer_registry(ran: list[dict[str, Any]]) -> ToolRegistry:
    def transfer(args: dict[str, Any]) -> str:
        ran.append(args)
        return f"sent {args['amount']}"

    registry = ToolRegistry()
    registry.register(
        "transfer",
        transfer,
        description="Move money",
        parameters={"type": "object", "properties": {"amount": {"type": "number"}}},
    )
    registry.register(
        "balance", lambda args: "100", description="Read the balance", needs_approval=False
    )
    return registry


def make(double: OpenAIDouble, ran: list[dict[str, Any]], **options: Any) -> Runtime:
    return Runtime(
        transfer_registry(ran),
        model="double-model",
        base_url=double.base_url,
        context_length=100_000,
        **options,
    )


def script_transfer(double: OpenAIDouble) -> None:
    double.enqueue(tool_calls(call("transfer", {"amount": 50}, id="t")), text("done"))


def test_hold_then_allow_from_another_thread(openai_double: OpenAIDouble) -> None:
    ran: list[dict[str, Any]] = []
    decided = threading.Event()
    seen: list[ToolRequest] = []

    def gate(request: ToolRequest) -> Decision:
        seen.append(request)
        threading.Timer(0.2, decided.set).start()  # a human clicks "approve" later

        def wait(timeout: float | None) -> Decision | None:
            return Decision.allow() if decided.wait(timeout) else None

        return Decision.hold(wait, "waiting for the operator")

    script_transfer(openai_double)
    result = make(openai_double, ran, approval=gate).run("pay 50")

    assert ran == [{"amount": 50}]
    record = result.calls[0]
    assert record.ok and record.approval == "held-allowed"
    assert record.held_seconds >= 0.15
    request = seen[0]
    assert (request.tool, dict(request.arguments), request.call_id) == (
        "transfer",
        {"amount": 50},
        "t",
    )
    assert request.task == "pay 50" and request.run_id == result.run_id
    assert request.unattended is False
    assert openai_double.chat_requests[1]["messages"][-1]["content"] == "sent 50"


def test_hook_that_blocks_until_released(openai_double: OpenAIDouble) -> None:
    ran: list[dict[str, Any]] = []
    released = threading.Event()
    entered = threading.Event()

    def blocking_hook(request: ToolRequest) -> Decision:
        entered.set()
        released.wait(5)
        return Decision.allow()

    def operator() -> None:
        entered.wait(5)
        time.sleep(0.1)
        assert ran == []  # nothing ran while the decision was pending
        released.set()

    helper = threading.Thread(target=operator)
    helper.start()
    script_transfer(openai_double)
    result = make(openai_double, ran, approval=blocking_hook).run("pay 50")
    helper.join()

    assert ran == [{"amount": 50}]
    assert result.calls[0].approval == "allowed"


def test_hold_that_is_denied(openai_double: OpenAIDouble) -> None:
    ran: list[dict[str, Any]] = []

    def hook(request: ToolRequest) -> Decision:
        return Decision.hold(lambda timeout: Decision.deny("operator said no"))

    script_transfer(openai_double)
    result = make(openai_double, ran, approval=hook).run("pay 50")
    assert ran == []
    assert result.calls[0].approval == "held-denied"
    assert "operator said no" in openai_double.chat_requests[1]["messages"][-1]["content"]


def test_hold_times_out_as_denial(openai_double: OpenAIDouble) -> None:
    ran: list[dict[str, Any]] = []
    never = threading.Event()

    def hook(request: ToolRequest) -> Decision:
        def wait(timeout: float | None) -> Decision | None:
            never.wait(timeout)
            return None

        return Decision.hold(wait)

    script_transfer(openai_double)
    started = time.monotonic()
    result = make(openai_double, ran, approval=hook, approval_timeout=0.1).run("pay 50")
    assert time.monotonic() - started < 3
    assert ran == []
    record = result.calls[0]
    assert (record.ok, record.error_kind, record.approval) == (
        False,
        "approval_denied",
        "held-denied",
    )
    assert "no approval decision within 0.1 s" in (record.error or "")


def test_deny_is_shown_to_the_model(openai_double: OpenAIDouble) -> None:
    ran: list[dict[str, Any]] = []
    script_transfer(openai_double)
    result = make(openai_double, ran, approval=lambda r: Decision.deny("too risky")).run("pay")

    assert ran == []
    record = result.calls[0]
    assert (record.ok, record.error_kind, record.approval) == (False, "approval_denied", "denied")
    seen = openai_double.chat_requests[1]["messages"][-1]
    assert seen["tool_call_id"] == "t"
    assert seen["content"] == "Error: call to 'transfer' was denied: too risky"
    assert result.stop_reason == "final_answer"


def test_failing_hook_fails_closed(openai_double: OpenAIDouble) -> None:
    ran: list[dict[str, Any]] = []

    def broken(request: ToolRequest) -> Decision:
        raise ConnectionError("gate unreachable")

    script_transfer(openai_double)
    result = make(openai_double, ran, approval=broken).run("pay")
    assert ran == []
    assert "gate unreachable" in (result.calls[0].error or "")


def test_per_run_hook_overrides_the_runtime_hook(openai_double: OpenAIDouble) -> None:
    ran: list[dict[str, Any]] = []
    script_transfer(openai_double)
    result = make(openai_double, ran, approval=deny_all).run("pay", approval=allow_all)
    assert ran == [{"amount": 50}]
    assert result.calls[0].ok


def test_tools_without_approval_skip_the_hook(openai_double: OpenAIDouble) -> None:
    asked: list[str] = []

    def hook(request: ToolRequest) -> Decision:
        asked.append(request.tool)
        return Decision.deny("no")

    openai_double.enqueue(tool_calls(call("balance", {})), text("100"))
    result = make(openai_double, [], approval=hook).run("balance?")
    assert asked == []
    assert result.calls[0].ok and result.calls[0].approval == "not_required"


def run_on_worker(runtime: Runtime, **options: Any) -> RunResult:
    box: list[RunResult] = []
    worker = threading.Thread(target=lambda: box.append(runtime.run("pay 50", **options)))
    worker.start()
    worker.join(10)
    return box[0]


def test_worker_thread_denies_by_default(openai_double: OpenAIDouble) -> None:
    ran: list[dict[str, Any]] = []
    script_transfer(openai_double)
    result = run_on_worker(make(openai_double, ran))

    assert ran == []
    record = result.calls[0]
    assert record.error_kind == "approval_denied"
    assert "no approver" in openai_double.chat_requests[1]["messages"][-1]["content"]


def test_main_thread_allows_by_default(openai_double: OpenAIDouble) -> None:
    ran: list[dict[str, Any]] = []
    script_transfer(openai_double)
    result = make(openai_double, ran).run("pay 50")
    assert ran == [{"amount": 50}]
    assert result.calls[0].approval == "allowed"


def test_hook_can_tell_it_is_unattended(openai_double: OpenAIDouble) -> None:
    flags: list[bool] = []

    def hook(request: ToolRequest) -> Decision:
        flags.append(request.unattended)
        return Decision.allow()

    ran: list[dict[str, Any]] = []
    script_transfer(openai_double)
    result = run_on_worker(make(openai_double, ran, approval=hook))
    assert flags == [True]
    assert ran == [{"amount": 50}]
    assert result.calls[0].ok
