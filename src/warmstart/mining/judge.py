"""Judge a tool call's outcome from its result, keeping the evidence.

A call succeeded unless its result says otherwise. Evidence, strongest first:
JSON with ``"success": false`` / ``"ok": false`` / an ``"error"``; a non-zero exit
code; a traceback or an ``Error:``-style prefix; a retry of the same tool with
changed arguments after a result that reads like a soft failure; a tool name the
session's tool list does not have. Retries alone are *not* failures: an agent that
looks up three reservations in a row is iterating, not retrying, so a retry only
counts when the first result itself hints at a problem (empty, "not found", ...).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_EXIT_RE = re.compile(
    r"(?:exit(?:ed)?[ _]?(?:code|status)|return[ _]?code|returncode)\W{0,3}(-?\d+)", re.I
)
_PREFIX_RE = re.compile(
    r"^(?:error|exception|fatal|failed|failure)\b|^[A-Za-z_][\w.]*(?:Error|Exception)\b\s*:",
    re.I,
)
_SOFT_WORDS = (
    "not found",
    "no such",
    "does not exist",
    "doesn't exist",
    "invalid",
    "failed",
    "unable to",
    "cannot",
    "can't",
    "denied",
    "forbidden",
    "unauthorized",
    "unauthorised",
    "no results",
    "not allowed",
    "missing",
)
_JSON_HEAD = 200_000


@dataclass(frozen=True)
class Verdict:
    """The judged outcome of one call: ``ok`` plus what decided it."""

    ok: bool
    kind: str | None = None
    evidence: str | None = None


OK = Verdict(True)


def _snippet(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _judge_json(obj: object) -> Verdict | None:
    if not isinstance(obj, dict):
        return None
    if obj.get("success") is False:
        msg = obj.get("error") or obj.get("message") or ""
        return Verdict(False, "json-success-false", _snippet(f'"success": false {msg}'))
    if obj.get("ok") is False:
        msg = obj.get("error") or obj.get("message") or ""
        return Verdict(False, "json-ok-false", _snippet(f'"ok": false {msg}'))
    err = obj.get("error")
    if err not in (None, False, "", [], {}):
        return Verdict(False, "json-error", _snippet(f'"error": {json.dumps(err, default=str)}'))
    for key in ("exit_code", "returncode", "exitCode", "exit_status"):
        code = obj.get(key)
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            return Verdict(False, "exit-code", f'"{key}": {code}')
    status = obj.get("status")
    if isinstance(status, str) and status.lower() in ("error", "failed", "failure"):
        return Verdict(False, "json-status", f'"status": "{status}"')
    return None


def judge_result(result: str | None, tool: str, known_tools: frozenset[str] | None) -> Verdict:
    """Judge one result on its own (retries are judged later, across calls)."""
    if known_tools is not None and tool not in known_tools:
        return Verdict(False, "unknown-tool", f"tool {tool!r} is not in the session's tool list")
    if result is None:
        return Verdict(False, "no-result", "no tool result was recorded for this call")
    text = result.lstrip()
    if not text:
        return OK
    first = text[0]
    if first in "{[" and len(text) <= _JSON_HEAD:
        try:
            verdict = _judge_json(json.loads(text))
        except ValueError:
            verdict = None
        if verdict is not None:
            return verdict
    head = text[:2000]
    if "Traceback (most recent call last)" in head:
        return Verdict(False, "traceback", _snippet(head[head.rfind("\n", 0, 2000) + 1 :] or head))
    if _PREFIX_RE.match(head):
        return Verdict(False, "error-prefix", _snippet(head))
    edge = text[:300] + "\n" + text[-300:] if len(text) > 600 else text
    low = edge.lower()
    if "exit" in low or "return" in low:  # cheap gate before the regex
        match = _EXIT_RE.search(edge)
        if match and match.group(1) not in ("0", "-0"):
            return Verdict(False, "exit-code", _snippet(match.group(0)))
    return OK


def soft_failure(result: str | None) -> bool:
    """Whether a result that passed :func:`judge_result` still reads like a miss."""
    if result is None:
        return True
    text = result.strip()
    if not text or text in ("[]", "{}", "null", "None"):
        return True
    low = text[:300].lower()
    return any(word in low for word in _SOFT_WORDS)


def retry_verdict(prev_args: str, next_args: str, prev_result: str | None) -> Verdict | None:
    """A retry (same tool, changed arguments) after a soft failure judges the first call."""
    if prev_args == next_args or not soft_failure(prev_result):
        return None
    return Verdict(
        False,
        "retry",
        _snippet(f"called again right after with changed arguments; result: {prev_result or ''}"),
    )
