"""The proxy's Starlette application: ``create_app(settings)``.

``POST /v1/chat/completions`` gets a warm prefix after the client's system messages
when its conversation is planned warm; everything else under ``/v1/`` (``/v1/models``
included) goes to the upstream unchanged. Answers come back as the upstream sent them:
status, body and headers (``Retry-After`` too), server-sent events chunk by chunk.
The client never sees the warm messages: a chat completion does not echo its prompt.

The proxy answers by itself only when the upstream cannot: malformed JSON (400), a
body over the limit (413), an upstream that refuses connections or breaks before
answering (502) or does not answer in time (504), always in OpenAI's error shape
``{"error": {"message", "type", "param", "code"}}``. A stream that breaks after it
started is broken towards the client too (the connection is closed before the final
chunk), as a client talking to the upstream directly would have seen it.

Response headers say what the proxy did: ``X-Warmstart-Warm`` (``warm; template=...``
or ``cold; reason=...``), ``X-Warmstart-Session`` and, in an A/B run, ``X-Warmstart-Arm``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from warmstart.proxy.conversation import (
    SESSION_HEADER,
    BadSessionId,
    Conversation,
    Conversations,
    assign_arm,
    session_id_for,
)
from warmstart.proxy.recorder import (
    StreamAssembler,
    Writer,
    build_session,
    reply_message,
    write_session,
)
from warmstart.proxy.settings import ProxySettings
from warmstart.proxy.warm import (
    COLD_AB,
    COLD_CONTEXT,
    COLD_NO_TEMPLATE,
    COLD_NOT_CHAT,
    WarmPlan,
    WarmPlanner,
    cold,
    fits,
    task_text,
    tool_names,
)

log = logging.getLogger("warmstart.proxy")

WARM_HEADER = "x-warmstart-warm"
ARM_HEADER = "x-warmstart-arm"
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
# Not forwarded upstream: hop-by-hop, what httpx sets itself, and our own headers.
REQUEST_DROP = HOP_BY_HOP | {"host", "content-length", "accept-encoding"}
# Not returned downstream: hop-by-hop, what the ASGI server sets, and the encoding
# (httpx hands over decoded bytes).
RESPONSE_DROP = HOP_BY_HOP | {"content-length", "content-encoding", "date", "server"}
POOL_SHARDS = 16
PASS_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]


class BodyTooLarge(Exception):
    """The request body is over the configured limit."""


def openai_error(
    status: int,
    message: str,
    code: str,
    kind: str = "invalid_request_error",
    headers: dict[str, str] | None = None,
) -> Response:
    """An error in OpenAI's shape, so SDKs raise their usual exception with our message."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return Response(
        json.dumps(body).encode(), status, headers=headers, media_type="application/json"
    )


def _bearer(request: Request) -> str | None:
    value = request.headers.get("authorization", "")
    if not value.lower().startswith("bearer "):
        return None
    return value[7:].strip() or None


def _max_tokens(data: dict[str, Any]) -> int:
    for key in ("max_completion_tokens", "max_tokens"):
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


def _usage(conversation: Conversation, usage: Any) -> None:
    if isinstance(usage, dict):
        for key in ("prompt_tokens", "completion_tokens"):
            value = usage.get(key)
            if isinstance(value, int):
                setattr(conversation, key, getattr(conversation, key) + value)


class UpstreamStream(Response):
    """Relays an upstream response body chunk by chunk.

    A client that goes away cancels the upstream request; an upstream that breaks
    mid-body makes this response end without its final chunk, so the ASGI server closes
    the connection and the client sees the break instead of a clean but short answer.
    """

    def __init__(
        self,
        upstream: httpx.Response,
        raw_headers: list[tuple[bytes, bytes]],
        on_chunk: Callable[[bytes], None] | None = None,
        on_complete: Callable[[], None] | None = None,
    ) -> None:
        self.status_code = upstream.status_code
        self.upstream = upstream
        self.raw_headers = raw_headers
        self.background = None
        self.on_chunk = on_chunk
        self.on_complete = on_complete

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                log.info("client went away; cancelling the upstream request")
                group.cancel_scope.cancel()

            group.start_soon(watch)
            try:
                await self._pump(send)
            finally:
                group.cancel_scope.cancel()

    async def _pump(self, send: Send) -> None:
        complete = False
        try:
            start = {"status": self.status_code, "headers": self.raw_headers}
            await send({"type": "http.response.start", **start})
            async for chunk in self.upstream.aiter_bytes():
                if self.on_chunk is not None:
                    self.on_chunk(chunk)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            complete = True
        except httpx.HTTPError as exc:
            log.warning("upstream stream broke (%s); closing the client connection", _why(exc))
        except OSError:
            log.info("client went away during the stream")
        finally:
            with anyio.CancelScope(shield=True):
                await self.upstream.aclose()
        if complete:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            if self.on_complete is not None:
                self.on_complete()


