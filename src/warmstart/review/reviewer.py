"""The background reviewer: after a turn, replay the conversation and save what it taught.

``Reviewer(config).maybe_review(messages, turn_stats)`` counts the turn (see
:mod:`warmstart.review.triggers`) and, when a review is due, snapshots the messages and
returns at once while a daemon thread runs the review; ``review_now(messages, kind)``
runs one synchronously. As the runtime's ``reviewer`` hook it is called after every
final answer.

How a review runs, and why:

* **A fork of the main run, not a new conversation.** It uses the main run's
  endpoint, model, credentials and HTTP client, and sends the conversation exactly as
  the main run last sent it (the same system prompt, byte for byte) with the review
  prompt appended as one more user message. A provider's prefix cache therefore
  serves the whole replay, and the review costs little more than its own turns.
* **Only memory and skill tools.** The run's whitelist is exactly ``memory``,
  ``skill_manage``, ``skills_list`` and ``skill_view``; any other call (including the
  main agent's own tools, which are registered as never-running stubs so the refusal
  names them as not allowed rather than unknown) gets a denial result and nothing
  runs. The approval hook (:func:`~warmstart.review.safety.review_approval`) denies
  other tools again and every dangerous command. At most ``max_turns`` requests (16).
* **Invisible while it runs.** Its thread's prints and console log records are dropped
  (:mod:`warmstart.review.quiet`); afterwards one summary line is printed to stderr
  and handed to the callback.
* **Side-effect free for the main run.** It works on a deep copy of the messages,
  never records a session, and whatever goes wrong (an endpoint error, a malformed
  reply, an exception in warmstart itself) ends as a failed :class:`ReviewOutcome`
  after the teardown in ``finally`` has run; the main run has already returned.
"""

from __future__ import annotations

import copy
import json
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from warmstart.review.config import ReviewConfig, ReviewKind, check_kind
from warmstart.review.errors import ReviewError, StoreWriteError
from warmstart.review.memory_store import FILENAMES, TARGETS, joined_length
from warmstart.review.provenance import BACKGROUND_REVIEW, Provenance
from warmstart.review.quiet import thread_silence
from warmstart.review.safety import REVIEW_TOOLS, review_approval
from warmstart.review.summary import deliver, format_summary, summarize_actions
from warmstart.review.tools import WRITE_TOOLS, ReviewTools, tool_result
from warmstart.review.triggers import Triggers, TurnStats
from warmstart.runtime.loop import Runtime
from warmstart.runtime.result import CallRecord, RunResult
from warmstart.runtime.tools import ToolRegistry

log = logging.getLogger(__name__)

REPLAY_WINDOW = 10_000_000
"""Context length given to the review runtime so it never trims or probes: the
conversation already fit the model when the main run sent it."""

TOOL_NOTE = (
    "You can only call the memory and skill tools ({tools}). Any other tool is denied "
    "and nothing runs, so do not try."
)


@dataclass
class ReviewOutcome:
    """What one review did: the summary line, the writes it made, and how it ended.

    ``changes`` holds the successful write results (tool, call id, arguments, result);
    ``denied`` the calls that were refused; ``error`` an exception in warmstart itself.
    """

    kind: ReviewKind
    summary: str | None = None
    actions: list[str] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    denied: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "not_started"
    errors: list[str] = field(default_factory=list)
    error: str | None = None
    session_id: str | None = None
    started_at: float = 0.0
    ended_at: float = 0.0
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the review ran to an answer (or its turn limit) without failing."""
        return self.error is None and self.stop_reason in ("final_answer", "max_turns")

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json`` and logs."""
        data = asdict(self)
        data["ok"] = self.ok
        return data


