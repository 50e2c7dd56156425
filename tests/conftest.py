"""Shared fixtures: every test gets its own ``$WARMSTART_HOME``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def warmstart_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point warmstart at a private, empty user directory for the test."""
    home = tmp_path / "warmstart-home"
    home.mkdir()
    monkeypatch.setenv("WARMSTART_HOME", str(home))
    monkeypatch.delenv("WARMSTART_DB", raising=False)
    monkeypatch.setenv("WARMSTART_RAISE_ERRORS", "")
    yield home
