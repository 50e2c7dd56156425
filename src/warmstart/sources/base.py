"""What every log source provides, and the report that counts what it skipped.

A source is a small object with a ``name``, a ``detect(path)`` test and an
``iter_sessions(path, report, known)`` generator. It streams sessions one at a time
(never the whole input in memory), records every item it could not read in the
:class:`IngestReport` with its reason, and may skip sessions whose fingerprint is
already in ``known`` (the store has them unchanged).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from warmstart.model import Session


@dataclass
class IngestReport:
    """What one ingest did: sessions added, updated, unchanged, and items skipped."""

    path: str = ""
    source: str = ""
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    messages: int = 0
    calls: int = 0
    failures: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def skip(self, reason: str, where: str = "") -> None:
        """Count one unreadable item; keep the first few locations for the user."""
        self.skipped[reason] += 1
        if len(self.examples) < 20:
            self.examples.append(f"{where}: {reason}" if where else reason)

    @property
    def read_anything(self) -> bool:
        """False when nothing at all could be read (the CLI then exits non-zero)."""
        return (self.added + self.updated + self.unchanged) > 0

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form for ``--json``."""
        return {
            "path": self.path,
            "source": self.source,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "messages": self.messages,
            "calls": self.calls,
            "failures": self.failures,
            "skipped": dict(self.skipped),
            "skipped_total": sum(self.skipped.values()),
            "skipped_examples": list(self.examples),
        }


class Source(Protocol):
    """The shape of a log source."""

    name: str

    def detect(self, path: Path) -> bool:
        """Whether this source can read ``path`` (cheap: reads a few bytes)."""
        ...

    def iter_sessions(
        self, path: Path, report: IngestReport, known: Mapping[str, str]
    ) -> Iterator[Session]:
        """Stream sessions; ``known`` maps session keys to stored fingerprints."""
        ...
