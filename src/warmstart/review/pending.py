"""Staged writes: with write approval on, review writes wait here for a human.

Records use Hermes Agent's pending-write format and place,
``<home>/pending/{memory,skills}/<id>.json`` holding ``id``, ``subsystem``, ``action``,
``summary``, ``origin``, ``created_at`` and ``payload`` (the exact tool arguments to
replay), so writes staged by either tool can be reviewed from either. warmstart adds a
``provenance`` object so an approved write is recorded with its original origin rather
than as the approver's. ``warmstart memory pending`` lists them and
``warmstart memory approve ID`` replays one (see :meth:`ReviewTools.apply_pending`).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from warmstart.review.errors import PendingError
from warmstart.review.files import atomic_write_text
from warmstart.review.provenance import Provenance

SUBSYSTEMS = ("memory", "skills")
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class PendingStore:
    """The staged writes of one home."""

    def __init__(self, home: Path) -> None:
        self.home = Path(home)

    def folder(self, subsystem: str) -> Path:
        """``<home>/pending/<subsystem>``."""
        if subsystem not in SUBSYSTEMS:
            raise PendingError(f"unknown subsystem {subsystem!r}; use memory or skills")
        return self.home / "pending" / subsystem

    def stage(
        self,
        subsystem: str,
        payload: Mapping[str, Any],
        *,
        summary: str,
        provenance: Provenance,
    ) -> dict[str, Any]:
        """Write one pending record atomically and return it."""
        record = {
            "id": uuid.uuid4().hex[:8],
            "subsystem": subsystem,
            "action": str(payload.get("action", "")),
            "summary": summary.strip(),
            "origin": provenance.write_origin,
            "created_at": time.time(),
            "payload": dict(payload),
            "provenance": provenance.as_dict(),
        }
        path = self.folder(subsystem) / f"{record['id']}.json"
        atomic_write_text(path, json.dumps(record, ensure_ascii=False, indent=2))
        return record

    def records(self, subsystem: str | None = None) -> list[dict[str, Any]]:
        """Pending records, oldest first; unreadable files are skipped."""
        records = []
        for name in (subsystem,) if subsystem else SUBSYSTEMS:
            folder = self.folder(name)
            if not folder.is_dir():
                continue
            for path in folder.glob("*.json"):
                try:
                    data = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                if isinstance(data, dict) and isinstance(data.get("payload"), dict):
                    data.setdefault("subsystem", name)
                    data.setdefault("id", path.stem)
                    records.append(data)
        return sorted(records, key=lambda r: float(r.get("created_at") or 0))

    def get(self, pending_id: str) -> dict[str, Any]:
        """The record with ``pending_id`` in either subsystem, or a PendingError."""
        for record in self.records():
            if record.get("id") == pending_id:
                return record
        raise PendingError(f"no pending write {pending_id!r} (see `warmstart memory pending`)")

    def discard(self, pending_id: str) -> bool:
        """Delete a pending record; False when it did not exist."""
        if not _ID.fullmatch(pending_id):
            return False
        for subsystem in SUBSYSTEMS:
            path = self.folder(subsystem) / f"{pending_id}.json"
            if path.is_file():
                path.unlink()
                return True
        return False
