"""GateClient and requires_approval against a live gate."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from tests.gate.conftest import TOKENS, RunningGate, free_port

from warmstart.errors import ApprovalError
from warmstart.gate import GateClient, requires_approval


def decide_when_pending(
    gate: RunningGate, approve: bool, token: str | None = None
) -> threading.Thread:
    """Approve or deny the first pending request as soon as it appears."""

    def run() -> None:
        approver = GateClient(gate.url, token or "")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pending = approver.list_requests("pending")
            if pending:
                if approve:
                    approver.approve(pending[0]["id"], comment="fine")
                else:
                    approver.deny(pending[0]["id"], "too risky")
                return
            time.sleep(0.05)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_request_waits_and_returns_a_verified_approval(auth_gate: RunningGate) -> None:
    decider = decide_when_pending(auth_gate, True, TOKENS["alice"])
    with GateClient(auth_gate.url, TOKENS["agent-1"]) as client:
        decision = client.request("rotate_keys", "Rotate API keys", {"service": "billing"}, 60)
        decider.join()
        assert decision.approved and decision.decided_by == "alice"
        assert decision.details == {"service": "billing"} and decision.signature
        assert client.consume(decision)["status"] == "consumed"


def test_request_returns_a_denial(gate: RunningGate) -> None:
    decider = decide_when_pending(gate, False)
    decision = GateClient(gate.url).request("shutdown_service", "Stop it", {"svc": "x"})
    decider.join()
    assert not decision.approved
    assert (decision.status, decision.reason) == ("denied", "too risky")
    with pytest.raises(ApprovalError, match="denied"):
        GateClient(gate.url).consume(decision)


def test_decorator_runs_the_tool_only_after_approval(auth_gate: RunningGate) -> None:
    ran: list[dict[str, Any]] = []
    client = GateClient(auth_gate.url, TOKENS["agent-1"])

    @requires_approval(action="publish_package", client=client, timeout=60)
    def publish(name: str, version: str = "1.0") -> str:
        """Publish a package to the index."""
        ran.append({"name": name, "version": version})
        return f"published {name}"

    decider = decide_when_pending(auth_gate, True, TOKENS["bob"])
    assert publish("warmstart", version="2.0") == "published warmstart"
    decider.join()
    assert ran == [{"name": "warmstart", "version": "2.0"}]
    done = GateClient(auth_gate.url, TOKENS["bob"]).list_requests("consumed")
    assert done[0]["description"] == "Publish a package to the index."
    assert done[0]["details"] == {
        "function": "test_decorator_runs_the_tool_only_after_approval.<locals>.publish",
        "arguments": {"name": "warmstart", "version": "2.0"},
    }

    decider = decide_when_pending(auth_gate, False, TOKENS["bob"])
    with pytest.raises(ApprovalError, match="denied: too risky"):
        publish("evil")
    decider.join()
    assert len(ran) == 1


def test_decorator_on_async_functions(gate: RunningGate) -> None:
    @requires_approval(action="run_remote_command", client=lambda: GateClient(gate.url))
    async def run(cmd: str) -> str:
        return f"ran {cmd}"

    decider = decide_when_pending(gate, True)
    assert asyncio.run(run("uptime")) == "ran uptime"
    decider.join()


def test_auto_approved_actions_need_no_human(make_settings: Any, start_gate: Any) -> None:
    gate = start_gate(make_settings(auto_approve=["read_logs"]))
    decision = GateClient(gate.url).request("read_logs", "tail the logs", {"n": 10})
    assert decision.approved and decision.decided_by == "auto:global"


def test_refusals_and_unreachable_gates_raise_approval_error(gate: RunningGate) -> None:
    with pytest.raises(ApprovalError, match="400"):
        GateClient(gate.url).request("bad action!", "d")
    with pytest.raises(ApprovalError, match="cannot reach"):
        GateClient(f"http://127.0.0.1:{free_port()}").request("a", "d")


def test_env_configures_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARMSTART_GATE_URL", "http://127.0.0.1:1234/")
    monkeypatch.setenv("WARMSTART_GATE_TOKEN", "tok-from-env-0123456789")
    client = GateClient()
    assert client.url == "http://127.0.0.1:1234"
    assert client.token == "tok-from-env-0123456789"
