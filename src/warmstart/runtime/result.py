"""What a run returns: the conversation, every call with its outcome, and how it ended.

Failures are data here, never exceptions: an evaluation compares error rates across
runs, so a refused call, a hung tool or a dead endpoint must be countable afterwards.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from warmstart.model import Message, Session, ToolCallSpec

log = logging.getLogger(__name__)

SESSION_SOURCE = "warmstart-eval"

StopReason = Literal[
    "final_answer",  # the model answered without calling a tool
    "max_turns",  # the turn limit came first
    "truncated",  # the final answer stopped at the output token limit
    "endpoint_error",  # connection refused, timeout, or an HTTP error not retried
    "bad_response",  # the endpoint answered with something that is not a completion
    "context_too_small",  # the guard refused before the first request
    "config_error",  # a setting (e.g. the configured context length) is invalid
    "internal_error",  # a bug in warmstart itself; the traceback is logged
]
ERROR_STOPS = frozenset(
    {"endpoint_error", "bad_response", "context_too_small", "config_error", "internal_error"}
)


@dataclass
class CallRecord:
    """One tool call the model made and what became of it.

    ``error_kind`` is one of ``not_whitelisted``, ``unknown_tool``, ``bad_arguments``,
    ``approval_denied``, ``exception``, ``timeout``; ``approval`` is ``allowed``,
    ``denied``, ``held-allowed``, ``held-denied``, ``not_required`` or None (never asked).
    """

    turn: int
    call_id: str
    tool: str
    arguments: str
    ok: bool
    result: str
    error: str | None = None
    error_kind: str | None = None
    approval: str | None = None
    held_seconds: float = 0.0
    duration: float = 0.0
    detail: str | None = None


@dataclass
class RunError:
    """A problem the run met: ``kind`` is ``connection``, ``timeout``, ``http_status``,
    ``rate_limited``, ``bad_response``, ``context``, ``config``, ``warm_history``,
    ``record`` or ``internal``; ``retried`` says the runtime tried again after it."""

    kind: str
    message: str
    turn: int | None = None
    status: int | None = None
    retried: bool = False


@dataclass
class Usage:
    """Token counts summed over every completion of the run, as the endpoint reported."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass
class RunResult:
    """One run: ``messages`` is everything sent and received, warm history included.

    ``task`` is the raw task text as given, before any hint or warm history was added;
    routing and selection use it. The warm history occupies ``messages[warm_start:
    warm_start + warm_count]``.
    """

    run_id: str
    task: str
    model: str
    provider: str
    base_url: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = "final_answer"
    errors: list[RunError] = field(default_factory=list)
    final_answer: str | None = None
    tools_offered: list[str] = field(default_factory=list)
    warm_start: int = 0
    warm_count: int = 0
    warm_dropped: int = 0
    warm_tokens: int = 0
    context_length: int | None = None
    context_source: str | None = None
    runtime_hint: str | None = None
    started_at: float = 0.0
    ended_at: float = 0.0
    arm: str | None = None
    seed: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    recorded: bool = False

    @property
    def ok(self) -> bool:
        """Whether the run ended with a final answer."""
        return self.stop_reason == "final_answer"

    @property
    def failed_calls(self) -> list[CallRecord]:
        """The calls that did not succeed, in order."""
        return [c for c in self.calls if not c.ok]

    @property
    def conversation(self) -> list[dict[str, Any]]:
        """The messages without the warm history: the run's own experience."""
        return self.messages[: self.warm_start] + self.messages[self.warm_start + self.warm_count :]

    def to_session(self) -> Session:
        """This run as a store :class:`~warmstart.model.Session` (source ``warmstart-eval``).

        The warm history is left out so mining a warm run never re-learns its own priming;
        how much there was is kept in the metadata.
        """
        conversation = self.conversation
        messages = [_to_message(m) for m in conversation]
        fingerprint = hashlib.sha256(
            json.dumps(conversation, sort_keys=True, default=str).encode()
        ).hexdigest()
        if self.stop_reason == "final_answer":
            end_reason = "agent_close"
        elif self.stop_reason in ERROR_STOPS:
            end_reason = "error"
        else:
            end_reason = self.stop_reason
        return Session(
            source=SESSION_SOURCE,
            external_id=self.run_id,
            messages=messages,
            tools=list(self.tools_offered),
            outcome=None,
            model=self.model,
            started_at=self.started_at,
            ended_at=self.ended_at,
            end_reason=end_reason,
            title=self.task[:80],
            origin=self.base_url or "",
            fingerprint=fingerprint,
            metadata={
                **self.metadata,
                "arm": self.arm,
                "model": self.model,
                "seed": self.seed,
                "provider": self.provider,
                "stop_reason": self.stop_reason,
                "turns": self.turns,
                "usage": asdict(self.usage),
                "task": self.task,
                "warm_messages": self.warm_count,
                "warm_dropped": self.warm_dropped,
                "context_length": self.context_length,
                "errors": [asdict(e) for e in self.errors],
            },
        )

    def record(self, db_url: str | None = None) -> bool:
        """Store the run through ``warmstart.ingestion.record_session`` when it exists.

        Returns whether it was stored. A missing ingest module is skipped with a log line;
        a store failure is appended to ``errors``; neither raises.
        """
        try:
            from warmstart.ingestion import record_session  # type: ignore[import-not-found,unused-ignore]
        except ModuleNotFoundError as exc:
            if exc.name not in ("warmstart.ingestion", "warmstart"):
                self.errors.append(RunError("record", f"cannot import the store: {exc}"))
                return False
            log.info("warmstart.ingestion is not available; run %s not recorded", self.run_id)
            self.metadata["record_skipped"] = "warmstart.ingestion not available"
            return False
        except ImportError as exc:
            self.errors.append(RunError("record", f"cannot import the store: {exc}"))
            return False
        try:
            record_session(self.to_session(), db_url)
        except Exception as exc:  # the store's failure must not lose the caller's result
            log.warning("could not record run %s: %s", self.run_id, exc)
            self.errors.append(RunError("record", f"{type(exc).__name__}: {exc}"))
            return False
        self.recorded = True
        return True


def _to_message(message: dict[str, Any]) -> Message:
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    calls = [
        ToolCallSpec(
            id=call.get("id"),
            name=str(call.get("function", {}).get("name", "")),
            arguments=str(call.get("function", {}).get("arguments", "")),
        )
        for call in message.get("tool_calls") or ()
    ]
    return Message(
        role=str(message.get("role", "")),
        content=content,
        tool_calls=calls,
        tool_call_id=message.get("tool_call_id"),
        name=message.get("name"),
    )
