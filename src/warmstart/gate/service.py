"""The gate service: the store, credentials, events, notifications and the sweeper together.

Routers call these async methods; database work runs in worker threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from warmstart.gate.db import Database
from warmstart.gate.events import Hub
from warmstart.gate.exceptions import Forbidden, NotFound
from warmstart.gate.notify import Notifier, check_urls
from warmstart.gate.policy import Policy
from warmstart.gate.security import Credentials, Principal, sign_approval
from warmstart.gate.settings import GateSettings
from warmstart.gate.store import APPROVED, CONSUMED, PENDING, GateRequest, GateStore, Submission
from warmstart.gate.sweeper import sweep_forever

T = TypeVar("T")
RECHECK_SECONDS = 2.0


class GateService:
    """One running gate."""

    def __init__(self, settings: GateSettings) -> None:
        self.settings = settings
        self.policy = Policy.from_settings(settings)
        self.credentials = Credentials.from_specs(
            settings.requester_tokens, settings.approver_tokens
        )
        check_urls(settings.notify)
        self.db = Database(settings.database_url())
        self.store = GateStore(self.db, self.policy)
        self.secret = (
            settings.secret_key.get_secret_value().encode()
            if settings.secret_key
            else (self.store.secret())
        )
        self.base_url = settings.base_url()
        self.hub = Hub()
        self.notifier = Notifier(self.store, settings.notify, self.base_url, self.secret)
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the notifier and the expiry sweeper on the running loop.

        Pending requests that were never notified (the gate stopped between storing one
        and notifying about it) are notified now.
        """
        self.notifier.start()
        if self.settings.notify:
            for request in await self.run_in_thread(self.store.unnotified):
                self.notifier.enqueue(request)
        self._sweeper = asyncio.get_running_loop().create_task(
            sweep_forever(self.sweep, self.settings.sweep_interval_seconds)
        )

    async def close(self) -> None:
        """Stop background work and release the database."""
        self.hub.close()
        await self.notifier.stop()
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        self.db.dispose()

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run short store work: inline on SQLite, in a worker thread on PostgreSQL.

        A SQLite statement takes tens of microseconds and writes are serialised anyway,
        so handing each to a thread only adds switches; a network database may stall.
        """
        if self.db.is_sqlite:
            return fn(*args, **kwargs)
        return await self.run_in_thread(fn, *args, **kwargs)

    async def run_in_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run long or blocking work (chain verification, notifications) in a thread."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    # -- views ----------------------------------------------------------------------
    def view(self, request: GateRequest) -> dict[str, Any]:
        """The API form of a request, signed when approved."""
        data = request.to_dict()
        data["signature"] = None
        if request.status in (APPROVED, CONSUMED):
            key = self.credentials.key_for(request.requester)
            data["signature"] = sign_approval(key, request.id, request.binding_hash)
        return data

    def check_visible(self, request: GateRequest, caller: Principal) -> None:
        """Requesters see only their own requests; others get NotFound."""
        if not caller.is_approver and request.requester != caller.name:
            raise NotFound(f"no request {request.id}")

    # -- operations -----------------------------------------------------------------
    async def submit(self, caller: Principal, **fields: Any) -> Submission:
        """Store a request, announce it, and notify people when it waits for them."""
        if not caller.is_requester:
            raise Forbidden("a requester token is needed to submit")
        submission = await self.run(self.store.submit, **fields)
        if submission.created:
            request = submission.request
            self.hub.publish("submitted", self.view(request))
            if request.status == PENDING:
                self.notifier.enqueue(request)
        return submission

    async def get(self, request_id: str, caller: Principal) -> GateRequest:
        """One request visible to the caller."""
        request, expired_now = await self.run(self.store.lookup, request_id)
        if expired_now:  # expired by this read rather than by the sweeper: announce it
            self.hub.publish(request.status, self.view(request))
        self.check_visible(request, caller)
        return request

    async def wait(self, request_id: str, caller: Principal, timeout: float) -> dict[str, Any]:
        """Long-poll: the request's view once it is decided or ``timeout`` seconds passed."""
        deadline = time.monotonic() + timeout
        while True:
            waiter = self.hub.waiter(request_id)
            try:
                request = await self.get(request_id, caller)
                left = deadline - time.monotonic()
                if request.status != PENDING or left <= 0:
                    return self.view(request)
                until_expiry = request.expires_at - time.time() + 0.05
                pause = max(0.01, min(left, until_expiry, RECHECK_SECONDS))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(pause):
                        await waiter.wait()
                if waiter.view is not None and waiter.view["status"] != PENDING:
                    return waiter.view  # what the decider just published
            finally:
                self.hub.release(request_id, waiter)

    async def decide(
        self,
        request_id: str,
        approve: bool,
        actor: str,
        reason: str | None = None,
        comment: str | None = None,
    ) -> GateRequest:
        """Approve or deny; announces the decision."""
        request = await self.run(
            self.store.decide, request_id, approve, actor, reason=reason, comment=comment
        )
        self.hub.publish(request.status, self.view(request))
        return request

    async def consume(self, request_id: str, binding: str, caller: Principal) -> GateRequest:
        """Mark an approval used (single use)."""
        if not caller.is_requester:
            raise Forbidden("a requester token is needed to consume an approval")
        requester = caller.name if self.credentials.enabled else None
        request = await self.run(self.store.consume, request_id, binding, requester)
        self.hub.publish(request.status, self.view(request))
        return request

    async def sweep(self) -> int:
        """Expire overdue requests and announce them; returns how many."""
        expired = await self.run(self.store.expire_due)
        for request in expired:
            self.hub.publish(request.status, self.view(request))
        return len(expired)
