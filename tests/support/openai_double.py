"""The LLM test double: a real OpenAI-compatible HTTP server on loopback, scripted per test.

Why a server and not a mock: warmstart talks to models through the official ``openai``
client, proxies and probes over HTTP. Patching the client would test our guesses about
it; a real server on ``127.0.0.1`` tests the bytes that actually cross the wire (headers,
JSON bodies, SSE framing, status codes, ``Retry-After``), so the same double serves the
runtime, the proxy and the background-review tests. It is the only LLM double the
project allows.

What it speaks
--------------
* ``POST /v1/chat/completions``: a ``chat.completion`` JSON object, or, when the request
  has ``"stream": true``, ``text/event-stream`` chunks (``data: {...}\\n\\n`` ...
  ``data: [DONE]\\n\\n``, chunked transfer encoding) shaped like OpenAI's, including a
  final usage chunk when ``stream_options.include_usage`` is set.
* ``GET /v1/models``: ``{"object": "list", "data": [...]}`` built from ``models``; extra
  keys such as ``max_model_len`` (vLLM) or ``context_length`` are passed through.
* ``POST /api/show`` (Ollama) and ``GET /props`` (llama.cpp): 404 unless configured, so a
  probe test can pick which server family the double pretends to be.
* Anything else: 404 with an OpenAI-style error body.

Scripting
---------
Each chat request takes the next :class:`Reply` from a FIFO queue (:meth:`OpenAIDouble.enqueue`);
when the queue is empty the ``responder`` callable, if set, is asked instead with the
decoded request body, so a reply can depend on the request ("make a wrong call on the
first turn only when there is no warm history"). With neither, the double answers 500
``script exhausted`` so a test that sends more requests than it scripted fails loudly.

Replies are built with small helpers::

    text("All done.")                                # final assistant answer
    tool_calls(call("get_user", {"user_id": "a"}))   # one or more tool calls
    call("x", '{"broken": ')                         # str arguments are sent verbatim
    http_error(429, headers={"Retry-After": "0.05"}) # any status, body and headers
    raw({"whatever": 1})                             # a body sent as-is (malformed tests)
    drop()                                           # close the connection, no response
    text("late", delay=1.5)                          # any reply can be delayed

A responder may return a :class:`Reply`, a ``str`` (a text answer) or a ``dict`` (a JSON
body sent verbatim).

Inspecting
----------
``double.requests`` records every request (method, path, lower-cased headers, raw body,
decoded JSON); ``double.chat_requests`` is the JSON body of each chat request in order;
``double.requests_to("/v1/models")`` filters by path; ``double.errors`` holds exceptions
raised by a responder (they are also answered with a 500).

Example::

    with OpenAIDouble(models=[{"id": "m", "max_model_len": 32768}]) as double:
        double.enqueue(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
        client = OpenAI(base_url=double.base_url, api_key="test")
        ...
        assert double.chat_requests[1]["messages"][-1]["role"] == "tool"

In pytest use the ``openai_double`` fixture from :mod:`tests.support.fixtures`, which starts
a fresh double per test on a free port and stops it afterwards.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "OpenAIDouble",
    "RecordedRequest",
    "Reply",
    "Responder",
    "ScriptedCall",
    "call",
    "drop",
    "http_error",
    "raw",
    "text",
    "tool_calls",
]

DEFAULT_MODEL = "double-model"


@dataclass(frozen=True)
class ScriptedCall:
    """One tool call the double will return.

    ``arguments`` given as a mapping is JSON-encoded; given as a ``str`` it is sent
    verbatim, which is how a test scripts malformed JSON from the model.
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        """The arguments exactly as they go on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments))


@dataclass
class Reply:
    """One scripted answer: an assistant message, an HTTP error, a raw body or a drop.

    ``status`` other than 200 sends ``body`` (default: an OpenAI-style error object);
    ``body`` with status 200 replaces the rendered completion (for malformed replies);
    ``delay`` sleeps before answering (released early when the double stops);
    ``drop`` closes the connection without any response.
    """

    content: str | None = None
    tool_calls: list[ScriptedCall] = field(default_factory=list)
    finish_reason: str | None = None
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    usage: dict[str, int] | None = None
    drop: bool = False


Responder = Callable[[dict[str, Any]], "Reply | str | dict[str, Any]"]
"""A callable that builds the reply for a chat request from its decoded JSON body."""

Route = Any
"""A configured answer for a probe route: JSON value, :class:`Reply`, callable or None (404)."""


def text(content: str, **options: Any) -> Reply:
    """A final assistant answer (``finish_reason`` ``stop``)."""
    return Reply(content=content, **options)


def call(
    name: str, arguments: Mapping[str, Any] | str | None = None, id: str | None = None
) -> ScriptedCall:
    """A tool call for :func:`tool_calls`; ``id`` defaults to ``call_<n>``."""
    return ScriptedCall(name=name, arguments={} if arguments is None else arguments, id=id)


def tool_calls(*calls: ScriptedCall, content: str | None = None, **options: Any) -> Reply:
    """An assistant message carrying tool calls (``finish_reason`` ``tool_calls``)."""
    return Reply(content=content, tool_calls=list(calls), **options)


def http_error(
    status: int,
    message: str = "scripted error",
    *,
    headers: Mapping[str, str] | None = None,
    body: Any = None,
    delay: float = 0.0,
) -> Reply:
    """An HTTP error; the body defaults to OpenAI's ``{"error": {...}}`` shape."""
    if body is None:
        body = {"error": {"message": message, "type": "double_error", "param": None, "code": None}}
    return Reply(status=status, body=body, headers=dict(headers or {}), delay=delay)


