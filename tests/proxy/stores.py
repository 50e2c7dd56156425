"""One τ-bench store with template ``airline``, built once per test session and copied
per test (the proxy and integration suites both need it; building takes seconds)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest


def _copy(source: Path, target: Path) -> None:
    """Copy a SQLite database with the backup API: the store runs in WAL mode, so the
    main file alone may miss what is still in its ``-wal`` file."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()


def airline_store(tmp_path_factory: pytest.TempPathFactory, tau_sample: Path) -> Path:
    """The shared store file, built on first use in the session's base temp folder."""
    import warmstart

    folder = tmp_path_factory.getbasetemp() / "airline-store"
    database = folder / "store.db"
    if not database.exists():
        folder.mkdir(parents=True, exist_ok=True)
        building = folder / "building.db"
        url = f"sqlite:///{building}"
        warmstart.ingest(tau_sample, db=url)
        warmstart.build_template("airline", url, budget=1500)
        _copy(building, database)
    return database


def private_copy(source: Path, folder: Path) -> str:
    """A copy of the store for one test (tests write to it), as a SQLAlchemy URL."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "store.db"
    _copy(source, target)
    return f"sqlite:///{target}"
