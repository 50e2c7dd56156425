"""``/sessions/{key}/allow``: per-session auto-approval of named actions (approvers only)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from warmstart.gate.deps import Approver
from warmstart.gate.routers.confirm import ERRORS
from warmstart.gate.schemas import AllowIn, AllowOut, clean_text

router = APIRouter(prefix="/sessions", tags=["sessions"])

SessionKey = Annotated[str, Path(min_length=1, max_length=200)]


@router.get("/{session_key}/allow", response_model=AllowOut, responses=ERRORS)
async def allowed(session_key: SessionKey, ctx: Approver) -> dict[str, Any]:
    """Actions auto-approved for this session."""
    key = _clean_key(session_key)
    actions = await ctx.service.run(ctx.service.store.session_allowed, key)
    return {"session_key": key, "actions": actions}


@router.post("/{session_key}/allow", response_model=AllowOut, responses=ERRORS)
async def allow(session_key: SessionKey, body: AllowIn, ctx: Approver) -> dict[str, Any]:
    """Auto-approve these actions for this session (never high-risk ones); audited."""
    key = _clean_key(session_key)
    store = ctx.service.store
    actions = await ctx.service.run(store.allow_session, key, body.actions, ctx.caller.name)
    return {"session_key": key, "actions": actions}


def _clean_key(session_key: str) -> str:
    from warmstart.gate.exceptions import BadInput

    try:
        return clean_text(session_key) or ""
    except ValueError as exc:
        raise BadInput(f"session key {exc}") from exc
