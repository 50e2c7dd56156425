"""FastAPI dependencies as ``Annotated`` aliases: the service and the authenticated caller.

A request resolves at most two of them (every dependency costs FastAPI work on each
request), and they are ``async``: FastAPI would run a plain ``def`` in a worker thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
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


@dataclass(frozen=True)
class Context:
    """The gate service and the principal calling it."""

    service: GateService
    caller: Principal


async def get_context(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Context:
    """Authenticate the bearer token (everyone is ``local`` without tokens)."""
    service: GateService = request.app.state.gate
    principal = service.credentials.authenticate(credentials.credentials if credentials else None)
    if principal is None:
        raise Unauthorized("missing or invalid token: send 'Authorization: Bearer TOKEN'")
    return Context(service, principal)


Caller = Annotated[Context, Depends(get_context)]


async def get_approver(ctx: Caller) -> Context:
    """The context of a caller holding an approver token."""
    if not ctx.caller.is_approver:
        raise Forbidden("an approver token is needed for this")
    return ctx


Approver = Annotated[Context, Depends(get_approver)]


def checked_id(request_id: str) -> str:
    """A request id; anything that is not a ULID cannot exist."""
    if not ID_RE.match(request_id):
        raise NotFound(f"no request {request_id[:40]!r}")
    return request_id
