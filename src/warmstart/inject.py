"""Examples -> warm messages: OpenAI, Anthropic and Hermes ``prefill_messages``.

Per example: a user message stating the intent, the assistant's tool call and the
tool result, with ids unique within the history and each call answered exactly
once. A recovery example shows the failed call and its error before the fix.
Every output passes :func:`validate_openai` / :func:`validate_anthropic`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from warmstart.errors import InjectError
from warmstart.model import Example

ADDENDUM = (
    "The conversation below starts with worked examples of tool calls that succeeded in "
    "earlier sessions (and mistakes that were then fixed). Follow their argument formats; "
    "they are examples, not the current user's requests."
)
FORMATS = ("openai", "anthropic", "hermes")


def _result_text(result: str, full_chars: int) -> str:
    if full_chars > len(result):
        return f"{result}\n[truncated: {full_chars} characters in full]"
    return result


def _intent(ex: Example) -> str:
    return ex.intent.strip() or f"(use {ex.tool})"


def _steps(ex: Example) -> list[tuple[str, str, bool]]:
    """(arguments, result, is_error) for each call the example shows."""
    steps = []
    if ex.failed_arguments is not None:
        steps.append((ex.failed_arguments, ex.failed_result or "", True))
    steps.append((ex.arguments, _result_text(ex.result, ex.result_chars), False))
    return steps


def to_openai(
    examples: Sequence[Example], addendum: str | None = ADDENDUM, id_prefix: str = "warm"
) -> list[dict[str, Any]]:
    """OpenAI chat messages for ``examples`` (optionally led by a system addendum)."""
    messages: list[dict[str, Any]] = []
    if addendum:
        messages.append({"role": "system", "content": addendum})
    n = 0
    for ex in examples:
        messages.append({"role": "user", "content": _intent(ex)})
        for arguments, result, _is_error in _steps(ex):
            n += 1
            call_id = f"call_{id_prefix}_{n}"
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": ex.tool, "arguments": arguments},
                        }
                    ],
                }
            )
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "name": ex.tool, "content": result}
            )
    return messages


def to_anthropic(
    examples: Sequence[Example], addendum: str | None = ADDENDUM, id_prefix: str = "warm"
) -> dict[str, Any]:
    """Anthropic Messages form: ``{"system": addendum, "messages": [...]}``.

    Tool calls become ``tool_use`` blocks and results ``tool_result`` blocks; roles
    alternate because consecutive user blocks are merged into one message.
    """
    messages: list[dict[str, Any]] = []

    def add(role: str, block: dict[str, Any]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].append(block)
        else:
            messages.append({"role": role, "content": [block]})

    n = 0
    for ex in examples:
        add("user", {"type": "text", "text": _intent(ex)})
        for arguments, result, is_error in _steps(ex):
            n += 1
            use_id = f"toolu_{id_prefix}_{n}"
            try:
                parsed = json.loads(arguments)
            except ValueError:
                parsed = {"raw": arguments}
            add(
                "assistant",
                {
                    "type": "tool_use",
                    "id": use_id,
                    "name": ex.tool,
                    "input": parsed if isinstance(parsed, dict) else {"value": parsed},
                },
            )
            add(
                "user",
                {
                    "type": "tool_result",
                    "tool_use_id": use_id,
                    "content": result,
                    "is_error": is_error,
                },
            )
    return {"system": addendum or "", "messages": messages}


def to_hermes_prefill(examples: Sequence[Example]) -> list[dict[str, Any]]:
    """A Hermes ``prefill_messages`` list (OpenAI messages, no system message)."""
    return to_openai(examples, addendum=None)


def render(
    examples: Sequence[Example], fmt: str = "openai", addendum: str | None = ADDENDUM
) -> Any:
    """Render and validate warm messages in one of :data:`FORMATS`."""
    if fmt == "openai":
        out: Any = to_openai(examples, addendum)
        validate_openai(out)
    elif fmt == "anthropic":
        out = to_anthropic(examples, addendum)
        validate_anthropic(out["messages"])
    elif fmt == "hermes":
        out = to_hermes_prefill(examples)
        validate_openai(out)
    else:
        raise InjectError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    return out


def validate_openai(messages: Sequence[dict[str, Any]]) -> None:
    """Raise :class:`InjectError` unless every call is answered once, ids are unique and
    arguments are JSON objects."""
    problems: list[str] = []
    seen: set[str] = set()
    open_ids: dict[str, int] = {}
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "assistant":
            if open_ids:
                problems.append(f"message {i}: calls {sorted(open_ids)} unanswered before it")
                open_ids.clear()
            for call in msg.get("tool_calls") or ():
                cid = call.get("id")
                if not cid:
                    problems.append(f"message {i}: tool call without id")
                    continue
                if cid in seen:
                    problems.append(f"message {i}: duplicate tool call id {cid!r}")
                seen.add(cid)
                open_ids[cid] = i
                try:
                    if not isinstance(json.loads(call["function"]["arguments"]), dict):
                        problems.append(f"message {i}: arguments of {cid!r} are not an object")
                except (KeyError, TypeError, ValueError):
                    problems.append(f"message {i}: arguments of {cid!r} are not valid JSON")
        elif role == "tool":
            cid = msg.get("tool_call_id")
            if cid not in open_ids:
                problems.append(f"message {i}: tool result for unknown or answered id {cid!r}")
            else:
                del open_ids[cid]
    if open_ids:
        problems.append(f"calls {sorted(open_ids)} are never answered")
    if problems:
        raise InjectError("invalid warm history: " + "; ".join(problems[:5]))


def validate_anthropic(messages: Sequence[dict[str, Any]]) -> None:
    """The same checks for Anthropic ``tool_use`` / ``tool_result`` blocks."""
    problems: list[str] = []
    seen: set[str] = set()
    open_ids: set[str] = set()
    last_role = None
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == last_role:
            problems.append(f"message {i}: two {role} messages in a row")
        last_role = role
        for block in msg.get("content") or ():
            if block.get("type") == "tool_use":
                bid = block.get("id")
                if bid in seen:
                    problems.append(f"message {i}: duplicate tool_use id {bid!r}")
                seen.add(bid)
                open_ids.add(bid)
                if not isinstance(block.get("input"), dict):
                    problems.append(f"message {i}: input of {bid!r} is not an object")
            elif block.get("type") == "tool_result":
                bid = block.get("tool_use_id")
                if bid not in open_ids:
                    problems.append(f"message {i}: tool_result for unknown id {bid!r}")
                open_ids.discard(bid)
    if open_ids:
        problems.append(f"tool_use ids {sorted(open_ids)} are never answered")
    if problems:
        raise InjectError("invalid warm history: " + "; ".join(problems[:5]))


def splice(
    warm: Sequence[dict[str, Any]], messages: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Put ``warm`` after the leading system messages of ``messages``."""
    head = 0
    while head < len(messages) and messages[head].get("role") in ("system", "developer"):
        head += 1
    return [*messages[:head], *warm, *messages[head:]]
