"""Writing proxied conversations to the store, off the request path.

A request must not wait for a database: :class:`Writer` runs store writes on one
background thread. Jobs carry a key and a newer job replaces a pending one with the
same key, so a chatty conversation is written once per burst, not once per request.
Each write stores the whole conversation as the client sees it (the warm prefix is
never part of it) plus the last reply, as a session with source ``proxy``.

What is stored is messages and metadata only: no request header (so no upstream
credential) ever reaches the store.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from warmstart.model import ROLES, Message, Session, ToolCallSpec
from warmstart.proxy.conversation import Conversation
from warmstart.proxy.warm import content_text, task_text, tool_names

log = logging.getLogger("warmstart.proxy")

SOURCE = "proxy"


class Writer:
    """One background thread running store jobs in order, coalescing jobs by key."""

    def __init__(self, name: str = "warmstart-proxy-writer") -> None:
        self._pending: OrderedDict[Any, Callable[[], None]] = OrderedDict()
        self._cond = threading.Condition()
        self._busy = False
        self._closed = False
        self._ids = itertools.count()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None], key: Any = None) -> None:
        """Queue ``job``; a pending job with the same ``key`` is replaced by this one."""
        with self._cond:
            if self._closed:
                return
            if key is None:
                key = ("job", next(self._ids))
            self._pending.pop(key, None)
            self._pending[key] = job
            self._cond.notify()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued job has run; False when ``timeout`` passes first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float = 10.0) -> bool:
        """Run what is queued (up to ``timeout``), then stop the thread."""
        done = self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=1.0)
        return done

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending:
                    return
                _key, job = self._pending.popitem(last=False)
                self._busy = True
            try:
                job()
            except Exception:  # a failed write must never stop the writer
                log.exception("background store write failed")
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


class StreamAssembler:
    """Rebuilds the assistant message from OpenAI SSE chunks as they pass through."""

    def __init__(self) -> None:
        self._buffer = b""
        self._content: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.events = 0

    def feed(self, chunk: bytes) -> None:
        """Consume raw stream bytes (any split); complete events are parsed."""
        self._buffer += chunk
        while True:
            cut = _event_end(self._buffer)
            if cut is None:
                return
            event, self._buffer = self._buffer[: cut[0]], self._buffer[cut[1] :]
            self._event(event)

    def _event(self, event: bytes) -> None:
        for line in event.splitlines():
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if not payload or payload == b"[DONE]":
                continue
            try:
                data = json.loads(payload)
            except ValueError:
                continue
            if isinstance(data, dict):
                self.events += 1
                self._apply(data)

    def _apply(self, data: dict[str, Any]) -> None:
        if isinstance(data.get("usage"), dict):
            self.usage = data["usage"]
        for choice in data.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                continue
            if isinstance(delta.get("content"), str):
                self._content.append(delta["content"])
            for call in delta.get("tool_calls") or ():
                if not isinstance(call, dict):
                    continue
                slot = self._calls.setdefault(
                    int(call.get("index", 0)), {"id": None, "name": "", "arguments": []}
                )
                if call.get("id"):
                    slot["id"] = call["id"]
                function = call.get("function") or {}
                if isinstance(function.get("name"), str):
                    slot["name"] += function["name"]
                if isinstance(function.get("arguments"), str):
                    slot["arguments"].append(function["arguments"])

    def message(self) -> dict[str, Any] | None:
        """The assembled assistant message, or None when no chunk carried one."""
        if not self.events:
            return None
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self._content) if self._content else None,
        }
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": slot["id"],
                    "type": "function",
                    "function": {"name": slot["name"], "arguments": "".join(slot["arguments"])},
                }
                for _, slot in sorted(self._calls.items())
            ]
        return message


def _event_end(buffer: bytes) -> tuple[int, int] | None:
    """Where the first SSE event in ``buffer`` ends and the next starts, if complete."""
    best: tuple[int, int] | None = None
    for sep in (b"\n\n", b"\r\n\r\n", b"\r\r"):
        at = buffer.find(sep)
        if at >= 0 and (best is None or at < best[0]):
            best = (at, at + len(sep))
    return best


def reply_message(body: Any) -> dict[str, Any] | None:
    """The first choice's message of a non-streamed chat completion."""
    if not isinstance(body, dict):
        return None
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return message
    return None


def to_message(raw: Any) -> Message | None:
    """An OpenAI chat message as a store :class:`Message` (None for unusable items)."""
    if not isinstance(raw, dict):
        return None
    role = {"developer": "system", "function": "tool"}.get(str(raw.get("role")), raw.get("role"))
    if role not in ROLES:
        return None
    content = raw.get("content")
    text = content_text(content)
    if text is None and content is not None and not isinstance(content, str):
        text = json.dumps(content, ensure_ascii=False, default=str)
    calls: list[ToolCallSpec] = []
    for call in raw.get("tool_calls") or ():
        if not isinstance(call, dict):
            continue
        function = call.get("function") or {}
        arguments = function.get("arguments", "")
        calls.append(
            ToolCallSpec(
                id=call.get("id"),
                name=str(function.get("name") or ""),
                arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
            )
        )
    legacy = raw.get("function_call")
    if isinstance(legacy, dict) and legacy.get("name"):
        arguments = legacy.get("arguments", "")
        calls.append(
            ToolCallSpec(
                None,
                str(legacy["name"]),
                arguments if isinstance(arguments, str) else json.dumps(arguments),
            )
        )
    tool_call_id = raw.get("tool_call_id")
    name = raw.get("name")
    return Message(
        role=str(role),
        content=text,
        tool_calls=calls,
        tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
        name=name if isinstance(name, str) else None,
    )


def build_session(
    conversation: Conversation,
    messages: Sequence[Any],
    reply: dict[str, Any] | None,
    *,
    model: str | None,
    tools: Any,
    ab: bool,
) -> Session:
    """The conversation as a store session: the client's messages and the last reply."""
    plan = conversation.plan
    converted = [m for m in (to_message(raw) for raw in messages) if m is not None]
    if reply is not None:
        answer = to_message({**reply, "role": "assistant"})
        if answer is not None:
            converted.append(answer)
    metadata: dict[str, Any] = {
        "warm": plan.warm,
        "template": plan.template,
        "template_version": plan.version,
        "warm_examples": plan.examples,
        "warm_tokens": plan.tokens,
        "requests": conversation.requests,
        "prompt_tokens": conversation.prompt_tokens,
        "completion_tokens": conversation.completion_tokens,
    }
    if not plan.warm:
        metadata["cold_reason"] = plan.reason
    if ab and conversation.arm is not None:
        metadata["arm"] = conversation.arm
    names = tool_names(tools)
    title = task_text(messages)
    return Session(
        source=SOURCE,
        external_id=conversation.id,
        messages=converted,
        tools=names or None,
        model=model,
        started_at=conversation.started_at,
        ended_at=time.time(),
        title=title[:200] if title else None,
        origin=SOURCE,
        metadata=metadata,
    )


def write_session(session: Session, db: str | None) -> None:
    """Mine and store one session (runs on the writer thread)."""
    from warmstart.ingestion import record_session

    record_session(session, db)