def _env_proxy(upstream: str) -> str | None:
    """An HTTP(S) proxy from the environment for the upstream, as httpx clients honour it."""
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(upstream)
    proxies = urllib.request.getproxies()
    chosen = proxies.get(parts.scheme) or proxies.get("all")
    if not chosen or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return chosen


_MARK = "\x00warmstart:messages\x00"
_MARK_JSON = json.dumps(_MARK)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encode_with_prefix(data: dict[str, Any], messages: list[Any], plan: WarmPlan) -> bytes:
    """The request body with the plan's messages after the leading system messages.

    The prefix was encoded once, when the conversation was planned (``plan.fragment``);
    only the client's own messages and settings are encoded per request, and the prefix
    bytes are the same in every request of the conversation.
    """
    head = 0
    while (
        head < len(messages)
        and isinstance(messages[head], dict)
        and messages[head].get("role") in ("system", "developer")
    ):
        head += 1
    parts = [_dumps(messages[:head])[1:-1]] if head else []
    parts.append(plan.fragment)
    if head < len(messages):
        parts.append(_dumps(messages[head:])[1:-1])
    data["messages"] = _MARK
    try:
        shell = _dumps(data)
    finally:
        data["messages"] = messages
    if shell.count(_MARK_JSON) != 1:  # the marker in the client's own data: encode it all
        spliced = [*messages[:head], *plan.messages, *messages[head:]]
        return _dumps({**data, "messages": spliced}).encode()
    return shell.replace(_MARK_JSON, "[" + ",".join(parts) + "]").encode()


