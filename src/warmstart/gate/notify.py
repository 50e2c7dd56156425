"""Notifications through apprise: channels tried in order until one succeeds.

Every attempt is audited (channel scheme, attempt number, outcome). The message
carries the action, the requester and signed approve/deny links; those links open a
confirmation page, so a link scanner that fetches them decides nothing. With no
channel configured, a warning names the URL of the pending request instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import anyio

from warmstart.errors import ConfigError
from warmstart.gate.security import sign_link
from warmstart.gate.store import GateRequest, GateStore

log = logging.getLogger("warmstart.gate")

Sender = Callable[[str, str, str], tuple[bool, str | None]]


def channel_name(url: str) -> str:
    """The scheme of an apprise URL: what the audit records instead of its secrets."""
    return url.split("://", 1)[0] if "://" in url else "invalid"


def _apprise() -> Any:
    """Import apprise lazily (it is slow to import) and quietly (it uses ``imghdr``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import apprise
    return apprise


def check_urls(urls: list[str]) -> None:
    """Refuse apprise URLs that apprise does not recognise."""
    if not urls:
        return
    apprise = _apprise()
    for url in urls:
        if not apprise.Apprise().add(url):
            raise ConfigError(
                f"not a notification URL apprise understands: {channel_name(url)}://…"
            )


def apprise_send(url: str, title: str, body: str) -> tuple[bool, str | None]:
    """Send one message through one apprise URL; (delivered, error)."""
    try:
        app = _apprise().Apprise()
        if not app.add(url):
            return False, "invalid URL"
        result = app.notify(body=body, title=title)
        if result:
            return True, None
        messages = [str(getattr(entry, "message", "")) for entry in result.logs()]
        detail = next((m for m in reversed(messages) if m), "delivery failed")
        return False, f"{result.status.name.lower()}: {detail}"[:300]
    except Exception as exc:  # a channel plugin failing must not stop the others
        return False, f"{type(exc).__name__}: {exc}"[:300]


def decision_links(base_url: str, secret: bytes, request_id: str) -> dict[str, str]:
    """Signed approve and deny links to the confirmation page."""
    return {
        decision: f"{base_url}/ui/decide/{request_id}?"
        + urlencode({"decision": decision, "sig": sign_link(secret, request_id, decision)})
        for decision in ("approve", "deny")
    }


def format_message(request: GateRequest, links: dict[str, str]) -> tuple[str, str]:
    """Title and body of a notification."""
    title = f"Approval needed: {request.action} (from {request.requester})"
    lines = [
        f"{request.requester} asks to run {request.action}.",
        request.description,
        f"Request {request.id}, decide before {request.to_dict()['expires_at']}.",
        f"Approve: {links['approve']}",
        f"Deny: {links['deny']}",
    ]
    return title, "\n".join(lines)


class Notifier:
    """A background worker that notifies people of new pending requests."""

    def __init__(
        self,
        store: GateStore,
        urls: list[str],
        base_url: str,
        secret: bytes,
        sender: Sender = apprise_send,
    ) -> None:
        self.store = store
        self.urls = list(urls)
        self.base_url = base_url
        self.secret = secret
        self.sender = sender
        self._queue: asyncio.Queue[GateRequest] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the worker on the running loop."""
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop the worker."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def enqueue(self, request: GateRequest) -> None:
        """Notify about ``request`` soon, or log its URL when no channel is configured."""
        if not self.urls:
            log.warning(
                "no notification channel configured: request %s (%s from %s) is pending at "
                "%s/confirm/%s; decide at %s/ui or with `warmstart gate approve %s`",
                request.id,
                request.action,
                request.requester,
                self.base_url,
                request.id,
                self.base_url,
                request.id,
            )
            return
        self._queue.put_nowait(request)

    async def _run(self) -> None:
        while True:
            request = await self._queue.get()
            try:
                await self.deliver(request)
            except Exception:  # a broken channel must not stop the worker
                log.exception("notifying about request %s failed", request.id)

    async def deliver(self, request: GateRequest) -> bool:
        """Try each channel in order until one succeeds; audit every attempt."""
        title, body = format_message(
            request, decision_links(self.base_url, self.secret, request.id)
        )
        for attempt, url in enumerate(self.urls, start=1):
            ok, error = await anyio.to_thread.run_sync(self.sender, url, title, body)
            await anyio.to_thread.run_sync(
                self.store.record_notification, request.id, channel_name(url), attempt, ok, error
            )
            if ok:
                return True
            log.warning(
                "notification %d (%s) for %s failed: %s",
                attempt,
                channel_name(url),
                request.id,
                error,
            )
        log.warning("no notification channel delivered request %s", request.id)
        return False


def describe(urls: list[str]) -> list[dict[str, Any]]:
    """The configured channels without their secrets (for /health)."""
    return [{"order": i, "channel": channel_name(u)} for i, u in enumerate(urls, start=1)]
