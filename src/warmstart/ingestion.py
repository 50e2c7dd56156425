"""Ingest: stream sessions from a log, mine each one, write them to the store in batches.

Re-ingesting the same input adds nothing (fingerprints match); a grown input adds
or updates only what changed. Bad items are counted with their reason in the
:class:`IngestReport`, never fatal; a batch that fails to write is rolled back
alone, so nothing already in the store is lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from warmstart.config import MiningConfig, load_config
from warmstart.mining.miner import mine_session
from warmstart.model import MinedCall, Session, SessionStats
from warmstart.sources import detect_source, get_source
from warmstart.sources.base import IngestReport
from warmstart.store import Store

Progress = Callable[[IngestReport], None]


def ingest(
    path: str | Path,
    db: str | None = None,
    source: str | None = None,
    config: MiningConfig | None = None,
    progress: Progress | None = None,
    batch_size: int = 250,
) -> IngestReport:
    """Ingest one log file into the store; return what happened."""
    path = Path(path).expanduser()
    src = get_source(source) if source else detect_source(path)
    cfg = config or load_config()
    store = Store(db)
    report = IngestReport(path=str(path), source=src.name)
    started = time.time()
    known = store.fingerprints(src.name)
    batch: list[tuple[Session, list[MinedCall], SessionStats]] = []

    def flush() -> None:
        added, updated = store.write_sessions(batch, existing=known)
        report.added += added
        report.updated += updated
        batch.clear()
        if progress:
            progress(report)

    for session in src.iter_sessions(path, report, known):
        if known.get(session.key) == session.fingerprint and session.fingerprint:
            report.unchanged += 1
            continue
        calls, stats = mine_session(session, cfg)
        report.messages += stats.messages
        report.calls += stats.calls
        report.failures += stats.failures
        batch.append((session, calls, stats))
        if len(batch) >= batch_size:
            flush()
    if batch:
        flush()
    elif progress:
        progress(report)
    store.record_ingest(str(path), src.name, started, report.as_dict())
    return report


def record_session(
    session: Session, db_url: str | None = None, config: MiningConfig | None = None
) -> SessionStats:
    """Mine and store one session produced in-process (runtime runs, proxy traffic)."""
    calls, stats = mine_session(session, config or load_config())
    Store(db_url).write_sessions([(session, calls, stats)])
    return stats
