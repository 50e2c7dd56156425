"""Approval requests in the database: submit, decide, consume, expire, list.

Every state change happens in one write transaction together with its audit row, and
every decision is a guarded ``UPDATE ... WHERE status = 'pending'`` so exactly one of
two racing approvers wins. All methods are synchronous; the web layer runs them in
worker threads.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select

from warmstart.gate import audit as audit_log
from warmstart.gate.db import Database, Raw, audit, keys, requests, session_allows
from warmstart.gate.exceptions import (
    BadInput,
    Conflict,
    Forbidden,
    IdempotencyMismatch,
    NotFound,
    RateLimited,
)
from warmstart.gate.policy import Policy
from warmstart.gate.security import binding_hash, canonical_json, format_ts, new_id

PENDING = "pending"
APPROVED = "approved"
DENIED = "denied"
EXPIRED = "expired"
CONSUMED = "consumed"
STATUSES = (PENDING, APPROVED, DENIED, EXPIRED, CONSUMED)
DECIDED = (APPROVED, DENIED, EXPIRED, CONSUMED)

# Hot-path SQL, run through db.Raw (see there). ``b_`` marks where-clause parameters.
COLUMNS = (
    "id, action, description, details_json, requester, session_key, status, created_at, "
    "expires_at, timeout_seconds, binding_hash, decided_at, decided_by, reason, comment, "
    "consumed_at, idempotency_key, body_hash"
)
BY_ID = f"SELECT {COLUMNS} FROM gate_requests WHERE id = :b_id"
BY_IDEMPOTENCY_KEY = (
    f"SELECT {COLUMNS} FROM gate_requests WHERE requester = :b_requester "
    "AND idempotency_key = :b_key"
)
RATE_WINDOW = (
    "SELECT count(*), min(created_at) FROM gate_requests WHERE requester = :b_requester "
    "AND action = :b_action AND created_at > :b_since"
)
PENDING_OF = (
    "SELECT count(*) FROM gate_requests WHERE requester = :b_requester "
    "AND status = 'pending' AND expires_at > :b_now"
)
SESSION_ALLOWS = (
    "SELECT action FROM gate_session_allows WHERE session_key = :b_session AND action = :b_action"
)
INSERT_REQUEST = (
    f"INSERT INTO gate_requests ({COLUMNS}) VALUES ("
    + ", ".join(f":{c.strip()}" for c in COLUMNS.split(","))
    + ")"
)
DECIDE = (
    "UPDATE gate_requests SET status = :status, decided_at = :decided_at, "
    "decided_by = :decided_by, reason = :reason, comment = :comment "
    "WHERE id = :b_id AND status = 'pending'"
)
CONSUME = (
    "UPDATE gate_requests SET status = :status, consumed_at = :consumed_at "
    "WHERE id = :b_id AND status = 'approved'"
)
EXPIRE_IF_DUE = (
    "UPDATE gate_requests SET status = :status, decided_at = :decided_at, "
    "decided_by = :decided_by, reason = :reason "
    "WHERE id = :b_id AND status = 'pending' AND expires_at <= :b_now"
)


@dataclass(frozen=True)
class GateRequest:
    """One approval request as stored."""

    id: str
    action: str
    description: str
    details: dict[str, Any]
    requester: str
    session_key: str | None
    status: str
    created_at: float
    expires_at: float
    timeout_seconds: int
    binding_hash: str
    decided_at: float | None = None
    decided_by: str | None = None
    reason: str | None = None
    comment: str | None = None
    consumed_at: float | None = None

    @classmethod
    def from_row(cls, row: Any) -> GateRequest:
        """Build from a ``gate_requests`` row mapping."""
        return cls(
            id=row["id"],
            action=row["action"],
            description=row["description"],
            details=json.loads(row["details_json"]),
            requester=row["requester"],
            session_key=row.get("session_key"),
            status=row["status"],
            created_at=row["created_at"],
            expires_at=row["expires_at"],
            timeout_seconds=row["timeout_seconds"],
            binding_hash=row["binding_hash"],
            decided_at=row.get("decided_at"),
            decided_by=row.get("decided_by"),
            reason=row.get("reason"),
            comment=row.get("comment"),
            consumed_at=row.get("consumed_at"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The API form: timestamps in ISO 8601 UTC."""

        def ts(value: float | None) -> str | None:
            return None if value is None else format_ts(value)

        return {
            "id": self.id,
            "action": self.action,
            "description": self.description,
            "details": self.details,
            "requester": self.requester,
            "session_key": self.session_key,
            "status": self.status,
            "created_at": ts(self.created_at),
            "expires_at": ts(self.expires_at),
            "timeout_seconds": self.timeout_seconds,
            "binding_hash": self.binding_hash,
            "decided_at": ts(self.decided_at),
            "decided_by": self.decided_by,
            "reason": self.reason,
            "comment": self.comment,
            "consumed_at": ts(self.consumed_at),
        }


