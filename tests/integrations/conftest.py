"""Integration fixtures: a private copy of the τ-bench store with template ``airline``."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.proxy.stores import airline_store, private_copy


@pytest.fixture
def store_url(tmp_path_factory: pytest.TempPathFactory, tau_sample: Path, tmp_path: Path) -> str:
    """A private copy of a store holding template ``airline`` (τ-bench corpus)."""
    return private_copy(airline_store(tmp_path_factory, tau_sample), tmp_path / "store")
