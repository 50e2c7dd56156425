"""``/events``: server-sent events of new and decided requests (approvers only)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from warmstart.gate.deps import Approver
from warmstart.gate.routers.confirm import ERRORS

router = APIRouter(tags=["events"])
KEEPALIVE_SECONDS = 15.0


def _format(item: dict[str, Any]) -> str:
    data = json.dumps(item["request"], separators=(",", ":"))
    return f"event: {item['event']}\nid: {item['request']['id']}\ndata: {data}\n\n"


@router.get(
    "/events",
    response_class=StreamingResponse,
    responses={**ERRORS, 200: {"content": {"text/event-stream": {}}, "description": "stream"}},
)
async def events(ctx: Approver) -> StreamingResponse:
    """Stream ``submitted``, ``approved``, ``denied``, ``expired`` and ``consumed`` events."""
    service = ctx.service
    queue = service.hub.subscribe()

    async def stream() -> AsyncIterator[str]:
        try:
            yield "retry: 2000\n: connected\n\n"
            while service.hub.is_subscribed(queue):
                try:
                    async with asyncio.timeout(KEEPALIVE_SECONDS):
                        items = [await queue.get()]
                except TimeoutError:
                    yield ": keepalive\n\n"
                    continue
                while not queue.empty():  # send what piled up in one write
                    items.append(queue.get_nowait())
                chunk = "".join(_format(item) for item in items if item is not None)
                if chunk:
                    yield chunk
                if None in items:
                    return
        finally:
            service.hub.unsubscribe(queue)

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
