"""The one line a user sees after a review: what it actually changed.

Built only from the reviewer's *successful* ``memory`` and ``skill_manage`` results,
so a refused write, a read, or a denied tool never reads as progress. The review
replays the main conversation, so its transcript also holds tool results from before
the review started; those are skipped (a result already in the conversation the
reviewer was given, matched by ``tool_call_id``, or by content when a result has no
id), otherwise an old "Skill created" would be announced as new work every time.

An id match also requires the same content: some servers send no call ids and the
runtime then numbers calls per turn (``call_1_0``), so a fresh result can share an id
with an old one; a stale result is a replay and so has both the same id and content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from warmstart.review.tools import WRITE_TOOLS

PREFIX = "Self-improvement review: "
SEPARATOR = " · "


def _prior_results(prior: Sequence[Mapping[str, Any]]) -> tuple[dict[str, set[str]], set[str]]:
    by_id: dict[str, set[str]] = {}
    without_id: set[str] = set()
    for message in prior:
        if not isinstance(message, Mapping) or message.get("role") != "tool":
            continue
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, default=str)
        call_id = message.get("tool_call_id")
        if call_id:
            by_id.setdefault(str(call_id), set()).add(text)
        else:
            without_id.add(text)
    return by_id, without_id


def _calls(messages: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Tool call id -> (tool name, parsed arguments) for every write-tool call."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            if not isinstance(call, Mapping):
                continue
            function = call.get("function")
            if not isinstance(function, Mapping) or function.get("name") not in WRITE_TOOLS:
                continue
            try:
                args = json.loads(function.get("arguments") or "{}")
            except (TypeError, ValueError):
                args = {}
            if call.get("id"):
                calls[str(call["id"])] = (
                    str(function["name"]),
                    args if isinstance(args, dict) else {},
                )
    return calls


def describe(tool: str, args: Mapping[str, Any], result: Mapping[str, Any]) -> str:
    """The short phrase for one successful write, e.g. ``Skill 'deploy' created``."""
    staged = bool(result.get("staged"))
    if tool == "memory":
        target = result.get("target") or args.get("target") or "memory"
        label = "User profile" if target == "user" else "Memory"
        return f"{label} change staged for approval" if staged else f"{label} updated"
    name = result.get("name") or args.get("name") or "?"
    action = result.get("action") or args.get("action")
    if staged:
        return f"Skill '{name}' change staged for approval"
    file_path = result.get("file_path") or args.get("file_path")
    phrases = {
        "create": f"Skill '{name}' created",
        "patch": f"Skill '{name}' patched",
        "edit": f"Skill '{name}' updated",
        "delete": f"Skill '{name}' deleted",
        "write_file": f"Skill '{name}' file '{file_path}' written",
        "remove_file": f"Skill '{name}' file '{file_path}' removed",
    }
    return phrases.get(str(action), f"Skill '{name}' updated")


def summarize_actions(
    review_messages: Sequence[Mapping[str, Any]],
    prior: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """Phrases for the review's successful writes, in order, duplicates removed."""
    stale_by_id, stale_without_id = _prior_results(prior)
    calls = _calls(review_messages)
    actions: list[str] = []
    for message in review_messages:
        if not isinstance(message, Mapping) or message.get("role") != "tool":
            continue
        content = message.get("content")
        if not isinstance(content, str):
            continue
        call_id = message.get("tool_call_id")
        if call_id:
            if content in stale_by_id.get(str(call_id), ()):
                continue
        elif content in stale_without_id:
            continue
        found = calls.get(str(call_id)) if call_id else None
        tool = found[0] if found else message.get("name")
        if tool not in WRITE_TOOLS:
            continue
        try:
            result = json.loads(content)
        except ValueError:
            continue
        if not isinstance(result, dict) or result.get("success") is not True:
            continue
        if tool == "memory" and result.get("changed") is False:
            continue  # "already exists": nothing new to report
        actions.append(describe(str(tool), found[1] if found else {}, result))
    return list(dict.fromkeys(actions))


def format_summary(actions: Sequence[str]) -> str | None:
    """``Self-improvement review: Memory updated · Skill 'x' created``, or None."""
    return PREFIX + SEPARATOR.join(actions) if actions else None


def deliver(line: str | None, callback: Callable[[str], object] | None) -> bool:
    """Hand ``line`` to ``callback``; a failing callback is swallowed (returns False)."""
    if line is None or callback is None:
        return False
    try:
        callback(line)
    except Exception:
        return False
    return True