class Reviewer:
    """Decides when to review, runs reviews in the background, and reports what changed."""

    def __init__(
        self,
        config: ReviewConfig | None = None,
        *,
        runtime: Runtime | None = None,
        callback: Callable[[str], object] | None = None,
    ) -> None:
        """``runtime`` is the main run's, to inherit its endpoint when not called as its
        hook; ``callback`` receives each summary line (also printed to stderr unless
        ``config.notifications`` is off)."""
        self.config = config or ReviewConfig()
        self.runtime = runtime
        self.callback = callback
        self.triggers = Triggers(self.config.memory_every, self.config.skills_every)
        self.outcomes: deque[ReviewOutcome] = deque(maxlen=50)
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()

    @property
    def home(self) -> Path:
        """The store home reviews write to."""
        return self.config.resolved_home

    @property
    def active(self) -> int:
        """Reviews running in the background right now."""
        with self._lock:
            return sum(1 for t in self._threads if t.is_alive())

    # entry points ------------------------------------------------------------------

    def __call__(
        self, messages: list[dict[str, Any]], result: RunResult, runtime: Runtime
    ) -> ReviewKind | None:
        """The runtime's ``reviewer`` hook: count the finished run, maybe start a review."""
        session_id = self.config.session_id or result.run_id
        return self.maybe_review(
            messages, TurnStats.from_run(result), runtime=runtime, session_id=session_id
        )

    def maybe_review(
        self,
        messages: Sequence[Mapping[str, Any]],
        turn_stats: TurnStats,
        *,
        runtime: Runtime | None = None,
        session_id: str | None = None,
    ) -> ReviewKind | None:
        """Count the turn; when a review is due start it in the background and return
        its kind at once (None: nothing due, or reviews are disabled)."""
        if not self.config.enabled:
            return None
        kind = self.triggers.observe(turn_stats)
        if kind is not None:
            self.start(messages, kind, runtime=runtime, session_id=session_id)
        return kind

    def start(
        self,
        messages: Sequence[Mapping[str, Any]],
        kind: str = "both",
        *,
        runtime: Runtime | None = None,
        session_id: str | None = None,
    ) -> threading.Thread:
        """Run a review of ``kind`` on a daemon thread now, whatever the triggers say.

        The messages are copied before this returns, so the caller may keep changing
        its own list.
        """
        checked = check_kind(kind)
        snapshot = snapshot_messages(messages)
        thread = threading.Thread(
            target=self._background,
            args=(snapshot, checked, runtime, session_id),
            name=f"warmstart-review-{checked}",
            daemon=True,
        )
        with self._lock:
            self._threads = {t for t in self._threads if t.is_alive()}
            self._threads.add(thread)
        thread.start()
        return thread

    def wait(self, timeout: float | None = None) -> bool:
        """Block until background reviews finish; False if some still run at ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            thread.join(remaining)
        return not any(t.is_alive() for t in threads)

    def review_now(
        self,
        messages: Sequence[Mapping[str, Any]],
        kind: str = "both",
        *,
        runtime: Runtime | None = None,
        session_id: str | None = None,
    ) -> ReviewOutcome:
        """Run one review synchronously and return what it did.

        Raises :class:`~warmstart.errors.ConfigError` before starting when the kind or
        endpoint is unusable (no model); everything that goes wrong once it runs ends
        in the outcome instead (``error``, ``errors``, ``stop_reason``).
        """
        checked = check_kind(kind)
        snapshot = snapshot_messages(messages)
        session = session_id or self.config.session_id
        tools = ReviewTools.at_home(
            self.home,
            provenance=Provenance(
                write_origin=BACKGROUND_REVIEW,
                session_id=session,
                parent_session_id=self.config.parent_session_id,
                platform=self.config.platform,
            ),
            memory_limit=self.config.memory_char_limit,
            user_limit=self.config.user_char_limit,
            write_approval=self.config.write_approval,
        )
        main = runtime or self.runtime
        review_runtime = self._review_runtime(main, tools)
        outcome = ReviewOutcome(kind=checked, session_id=session, started_at=time.time())
        try:
            with thread_silence():
                try:
                    prompt = self.prompt(checked, tools)
                    run = review_runtime.run(
                        prompt,
                        warm=snapshot,
                        whitelist=REVIEW_TOOLS,
                        metadata={"review_kind": checked, "reviewed_session": session},
                    )
                    self._fill(outcome, run, snapshot)
                except Exception as exc:  # a warmstart bug: the review fails, nothing else
                    outcome.error = f"{type(exc).__name__}: {exc}"
                    outcome.stop_reason = "internal_error"
                    log.debug("review failed", exc_info=True)
        finally:
            review_runtime.close()
            outcome.ended_at = time.time()
            self.outcomes.append(outcome)
        self._announce(outcome)
        return outcome

    # internals ---------------------------------------------------------------------

    def _background(
        self,
        snapshot: list[dict[str, Any]],
        kind: ReviewKind,
        runtime: Runtime | None,
        session_id: str | None,
    ) -> None:
        """Thread body: a review that cannot even start is recorded, never raised."""
        try:
            self.review_now(snapshot, kind, runtime=runtime, session_id=session_id)
        except BaseException as exc:
            failed = ReviewOutcome(kind=kind, session_id=session_id, started_at=time.time())
            failed.error = f"{type(exc).__name__}: {exc}"
            failed.stop_reason = "config_error"
            failed.ended_at = time.time()
            self.outcomes.append(failed)
            log.debug("background review could not start", exc_info=True)

    def _review_runtime(self, main: Runtime | None, tools: ReviewTools) -> Runtime:
        """A runtime that talks to the main run's endpoint with only the review tools."""
        registry = ToolRegistry()
        tools.register(registry)
        if main is not None:
            for tool in main.registry:
                if tool.name not in registry:
                    registry.register(tool.name, _never_runs, schema=tool.schema)
        options: dict[str, Any] = {
            "approval": tools.track(review_approval),
            "max_turns": self.config.max_turns,
            "tool_timeout": None,  # file writes with their own lock timeout; same thread
            "context_length": REPLAY_WINDOW,
            "min_context": None,
            "warm_share": 1.0,
            "hint": False,  # the replayed system prompt already carries the main hint
            "record": False,  # never a session of its own, never the main one
        }
        if main is None:
            return Runtime(
                registry,
                model=self.config.model,
                base_url=self.config.base_url,
                api_key=self.config.api_key,
                request_timeout=self.config.request_timeout,
                **options,
            )
        endpoint = main.endpoint
        return Runtime(
            registry,
            model=endpoint.model,
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            provider=endpoint.provider,
            client=main.client,
            request_timeout=main.request_timeout,
            max_retries=main.max_retries,
            max_retry_wait=main.max_retry_wait,
            temperature=main.temperature,
            **options,
        )

    def prompt(self, kind: ReviewKind, tools: ReviewTools | None = None) -> str:
        """The review's user message: the prompt, the tool rule, and current memory."""
        parts = [self.config.prompt(kind), TOOL_NOTE.format(tools=", ".join(REVIEW_TOOLS))]
        if kind in ("memory", "both") and tools is not None:
            parts.append(_memory_snapshot(tools))
        return "\n\n".join(parts)

    def _fill(self, outcome: ReviewOutcome, run: RunResult, snapshot: list[dict[str, Any]]) -> None:
        outcome.stop_reason = run.stop_reason
        outcome.errors = [f"{e.kind}: {e.message}" for e in run.errors]
        outcome.messages = run.messages[len(snapshot) :]
        outcome.actions = summarize_actions(run.messages, snapshot)
        outcome.summary = format_summary(outcome.actions)
        for call in run.calls:
            if not call.ok:
                outcome.denied.append(_call_dict(call))
                continue
            if call.tool in WRITE_TOOLS and _succeeded(call.result):
                outcome.changes.append(_call_dict(call))
            elif call.tool in WRITE_TOOLS:
                outcome.errors.append(f"{call.tool} refused: {_message(call.result)}")

    def _announce(self, outcome: ReviewOutcome) -> None:
        """After the silence: one line on stderr (when enabled) and to the callback."""
        if outcome.summary is None:
            return
        if self.config.notifications:
            try:
                sys.stderr.write(outcome.summary + "\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
        deliver(outcome.summary, self.callback)


def snapshot_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A deep copy of OpenAI messages, refusing anything that is not one."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ReviewError("messages must be a list of OpenAI chat messages")
    snapshot = []
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise ReviewError(f"message {position} is not an OpenAI chat message with a role")
        snapshot.append(copy.deepcopy(dict(message)))
    return snapshot


def _never_runs(args: dict[str, Any]) -> str:
    """Stands in for a main-run tool: registered so refusals name it, never executed."""
    return tool_result(False, "this tool is not available in a background review")


def _memory_snapshot(tools: ReviewTools) -> str:
    """Current entries, so the reviewer can name them exactly in replace/remove."""
    lines = ["Current memory:"]
    store = tools.memory_store
    for target in TARGETS:
        name = FILENAMES[target]
        try:
            entries = store.entries(target)
        except StoreWriteError as exc:
            lines.append(f"{name} ({target}): cannot be read: {exc.message}")
            continue
        used, limit = joined_length(entries), store.limit(target)
        if not entries:
            lines.append(f"{name} ({target}, 0/{limit:,} characters): empty")
            continue
        lines.append(f"{name} ({target}, {used:,}/{limit:,} characters):")
        lines.extend(f"- {entry}" for entry in entries)
    return "\n".join(lines)


def _succeeded(result: str) -> bool:
    try:
        data = json.loads(result)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("success") is True


def _message(result: str) -> str:
    try:
        data = json.loads(result)
    except ValueError:
        return result[:200]
    return str(data.get("message", result))[:200] if isinstance(data, dict) else result[:200]


def _call_dict(call: CallRecord) -> dict[str, Any]:
    return {
        "tool": call.tool,
        "call_id": call.call_id,
        "arguments": call.arguments,
        "result": call.result,
        "error_kind": call.error_kind,
    }
