"""FastAPI dependencies as ``Annotated`` aliases: the service and the authenticated caller.

They are ``async`` on purpose: FastAPI runs plain ``def`` dependencies in a worker
thread, which costs more than the work they do.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from warmstart.gate.exceptions import Forbidden, NotFound, Unauthorized
from warmstart.gate.security import Principal
from warmstart.gate.service import GateService

ID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")

bearer = HTTPBearer(auto_error=False, description="a requester or approver token")


async def get_service(request: Request) -> GateService:
    """The gate service the app was created with."""
    service: GateService = request.app.state.gate
    return service


Service = Annotated[GateService, Depends(get_service)]


async def get_caller(
    service: Service,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    """The principal behind the bearer token (everyone is ``local`` without tokens)."""
    principal = service.credentials.authenticate(credentials.credentials if credentials else None)
    if principal is None:
        raise Unauthorized("missing or invalid token: send 'Authorization: Bearer TOKEN'")
    return principal


Caller = Annotated[Principal, Depends(get_caller)]


async def get_approver(caller: Caller) -> Principal:
    """The caller, who must hold an approver token."""
    if not caller.is_approver:
        raise Forbidden("an approver token is needed for this")
    return caller


Approver = Annotated[Principal, Depends(get_approver)]


async def get_request_id(request_id: Annotated[str, Path(description="request id (ULID)")]) -> str:
    """A request id; anything that is not a ULID cannot exist."""
    if not ID_RE.match(request_id):
        raise NotFound(f"no request {request_id[:40]!r}")
    return request_id


RequestId = Annotated[str, Depends(get_request_id)]
