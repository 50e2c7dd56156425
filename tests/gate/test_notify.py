"""Notifications through apprise to a real local JSON webhook, every attempt audited."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from tests.gate.conftest import RunningGate, free_port

from warmstart.errors import ConfigError
from warmstart.gate.notify import check_urls

# apprise imports the deprecated ``imghdr`` module; that is apprise's to fix.
pytestmark = pytest.mark.filterwarnings("ignore:'imghdr' is deprecated:DeprecationWarning")


class Hook:
    """A JSON webhook on loopback that records what it receives."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                hook.received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, count: int = 1, timeout: float = 10) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.received


@pytest.fixture
def hook() -> Iterator[Hook]:
    h = Hook()
    yield h
    h.server.shutdown()


def audit_events(gate: RunningGate, event: str) -> list[dict[str, Any]]:
    rows = httpx.get(f"{gate.url}/audit", params={"limit": 100}).json()
    return [r for r in reversed(rows) if r["event"] == event]


def test_channels_tried_in_order_until_one_succeeds(
    make_settings: Any, start_gate: Any, hook: Hook
) -> None:
    dead = f"json://127.0.0.1:{free_port()}/hook"
    live = f"json://127.0.0.1:{hook.port}/hook"
    spare = f"json://127.0.0.1:{hook.port}/spare"
    gate = start_gate(make_settings(notify=[dead, live, spare]))
    req = httpx.post(
        f"{gate.url}/confirm",
        json={"action": "move_money", "description": "Pay invoice 42", "requester": "billing-bot"},
    ).json()
    [message] = hook.wait(1)
    deadline = time.monotonic() + 5
    while len(audit_events(gate, "notification")) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    attempts = [r["data"] for r in audit_events(gate, "notification")]
    assert [(a["attempt"], a["channel"], a["ok"]) for a in attempts] == [
        (1, "json", False),
        (2, "json", True),
    ]
    assert "error" in attempts[0] and str(hook.port) not in json.dumps(attempts)
    assert len(hook.received) == 1  # the third channel was not needed
    text = message["title"] + "\n" + message["message"]
    assert "move_money" in text and "billing-bot" in text
    links = re.findall(r"http://gate\.invalid(/ui/decide/\S+)", text)
    assert len(links) == 2 and req["id"] in links[0]
    approve_link = gate.url + next(link for link in links if "decision=approve" in link)
    page = httpx.get(approve_link)  # what a link scanner does
    assert page.status_code == 200 and "<form method='post'>" in page.text
    assert httpx.get(f"{gate.url}/confirm/{req['id']}").json()["status"] == "pending"
    sig = re.search(r"sig=([0-9a-f]+)", approve_link)
    assert sig is not None
    httpx.post(approve_link.split("?")[0], data={"decision": "approve", "sig": sig.group(1)})
    assert httpx.get(f"{gate.url}/confirm/{req['id']}").json()["status"] == "approved"


def test_all_channels_failing_is_audited(make_settings: Any, start_gate: Any) -> None:
    urls = [f"json://127.0.0.1:{free_port()}/a", f"json://127.0.0.1:{free_port()}/b"]
    gate = start_gate(make_settings(notify=urls))
    httpx.post(f"{gate.url}/confirm", json={"action": "a", "description": "d"})
    deadline = time.monotonic() + 10
    while len(audit_events(gate, "notification")) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [r["data"]["ok"] for r in audit_events(gate, "notification")] == [False, False]
    assert httpx.get(f"{gate.url}/confirm?status=pending").json()[0]["status"] == "pending"


def test_auto_approved_requests_notify_nobody(
    make_settings: Any, start_gate: Any, hook: Hook
) -> None:
    gate = start_gate(
        make_settings(notify=[f"json://127.0.0.1:{hook.port}/h"], auto_approve=["read_logs"])
    )
    httpx.post(f"{gate.url}/confirm", json={"action": "read_logs", "description": "d"})
    httpx.post(f"{gate.url}/confirm", json={"action": "delete_data", "description": "d"})
    received = hook.wait(1)
    time.sleep(0.2)
    assert len(received) == 1 and "delete_data" in received[0]["title"]


def test_without_channels_a_warning_names_the_request_url(
    gate: RunningGate, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="warmstart.gate"):
        req = httpx.post(f"{gate.url}/confirm", json={"action": "a", "description": "d"}).json()
    [record] = [r for r in caplog.records if "no notification channel" in r.getMessage()]
    assert f"http://gate.invalid/confirm/{req['id']}" in record.getMessage()


def test_unknown_notification_urls_are_refused() -> None:
    with pytest.raises(ConfigError, match="apprise"):
        check_urls(["nonsense://x"])
    check_urls(["tgram://123456789:abcdefg_hijklmnop/12345", "json://localhost/x"])


def test_requests_never_notified_are_notified_after_a_restart(
    make_settings: Any, start_gate: Any, hook: Hook
) -> None:
    quiet = start_gate(make_settings())  # no channel: nothing is sent
    req = httpx.post(f"{quiet.url}/confirm", json={"action": "a", "description": "d"}).json()
    quiet.stop()
    loud = start_gate(make_settings(notify=[f"json://127.0.0.1:{hook.port}/h"]))
    [message] = hook.wait(1)
    assert req["id"] in message["message"]
    time.sleep(0.2)
    assert [r["data"]["ok"] for r in audit_events(loud, "notification")] == [True]
