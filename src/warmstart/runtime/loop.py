"""The agent loop: ask the model, run the tools it calls, repeat until it answers.

It is deliberately small (one request per turn, tools run in order) because its job is
to be a faithful, measurable harness for warm starts, not a framework: everything that
can go wrong outside warmstart (the endpoint, the model's output, the tools) ends up in
the :class:`RunResult` as data, and ``run()`` never raises for it.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import openai
from openai import OpenAI

from warmstart.errors import ConfigError, ContextWindowTooSmall
from warmstart.runtime.approval import (
    ApprovalHook,
    Decision,
    ToolRequest,
    default_approval,
    is_unattended,
)
from warmstart.runtime.budget import Shrinker, WarmMessage, count_tokens, drop_examples_to_fit
from warmstart.runtime.context import (
    CONTEXT_LENGTH_ENV,
    DEFAULT_MINIMUM,
    DEFAULT_WARM_SHARE,
    ContextLength,
    resolve_context_length,
    warm_budget,
)
from warmstart.runtime.endpoint import Endpoint, resolve_endpoint
from warmstart.runtime.result import CallRecord, RunError, RunResult
from warmstart.runtime.tools import Tool, ToolRegistry, run_tool

log = logging.getLogger(__name__)

WarmSource = Sequence[Mapping[str, Any]] | Callable[[str], Sequence[Mapping[str, Any]]]
"""Warm messages, or a function that picks them from the raw task text."""

RETRY_STATUSES = frozenset({429, 503})

ReviewHook = Callable[[list[dict[str, Any]], RunResult, "Runtime"], object]
"""Called after each final answer with the run's messages (a copy), its result and the
runtime, e.g. :class:`warmstart.review.Reviewer`, which decides whether a background
review is due. It must return quickly; whatever it raises is logged, never re-raised."""


@lru_cache(maxsize=1)
def _shared_http_client(pid: int) -> openai.DefaultHttpxClient:
    """One HTTP client per process, shared by every :class:`Runtime`.

    Building a client loads the CA store (about 0.1 s), which would otherwise be paid by
    each runtime; the client is thread-safe and pools connections per host. Keyed by pid
    so a forked child never reuses its parent's sockets.
    """
    return openai.DefaultHttpxClient()


def runtime_hint(model: str, provider: str, context_length: int | None = None) -> str:
    """The system addendum naming what actually serves the run.

    Agents behave better when they know their model and provider (a small local model
    should take smaller steps; a provider's quirks are known by name).
    """
    hint = f"Runtime: this conversation is served by the model {model} via {provider}."
    if context_length:
        hint += f" Its context window is {context_length:,} tokens."
    return hint


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, ``retry-after`` seconds
    or HTTP date), or None when it did not say."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lowered.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / divisor)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value:
        parsed = email.utils.parsedate_tz(value)
        if parsed is not None:
            return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None


@dataclass
class _Completion:
    """The parts of one chat completion the loop uses."""

    message: dict[str, Any]
    calls: list[tuple[str, str, str]]
    finish_reason: str | None


class Runtime:
    """A reusable agent loop over one endpoint and one tool registry.

    Create it once and call :meth:`run` per task; the context window is resolved once
    and the HTTP connection is reused. Safe to share between threads.
    """

    def __init__(
        self,
        tools: ToolRegistry | Iterable[Tool] = (),
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        provider: str | None = None,
        approval: ApprovalHook | None = None,
        max_turns: int = 12,
        tool_timeout: float | None = 30.0,
        request_timeout: float = 120.0,
        max_retries: int = 2,
        max_retry_wait: float = 30.0,
        approval_timeout: float | None = 600.0,
        context_length: int | None = None,
        min_context: int | None = DEFAULT_MINIMUM,
        warm_share: float = DEFAULT_WARM_SHARE,
        max_result_chars: int = 20_000,
        hint: bool = True,
        temperature: float | None = None,
        record: bool = False,
        db_url: str | None = None,
        client: OpenAI | None = None,
        reviewer: ReviewHook | None = None,
    ) -> None:
        """Resolve the endpoint (arguments, then environment) and build the client.

        ``min_context`` None turns the context guard off; ``context_length`` skips the
        probe. Retries happen only for 429/503 answers carrying ``Retry-After`` no longer
        than ``max_retry_wait``, at most ``max_retries`` times per request. A missing model
        raises :class:`~warmstart.errors.ConfigError` here, before any run. ``reviewer``
        (see :data:`ReviewHook`) is called after every run that ends in a final answer.
        """
        self.registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry.of(tools)
        self.endpoint: Endpoint = resolve_endpoint(model, base_url, api_key, provider)
        if max_turns < 1:
            raise ConfigError(f"max_turns must be at least 1, got {max_turns}")
        warm_budget(1, warm_share)  # validates the share now rather than mid-run
        self.approval = approval
        self.max_turns = max_turns
        self.tool_timeout = tool_timeout
        self.request_timeout = request_timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.approval_timeout = approval_timeout
        self.context_override = context_length
        self.min_context = min_context
        self.warm_share = warm_share
        self.max_result_chars = max_result_chars
        self.hint = hint
        self.temperature = temperature
        self.record = record
        self.db_url = db_url
        self.reviewer = reviewer
        self.client = client or OpenAI(
            base_url=self.endpoint.base_url,
            api_key=self.endpoint.api_key,
            max_retries=0,  # retries are ours: only where the server says when
            timeout=request_timeout,
            http_client=_shared_http_client(os.getpid()),
        )
        self._context: ContextLength | None = None
        self._context_resolved = False
        self._context_lock = threading.Lock()

    # context ------------------------------------------------------------------

    def context(self) -> ContextLength | None:
        """The model's window and its source, resolved once per runtime.

        Raises :class:`~warmstart.errors.ConfigError` for a bad configured length.
        """
        with self._context_lock:
            if not self._context_resolved:
                self._context = resolve_context_length(
                    self.endpoint.model,
                    self.endpoint.base_url,
                    self.context_override,
                    api_key=self.endpoint.api_key,
                )
                self._context_resolved = True
                if self._context is None:
                    log.warning(
                        "context window of %r is unknown; set $%s to enable the guard",
                        self.endpoint.model,
                        CONTEXT_LENGTH_ENV,
                    )
            return self._context

    def check_context(self) -> int:
        """Raise :class:`ContextWindowTooSmall` now if the window is below ``min_context``.

        For callers that want the typed error up front (a CLI); :meth:`run` records the
        same refusal as ``stop_reason="context_too_small"`` instead of raising.
        """
        found = self.context()
        minimum = self.min_context or 0
        if found is None:
            return minimum
        if found.length < minimum:
            raise ContextWindowTooSmall(
                self.endpoint.model, found.length, minimum, CONTEXT_LENGTH_ENV
            )
        return found.length

    # the loop -------------------------------------------------------------------

    def run(
        self,
        task: str,
        *,
        system: str | None = None,
        warm: WarmSource = (),
        shrink: Shrinker | None = None,
        whitelist: Iterable[str] | None = None,
        approval: ApprovalHook | None = None,
        max_turns: int | None = None,
        arm: str | None = None,
        seed: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> RunResult:
        """Run ``task`` to a final answer or the turn limit; never raises for bad input.

        ``warm`` is a list of OpenAI messages or a function of the raw task text that
        returns them; it is shrunk to ``warm_share`` of the window with ``shrink`` (or by
        dropping whole examples from the end). ``whitelist`` limits which registered tools
        are offered and may run; other calls get a denial result. ``approval`` overrides
        the runtime's hook for this run.
        """
        unattended = is_unattended()
        result = RunResult(
            run_id=uuid.uuid4().hex,
            task=task,
            model=self.endpoint.model,
            provider=self.endpoint.provider,
            base_url=self.endpoint.base_url,
            started_at=time.time(),
            arm=arm,
            seed=seed,
            metadata=dict(metadata or {}),
        )
        try:
            self._run(result, system, warm, shrink, whitelist, approval, max_turns, unattended)
        except Exception as exc:  # a warmstart bug must not take the caller down with it
            log.exception("runtime failure in run %s", result.run_id)
            result.errors.append(RunError("internal", f"{type(exc).__name__}: {exc}"))
            result.stop_reason = "internal_error"
        result.ended_at = time.time()
        if self.record:
            result.record(self.db_url)
        if self.reviewer is not None and result.stop_reason == "final_answer":
            try:  # the review is a side service: it must never cost the caller its answer
                self.reviewer(list(result.messages), result, self)
            except Exception:
                log.exception("reviewer hook failed after run %s", result.run_id)
        return result

    def _run(
        self,
        result: RunResult,
        system: str | None,
        warm: WarmSource,
        shrink: Shrinker | None,
        whitelist: Iterable[str] | None,
        approval: ApprovalHook | None,
        max_turns: int | None,
        unattended: bool,
    ) -> None:
        model = self.endpoint.model
        if not self._guard(result, bool(warm)):
            return
        warm_messages = self._warm_history(result, warm, shrink)
        offered = self.registry.names()
        if whitelist is not None:
            allowed = set(whitelist)
            offered = [name for name in offered if name in allowed]
        result.tools_offered = offered
        schemas = self.registry.schemas(offered)

        system_parts = [system] if system else []
        if self.hint:
            result.runtime_hint = runtime_hint(model, result.provider, result.context_length)
            system_parts.append(result.runtime_hint)
        messages = result.messages
        if system_parts:
            messages.append({"role": "system", "content": "\n\n".join(system_parts)})
        result.warm_start = len(messages)
        result.warm_count = len(warm_messages)
        messages.extend(warm_messages)
        messages.append({"role": "user", "content": result.task})

        hook = approval or self.approval or default_approval
        allowed_names = set(offered)
        for turn in range(1, (max_turns or self.max_turns) + 1):
            completion = self._complete(result, messages, schemas, turn)
            if completion is None:
                return
            result.turns = turn
            messages.append(completion.message)
            if not completion.calls:
                result.final_answer = completion.message.get("content") or ""
                result.stop_reason = (
                    "truncated" if completion.finish_reason == "length" else "final_answer"
                )
                return
            for call_id, name, arguments in completion.calls:
                record = self._call(
                    result, turn, call_id, name, arguments, allowed_names, hook, unattended
                )
                result.calls.append(record)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "name": name,
                        "content": record.result,
                    }
                )
        result.stop_reason = "max_turns"

    def _guard(self, result: RunResult, needs_length: bool) -> bool:
        """Resolve the window when it matters; False (and a stop reason) to refuse the run."""
        if self.min_context is None and not needs_length:
            return True
        try:
            found = self.context()
        except ConfigError as exc:
            result.errors.append(RunError("config", str(exc)))
            result.stop_reason = "config_error"
            return False
        if found is not None:
            result.context_length = found.length
            result.context_source = found.source
        if self.min_context is not None and found is not None and found.length < self.min_context:
            refusal = ContextWindowTooSmall(
                self.endpoint.model, found.length, self.min_context, CONTEXT_LENGTH_ENV
            )
            result.errors.append(RunError("context", str(refusal)))
            result.stop_reason = "context_too_small"
            return False
        return True

    def _warm_history(
        self, result: RunResult, warm: WarmSource, shrink: Shrinker | None
    ) -> list[WarmMessage]:
        """Pick (from the raw task) and shrink the warm history; failures run cold."""
        try:
            chosen = warm(result.task) if callable(warm) else warm
            messages = [dict(m) for m in chosen]
        except Exception as exc:  # a broken selector costs the warm start, not the run
            result.errors.append(RunError("warm_history", f"{type(exc).__name__}: {exc}"))
            return []
        if not messages:
            return []
        window = result.context_length or self.min_context or DEFAULT_MINIMUM
        budget = warm_budget(window, self.warm_share)
        kept = messages
        if count_tokens(messages) > budget:
            if shrink is not None:
                try:
                    kept = [dict(m) for m in shrink(messages, budget)]
                except Exception as exc:
                    result.errors.append(
                        RunError("warm_history", f"shrink failed: {type(exc).__name__}: {exc}")
                    )
                    kept = messages
            if count_tokens(kept) > budget:
                kept = drop_examples_to_fit(kept, budget)
        result.warm_dropped = len(messages) - len(kept)
        result.warm_tokens = count_tokens(kept)
        result.metadata.setdefault("warm_budget", budget)
        return kept

    def _complete(
        self,
        result: RunResult,
        messages: list[dict[str, Any]],
        schemas: list[dict[str, Any]],
        turn: int,
    ) -> _Completion | None:
        """One chat completion, retried only where the server says when; None on failure."""
        options: dict[str, Any] = {"model": self.endpoint.model, "messages": messages}
        if schemas:
            options["tools"] = schemas
        if result.seed is not None:
            options["seed"] = result.seed
        if self.temperature is not None:
            options["temperature"] = self.temperature
        retries = 0
        while True:
            try:
                response = self.client.chat.completions.create(**options)
                break
            except openai.APIStatusError as exc:
                status = exc.status_code
                wait = retry_after(exc.response.headers)
                retry = (
                    status in RETRY_STATUSES
                    and wait is not None
                    and wait <= self.max_retry_wait
                    and retries < self.max_retries
                )
                kind = "rate_limited" if status == 429 else "http_status"
                result.errors.append(
                    RunError(kind, _status_message(exc), turn, status, retried=retry)
                )
                if not retry:
                    result.stop_reason = "endpoint_error"
                    return None
                retries += 1
                time.sleep(wait or 0.0)
            except openai.APITimeoutError as exc:
                result.errors.append(RunError("timeout", f"request timed out: {exc}", turn))
                result.stop_reason = "endpoint_error"
                return None
            except openai.APIConnectionError as exc:
                result.errors.append(RunError("connection", f"{exc}: {exc.__cause__}", turn))
                result.stop_reason = "endpoint_error"
                return None
            except (openai.APIError, ValueError) as exc:
                result.errors.append(RunError("bad_response", str(exc), turn))
                result.stop_reason = "bad_response"
                return None
        _add_usage(result, response)
        try:
            return _parse_completion(response, turn)
        except (AttributeError, IndexError, KeyError, TypeError) as exc:
            result.errors.append(
                RunError(
                    "bad_response", f"not a chat completion: {type(exc).__name__}: {exc}", turn
                )
            )
            result.stop_reason = "bad_response"
            return None

    def _call(
        self,
        result: RunResult,
        turn: int,
        call_id: str,
        name: str,
        arguments: str,
        allowed: set[str],
        hook: ApprovalHook,
        unattended: bool,
    ) -> CallRecord:
        """Vet, approve and execute one tool call; every refusal is a tool result."""
        record = CallRecord(
            turn=turn, call_id=call_id, tool=name, arguments=arguments, ok=False, result=""
        )
        tool = self.registry.get(name)
        if tool is None or name not in allowed:
            if tool is None:
                record.error_kind = "unknown_tool"
                record.error = f"unknown tool {name!r}; available tools: {_names(allowed)}"
            else:
                record.error_kind = "not_whitelisted"
                record.error = (
                    f"tool {name!r} is not allowed in this run; allowed tools: {_names(allowed)}"
                )
            record.result = f"Error: {record.error}"
            return record
        parsed = _parse_arguments(arguments)
        if isinstance(parsed, str):
            record.error_kind = "bad_arguments"
            record.error = f"arguments for {name!r} are not a JSON object: {parsed}"
            record.result = f"Error: {record.error}"
            return record
        if tool.needs_approval:
            request = ToolRequest(
                tool=name,
                arguments=parsed,
                call_id=call_id,
                run_id=result.run_id,
                turn=turn,
                model=result.model,
                task=result.task,
                unattended=unattended,
            )
            verdict, reason = self._approve(hook, request, record)
            if verdict != "allow":
                record.error_kind = "approval_denied"
                record.error = f"call to {name!r} was denied: {reason or 'no reason given'}"
                record.result = f"Error: {record.error}"
                return record
        else:
            record.approval = "not_required"
        timeout = tool.timeout if tool.timeout is not None else self.tool_timeout
        outcome = run_tool(tool, parsed, timeout)
        record.ok = outcome.ok
        record.error = outcome.error
        record.error_kind = outcome.error_kind
        record.detail = outcome.detail
        record.duration = outcome.duration
        record.result = _truncate(outcome.content, self.max_result_chars)
        return record

    def _approve(
        self, hook: ApprovalHook, request: ToolRequest, record: CallRecord
    ) -> tuple[str, str]:
        """Ask the hook, waiting out a hold; a failing hook denies (fail closed)."""
        try:
            decision = hook(request)
            if decision.verdict == "hold":
                started = time.monotonic()
                final: Decision | None = (
                    decision.wait(self.approval_timeout) if decision.wait else None
                )
                record.held_seconds = time.monotonic() - started
                if final is None or final.verdict == "hold":
                    record.approval = "held-denied"
                    waited = f"{self.approval_timeout:g} s" if self.approval_timeout else "ever"
                    return "deny", f"no approval decision within {waited}"
                record.approval = "held-allowed" if final.verdict == "allow" else "held-denied"
                return final.verdict, final.reason
        except Exception as exc:
            record.approval = "denied"
            return "deny", f"approval hook failed: {type(exc).__name__}: {exc}"
        record.approval = "allowed" if decision.verdict == "allow" else "denied"
        return decision.verdict, decision.reason

    def close(self) -> None:
        """Release the runtime. The HTTP client is shared per process and stays open;
        a client passed in belongs to the caller, who closes it."""

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_agent(
    task: str,
    tools: ToolRegistry | Iterable[Tool] = (),
    **options: Any,
) -> RunResult:
    """One run on a throwaway :class:`Runtime`; ``options`` split between both.

    Keyword arguments of :meth:`Runtime.run` (``system``, ``warm``, ``whitelist``, ...)
    go to the run; everything else configures the runtime.
    """
    run_keys = {
        "system",
        "warm",
        "shrink",
        "whitelist",
        "approval",
        "max_turns",
        "arm",
        "seed",
        "metadata",
    }
    run_options = {k: options.pop(k) for k in list(options) if k in run_keys}
    with Runtime(tools, **options) as runtime:
        return runtime.run(task, **run_options)


# helpers ---------------------------------------------------------------------


def _names(names: Iterable[str]) -> str:
    listed = sorted(names)
    return ", ".join(listed) if listed else "(none)"


def _truncate(text: str, limit: int) -> str:
    if limit and len(text) > limit:
        return f"{text[:limit]}\n[... {len(text) - limit} more characters truncated]"
    return text


def _parse_arguments(arguments: str) -> dict[str, Any] | str:
    """Parsed arguments, or a short reason they are unusable. Empty means no arguments."""
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError as exc:
        return f"invalid JSON ({exc})"
    if not isinstance(value, dict):
        return f"expected an object, got {type(value).__name__}"
    return value


def _status_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and error.get("message"):
            return f"HTTP {exc.status_code}: {error['message']}"
    return f"HTTP {exc.status_code}: {exc.message}"


def _add_usage(result: RunResult, response: Any) -> None:
    usage = getattr(response, "usage", None)
    if usage is None:
        return
    result.usage.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
    result.usage.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
    result.usage.total_tokens += int(getattr(usage, "total_tokens", 0) or 0)


def _parse_completion(response: Any, turn: int) -> _Completion:
    """The assistant message in OpenAI dict form plus its calls as (id, name, arguments).

    Calls without an id get one (``call_<turn>_<n>``) so every call can be answered.
    """
    choice = response.choices[0]
    message = choice.message
    content = message.content
    calls: list[tuple[str, str, str]] = []
    wire_calls: list[dict[str, Any]] = []
    for index, call in enumerate(message.tool_calls or ()):
        function = getattr(call, "function", None)
        if function is not None:
            name, arguments = str(function.name or ""), function.arguments or ""
        else:  # a custom (non-function) tool call: answer it so the ids stay paired
            custom = getattr(call, "custom", None)
            name = str(getattr(custom, "name", "") or "")
            arguments = str(getattr(custom, "input", "") or "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        call_id = call.id or f"call_{turn}_{index}"
        calls.append((call_id, name, arguments))
        wire_calls.append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    assistant: dict[str, Any] = {"role": "assistant", "content": content}
    if wire_calls:
        assistant["tool_calls"] = wire_calls
    return _Completion(assistant, calls, choice.finish_reason)
