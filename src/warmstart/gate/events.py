"""In-process fan-out of request events: long-poll waiters and server-sent event streams.

Everything here runs on the event loop thread. Decisions made by another server on a
shared database are still seen by long-polls, which re-read the database periodically.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

QUEUE_SIZE = 1000


class Waiter(asyncio.Event):
    """An event set when a request changes, carrying the request's new view."""

    view: dict[str, Any] | None = None


class Hub:
    """Publishes events to subscribers and wakes waiters on a request id."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[Waiter]] = {}
        self._subscribers: set[asyncio.Queue[dict[str, Any] | None]] = set()

    def publish(self, kind: str, request: dict[str, Any]) -> None:
        """Announce a new or changed request."""
        for waiter in self._waiters.get(request["id"], ()):
            waiter.view = request
            waiter.set()
        event = {"event": kind, "request": request}
        for queue in list(self._subscribers):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:  # a stalled client loses its stream, not the server
                self._subscribers.discard(queue)

    def waiter(self, request_id: str) -> Waiter:
        """An event set when ``request_id`` changes; release it with :meth:`release`."""
        event = Waiter()
        self._waiters.setdefault(request_id, set()).add(event)
        return event

    def release(self, request_id: str, event: Waiter) -> None:
        """Forget a waiter."""
        waiters = self._waiters.get(request_id)
        if waiters is not None:
            waiters.discard(event)
            if not waiters:
                del self._waiters[request_id]

    def subscribe(self) -> asyncio.Queue[dict[str, Any] | None]:
        """A queue receiving every published event."""
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(QUEUE_SIZE)
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any] | None]) -> None:
        """Stop delivering to ``queue``."""
        self._subscribers.discard(queue)

    def is_subscribed(self, queue: asyncio.Queue[dict[str, Any] | None]) -> bool:
        """False once a queue was dropped for falling behind."""
        return queue in self._subscribers

    def close(self) -> None:
        """End every stream (server shutdown)."""
        for queue in list(self._subscribers):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)
        self._subscribers.clear()
        for waiters in self._waiters.values():
            for waiter in waiters:
                waiter.set()