def _why(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Proxy:
    """One running proxy: settings, the pooled upstream client, plans, the store writer."""

    def __init__(self, settings: ProxySettings) -> None:
        self.settings = settings
        self.planner: WarmPlanner | None = None
        if settings.injects:
            self.planner = WarmPlanner(
                settings.db_url,
                template=settings.template,
                auto=settings.auto,
                budget=settings.budget,
                warm_share=settings.warm_share,
                context_length=settings.context_length,
                min_context=settings.min_context,
                base_url=settings.upstream,
            )
        self.conversations = Conversations(settings.max_conversations)
        self._planning: dict[str, asyncio.Task[WarmPlan]] = {}
        self._transports: list[httpx.AsyncHTTPTransport] = []
        self._next: Iterator[httpx.AsyncHTTPTransport] = iter(())
        self._timeout: dict[str, float] = {}
        self._writer: Writer | None = None

    # -- lifecycle ----------------------------------------------------------------
    def check(self) -> None:
        """Fail fast on a configured template that does not exist."""
        if self.planner is not None and self.settings.template:
            names = {t.name for t in self.planner.templates()}
            if self.settings.template not in names:
                from warmstart.errors import TemplateError

                raise TemplateError(
                    f"no template {self.settings.template!r} in the store "
                    "(see `warmstart templates list`)"
                )

    async def start(self) -> None:
        """Open the upstream connection pools and the store writer.

        Requests go straight to httpx transports, not through ``AsyncClient``: a client
        adds per-request work the proxy does not want (a shared cookie jar would even
        carry one client's cookies to another). The pool is split into
        :data:`POOL_SHARDS` transports used in turn, because httpcore scans every
        connection of a pool (a ``poll`` call for each idle one) whenever a request
        starts or ends: with 50 busy connections in one pool that scan costs more than
        the relaying itself.
        """
        s = self.settings
        shards = max(1, min(POOL_SHARDS, s.max_connections))
        per_shard = max(1, s.max_connections // shards)
        self._timeout = {
            "connect": s.connect_timeout,
            "read": s.read_timeout,
            "write": 60.0,
            "pool": s.connect_timeout,
        }
        tls = httpx.create_ssl_context()  # loading the CA bundle costs ~0.1 s: once, shared
        proxy = _env_proxy(s.upstream)
        self._transports = [
            httpx.AsyncHTTPTransport(
                limits=httpx.Limits(max_connections=per_shard, max_keepalive_connections=per_shard),
                # TCP_NODELAY: httpx writes headers and body separately, and with Nagle's
                # algorithm the body would wait for the upstream's delayed ACK (up to 40 ms).
                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                verify=tls,
                proxy=proxy,
            )
            for _ in range(shards)
        ]
        self._next = itertools.cycle(self._transports)
        self._writer = Writer()

    async def close(self) -> None:
        """Close the pools and write out what is queued."""
        transports, self._transports = self._transports, []
        for transport in transports:
            await transport.aclose()
        if self._writer is not None:
            writer, self._writer = self._writer, None
            await anyio.to_thread.run_sync(writer.close)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait for queued store writes (tests and shutdown use this)."""
        return self._writer.flush(timeout) if self._writer is not None else True

    def transport(self) -> httpx.AsyncHTTPTransport:
        """The next upstream transport (pool shard) in turn."""
        if not self._transports:
            raise RuntimeError("the proxy has not started (use it through its ASGI lifespan)")
        return next(self._next)

    # -- conversations ---------------------------------------------------------------
    async def conversation(
        self, session_id: str, data: dict[str, Any], messages: list[Any], request: Request
    ) -> Conversation:
        """The conversation of a request, planned on its first sight."""
        known = self.conversations.get(session_id)
        if known is not None:
            return known
        arm = assign_arm(session_id, self.settings.ab) if self.settings.ab is not None else None
        if self.planner is None:
            plan = cold(COLD_NO_TEMPLATE)
        elif arm == "cold":
            plan = cold(COLD_AB)
        else:
            task = self._planning.get(session_id)
            if task is None:
                task = asyncio.ensure_future(self._plan(data, messages, _bearer(request)))
                self._planning[session_id] = task
                task.add_done_callback(lambda _t: self._planning.pop(session_id, None))
            plan = await asyncio.shield(task)
        return self.conversations.put(Conversation(session_id, plan, arm))

    async def _plan(
        self, data: dict[str, Any], messages: list[Any], api_key: str | None
    ) -> WarmPlan:
        assert self.planner is not None
        planner = self.planner
        task = task_text(messages)
        tools = tool_names(data.get("tools") or data.get("functions"))
        model = str(data.get("model") or "")
        plan = await anyio.to_thread.run_sync(planner.plan, task, tools, model, api_key)
        if plan.warm and self._writer is not None:
            self._writer.submit(lambda: planner.record_use(plan, task))
        return plan

    def _record(
        self, conversation: Conversation, data: dict[str, Any], messages: list[Any], reply: Any
    ) -> None:
        if not self.settings.record or self._writer is None:
            return
        session = build_session(
            conversation,
            messages,
            reply,
            model=str(data.get("model") or "") or None,
            tools=data.get("tools") or data.get("functions"),
            ab=self.settings.ab is not None,
        )
        db = self.settings.db_url
        self._writer.submit(lambda: write_session(session, db), key=("session", conversation.id))

    # -- HTTP ----------------------------------------------------------------------------
    async def chat(self, request: Request) -> Response:
        """``POST /v1/chat/completions``: plan, inject, forward, relay, record."""
        try:
            body = await self._body(request)
        except BodyTooLarge:
            return self._too_large()
        try:
            data = json.loads(body)
        except ValueError as exc:
            return openai_error(400, f"request body is not valid JSON: {exc}", "invalid_json")
        if not isinstance(data, dict):
            return openai_error(400, "request body must be a JSON object", "invalid_json")
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            # Not a conversation the proxy can reason about: the upstream says what is wrong.
            return await self._forward(
                request, body, {WARM_HEADER: cold(COLD_NOT_CHAT).header()}, stream=False
            )
        try:
            session_id = session_id_for(messages, request.headers.get(SESSION_HEADER))
        except BadSessionId as exc:
            return openai_error(400, str(exc), "invalid_session_id")
        conversation = await self.conversation(session_id, data, messages, request)
        conversation.requests += 1
        plan = conversation.plan
        if plan.warm and not await self._fits(plan, messages, len(body), _max_tokens(data)):
            plan = plan.cold(COLD_CONTEXT)
        if plan.warm:
            body = encode_with_prefix(data, messages, plan)
        ours = {WARM_HEADER: plan.header(), SESSION_HEADER: session_id}
        if conversation.arm is not None:
            ours[ARM_HEADER] = conversation.arm
        streaming = data.get("stream") is True
        upstream = await self._send(request, body, streaming)
        if isinstance(upstream, Response):
            self._record(conversation, data, messages, None)
            return upstream
        headers = self._response_headers(upstream, ours)
        if streaming and upstream.status_code == 200:
            assembler = StreamAssembler() if self.settings.record else None

            def done() -> None:
                if assembler is not None:
                    _usage(conversation, assembler.usage)
                    self._record(conversation, data, messages, assembler.message())

            return UpstreamStream(
                upstream, headers, assembler.feed if assembler else None, on_complete=done
            )
        content = await self._read(upstream)
        if isinstance(content, Response):
            self._record(conversation, data, messages, None)
            return content
        if self.settings.record:
            reply = None
            if upstream.status_code == 200:
                try:
                    parsed = json.loads(content)
                except ValueError:
                    parsed = None
                reply = reply_message(parsed)
                _usage(conversation, parsed.get("usage") if isinstance(parsed, dict) else None)
            self._record(conversation, data, messages, reply)
        response = Response(content, upstream.status_code)
        response.raw_headers = [*headers, (b"content-length", str(len(content)).encode())]
        return response

    async def passthrough(self, request: Request) -> Response:
        """Any other ``/v1/*`` request: forwarded as it is, answered as the upstream answers."""
        try:
            body = await self._body(request)
        except BodyTooLarge:
            return self._too_large()
        return await self._forward(request, body, {}, stream=True)

    async def _forward(
        self, request: Request, body: bytes, ours: dict[str, str], *, stream: bool
    ) -> Response:
        upstream = await self._send(request, body, stream)
        if isinstance(upstream, Response):
            return upstream
        headers = self._response_headers(upstream, ours)
        if stream:
            return UpstreamStream(upstream, headers)
        content = await self._read(upstream)
        if isinstance(content, Response):
            return content
        response = Response(content, upstream.status_code)
        response.raw_headers = [*headers, (b"content-length", str(len(content)).encode())]
        return response

    async def _fits(self, plan: WarmPlan, messages: list[Any], size: int, reserve: int) -> bool:
        if plan.window is None or size <= plan.window - plan.tokens - reserve:
            return True
        return await anyio.to_thread.run_sync(fits, plan, messages, size, reserve)

    async def _body(self, request: Request) -> bytes:
        limit = self.settings.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_large(self) -> Response:
        limit = self.settings.max_body_bytes
        return openai_error(
            413,
            f"request body is larger than the proxy accepts ({limit:,} bytes; "
            "raise it with --max-body)",
            "body_too_large",
            headers={"connection": "close"},
        )

    async def _send(self, request: Request, body: bytes, stream: bool) -> httpx.Response | Response:
        path = request.url.path
        target = self.settings.upstream + path[3:]  # "/v1/x" -> "{upstream}/x"
        query = request.url.query
        if query:
            target += "?" + query
        headers = [
            (k, v)
            for k, v in request.headers.raw
            if k.decode("latin-1").lower() not in REQUEST_DROP
            and not k.lower().startswith(b"x-warmstart-")
        ]
        transport = self.transport()
        outgoing = httpx.Request(
            request.method,
            target,
            headers=headers,
            content=body,
            extensions={"timeout": self._timeout},
        )
        try:
            return await transport.handle_async_request(outgoing)
        except httpx.TimeoutException as exc:
            log.warning("upstream timed out: %s", _why(exc))
            return openai_error(
                504,
                f"the upstream did not answer in time ({_why(exc)})",
                "upstream_timeout",
                "upstream_error",
            )
        except httpx.ConnectError as exc:
            log.warning("upstream unreachable: %s", _why(exc))
            return openai_error(
                502,
                f"cannot reach the upstream at {self.settings.upstream} ({_why(exc)})",
                "upstream_unreachable",
                "upstream_error",
            )
        except httpx.HTTPError as exc:
            log.warning("upstream failed before answering: %s", _why(exc))
            return openai_error(
                502,
                f"the upstream closed the connection without answering ({_why(exc)})",
                "upstream_disconnected",
                "upstream_error",
            )

    async def _read(self, upstream: httpx.Response) -> bytes | Response:
        try:
            return await upstream.aread()
        except httpx.TimeoutException as exc:
            return openai_error(
                504,
                f"the upstream stopped sending its answer ({_why(exc)})",
                "upstream_timeout",
                "upstream_error",
            )
        except httpx.HTTPError as exc:
            return openai_error(
                502,
                f"the upstream broke off its answer ({_why(exc)})",
                "upstream_disconnected",
                "upstream_error",
            )
        finally:
            await upstream.aclose()

    @staticmethod
    def _response_headers(
        upstream: httpx.Response, ours: dict[str, str]
    ) -> list[tuple[bytes, bytes]]:
        headers = [
            (k.lower(), v)
            for k, v in upstream.headers.raw
            if k.decode("latin-1").lower() not in RESPONSE_DROP
        ]
        headers.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in ours.items())
        return headers


def create_app(settings: ProxySettings) -> Starlette:
    """The proxy as an ASGI app; ``app.state.proxy`` is its :class:`Proxy`."""
    proxy = Proxy(settings)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await proxy.start()
        try:
            yield
        finally:
            await proxy.close()

    async def not_found(request: Request) -> Response:
        return openai_error(
            404, f"the warmstart proxy serves /v1/* only, not {request.url.path}", "not_found"
        )

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", proxy.chat, methods=["POST"]),
            Route("/v1/{path:path}", proxy.passthrough, methods=PASS_METHODS),
            Route("/{path:path}", not_found, methods=PASS_METHODS),
        ],
        lifespan=lifespan,
    )
    app.state.proxy = proxy
    return app
