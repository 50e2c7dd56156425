"""The gate's storage on a real SQLite file and a real PostgreSQL: schema, states, races."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import inspect, select, text, update

from warmstart.gate import audit as audit_log
from warmstart.gate.db import Database, audit, requests
from warmstart.gate.exceptions import (
    BadInput,
    Conflict,
    Forbidden,
    IdempotencyMismatch,
    NotFound,
    RateLimited,
)
from warmstart.gate.policy import Policy
from warmstart.gate.settings import DEFAULT_HIGH_RISK
from warmstart.gate.store import GateStore

_opened: list[Database] = []


@pytest.fixture(autouse=True)
def _dispose_databases() -> Iterator[None]:
    """Close every pool a test opened (open connections would delay server shutdown)."""
    yield
    while _opened:
        _opened.pop().dispose()


def make_store(url: str, **policy: Any) -> GateStore:
    values: dict[str, Any] = {"rate_limit": 0, "max_pending": 1000, "high_risk": DEFAULT_HIGH_RISK}
    values.update(policy)
    db = Database(url)
    _opened.append(db)
    return GateStore(db, Policy(**values))


def submit(store: GateStore, action: str = "deploy_production", **kw: Any) -> Any:
    fields: dict[str, Any] = {
        "action": action,
        "description": "ship it",
        "details": {"version": "1.2", "hosts": ["a", "b"]},
        "requester": "agent-1",
    }
    fields.update(kw)
    return store.submit(**fields).request


def test_migrations_build_the_schema(db_url: str) -> None:
    db = make_store(db_url).db
    assert db.applied_migrations() == ["m001_initial", "m002_session_allows", "m003_keys"]
    names = set(inspect(db.reader).get_table_names())
    assert {
        "gate_migrations",
        "gate_requests",
        "gate_audit",
        "gate_audit_head",
        "gate_session_allows",
        "gate_keys",
    } <= names
    columns = {c["name"] for c in inspect(db.reader).get_columns("gate_requests")}
    assert {"id", "action", "details_json", "status", "expires_at", "binding_hash"} <= columns
    assert make_store(db_url).db.migrate() == []  # reopening applies nothing twice
    if db.is_sqlite:
        with db.read() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    db.dispose()


def test_lifecycle_submit_approve_consume(db_url: str) -> None:
    store = make_store(db_url)
    req = submit(store)
    assert req.status == "pending" and len(req.id) == 26
    assert req.expires_at == pytest.approx(req.created_at + 300, abs=0.01)
    approved = store.decide(req.id, True, "alice", comment="ok")
    assert (approved.status, approved.decided_by, approved.comment) == ("approved", "alice", "ok")
    with pytest.raises(Conflict):
        store.decide(req.id, False, "bob", reason="late")
    with pytest.raises(Conflict, match="binding hash"):
        store.consume(req.id, "0" * 64, "agent-1")
    with pytest.raises(NotFound):
        store.consume(req.id, req.binding_hash, "agent-2")
    assert store.consume(req.id, req.binding_hash, "agent-1").status == "consumed"
    with pytest.raises(Conflict, match="already consumed"):
        store.consume(req.id, req.binding_hash, "agent-1")
    events = [r["event"] for r in reversed(audit_log.recent(store.db))]
    assert events == ["submitted", "approved", "consumed"]


def test_deny_needs_reason_and_self_approval_is_refused(db_url: str) -> None:
    store = make_store(db_url)
    req = submit(store)
    with pytest.raises(BadInput):
        store.decide(req.id, False, "alice", reason="  ")
    with pytest.raises(Forbidden):
        store.decide(req.id, True, "agent-1")
    denied = store.decide(req.id, False, "alice", reason="not today")
    assert (denied.status, denied.reason) == ("denied", "not today")
    with pytest.raises(Conflict):
        store.consume(req.id, req.binding_hash, "agent-1")
    with pytest.raises(NotFound):
        store.get("01ZZZZZZZZZZZZZZZZZZZZZZZZ")


def race(store: GateStore, request_id: str) -> list[str]:
    """Two threads decide the same request at the same moment; returns their outcomes."""
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def decide(actor: str, approve: bool) -> None:
        barrier.wait()
        try:
            store.decide(request_id, approve, actor, reason=None if approve else "no")
            outcomes.append("won")
        except Conflict:
            outcomes.append("conflict")

    threads = [
        threading.Thread(target=decide, args=("alice", True)),
        threading.Thread(target=decide, args=("bob", False)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(outcomes)


def test_two_concurrent_approvers_exactly_one_wins(db_url: str) -> None:
    store = make_store(db_url)
    for _ in range(5):
        req = submit(store)
        assert race(store, req.id) == ["conflict", "won"]
        final = store.get(req.id)
        rows = [r for r in audit_log.recent(store.db, 500) if r["request_id"] == req.id]
        assert [r["event"] for r in rows if r["event"] != "submitted"] == [final.status]


def test_expiry_denies_and_is_never_approved_later(db_url: str) -> None:
    store = make_store(db_url)
    past = time.time() - 400
    req = submit(store, now=past)
    fresh = submit(store)
    expired = store.expire_due()
    assert [r.id for r in expired] == [req.id]
    assert expired[0].status == "expired"
    with pytest.raises(Conflict, match="expired"):
        store.decide(req.id, True, "alice")
    assert store.get(fresh.id).status == "pending"
    assert store.expire_due() == []


def test_decide_after_deadline_expires_instead(db_url: str) -> None:
    store = make_store(db_url)
    req = submit(store, now=time.time() - 301)
    with pytest.raises(Conflict, match="expired"):
        store.decide(req.id, True, "alice")
    assert store.get(req.id).status == "expired"
    assert "expired" in [r["event"] for r in audit_log.recent(store.db)]


def test_timeout_is_clamped(db_url: str) -> None:
    store = make_store(db_url)
    assert submit(store, timeout_seconds=1).timeout_seconds == 30
    assert submit(store, timeout_seconds=10**9).timeout_seconds == 3600
    assert submit(store, timeout_seconds=-5).timeout_seconds == 30
    assert submit(store).timeout_seconds == 300


def test_idempotency_same_body_same_request_other_body_refused(db_url: str) -> None:
    store = make_store(db_url)
    first = store.submit(
        action="x.y", description="d", details={"a": 1}, requester="r", idempotency_key="k1"
    )
    again = store.submit(
        action="x.y", description="d", details={"a": 1}, requester="r", idempotency_key="k1"
    )
    assert first.created and not again.created
    assert again.request.id == first.request.id
    with pytest.raises(IdempotencyMismatch):
        store.submit(
            action="x.y", description="d", details={"a": 2}, requester="r", idempotency_key="k1"
        )
    other = store.submit(
        action="x.y", description="d", details={"a": 1}, requester="s", idempotency_key="k1"
    )
    assert other.created and other.request.id != first.request.id


def test_rate_limit_sliding_window_and_pending_cap(db_url: str) -> None:
    store = make_store(db_url, rate_limit=3, window_seconds=60, max_pending=100)
    now = time.time()
    old = submit(store, "restart", now=now - 59)
    assert old.status == "pending"
    submit(store, "restart", now=now)
    submit(store, "restart", now=now)
    with pytest.raises(RateLimited) as info:
        submit(store, "restart", now=now)
    assert info.value.extra["remaining"] == 0
    assert info.value.extra["window_seconds"] == 60
    assert 1 <= info.value.extra["retry_after_seconds"] <= 2
    submit(store, "other_action", now=now)  # windows are per action
    submit(store, "restart", now=now + 2)  # the oldest left the window
    capped = GateStore(store.db, Policy(rate_limit=0, max_pending=2))
    submit(capped, "a", requester="capper")
    submit(capped, "b", requester="capper")
    with pytest.raises(RateLimited, match="pending"):
        submit(capped, "c", requester="capper")
    submit(capped, "c", requester="agent-2")


def test_allow_lists_never_auto_approve_high_risk(db_url: str) -> None:
    store = make_store(db_url, auto_approve=frozenset({"read_logs"}))
    auto = submit(store, "read_logs")
    assert (auto.status, auto.decided_by) == ("approved", "auto:global")
    assert submit(store, "read_logs", session_key="s1").status == "approved"
    assert submit(store, "restart_worker", session_key="s1").status == "pending"
    assert store.allow_session("s1", ["restart_worker"], "alice") == ["restart_worker"]
    session_auto = submit(store, "restart_worker", session_key="s1")
    assert (session_auto.status, session_auto.decided_by) == ("approved", "auto:session")
    assert submit(store, "restart_worker", session_key="s2").status == "pending"
    with pytest.raises(BadInput, match="high-risk"):
        store.allow_session("s1", ["delete_data"], "alice")
    events = [r["event"] for r in audit_log.recent(store.db, 100)]
    assert events.count("auto_approved") == 3 and "session_allowed" in events
    # Even an allow-list row written behind the gate's back cannot approve a risky action.
    from warmstart.gate.db import session_allows

    with store.db.write() as conn:
        conn.execute(
            session_allows.insert().values(
                session_key="s1", action="wipe_database", created_at=0.0, created_by="x"
            )
        )
    assert submit(store, "wipe_database", session_key="s1").status == "pending"


def test_audit_chain_detects_edits_and_deletions(db_url: str) -> None:
    store = make_store(db_url)
    for _ in range(3):
        req = submit(store)
        store.decide(req.id, True, "alice")
    assert audit_log.verify(store.db).ok
    assert audit_log.verify(store.db).rows == 6
    with store.db.write() as conn:
        conn.execute(update(audit).where(audit.c.seq == 3).values(actor="mallory"))
    result = audit_log.verify(store.db)
    assert (result.ok, result.bad_seq) == (False, 3)
    assert "edited" in (result.problem or "")


def test_audit_chain_detects_deleted_rows(db_url: str) -> None:
    store = make_store(db_url)
    for _ in range(3):
        submit(store)
    with store.db.write() as conn:
        conn.execute(audit.delete().where(audit.c.seq == 2))
    assert audit_log.verify(store.db).bad_seq == 2
    store2 = make_store(db_url)
    with store2.db.write() as conn:
        conn.execute(text("DELETE FROM gate_audit WHERE seq >= 2"))
    tail = audit_log.verify(store2.db)
    assert not tail.ok and "head" in (tail.problem or "")


def test_requests_survive_reopening(db_url: str) -> None:
    store = make_store(db_url)
    req = submit(store, timeout_seconds=900)
    store.db.dispose()
    again = make_store(db_url).get(req.id)
    assert again.status == "pending"
    assert again.expires_at == req.expires_at
    assert again.binding_hash == req.binding_hash
    with make_store(db_url).db.read() as conn:
        assert conn.execute(select(requests.c.id)).scalars().all() == [req.id]


def test_secret_is_created_once(db_url: str) -> None:
    store = make_store(db_url)
    assert store.secret() == make_store(db_url).secret()
    assert len(store.secret()) == 32