@dataclass(frozen=True)
class Submission:
    """The outcome of a submit: the request, whether it is new, and rate-limit headroom."""

    request: GateRequest
    created: bool
    remaining: int | None = None


class GateStore:
    """The gate's request, audit and allow-list operations over one database."""

    def __init__(self, db: Database, policy: Policy | None = None) -> None:
        self.db = db
        self.policy = policy or Policy()

    # -- submission -----------------------------------------------------------------
    def submit(
        self,
        *,
        action: str,
        description: str,
        details: dict[str, Any],
        requester: str,
        session_key: str | None = None,
        timeout_seconds: int | None = None,
        idempotency_key: str | None = None,
        now: float | None = None,
    ) -> Submission:
        """Store a new request (or return the one an idempotency key names)."""
        now = time.time() if now is None else now
        timeout = self.policy.clamp_timeout(timeout_seconds)
        body_hash = hashlib.sha256(
            canonical_json(
                {
                    "action": action,
                    "description": description,
                    "details": details,
                    "session_key": session_key,
                    "timeout_seconds": timeout_seconds,
                }
            ).encode()
        ).hexdigest()
        with self.db.write_raw() as conn:
            if idempotency_key is not None:
                row = conn.first(
                    BY_IDEMPOTENCY_KEY, {"b_requester": requester, "b_key": idempotency_key}
                )
                if row is not None:
                    if row["body_hash"] != body_hash:
                        raise IdempotencyMismatch(
                            "this Idempotency-Key was used with a different body"
                        )
                    return Submission(GateRequest.from_row(row), created=False)
            remaining = self._check_limits(conn, action, requester, now)
            expires_at = round(now + timeout, 3)
            binding = binding_hash(action, details, requester, session_key, format_ts(expires_at))
            auto = self._auto_approval(conn, action, session_key)
            request_id = new_id()
            values: dict[str, Any] = {
                "decided_at": None,
                "decided_by": None,
                "reason": None,
                "comment": None,
                "consumed_at": None,
                "id": request_id,
                "action": action,
                "description": description,
                "details_json": canonical_json(details),
                "requester": requester,
                "session_key": session_key,
                "status": APPROVED if auto else PENDING,
                "created_at": now,
                "expires_at": expires_at,
                "timeout_seconds": timeout,
                "binding_hash": binding,
                "idempotency_key": idempotency_key,
                "body_hash": body_hash,
            }
            if auto:
                values.update(decided_at=now, decided_by=auto)
            conn.execute(INSERT_REQUEST, values)
            audit_log.append(
                conn,
                "submitted",
                requester,
                request_id,
                {
                    "action": action,
                    "description": description,
                    "details": details,
                    "session_key": session_key,
                    "expires_at": format_ts(expires_at),
                    "binding_hash": binding,
                },
                now,
            )
            if auto:
                audit_log.append(conn, "auto_approved", auto, request_id, {"action": action}, now)
        return Submission(GateRequest.from_row(values), created=True, remaining=remaining)

    def _check_limits(self, conn: Raw, action: str, requester: str, now: float) -> int | None:
        policy = self.policy
        remaining: int | None = None
        if policy.rate_limit > 0:
            count, oldest = conn.execute(
                RATE_WINDOW,
                {
                    "b_requester": requester,
                    "b_action": action,
                    "b_since": now - policy.window_seconds,
                },
            ).fetchone()
            if count >= policy.rate_limit:
                retry = max(1, int((oldest or now) + policy.window_seconds - now) + 1)
                raise RateLimited(
                    f"rate limit: {policy.rate_limit} {action!r} requests per "
                    f"{policy.window_seconds} s window reached; retry in {retry} s",
                    limit=policy.rate_limit,
                    window_seconds=policy.window_seconds,
                    remaining=0,
                    retry_after_seconds=retry,
                )
            remaining = policy.rate_limit - count - 1
        pending = conn.value(PENDING_OF, {"b_requester": requester, "b_now": now})
        if pending >= policy.max_pending:
            raise RateLimited(
                f"{requester!r} already has {pending} pending requests "
                f"(cap {policy.max_pending}); wait for decisions",
                limit=policy.max_pending,
                window_seconds=policy.window_seconds,
                remaining=0,
                retry_after_seconds=5,
            )
        return remaining

    def _auto_approval(self, conn: Raw, action: str, session_key: str | None) -> str | None:
        """``auto:global`` or ``auto:session`` when an allow-list approves the action."""
        if self.policy.is_high_risk(action):
            return None
        if action in self.policy.auto_approve:
            return "auto:global"
        if session_key is not None:
            hit = conn.value(SESSION_ALLOWS, {"b_session": session_key, "b_action": action})
            if hit is not None:
                return "auto:session"
        return None

    # -- reading --------------------------------------------------------------------
    def get(self, request_id: str, now: float | None = None) -> GateRequest:
        """The request, expired first if its deadline has passed; NotFound if unknown."""
        return self.lookup(request_id, now)[0]

    def lookup(self, request_id: str, now: float | None = None) -> tuple[GateRequest, bool]:
        """Like :meth:`get`, and whether this call expired the request."""
        now = time.time() if now is None else now
        with self.db.read_raw() as conn:
            row = conn.first(BY_ID, {"b_id": request_id})
        if row is None:
            raise NotFound(f"no request {request_id}")
        record = GateRequest.from_row(row)
        if record.status == PENDING and record.expires_at <= now:
            expired_now = self._expire(request_id, now)
            return self.get(request_id, now), expired_now
        return record, False

    def list_requests(
        self, status: str | None = None, requester: str | None = None, limit: int = 100
    ) -> list[GateRequest]:
        """Requests by status (``decided`` means any final status); pending oldest first."""
        query = select(requests)
        if status == "decided":
            query = query.where(requests.c.status.in_(DECIDED)).order_by(
                requests.c.decided_at.desc()
            )
        elif status is not None:
            query = query.where(requests.c.status == status)
            if status == PENDING:
                query = query.where(requests.c.expires_at > time.time())
            order = requests.c.created_at if status == PENDING else requests.c.created_at.desc()
            query = query.order_by(order)
        else:
            query = query.order_by(requests.c.created_at.desc())
        if requester is not None:
            query = query.where(requests.c.requester == requester)
        with self.db.read() as conn:
            rows = conn.execute(query.limit(limit)).mappings().all()
        return [GateRequest.from_row(r) for r in rows]

    def unnotified(self, limit: int = 200) -> list[GateRequest]:
        """Pending requests with no notification attempt on record (e.g. after a crash)."""
        attempted = select(audit.c.request_id).where(
            audit.c.event == "notification", audit.c.request_id.is_not(None)
        )
        query = (
            select(requests)
            .where(
                requests.c.status == PENDING,
                requests.c.expires_at > time.time(),
                requests.c.id.not_in(attempted),
            )
            .order_by(requests.c.created_at)
            .limit(limit)
        )
        with self.db.read() as conn:
            return [GateRequest.from_row(r) for r in conn.execute(query).mappings()]

    def count_pending(self) -> int:
        """How many requests are waiting for a decision."""
        with self.db.read() as conn:
            return int(
                conn.execute(select(func.count()).where(requests.c.status == PENDING)).scalar_one()
            )

    # -- decisions ------------------------------------------------------------------
    def decide(
        self,
        request_id: str,
        approve: bool,
        actor: str,
        *,
        reason: str | None = None,
        comment: str | None = None,
        now: float | None = None,
    ) -> GateRequest:
        """Approve or deny a pending request; exactly one concurrent decider wins."""
        now = time.time() if now is None else now
        if not approve and not (reason and reason.strip()):
            raise BadInput("a denial needs a reason")
        with self.db.write_raw() as conn:
            row = conn.first(BY_ID, {"b_id": request_id})
            if row is None:
                raise NotFound(f"no request {request_id}")
            overdue = row["status"] == PENDING and row["expires_at"] <= now
            if overdue:
                self._expire_in(conn, request_id, now)
            elif row["status"] != PENDING:
                raise Conflict(
                    f"request {request_id} is already {row['status']}", status=row["status"]
                )
            elif actor == row["requester"]:
                raise Forbidden("nobody can decide a request they submitted")
            else:
                changes = {
                    "status": APPROVED if approve else DENIED,
                    "decided_at": now,
                    "decided_by": actor,
                    "reason": None if approve else reason,
                    "comment": comment,
                }
                changed = conn.rowcount(DECIDE, {"b_id": request_id, **changes})
                if changed != 1:
                    raise Conflict(f"request {request_id} was decided by someone else")
                data: dict[str, Any] = {"action": row["action"]}
                if not approve:
                    data["reason"] = reason
                if comment:
                    data["comment"] = comment
                audit_log.append(conn, str(changes["status"]), actor, request_id, data, now)
        if overdue:  # committed above: the expiry stands, the decision does not
            raise Conflict(f"request {request_id} is already expired", status=EXPIRED)
        return GateRequest.from_row({**row, **changes})

    def consume(
        self,
        request_id: str,
        binding: str,
        requester: str | None = None,
        now: float | None = None,
    ) -> GateRequest:
        """Mark an approved request used; a second consume is refused with Conflict."""
        now = time.time() if now is None else now
        with self.db.write_raw() as conn:
            row = conn.first(BY_ID, {"b_id": request_id})
            if row is None or (requester is not None and row["requester"] != requester):
                raise NotFound(f"no request {request_id}")
            if row["status"] == CONSUMED:
                raise Conflict(f"request {request_id} was already consumed", status=CONSUMED)
            if row["status"] != APPROVED:
                raise Conflict(
                    f"request {request_id} is {row['status']}, not approved", status=row["status"]
                )
            if not secrets.compare_digest(row["binding_hash"], binding):
                raise Conflict("the binding hash does not match this request's approval")
            if now > (row["decided_at"] or now) + self.policy.consume_window_seconds:
                raise Conflict(
                    f"the approval is older than {self.policy.consume_window_seconds} s; ask again",
                    status=APPROVED,
                )
            changes = {"status": CONSUMED, "consumed_at": now}
            changed = conn.rowcount(CONSUME, {"b_id": request_id, **changes})
            if changed != 1:
                raise Conflict(f"request {request_id} was already consumed", status=CONSUMED)
            audit_log.append(
                conn, "consumed", row["requester"], request_id, {"action": row["action"]}, now
            )
        return GateRequest.from_row({**row, **changes})

    # -- expiry ---------------------------------------------------------------------
    def expire_due(self, now: float | None = None, limit: int = 500) -> list[GateRequest]:
        """Expire every pending request past its deadline; returns those expired now."""
        now = time.time() if now is None else now
        with self.db.read() as conn:
            rows = (
                conn.execute(
                    select(requests)
                    .where(requests.c.status == PENDING, requests.c.expires_at <= now)
                    .limit(limit)
                )
                .mappings()
                .all()
            )
        if not rows:
            return []
        done = []
        with self.db.write_raw() as conn:
            for row in rows:
                if self._expire_in(conn, row["id"], now):
                    done.append(GateRequest.from_row({**row, **self._expired(now)}))
        return done

    @staticmethod
    def _expired(now: float) -> dict[str, Any]:
        return {"status": EXPIRED, "decided_at": now, "decided_by": "gate", "reason": "timed out"}

    def _expire(self, request_id: str, now: float) -> bool:
        with self.db.write_raw() as conn:
            return self._expire_in(conn, request_id, now)

    def _expire_in(self, conn: Raw, request_id: str, now: float) -> bool:
        changed = conn.rowcount(
            EXPIRE_IF_DUE, {"b_id": request_id, "b_now": now, **self._expired(now)}
        )
        if changed == 1:
            audit_log.append(conn, "expired", "gate", request_id, {}, now)
            return True
        return False

    # -- notifications and allow-lists -----------------------------------------------
    def record_notification(
        self, request_id: str, channel: str, attempt: int, ok: bool, error: str | None = None
    ) -> None:
        """Audit one notification attempt."""
        data: dict[str, Any] = {"channel": channel, "attempt": attempt, "ok": ok}
        if error:
            data["error"] = error
        with self.db.write() as conn:
            audit_log.append(conn, "notification", "gate", request_id, data)

    def allow_session(self, session_key: str, actions: list[str], actor: str) -> list[str]:
        """Auto-approve ``actions`` for one session; high-risk actions are refused."""
        risky = sorted(a for a in actions if self.policy.is_high_risk(a))
        if risky:
            raise BadInput(f"high-risk actions can never be auto-approved: {', '.join(risky)}")
        now = time.time()
        with self.db.write() as conn:
            have = set(
                conn.execute(
                    select(session_allows.c.action).where(
                        session_allows.c.session_key == session_key
                    )
                ).scalars()
            )
            new = [a for a in dict.fromkeys(actions) if a not in have]
            for action in new:
                conn.execute(
                    insert(session_allows).values(
                        session_key=session_key, action=action, created_at=now, created_by=actor
                    )
                )
            if new:
                audit_log.append(
                    conn,
                    "session_allowed",
                    actor,
                    None,
                    {"session_key": session_key, "actions": new},
                    now,
                )
        return self.session_allowed(session_key)

    def session_allowed(self, session_key: str) -> list[str]:
        """Actions auto-approved for one session."""
        with self.db.read() as conn:
            rows = conn.execute(
                select(session_allows.c.action)
                .where(session_allows.c.session_key == session_key)
                .order_by(session_allows.c.action)
            )
            return list(rows.scalars())

    def secret(self) -> bytes:
        """The gate's link-signing secret, created once and shared through the database."""
        with self.db.write() as conn:
            value = conn.execute(select(keys.c.value).where(keys.c.name == "link_secret")).scalar()
            if value is None:
                value = secrets.token_hex(32)
                conn.execute(insert(keys).values(name="link_secret", value=value))
        return bytes.fromhex(value)
