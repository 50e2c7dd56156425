"""Where every memory and skill write came from, kept in a side file beside the stores.

Hermes' ``MEMORY.md`` has no room for metadata (an entry is plain text), so origin is
recorded in ``<home>/warmstart_provenance.jsonl``: one JSON object per write (one per
operation of a memory batch) with the write origin (``background_review`` for the
reviewer, ``assistant_tool`` for the main agent calling the tool itself, ``user_cli``
for ``warmstart memory edit``), the session and parent session ids, the platform and
the tool call id, mirroring the metadata Hermes attaches to memory writes. Append-only
JSON lines under a lock, so concurrent writers never corrupt each other and a broken
line costs only itself. ``warmstart memory show --provenance`` joins it to the entries.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from warmstart.review.files import DEFAULT_LOCK_TIMEOUT, locked

WriteOrigin = Literal["background_review", "assistant_tool", "user_cli"]
BACKGROUND_REVIEW: WriteOrigin = "background_review"
ASSISTANT_TOOL: WriteOrigin = "assistant_tool"
USER_CLI: WriteOrigin = "user_cli"
FILENAME = "warmstart_provenance.jsonl"


@dataclass(frozen=True)
class Provenance:
    """Who is writing: the origin, the conversation behind it, and the exact tool call."""

    write_origin: str = ASSISTANT_TOOL
    session_id: str | None = None
    parent_session_id: str | None = None
    platform: str = "warmstart"
    tool_call_id: str | None = None

    def with_call(self, tool_call_id: str | None) -> Provenance:
        """The same provenance for one specific tool call."""
        return replace(self, tool_call_id=tool_call_id)

    def as_dict(self) -> dict[str, Any]:
        """Plain fields for JSON."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Provenance:
        """Rebuild from :meth:`as_dict` output, ignoring unknown keys."""
        known: dict[str, Any] = {
            k: str(data[k]) for k in cls.__dataclass_fields__ if data.get(k) is not None
        }
        return cls(**known)


class ProvenanceLog:
    """The append-only provenance file of one home."""

    def __init__(self, path: Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout

    @classmethod
    def at_home(cls, home: Path) -> ProvenanceLog:
        """``<home>/warmstart_provenance.jsonl``."""
        return cls(Path(home) / FILENAME)

    def record(
        self,
        provenance: Provenance,
        *,
        subsystem: str,
        action: str,
        status: str = "applied",
        **fields: Any,
    ) -> dict[str, Any]:
        """Append one write; ``fields`` are what was written (target, content, name, ...)."""
        return self.record_many(provenance, [{"subsystem": subsystem, "action": action,
                                              "status": status, **fields}])[0]  # fmt: skip

    def record_many(
        self, provenance: Provenance, writes: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        """Append several writes of one call in one locked append."""
        now = time.time()
        rows = [
            {
                "id": uuid.uuid4().hex,
                "at": now,
                **{k: v for k, v in write.items() if v is not None},
                **provenance.as_dict(),
            }
            for write in writes
        ]
        if not rows:
            return rows
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        with locked(self.path, self.lock_timeout):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
        return rows

    def records(self) -> list[dict[str, Any]]:
        """Every readable record, oldest first (broken lines are skipped)."""
        if not self.path.exists():
            return []
        rows = []
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict):
                    rows.append(row)
        return rows

    def for_memory(self, target: str, entries: Iterable[str]) -> list[dict[str, Any] | None]:
        """For each entry, the latest applied add/replace that wrote exactly that text."""
        latest: dict[str, dict[str, Any]] = {}
        for row in self.records():
            if (
                row.get("subsystem") == "memory"
                and row.get("target") == target
                and row.get("status") == "applied"
                and row.get("action") in ("add", "replace")
                and isinstance(row.get("content"), str)
            ):
                latest[row["content"]] = row
        return [latest.get(entry) for entry in entries]

    def for_skill(self, name: str) -> list[dict[str, Any]]:
        """Every applied write to skill ``name``, oldest first."""
        return [
            row
            for row in self.records()
            if row.get("subsystem") == "skills" and row.get("name") == name
        ]
