"""``/confirm``: submit approval requests, read them, wait on them, decide and consume them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Header, Query
from fastapi.responses import JSONResponse

from warmstart.gate.deps import Approver, Caller, checked_id
from warmstart.gate.schemas import (
    ApproveIn,
    ConfirmIn,
    ConsumeIn,
    DenyIn,
    ErrorOut,
    RateLimitOut,
    RequestOut,
)

router = APIRouter(prefix="/confirm", tags=["confirm"])

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "bad input"},
    401: {"model": ErrorOut, "description": "missing or invalid token"},
    403: {"model": ErrorOut, "description": "token lacks the role"},
    404: {"model": ErrorOut, "description": "unknown request"},
}
DECIDE_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    409: {"model": ErrorOut, "description": "already decided, expired or consumed"},
}


def respond(
    data: Any, status_code: int = 200, headers: dict[str, str] | None = None
) -> JSONResponse:
    """Send already-shaped JSON: the response model documents it, without re-validating."""
    return JSONResponse(data, status_code=status_code, headers=headers)


StatusFilter = Literal["pending", "approved", "denied", "expired", "consumed", "decided"]


@router.post(
    "",
    status_code=202,
    response_model=RequestOut,
    responses={
        **ERRORS,
        200: {"model": RequestOut, "description": "the request an Idempotency-Key names"},
        413: {"model": ErrorOut, "description": "body over 1 MB"},
        422: {"model": ErrorOut, "description": "Idempotency-Key reused with another body"},
        429: {"model": RateLimitOut, "description": "rate limit or pending cap reached"},
    },
)
async def submit(
    body: ConfirmIn,
    ctx: Caller,
    idempotency_key: Annotated[
        str | None, Header(max_length=200, pattern=r"^[\x21-\x7e]+$")
    ] = None,
) -> JSONResponse:
    """Ask for approval of one action; 202 with the request, status ``pending``."""
    service, caller = ctx.service, ctx.caller
    requester = caller.name if service.credentials.enabled else (body.requester or "agent")
    submission = await service.submit(
        caller,
        action=body.action,
        description=body.description,
        details=body.details,
        requester=requester,
        session_key=body.session_key,
        timeout_seconds=body.timeout_seconds,
        idempotency_key=idempotency_key,
    )
    headers = {}
    if submission.remaining is not None:
        headers["X-RateLimit-Limit"] = str(service.policy.rate_limit)
        headers["X-RateLimit-Remaining"] = str(submission.remaining)
    status = 202 if submission.created else 200
    return respond(service.view(submission.request), status, headers)


@router.get("", response_model=list[RequestOut], responses=ERRORS)
async def list_requests(
    ctx: Caller,
    status: StatusFilter | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> JSONResponse:
    """List requests (requesters see their own); ``status=decided`` lists final ones."""
    service, caller = ctx.service, ctx.caller
    requester = None if caller.is_approver else caller.name
    found = await service.run(service.store.list_requests, status, requester, limit)
    return respond([service.view(r) for r in found])


@router.get("/{request_id}", response_model=RequestOut, responses=ERRORS)
async def get_request(request_id: str, ctx: Caller) -> JSONResponse:
    """One request and its status."""
    service = ctx.service
    return respond(service.view(await service.get(checked_id(request_id), ctx.caller)))


@router.get("/{request_id}/wait", response_model=RequestOut, responses=ERRORS)
async def wait_request(
    request_id: str,
    ctx: Caller,
    timeout: Annotated[float, Query(ge=0, le=300, description="seconds to wait at most")] = 30,
) -> JSONResponse:
    """Long-poll until the request is decided or ``timeout`` seconds pass."""
    service = ctx.service
    timeout = min(timeout, service.settings.max_wait_seconds)
    return respond(await service.wait(checked_id(request_id), ctx.caller, timeout))


@router.post("/{request_id}/approve", response_model=RequestOut, responses=DECIDE_ERRORS)
async def approve(
    request_id: str,
    ctx: Approver,
    body: Annotated[ApproveIn | None, Body()] = None,
) -> JSONResponse:
    """Approve a pending request (not one you submitted)."""
    service, body = ctx.service, body or ApproveIn()
    actor = ctx.caller.name if service.credentials.enabled else (body.approver or "local")
    request = await service.decide(checked_id(request_id), True, actor, comment=body.comment)
    return respond(service.view(request))


@router.post("/{request_id}/deny", response_model=RequestOut, responses=DECIDE_ERRORS)
async def deny(request_id: str, body: DenyIn, ctx: Approver) -> JSONResponse:
    """Deny a pending request; a reason is required."""
    service = ctx.service
    actor = ctx.caller.name if service.credentials.enabled else (body.approver or "local")
    request = await service.decide(checked_id(request_id), False, actor, reason=body.reason)
    return respond(service.view(request))


@router.post("/{request_id}/consume", response_model=RequestOut, responses=DECIDE_ERRORS)
async def consume(request_id: str, body: ConsumeIn, ctx: Caller) -> JSONResponse:
    """Mark an approval used as the action runs; a second consume gets 409."""
    service = ctx.service
    request = await service.consume(checked_id(request_id), body.binding_hash, ctx.caller)
    return respond(service.view(request))
