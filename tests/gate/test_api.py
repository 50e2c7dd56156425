"""The HTTP API over real loopback: status codes, bad input, long-poll, events, limits."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from tests.gate.conftest import RunningGate

from warmstart.gate.settings import GateSettings

BODY = {"action": "deploy_production", "description": "Deploy v1.2", "details": {"v": "1.2"}}


def client(gate: RunningGate, **kw: Any) -> httpx.Client:
    return httpx.Client(base_url=gate.url, timeout=10, **kw)


def test_submit_read_approve(gate: RunningGate) -> None:
    with client(gate) as http:
        resp = http.post("/confirm", json={**BODY, "requester": "bot", "session_key": "s-1"})
        assert resp.status_code == 202
        req = resp.json()
        assert req["status"] == "pending" and req["requester"] == "bot"
        assert req["session_key"] == "s-1" and req["timeout_seconds"] == 300
        assert http.get(f"/confirm/{req['id']}").json()["status"] == "pending"
        approved = http.post(f"/confirm/{req['id']}/approve", json={"comment": "go"})
        assert approved.status_code == 200
        assert approved.json()["status"] == "approved" and approved.json()["signature"]
        again = http.post(f"/confirm/{req['id']}/approve")
        assert again.status_code == 409 and "already approved" in again.json()["detail"]
        denied = http.post(f"/confirm/{req['id']}/deny", json={"reason": "x"})
        assert denied.status_code == 409


@pytest.mark.parametrize(
    ("body", "headers", "message"),
    [
        ({"description": "d"}, {}, "field 'action' is required"),
        ({"action": "a"}, {}, "field 'description' is required"),
        (b"{not json", {"Content-Type": "application/json"}, "not valid JSON"),
        (b"{not json", {}, "not valid JSON"),
        (b'{"action":"a","description":"d"}', {}, "Content-Type: application/json"),
        (b"[1,2]", {"Content-Type": "application/json"}, "JSON object"),
        (b"", {"Content-Type": "application/json"}, "required"),
        ({**BODY, "details": [1]}, {}, "details"),
        ({**BODY, "timeout_seconds": "soon"}, {}, "timeout_seconds"),
        ({**BODY, "action": "rm -rf /; <script>"}, {}, "action"),
        ({**BODY, "description": "a\u0000b"}, {}, "NUL"),
        ({**BODY, "requester": "link"}, {}, "reserved"),
        (b"[" * 100_000 + b"]" * 100_000, {"Content-Type": "application/json"}, ""),
        (
            json.dumps({**BODY, "details": {"x": float("nan")}}).encode(),
            {"Content-Type": "application/json"},
            "details",
        ),
        (
            b'{"action":"a","description":"\\ud800"}',
            {"Content-Type": "application/json"},
            "unicode",
        ),
    ],
)
def test_bad_input_is_a_clear_400(
    gate: RunningGate, body: Any, headers: dict[str, str], message: str
) -> None:
    with client(gate) as http:
        if isinstance(body, bytes):
            resp = http.post("/confirm", content=body, headers=headers)
        else:
            resp = http.post("/confirm", json=body, headers=headers)
    assert resp.status_code == 400, resp.text
    assert message in resp.json()["detail"]


def test_huge_body_is_refused(gate: RunningGate) -> None:
    big = {**BODY, "details": {"blob": "x" * 1_100_000}}
    with client(gate) as http:
        resp = http.post("/confirm", json=big)
        assert resp.status_code == 413
        assert "1 MB" in resp.json()["detail"]
        chunks = (b"x" * 65536 for _ in range(20))  # no Content-Length: streamed
        streamed = http.post(
            "/confirm", content=chunks, headers={"Content-Type": "application/json"}
        )
        assert streamed.status_code == 413
        assert http.get("/health").status_code == 200


def test_hostile_strings_round_trip(gate: RunningGate) -> None:
    details = {
        "cmd": "'; DROP TABLE gate_requests; --",
        "html": "<img src=x onerror=alert(1)>",
        "emoji": "🚀",
        "nul": "a\u0000b",
        "deep": [[[[{"k": None}]]]],
    }
    with client(gate) as http:
        req = http.post("/confirm", json={**BODY, "details": details}).json()
        assert http.get(f"/confirm/{req['id']}").json()["details"] == details


def test_unknown_and_malformed_ids_are_404(gate: RunningGate) -> None:
    with client(gate) as http:
        for rid in ("01ZZZZZZZZZZZZZZZZZZZZZZZZ", "nope", "%00", "x" * 300):
            assert http.get(f"/confirm/{rid}").status_code == 404
            assert http.post(f"/confirm/{rid}/approve").status_code == 404
        assert http.get("/confirm/01ZZZZZZZZZZZZZZZZZZZZZZZZ/wait?timeout=0").status_code == 404


def test_timeout_clamped_and_wait_long_polls(gate: RunningGate) -> None:
    with client(gate) as http:
        short = http.post("/confirm", json={**BODY, "timeout_seconds": 1}).json()
        assert short["timeout_seconds"] == 30
        assert (
            http.post("/confirm", json={**BODY, "timeout_seconds": 99999}).json()["timeout_seconds"]
            == 3600
        )
        started = time.monotonic()
        still = http.get(f"/confirm/{short['id']}/wait", params={"timeout": 0.5}).json()
        assert still["status"] == "pending" and time.monotonic() - started >= 0.45

        def approve_later() -> None:
            time.sleep(0.3)
            httpx.post(f"{gate.url}/confirm/{short['id']}/approve", json={})

        threading.Thread(target=approve_later).start()
        started = time.monotonic()
        decided = http.get(f"/confirm/{short['id']}/wait", params={"timeout": 10}).json()
        assert decided["status"] == "approved"
        assert time.monotonic() - started < 3
        assert http.get(f"/confirm/{short['id']}/wait", params={"timeout": 1000}).status_code == 400


def test_deny_needs_reason(gate: RunningGate) -> None:
    with client(gate) as http:
        req = http.post("/confirm", json=BODY).json()
        assert http.post(f"/confirm/{req['id']}/deny", json={}).status_code == 400
        assert http.post(f"/confirm/{req['id']}/deny", json={"reason": "   "}).status_code == 400
        resp = http.post(f"/confirm/{req['id']}/deny", json={"reason": "not now"})
        assert resp.json()["status"] == "denied" and resp.json()["reason"] == "not now"


def test_idempotency_key(gate: RunningGate) -> None:
    with client(gate) as http:
        headers = {"Idempotency-Key": "abc-123"}
        first = http.post("/confirm", json=BODY, headers=headers)
        second = http.post("/confirm", json=BODY, headers=headers)
        assert (first.status_code, second.status_code) == (202, 200)
        assert first.json()["id"] == second.json()["id"]
        other = http.post("/confirm", json={**BODY, "details": {"v": "9"}}, headers=headers)
        assert other.status_code == 422 and "different body" in other.json()["detail"]
        assert len(http.get("/confirm", params={"status": "pending"}).json()) == 1


def test_rate_limit_429_with_window_and_remaining(
    make_settings: Callable[..., GateSettings], start_gate: Callable[..., RunningGate]
) -> None:
    gate = start_gate(make_settings(rate_limit=2, max_pending_per_requester=3))
    with client(gate) as http:
        first = http.post("/confirm", json=BODY)
        assert first.headers["X-RateLimit-Remaining"] == "1"
        assert http.post("/confirm", json=BODY).headers["X-RateLimit-Remaining"] == "0"
        limited = http.post("/confirm", json=BODY)
        assert limited.status_code == 429
        body = limited.json()
        assert body["window_seconds"] == 3600 and body["remaining"] == 0 and body["limit"] == 2
        assert int(limited.headers["Retry-After"]) > 3000
        http.post("/confirm", json={**BODY, "action": "b"})
        capped = http.post("/confirm", json={**BODY, "action": "c"})
        assert capped.status_code == 429 and "pending" in capped.json()["detail"]
        other = http.post("/confirm", json={**BODY, "action": "c", "requester": "other"})
        assert other.status_code == 202


def test_audit_endpoints(gate: RunningGate) -> None:
    with client(gate) as http:
        req = http.post("/confirm", json=BODY).json()
        http.post(f"/confirm/{req['id']}/approve", json={})
        rows = http.get("/audit", params={"limit": 10}).json()
        assert [r["event"] for r in rows] == ["approved", "submitted"]
        assert rows[0]["prev_hash"] == rows[1]["hash"]
        assert http.get("/audit/verify").json() == {
            "ok": True,
            "rows": 2,
            "problem": None,
            "bad_seq": None,
        }
        for bad in (0, 501, "x"):
            assert http.get("/audit", params={"limit": bad}).status_code == 400


def test_health_and_openapi(gate: RunningGate) -> None:
    with client(gate) as http:
        health = http.get("/health").json()
        assert health["status"] == "ok" and health["auth"] is False
        assert health["database"] == "sqlite"
        spec = http.get("/openapi.json").json()
        assert {"/confirm", "/confirm/{request_id}/wait", "/audit/verify", "/events"} <= set(
            spec["paths"]
        )


def test_events_stream_new_and_decided(gate: RunningGate) -> None:
    seen: list[tuple[str, str]] = []
    ready = threading.Event()

    def listen() -> None:
        with httpx.stream("GET", f"{gate.url}/events", timeout=10) as resp:
            assert resp.headers["content-type"].startswith("text/event-stream")
            kind = ""
            for line in resp.iter_lines():
                if line.startswith(": connected"):
                    ready.set()
                elif line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    seen.append((kind, json.loads(line[6:])["status"]))
                    if len(seen) == 2:
                        return

    thread = threading.Thread(target=listen)
    thread.start()
    assert ready.wait(5)
    with client(gate) as http:
        req = http.post("/confirm", json=BODY).json()
        http.post(f"/confirm/{req['id']}/deny", json={"reason": "no"})
    thread.join(10)
    assert seen == [("submitted", "pending"), ("denied", "denied")]


def test_sweeper_expires_in_background(gate: RunningGate) -> None:
    service = gate.service
    sub = service.store.submit(
        action="a.b", description="d", details={}, requester="agent", now=time.time() - 301
    )
    from sqlalchemy import select

    from warmstart.gate.db import requests

    deadline = time.monotonic() + 5
    status = "pending"
    while time.monotonic() < deadline and status == "pending":
        time.sleep(0.05)
        with service.db.read() as conn:  # read the row itself: nobody asks the API
            status = conn.execute(
                select(requests.c.status).where(requests.c.id == sub.request.id)
            ).scalar_one()
    assert status == "expired"
    with client(gate) as http:
        assert http.post(f"/confirm/{sub.request.id}/approve").status_code == 409


def test_session_allow_list_over_http(gate: RunningGate) -> None:
    with client(gate) as http:
        ok = http.post("/sessions/s-9/allow", json={"actions": ["read_logs"]})
        assert ok.json() == {"session_key": "s-9", "actions": ["read_logs"]}
        risky = http.post("/sessions/s-9/allow", json={"actions": ["delete_data"]})
        assert risky.status_code == 400 and "high-risk" in risky.json()["detail"]
        auto = http.post(
            "/confirm", json={"action": "read_logs", "description": "d", "session_key": "s-9"}
        ).json()
        assert auto["status"] == "approved" and auto["decided_by"] == "auto:session"
        assert http.get("/sessions/s-9/allow").json()["actions"] == ["read_logs"]


def test_requests_expired_by_a_read_are_announced(
    make_settings: Callable[..., GateSettings], start_gate: Callable[..., RunningGate]
) -> None:
    gate = start_gate(make_settings(sweep_interval_seconds=60))  # the sweeper stays idle
    seen: list[str] = []
    ready = threading.Event()

    def listen() -> None:
        with httpx.stream("GET", f"{gate.url}/events", timeout=10) as resp:
            for line in resp.iter_lines():
                if line.startswith(": connected"):
                    ready.set()
                elif line.startswith("event: "):
                    seen.append(line[7:])
                    return

    thread = threading.Thread(target=listen)
    thread.start()
    assert ready.wait(5)
    sub = gate.service.store.submit(
        action="a.b", description="d", details={}, requester="agent", now=time.time() - 301
    )
    assert httpx.get(f"{gate.url}/confirm/{sub.request.id}").json()["status"] == "expired"
    thread.join(10)
    assert seen == ["expired"]
