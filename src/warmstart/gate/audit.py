"""The append-only audit log: every row chained by ``hash = H(prev_hash || canonical row)``.

Appends happen inside the caller's write transaction, so a change and its audit row
commit together. The head row (last seq and hash) lets verification notice rows
deleted from the end of the chain as well as edits and deletions inside it.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from warmstart.gate.db import GENESIS_HASH, Database, Raw, audit, audit_head
from warmstart.gate.security import canonical_json, format_ts

BATCH = 1000

# Hot-path SQL (run through db.Raw): every submission and decision appends a row.
HEAD_SQL = "SELECT seq, hash FROM gate_audit_head WHERE id = 1"
INSERT_SQL = (
    "INSERT INTO gate_audit (seq, at, event, request_id, actor, data_json, prev_hash, hash) "
    "VALUES (:seq, :at, :event, :request_id, :actor, :data_json, :prev_hash, :hash)"
)
MOVE_HEAD_SQL = "UPDATE gate_audit_head SET seq = :seq, hash = :hash WHERE id = 1"


@dataclass(frozen=True)
class AuditVerification:
    """The result of checking the chain."""

    ok: bool
    rows: int
    problem: str | None = None
    bad_seq: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the API and the CLI."""
        return {"ok": self.ok, "rows": self.rows, "problem": self.problem, "bad_seq": self.bad_seq}


def row_hash(prev_hash: str, row: dict[str, Any]) -> str:
    """The chain hash of one row given the previous row's hash."""
    body = canonical_json(
        {k: row[k] for k in ("seq", "at", "event", "request_id", "actor", "data_json")}
    )
    return hashlib.sha256((prev_hash + body).encode()).hexdigest()


def append(
    conn: Connection | Raw,
    event: str,
    actor: str,
    request_id: str | None = None,
    data: dict[str, Any] | None = None,
    now: float | None = None,
) -> int:
    """Append one row inside the caller's write transaction; returns its seq."""
    if isinstance(conn, Raw):
        raw = conn
    else:
        raw = Raw(conn.connection.driver_connection, conn.dialect.name == "sqlite")
    head = raw.first(HEAD_SQL, {})
    assert head is not None, "gate_audit_head has no row: the database was not migrated"
    row = {
        "seq": head["seq"] + 1,
        "at": round(time.time() if now is None else now, 6),
        "event": event,
        "request_id": request_id,
        "actor": actor,
        "data_json": canonical_json(data or {}),
    }
    digest = row_hash(head["hash"], row)
    raw.execute(INSERT_SQL, {**row, "prev_hash": head["hash"], "hash": digest})
    raw.execute(MOVE_HEAD_SQL, {"seq": row["seq"], "hash": digest})
    return int(row["seq"])


def recent(db: Database, limit: int = 50) -> list[dict[str, Any]]:
    """The newest ``limit`` rows, newest first, as API dicts."""
    import json

    with db.read() as conn:
        rows = conn.execute(select(audit).order_by(audit.c.seq.desc()).limit(limit)).mappings()
        return [
            {
                "seq": r["seq"],
                "at": format_ts(r["at"]),
                "event": r["event"],
                "request_id": r["request_id"],
                "actor": r["actor"],
                "data": json.loads(r["data_json"]),
                "prev_hash": r["prev_hash"],
                "hash": r["hash"],
            }
            for r in rows
        ]


def verify(db: Database) -> AuditVerification:
    """Walk the whole chain and report the first edited, missing or extra row."""
    prev = GENESIS_HASH
    expected = 1
    with db.read() as conn:
        while True:
            rows = (
                conn.execute(
                    select(audit).where(audit.c.seq >= expected).order_by(audit.c.seq).limit(BATCH)
                )
                .mappings()
                .all()
            )
            for r in rows:
                if r["seq"] != expected:
                    return AuditVerification(
                        False, expected - 1, f"row {expected} is missing (deleted)", expected
                    )
                if r["prev_hash"] != prev:
                    return AuditVerification(
                        False,
                        expected - 1,
                        f"row {expected} does not follow the row before it (edited or deleted)",
                        expected,
                    )
                if row_hash(prev, dict(r)) != r["hash"]:
                    return AuditVerification(
                        False, expected - 1, f"row {expected} was edited", expected
                    )
                prev = r["hash"]
                expected += 1
            if len(rows) < BATCH:
                break
        head = conn.execute(select(audit_head.c.seq, audit_head.c.hash)).one()
    last = expected - 1
    if head.seq != last or head.hash != prev:
        return AuditVerification(
            False,
            last,
            f"the chain ends at row {last} but the head records row {head.seq} "
            "(rows deleted from the end, or the head edited)",
            last + 1,
        )
    return AuditVerification(True, last)
