"""Refusals the gate's service layer raises; the HTTP layer maps each to a status.

All are :class:`warmstart.errors.ApprovalError`: the gate refused.
"""

from __future__ import annotations

from typing import Any

from warmstart.errors import ApprovalError


class GateRefusal(ApprovalError):
    """A refusal with an HTTP status and optional extra fields for the response."""

    status_code = 400

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra


class NotFound(GateRefusal):
    """No such request (or not visible to the caller)."""

    status_code = 404


class Forbidden(GateRefusal):
    """The caller's credential does not allow this."""

    status_code = 403


class Unauthorized(GateRefusal):
    """No valid credential was presented."""

    status_code = 401


class Conflict(GateRefusal):
    """The request is no longer in a state that allows this (decided, expired, consumed)."""

    status_code = 409


class IdempotencyMismatch(GateRefusal):
    """An ``Idempotency-Key`` was reused with a different body."""

    status_code = 422


class RateLimited(GateRefusal):
    """Too many submissions in the window, or too many pending requests."""

    status_code = 429


class BadInput(GateRefusal):
    """A request the gate cannot accept as given."""

    status_code = 400
