"""Shared fixtures: a private ``$WARMSTART_HOME`` per test, and store URLs for SQLite
and a real PostgreSQL server that the tests start themselves (``pgserver``)."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"

# The loopback OpenAI test double (the one double the project allows) and the headless
# Chromium fixture, for every test module.
pytest_plugins = ["tests.support.fixtures", "tests.support.browser"]


# Settings a developer's shell may hold that must not leak into any test.
LEAKY_ENV = (
    "WARMSTART_DB",
    "WARMSTART_ENDPOINT",
    "WARMSTART_API_KEY",
    "WARMSTART_MODEL",
    "WARMSTART_PROVIDER",
    "WARMSTART_CONTEXT_LENGTH",
    "WARMSTART_GATE_URL",
    "WARMSTART_GATE_TOKEN",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "HERMES_HOME",
    "EDITOR",
    "VISUAL",
)


@pytest.fixture(autouse=True)
def warmstart_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point warmstart at a private, empty user directory; clear leaky settings."""
    home = tmp_path / "warmstart-home"
    home.mkdir()
    monkeypatch.setenv("WARMSTART_HOME", str(home))
    for name in LEAKY_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WARMSTART_RAISE_ERRORS", "")
    yield home


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """One PostgreSQL 16 server for the whole run, started from the pgserver wheel."""
    import pgserver

    folder = tempfile.mkdtemp(prefix="warmstart-pg-")
    server = pgserver.get_server(folder, cleanup_mode="stop")
    yield server
    from warmstart.store.store import _ENGINES

    for url in [u for u in _ENGINES if u.startswith("postgresql")]:
        _ENGINES.pop(url).dispose()  # open pooled connections would delay shutdown
    server.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


def _pg_url(server: Any, template: str | None = None) -> str:
    uri = server.get_uri()  # postgresql://postgres:@/postgres?host=/tmp/...
    host = uri.split("host=", 1)[1]
    name = "t_" + uuid.uuid4().hex[:12]
    clone = f" TEMPLATE {template}" if template else ""
    out = server.psql(f"CREATE DATABASE {name}{clone};")
    assert "ERROR" not in out, out
    return f"postgresql+psycopg://postgres@/{name}?host={host}"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store URL on each backend: the store suite runs on both."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return _pg_url(request.getfixturevalue("pg_server"))


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A fresh SQLite store URL (for tests that are not about the backend)."""
    return f"sqlite:///{tmp_path / 'store.db'}"


@pytest.fixture(scope="session")
def tau_sample() -> Path:
    """The τ-bench airline corpus as shipped in the package (MIT, licence beside it)."""
    from warmstart.cli.demo import sample_path

    return sample_path()


@pytest.fixture(scope="session")
def tau_bases(tmp_path_factory: pytest.TempPathFactory, tau_sample: Path) -> dict[str, str]:
    """Stores with the τ-bench corpus ingested once per backend, cloned per test below."""
    return {}


def _ingest_base(url: str, tau_sample: Path) -> None:
    from warmstart.config import MiningConfig
    from warmstart.ingestion import ingest
    from warmstart.store.store import _ENGINES

    ingest(tau_sample, db=url, config=MiningConfig())
    engine = _ENGINES.pop(url)
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def tau_db_url(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    tau_bases: dict[str, str],
    tau_sample: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> str:
    """A fresh store holding the ingested τ-bench corpus, on each backend."""
    if request.param == "sqlite":
        if "sqlite" not in tau_bases:
            base = tmp_path_factory.mktemp("tau-base") / "base.db"
            tau_bases["sqlite"] = f"sqlite:///{base}"
            _ingest_base(tau_bases["sqlite"], tau_sample)
        target = tmp_path / "tau.db"
        src = sqlite3.connect(tau_bases["sqlite"].removeprefix("sqlite:///"))
        dst = sqlite3.connect(target)
        src.backup(dst)
        src.close()
        dst.close()
        return f"sqlite:///{target}"
    server = request.getfixturevalue("pg_server")
    if "postgres" not in tau_bases:
        tau_bases["postgres"] = _pg_url(server)
        _ingest_base(tau_bases["postgres"], tau_sample)
    base_name = tau_bases["postgres"].split("@/", 1)[1].split("?", 1)[0]
    url = _pg_url(server, template=base_name)
    return url
