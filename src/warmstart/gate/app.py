"""The gate's FastAPI application: ``create_app(settings)``.

Errors always come back as JSON ``{"detail": ...}`` with a 4xx status: validation
problems and malformed JSON are 400, bodies over the limit 413, refusals carry their
own status (401, 403, 404, 409, 422, 429).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from warmstart import __version__
from warmstart.gate.exceptions import GateRefusal, RateLimited, Unauthorized
from warmstart.gate.routers import audit, confirm, events, health, sessions, ui
from warmstart.gate.service import GateService
from warmstart.gate.settings import GateSettings

log = logging.getLogger("warmstart.gate")
TOO_LARGE = "the body is larger than the gate accepts (1 MB)"


def create_app(settings: GateSettings | None = None) -> FastAPI:
    """Build the gate app: opens (and migrates) the database, checks the configuration."""
    settings = settings or GateSettings()
    service = GateService(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await service.start()
        try:
            yield
        finally:
            await service.close()

    app = FastAPI(
        title="warmstart approval gate",
        version=__version__,
        description="Agents ask before risky actions; people decide; everything is audited.",
        lifespan=lifespan,
    )
    app.state.gate = service
    for module in (confirm, audit, events, sessions, health, ui):
        app.include_router(module.router)

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/ui")

    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_exception_handler(GateRefusal, _refusal)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RecursionError, _too_deep)
    return app


class BodyLimit:
    """Refuse bodies over the limit with a JSON 413: declared ones before reading."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for name, value in scope["headers"]:
                if name == b"content-length":
                    if not value.isdigit():
                        await _send_json(send, 400, "the Content-Length header is not a number")
                        return
                    if int(value) > self.max_bytes:
                        await _send_json(send, 413, TOO_LARGE)
                        return
            received = 0

            async def limited() -> Message:
                nonlocal received
                message = await receive()
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    if received > self.max_bytes:
                        raise StarletteHTTPException(413, TOO_LARGE)
                return message

            await self.app(scope, limited, send)
            return
        await self.app(scope, receive, send)


async def _send_json(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _refusal(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, GateRefusal)
    headers: dict[str, str] = {}
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(exc.extra.get("retry_after_seconds", 1))
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(
        {"detail": exc.message, **exc.extra}, status_code=exc.status_code, headers=headers
    )


def describe_errors(errors: list[dict[str, Any]]) -> str:
    """One readable line from pydantic validation errors."""
    parts = []
    for error in errors[:5]:
        kind = error.get("type", "")
        loc = [str(p) for p in error.get("loc", ()) if p != "body"]
        where = ".".join(loc)
        if kind == "json_invalid":
            return "the body is not valid JSON"
        if kind == "missing":
            parts.append(f"field '{where}' is required" if where else "a JSON body is required")
        elif kind in {"model_attributes_type", "dict_type"} and not where:
            parts.append(_not_an_object(error.get("input")))
        else:
            message = str(error.get("msg", "is invalid"))
            parts.append(f"{where}: {message}" if where else message)
    if len(errors) > 5:
        parts.append(f"and {len(errors) - 5} more problems")
    return "; ".join(parts) or "invalid request"


def _not_an_object(raw: Any) -> str:
    if isinstance(raw, bytes | str):
        try:
            json.loads(raw)
        except (ValueError, RecursionError):
            return "the body is not valid JSON"
        return "send the body as a JSON object with Content-Type: application/json"
    return "the body must be a JSON object"


async def _invalid(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse({"detail": describe_errors(list(exc.errors()))}, status_code=400)


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else "request refused"
    if exc.status_code == 413:
        detail = TOO_LARGE
    return JSONResponse(
        {"detail": detail}, status_code=exc.status_code, headers=getattr(exc, "headers", None)
    )


async def _too_deep(_request: Request, _exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": "the body is nested too deeply"}, status_code=400)