def raw(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Reply:
    """A body sent as-is: JSON for dicts/lists, verbatim for ``str``/``bytes``."""
    return Reply(status=status, body=body, headers=dict(headers or {}))


def drop(delay: float = 0.0) -> Reply:
    """Close the connection without answering (a crashed or flaky upstream)."""
    return Reply(drop=True, delay=delay)


@dataclass
class RecordedRequest:
    """One request the double received, kept for assertions."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any
    at: float


class OpenAIDouble:
    """A scripted OpenAI-compatible server on a free loopback port (see module docs)."""

    def __init__(
        self,
        *,
        models: Route = None,
        ollama_show: Route = None,
        props: Route = None,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        """Configure the probe routes; ``api_key`` set means requests without it get 401.

        ``models`` defaults to one entry, ``double-model``; pass a list of dicts with extra
        keys (``max_model_len``, ``context_length``) to test probes, or a :class:`Reply`
        such as ``http_error(404)`` for a server without the route.
        """
        self.models: Route = [{"id": DEFAULT_MODEL}] if models is None else models
        self.ollama_show: Route = ollama_show
        self.props: Route = props
        self.api_key = api_key
        self.responder: Responder | None = None
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._host = host
        self._port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

    # lifecycle -----------------------------------------------------------------

    def start(self) -> OpenAIDouble:
        """Bind the port and serve on a daemon thread; returns ``self``."""
        if self._server is not None:
            return self
        server = ThreadingHTTPServer((self._host, self._port), _Handler)
        server.daemon_threads = True
        server.block_on_close = False
        server.double = self  # type: ignore[attr-defined]
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="openai-double",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, release delayed replies and close the socket."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:  # end kept-alive connections too, as a real server going down would
            connections, self._connections = list(self._connections), set()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (only meaningful once started)."""
        if self._server is None:
            raise RuntimeError("the double is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The server root, e.g. ``http://127.0.0.1:54321`` (Ollama/llama.cpp style)."""
        return f"http://{self._host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``{url}/v1``, as a client's ``base_url`` expects."""
        return f"{self.url}/v1"

    # scripting -----------------------------------------------------------------

    def enqueue(self, *replies: Reply | str) -> OpenAIDouble:
        """Append replies to the queue (a ``str`` is a text answer); returns ``self``."""
        with self._lock:
            for reply in replies:
                self._queue.append(text(reply) if isinstance(reply, str) else reply)
        return self

    @property
    def pending(self) -> int:
        """How many queued replies have not been served yet."""
        with self._lock:
            return len(self._queue)

    def clear(self) -> None:
        """Forget queued replies, the responder, recorded requests and errors."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.errors.clear()
            self.responder = None

    # inspection ----------------------------------------------------------------

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """Recorded requests whose path (without query) equals ``path``."""
        with self._lock:
            return [r for r in self.requests if r.path.split("?", 1)[0] == path]

    @property
    def chat_requests(self) -> list[Any]:
        """Decoded JSON bodies of every ``/v1/chat/completions`` request, in order."""
        return [r.json for r in self.requests_to("/v1/chat/completions")]

    # internals used by the handler ---------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_reply(self, body: dict[str, Any]) -> Reply | dict[str, Any]:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            responder = self.responder
        if responder is None:
            return http_error(500, "openai double: script exhausted (no reply queued)")
        try:
            produced = responder(body)
        except Exception as exc:  # a bug in the test's responder: surface it
            self.errors.append(exc)
            return http_error(500, f"openai double: responder raised {exc!r}")
        if isinstance(produced, str):
            return text(produced)
        return produced

    def _next_id(self) -> int:
        return next(self._ids)


class _Handler(BaseHTTPRequestHandler):
    """Routes one request; HTTP/1.1 so clients keep connections alive as with real APIs."""

    protocol_version = "HTTP/1.1"
    server_version = "openai-double/1"
    disable_nagle_algorithm = True  # else headers and body wait on delayed ACKs (~40 ms)

    @property
    def double(self) -> OpenAIDouble:
        return self.server.double  # type: ignore[attr-defined]

    def setup(self) -> None:
        super().setup()
        with self.double._lock:
            self.double._connections.add(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        with self.double._lock:
            self.double._connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: pytest output is for the tests."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            decoded: Any = json.loads(body) if body else None
        except ValueError:
            decoded = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.double._record(
            RecordedRequest(method, self.path, headers, body, decoded, time.monotonic())
        )
        path = self.path.split("?", 1)[0]
        key = self.double.api_key
        if (
            key is not None
            and path.startswith("/v1/")
            and headers.get("authorization") != f"Bearer {key}"
        ):
            self._send_reply(http_error(401, "invalid api key"))
            return
        if method == "POST" and path == "/v1/chat/completions":
            self._chat(decoded if isinstance(decoded, dict) else {})
        elif method == "GET" and path == "/v1/models":
            self._route(self.double.models, decoded, wrap_models=True)
        elif method == "POST" and path == "/api/show":
            self._route(self.double.ollama_show, decoded)
        elif method == "GET" and path == "/props":
            self._route(self.double.props, decoded)
        else:
            self._send_reply(http_error(404, f"no route for {method} {path}"))

    # routes --------------------------------------------------------------------

    def _route(self, value: Route, request_json: Any, wrap_models: bool = False) -> None:
        if callable(value) and not isinstance(value, Reply):
            value = value(request_json)
        if value is None:
            self._send_reply(http_error(404, "not found"))
        elif isinstance(value, Reply):
            self._send_reply(value)
        elif wrap_models and isinstance(value, list):
            data = [
                {"object": "model", "created": 0, "owned_by": "openai-double", **entry}
                for entry in value
            ]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(200, value)

    def _chat(self, request: dict[str, Any]) -> None:
        reply = self.double._next_reply(request)
        if isinstance(reply, dict):
            self._send_json(200, reply)
            return
        if not self._wait(reply.delay):
            return
        if reply.drop or reply.status != 200 or reply.body is not None:
            self._send_reply(reply, delayed=True)
            return
        model = str(request.get("model") or DEFAULT_MODEL)
        number = self.double._next_id()
        calls = [
            {
                "id": c.id or f"call_{number}_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json()},
            }
            for i, c in enumerate(reply.tool_calls)
        ]
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        usage = reply.usage or _usage(request, reply)
        if request.get("stream"):
            options = request.get("stream_options") or {}
            self._stream(number, model, reply.content, calls, finish, usage, options)
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if calls:
            message["tool_calls"] = calls
        self._send_json(
            200,
            {
                "id": f"chatcmpl-double-{number}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
                ],
                "usage": usage,
            },
            reply.headers,
        )

    def _stream(
        self,
        number: int,
        model: str,
        content: str | None,
        calls: list[dict[str, Any]],
        finish: str,
        usage: dict[str, int],
        options: Mapping[str, Any],
    ) -> None:
        base = {
            "id": f"chatcmpl-double-{number}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
            return {**base, "choices": [choice]}

        events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
        for piece in _pieces(content or ""):
            events.append(chunk({"content": piece}))
        for index, c in enumerate(calls):
            head = {
                "index": index,
                "id": c["id"],
                "type": "function",
                "function": {"name": c["function"]["name"], "arguments": ""},
            }
            events.append(chunk({"tool_calls": [head]}))
            for piece in _pieces(c["function"]["arguments"], parts=2):
                events.append(
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                )
        events.append(chunk({}, finish))
        if options.get("include_usage"):
            events.append({**base, "choices": [], "usage": usage})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in events:
            self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # low-level -----------------------------------------------------------------

    def _wait(self, delay: float) -> bool:
        """Sleep ``delay`` seconds unless the double stops first (then drop the request)."""
        if delay > 0 and self.double._stopping.wait(delay):
            self.close_connection = True
            return False
        return True

    def _send_reply(self, reply: Reply, delayed: bool = False) -> None:
        if not delayed and not self._wait(reply.delay):
            return
        if reply.drop:
            self.close_connection = True
            return
        body = reply.body
        if isinstance(body, bytes):
            payload = body
        elif isinstance(body, str):
            payload = body.encode()
        else:
            payload = json.dumps(body).encode()
        self._send_bytes(reply.status, payload, reply.headers)

    def _send_json(self, status: int, value: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(value).encode(), headers)

    def _send_bytes(self, status: int, payload: bytes, headers: Mapping[str, str] | None) -> None:
        self.send_response(status)
        extra = dict(headers or {})
        if not any(k.lower() == "content-type" for k in extra):
            self.send_header("Content-Type", "application/json")
        for key, value in extra.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _pieces(value: str, parts: int = 3) -> Iterator[str]:
    """Split a string into up to ``parts`` non-empty pieces, as a stream would."""
    if not value:
        return
    size = max(1, -(-len(value) // parts))
    for start in range(0, len(value), size):
        yield value[start : start + size]


def _usage(request: Mapping[str, Any], reply: Reply) -> dict[str, int]:
    """Deterministic token counts (about 4 characters a token) so usage totals are testable."""
    prompt = max(1, len(json.dumps(request.get("messages", []))) // 4)
    completion_text = (reply.content or "") + "".join(
        c.name + c.arguments_json() for c in reply.tool_calls
    )
    completion = max(1, len(completion_text) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
