"""Review test setup: a clean environment and a private store home per test."""

from __future__ import annotations

from pathlib import Path

import pytest

CLEAN_ENV = (
    "HERMES_HOME",
    "WARMSTART_ENDPOINT",
    "OPENAI_BASE_URL",
    "WARMSTART_API_KEY",
    "OPENAI_API_KEY",
    "WARMSTART_MODEL",
    "WARMSTART_PROVIDER",
    "WARMSTART_CONTEXT_LENGTH",
    "EDITOR",
    "VISUAL",
)


@pytest.fixture(autouse=True)
def clean_review_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Hermes home, endpoint, key or model leaks in from the developer's shell."""
    for name in CLEAN_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty Hermes-style home for the stores."""
    path = tmp_path / "hermes-home"
    path.mkdir()
    return path
