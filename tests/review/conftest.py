"""Review test setup: a private Hermes-style home per test.

The root conftest clears endpoint, key, model and Hermes settings from the environment.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty Hermes-style home for the stores."""
    path = tmp_path / "hermes-home"
    path.mkdir()
    return path
