"""``/audit``: the hash-chained audit log and its verification (approvers only)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from warmstart.gate import audit as audit_log
from warmstart.gate.deps import Approver
from warmstart.gate.routers.confirm import ERRORS
from warmstart.gate.schemas import AuditRowOut, VerifyOut

router = APIRouter(prefix="/audit", tags=["audit"])


@router.get("", response_model=list[AuditRowOut], responses=ERRORS)
async def recent(
    ctx: Approver,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[dict[str, Any]]:
    """The newest audit rows, newest first."""
    return await ctx.service.run(audit_log.recent, ctx.service.db, limit)


@router.get("/verify", response_model=VerifyOut, responses=ERRORS)
async def verify(ctx: Approver) -> dict[str, Any]:
    """Recompute the chain; ``ok`` is false when any row was edited or deleted."""
    result = await ctx.service.run_in_thread(audit_log.verify, ctx.service.db)
    return result.to_dict()
