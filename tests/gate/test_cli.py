"""`warmstart gate ...` against a live gate: CliRunner for output, a subprocess for errors."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
from tests.gate.conftest import TOKENS, RunningGate, auth
from typer.testing import CliRunner

from warmstart.cli.app import app
from warmstart.errors import ApprovalError

runner = CliRunner()


def submit(gate: RunningGate, headers: dict[str, str] | None = None) -> str:
    body = {"action": "deploy_production", "description": "Deploy v2", "details": {"v": 2}}
    return str(httpx.post(f"{gate.url}/confirm", json=body, headers=headers).json()["id"])


def test_pending_show_approve_audit(auth_gate: RunningGate) -> None:
    rid = submit(auth_gate, auth("agent-1"))
    env = {"WARMSTART_GATE_URL": auth_gate.url, "WARMSTART_GATE_TOKEN": TOKENS["alice"]}
    listed = runner.invoke(app, ["gate", "pending", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    assert [r["id"] for r in json.loads(listed.output)] == [rid]
    table = runner.invoke(app, ["gate", "pending"], env={**env, "COLUMNS": "200"})
    assert rid in table.output and "deploy_production" in table.output
    shown = runner.invoke(app, ["gate", "show", rid, "--json"], env=env)
    assert json.loads(shown.output)["details"] == {"v": 2}
    approved = runner.invoke(app, ["gate", "approve", rid, "--comment", "ok"], env=env)
    assert approved.output == f"approved {rid} (deploy_production from agent-1)\n"
    empty = runner.invoke(app, ["gate", "pending"], env=env)
    assert empty.output == "no pending requests\n"
    rows = json.loads(runner.invoke(app, ["gate", "audit", "--json"], env=env).output)
    assert [r["event"] for r in rows] == ["approved", "submitted"]
    verified = runner.invoke(app, ["gate", "audit", "--verify"], env=env)
    assert verified.output == "audit chain intact: 2 rows\n"


def test_deny_with_reason_and_flags(gate: RunningGate) -> None:
    rid = submit(gate)
    denied = runner.invoke(app, ["gate", "deny", rid, "--reason", "freeze", "--url", gate.url])
    assert denied.exit_code == 0
    assert denied.output == f"denied {rid} (deploy_production from agent): freeze\n"
    missing = runner.invoke(app, ["gate", "deny", rid, "--url", gate.url])
    assert missing.exit_code == 2 and "--reason" in missing.output
    again = runner.invoke(app, ["gate", "approve", rid, "--url", gate.url])
    assert isinstance(again.exception, ApprovalError) and "409" in str(again.exception)


def test_allow_and_token(gate: RunningGate) -> None:
    out = runner.invoke(app, ["gate", "allow", "s1", "read_logs", "tail", "--url", gate.url])
    assert out.output == "session s1 auto-approves: read_logs, tail\n"
    token = runner.invoke(app, ["gate", "token"]).output.strip()
    assert len(token) >= 40


def test_cli_refusals_raise_approval_errors(auth_gate: RunningGate) -> None:
    rid = submit(auth_gate, auth("agent-1"))
    cases = [
        (["approve", rid, "--token", TOKENS["agent-1"]], "403"),
        (["approve", "01ZZZZZZZZZZZZZZZZZZZZZZZZ", "--token", TOKENS["alice"]], "404"),
        (["pending", "--token", "wrong"], "401"),
    ]
    for args, needle in cases:
        result = runner.invoke(app, ["gate", *args, "--url", auth_gate.url])
        assert isinstance(result.exception, ApprovalError), result.output
        assert needle in str(result.exception)


def test_cli_errors_are_one_line_without_traceback(auth_gate: RunningGate) -> None:
    rid = submit(auth_gate, auth("agent-1"))
    args = ["approve", rid, "--token", TOKENS["agent-1"], "--url", auth_gate.url]
    proc = subprocess.run(
        [sys.executable, "-c", "from warmstart.cli import main; main()", "gate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**_env(), "COLUMNS": "200"},
    )
    assert proc.returncode == 1
    assert proc.stderr == (
        "error: approval gate refused (403): an approver token is needed for this\n"
    )
    unreachable = runner.invoke(app, ["gate", "pending", "--url", "http://127.0.0.1:9"])
    assert isinstance(unreachable.exception, ApprovalError)
    assert "cannot reach the approval gate" in str(unreachable.exception)


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("WARMSTART_GATE_")}
