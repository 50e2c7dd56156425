"""From mined calls to redacted candidate examples.

Reads calls session by session (constant memory), keeps per tool a bounded pool
of successful calls with distinct arguments (calls from sessions whose outcome
says they failed come last) and every recovery pair (a failure, its error, then the
fix). Only the pool is redacted and token-counted, so building from a large store
stays cheap. Nothing leaves this module unredacted.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from warmstart.mining.redact import redact_json, redact_text
from warmstart.model import Example
from warmstart.tokens import PER_MESSAGE, count_tokens

# "\n[truncated: 123456 characters in full]" as rendered by warmstart.inject.
TRUNCATION_NOTE_TOKENS = 12


@dataclass
class ToolStats:
    """Calls and judged failures of one tool over the scanned sessions."""

    calls: int = 0
    failures: int = 0

    @property
    def error_rate(self) -> float:
        """Share of this tool's calls judged failed."""
        return self.failures / self.calls if self.calls else 0.0


@dataclass
class Pool:
    """The candidate examples of a build, with per-tool statistics."""

    examples: list[Example] = field(default_factory=list)
    tools: dict[str, ToolStats] = field(default_factory=dict)
    sessions: int = 0
    task_types: dict[str, int] = field(default_factory=dict)


def canonical_args(arguments: str) -> str:
    """Arguments in a canonical form, so equal calls compare equal."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except (ValueError, RecursionError):
        return arguments


def example_tokens(ex: Example) -> int:
    """Tokens the example costs once rendered as warm messages (truncation note included)."""
    total = 3 * PER_MESSAGE + count_tokens(ex.intent) + count_tokens(ex.tool)
    total += count_tokens(ex.arguments) + count_tokens(ex.result) + 8
    if ex.result_chars > len(ex.result):
        total += TRUNCATION_NOTE_TOKENS
    if ex.failed_arguments is not None:
        total += 2 * PER_MESSAGE + count_tokens(ex.tool) + 8
        total += count_tokens(ex.failed_arguments) + count_tokens(ex.failed_result)
    return total


def materialize(ex: Example) -> Example:
    """Redact every text field and count tokens (the only way examples are made)."""
    ex.intent = redact_text(ex.intent or "").text
    ex.arguments = redact_json(ex.arguments).text
    ex.result = redact_json(ex.result).text
    if ex.failed_arguments is not None:
        ex.failed_arguments = redact_json(ex.failed_arguments).text
        ex.failed_result = redact_json(ex.failed_result or "").text
    ex.tokens = example_tokens(ex)
    return ex


def _example(row: dict[str, Any], fail: dict[str, Any] | None = None) -> Example:
    return Example(
        tool=row["tool"],
        intent=row.get("intent") or "",
        arguments=row["arguments_json"],
        result=row.get("result") or "",
        result_chars=int(row.get("result_chars") or 0),
        ok=True,
        session_key=row["session_id"],
        task_type=row.get("task_type") or "mixed",
        failed_arguments=fail["arguments_json"] if fail else None,
        failed_result=(fail.get("result") or "") if fail else None,
        error_kind=fail.get("error_kind") if fail else None,
    )


def collect_pool(rows: Iterable[dict[str, Any]], per_tool: int = 24) -> Pool:
    """Scan mined call rows (ordered by session) into a bounded, redacted pool."""
    pool = Pool()
    good: dict[str, list[Example]] = defaultdict(list)
    weak: dict[str, list[Example]] = defaultdict(list)
    recoveries: dict[str, list[Example]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()
    task_types: dict[str, int] = defaultdict(int)
    for _session, group in groupby(rows, key=lambda r: r["session_id"]):
        calls = [r for r in group if not r["trivial"]]
        pool.sessions += 1
        if calls:
            task_types[calls[0].get("task_type") or "mixed"] += 1
        by_index = {r["idx"]: r for r in calls}
        for row in calls:
            tool = row["tool"]
            stats = pool.tools.setdefault(tool, ToolStats())
            stats.calls += 1
            if not row["ok"]:
                stats.failures += 1
                fix = by_index.get(row["recovered_by"]) if row["recovered_by"] is not None else None
                if fix is not None and row["args_valid"] and len(recoveries[tool]) < per_tool:
                    key = (tool, "R" + canonical_args(row["arguments_json"]))
                    if key not in seen:
                        seen.add(key)
                        recoveries[tool].append(_example(fix, row))
                continue
            if not row["args_valid"]:
                continue
            bucket = weak if row.get("outcome") == 0 else good
            if len(bucket[tool]) >= per_tool:
                continue
            key = (tool, canonical_args(row["arguments_json"]))
            if key in seen:
                continue
            seen.add(key)
            bucket[tool].append(_example(row))
    for tool, stats in pool.tools.items():
        chosen = recoveries[tool] + good[tool]
        chosen += weak[tool][: max(0, per_tool - len(good[tool]))]
        for ex in chosen:
            ex.tool_error_rate = stats.error_rate
            pool.examples.append(materialize(ex))
    pool.task_types = dict(task_types)
    return pool
