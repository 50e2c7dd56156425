"""Runtime test setup: a clean environment, and the OpenAI double fixtures.

``tests/conftest.py`` is to register ``pytest_plugins = ["tests.support.fixtures"]`` for
the whole suite; until it does, the fixtures are imported here. The repository root is
put on ``sys.path`` (a no-op once pytest's ``pythonpath = ["."]`` does it) so
``tests.support`` imports the same way in both cases.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.support.fixtures import closed_base_url, openai_double  # noqa: E402

__all__ = ["clean_runtime_env", "closed_base_url", "openai_double"]

RUNTIME_ENV = (
    "WARMSTART_ENDPOINT",
    "OPENAI_BASE_URL",
    "WARMSTART_API_KEY",
    "OPENAI_API_KEY",
    "WARMSTART_MODEL",
    "WARMSTART_PROVIDER",
    "WARMSTART_CONTEXT_LENGTH",
)


@pytest.fixture(autouse=True)
def clean_runtime_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No endpoint, key, model or length leaks in from the developer's shell."""
    for name in RUNTIME_ENV:
        monkeypatch.delenv(name, raising=False)
