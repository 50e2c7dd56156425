"""OpenAI-format chat JSONL: one session per line.

Each line is ``{"id": ..., "messages": [...], "tools": [...]?, "outcome": ...?,
"metadata": {...}?}``. A line that is not JSON, or has no message list, is counted
and skipped; the rest of the file is still read. Files may be gzipped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from warmstart.model import Session
from warmstart.sources.base import IngestReport
from warmstart.sources.files import head_text, open_text
from warmstart.sources.openai_messages import as_dict, parse_messages, tool_names

_OUTCOMES = {
    "success": 1.0,
    "succeeded": 1.0,
    "pass": 1.0,
    "failure": 0.0,
    "failed": 0.0,
    "fail": 0.0,
    "error": 0.0,
}


def _outcome(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return _OUTCOMES.get(value.strip().lower())
    if isinstance(value, dict):
        for key in ("reward", "score", "success"):
            if key in value:
                return _outcome(value[key])
    return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class OpenAIJsonlSource:
    """Reads one-session-per-line OpenAI chat JSONL."""

    name = "openai-jsonl"

    def detect(self, path: Path) -> bool:
        """One of the first lines is a JSON object with a ``messages`` key.

        A damaged first line must not hide a file that is otherwise readable.
        """
        lines = [line for line in head_text(path).splitlines()[:20] if line.strip()]
        return any(line.lstrip().startswith("{") and '"messages"' in line for line in lines)

    def iter_sessions(
        self, path: Path, report: IngestReport, known: Mapping[str, str]
    ) -> Iterator[Session]:
        """Stream one session per line."""
        with open_text(path) as fh:
            for lineno, line in enumerate(fh, start=1):
                where = f"{path.name} line {lineno}"
                if not line.strip():
                    continue
                fingerprint = hashlib.sha1(line.encode("utf-8", "replace")).hexdigest()
                try:
                    obj = json.loads(line)
                except ValueError:
                    report.skip("line is not JSON", where)
                    continue
                if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
                    report.skip("line has no 'messages' list", where)
                    continue
                raw_id = obj.get("id") or obj.get("session_id")
                external = str(raw_id) if raw_id not in (None, "") else f"sha1-{fingerprint[:16]}"
                if known.get(f"{self.name}:{external}") == fingerprint:
                    report.unchanged += 1
                    continue
                meta = as_dict(obj.get("metadata"))
                yield Session(
                    source=self.name,
                    external_id=external[:300],
                    messages=parse_messages(obj["messages"], report, where),
                    tools=tool_names(obj.get("tools")),
                    outcome=_outcome(obj.get("outcome")),
                    model=str(obj.get("model") or meta.get("model") or "") or None,
                    started_at=_number(obj.get("started_at") or meta.get("started_at")),
                    title=str(meta.get("title"))[:200] if meta.get("title") else None,
                    origin=str(path),
                    fingerprint=fingerprint,
                    metadata=meta,
                )
