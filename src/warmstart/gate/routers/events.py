"""``/events``: server-sent events of new and decided requests (approvers only)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from warmstart.gate.deps import Approver
from warmstart.gate.routers.confirm import ERRORS

router = APIRouter(tags=["events"])
KEEPALIVE_SECONDS = 15.0


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
                    item = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    yield ": keepalive\n\n"
                    continue
                if item is None:
                    return
                data = json.dumps(item["request"], separators=(",", ":"))
                yield f"event: {item['event']}\nid: {item['request']['id']}\ndata: {data}\n\n"
        finally:
            service.hub.unsubscribe(queue)

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
