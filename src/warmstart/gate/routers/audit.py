"""``/audit``: the hash-chained audit log and its verification (approvers only)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from warmstart.gate import audit as audit_log
from warmstart.gate.deps import Approver, Service
from warmstart.gate.routers.confirm import ERRORS
from warmstart.gate.schemas import AuditRowOut, VerifyOut

router = APIRouter(prefix="/audit", tags=["audit"])


@router.get("", response_model=list[AuditRowOut], responses=ERRORS)
async def recent(
    service: Service,
    _approver: Approver,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[dict[str, Any]]:
    """The newest audit rows, newest first."""
    return await service.run(audit_log.recent, service.db, limit)


@router.get("/verify", response_model=VerifyOut, responses=ERRORS)
async def verify(service: Service, _approver: Approver) -> dict[str, Any]:
    """Recompute the chain; ``ok`` is false when any row was edited or deleted."""
    result = await service.run_in_thread(audit_log.verify, service.db)
    return result.to_dict()
