"""Request and response bodies of the HTTP API (they make the OpenAPI document)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator

from warmstart.gate.security import canonical_json

ACTION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,199}$"
NAME_PATTERN = r"^[A-Za-z0-9_.@-]{1,64}$"
RESERVED_NAMES = frozenset({"gate", "link", "local"})
MAX_DETAILS_CHARS = 256_000
MAX_DEPTH = 32


def clean_text(value: str | None) -> str | None:
    """Refuse NUL characters and lone surrogates, which no database stores."""
    if value is None:
        return None
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("must be valid Unicode text") from exc
    return value


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


class ConfirmIn(BaseModel):
    """A request for approval of one action."""

    action: str = Field(
        pattern=ACTION_PATTERN,
        description="action name: letters, digits and _ . : / - (up to 200 characters)",
        examples=["deploy_production"],
    )
    description: str = Field(min_length=1, max_length=4000, examples=["Deploy v1.2 to prod"])
    details: dict[str, Any] = Field(default_factory=dict, description="what exactly will run")
    requester: str | None = Field(
        default=None,
        pattern=NAME_PATTERN,
        description="who asks (only without tokens; with tokens the token names the requester)",
    )
    session_key: str | None = Field(default=None, min_length=1, max_length=200)
    timeout_seconds: int | None = Field(
        default=None, description="seconds to wait for a decision, clamped to 30..3600"
    )

    @field_validator("description", "session_key")
    @classmethod
    def _clean(cls, value: str | None) -> str | None:
        return clean_text(value)

    @field_validator("requester")
    @classmethod
    def _not_reserved(cls, value: str | None) -> str | None:
        if value is not None and value in RESERVED_NAMES:
            raise ValueError(f"{value!r} is a reserved name")
        return value

    @field_validator("details")
    @classmethod
    def _details(cls, value: dict[str, Any]) -> dict[str, Any]:
        if _depth(value) > MAX_DEPTH:
            raise ValueError(f"nested more than {MAX_DEPTH} levels")
        try:
            text = canonical_json(value)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"must be plain JSON ({exc})") from exc
        if len(text) > MAX_DETAILS_CHARS:
            raise ValueError(f"larger than {MAX_DETAILS_CHARS} characters")
        return value


class ApproveIn(BaseModel):
    """An optional comment with an approval."""

    comment: str | None = Field(default=None, max_length=2000)
    approver: str | None = Field(
        default=None, pattern=NAME_PATTERN, description="approver name (only without tokens)"
    )

    @field_validator("comment")
    @classmethod
    def _clean(cls, value: str | None) -> str | None:
        return clean_text(value)


class DenyIn(BaseModel):
    """A denial, which needs a reason."""

    reason: str = Field(min_length=1, max_length=2000)
    approver: str | None = Field(
        default=None, pattern=NAME_PATTERN, description="approver name (only without tokens)"
    )

    @field_validator("reason")
    @classmethod
    def _clean(cls, value: str) -> str:
        cleaned = clean_text(value) or ""
        if not cleaned.strip():
            raise ValueError("must not be blank")
        return cleaned


class ConsumeIn(BaseModel):
    """Marks an approval used; carries the binding hash the client verified."""

    binding_hash: str = Field(pattern=r"^[0-9a-f]{64}$")


class AllowIn(BaseModel):
    """Actions to auto-approve within one session."""

    actions: list[str] = Field(min_length=1, max_length=100)

    @field_validator("actions")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        import re

        for action in value:
            if not re.match(ACTION_PATTERN, action):
                raise ValueError(f"not an action name: {action[:50]!r}")
        return value


class RequestOut(BaseModel):
    """An approval request and its state."""

    id: str
    action: str
    description: str
    details: dict[str, Any]
    requester: str
    session_key: str | None
    status: str = Field(description="pending, approved, denied, expired or consumed")
    created_at: str
    expires_at: str
    timeout_seconds: int
    binding_hash: str
    decided_at: str | None
    decided_by: str | None
    reason: str | None
    comment: str | None
    consumed_at: str | None
    signature: str | None = Field(
        default=None, description="HMAC over the binding hash, on approved requests"
    )


class ErrorOut(BaseModel):
    """Every error: a message, sometimes with extra fields (rate limits)."""

    detail: str


class RateLimitOut(ErrorOut):
    """A refused submission: the window and how many remain."""

    limit: int
    window_seconds: int
    remaining: int
    retry_after_seconds: int


class AuditRowOut(BaseModel):
    """One row of the audit chain."""

    seq: int
    at: str
    event: str
    request_id: str | None
    actor: str
    data: dict[str, Any]
    prev_hash: str
    hash: str


class VerifyOut(BaseModel):
    """Result of checking the audit chain."""

    ok: bool
    rows: int
    problem: str | None
    bad_seq: int | None


class HealthOut(BaseModel):
    """Liveness and a little state."""

    status: str
    version: str
    database: str
    auth: bool
    pending: int
    channels: list[dict[str, Any]]


class AllowOut(BaseModel):
    """Actions auto-approved within a session."""

    session_key: str
    actions: list[str]
