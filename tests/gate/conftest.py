"""Gate fixtures: real servers on loopback (uvicorn in a thread), SQLite and PostgreSQL."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.served import ServedApp

from warmstart.gate.app import create_app
from warmstart.gate.settings import GateSettings

TOKENS = {
    "agent-1": "req-token-agent-1-0123456789",
    "agent-2": "req-token-agent-2-0123456789",
    "alice": "apr-token-alice-0123456789ab",
    "bob": "apr-token-bob-0123456789abcd",
    "carol": "both-token-carol-0123456789",
}
REQUESTER_SPECS = [f"{n}:{TOKENS[n]}" for n in ("agent-1", "agent-2", "carol")]
APPROVER_SPECS = [f"{n}:{TOKENS[n]}" for n in ("alice", "bob", "carol")]


class RunningGate(ServedApp):
    """A gate served by uvicorn on a free loopback port in a background thread."""

    name = "gate server"

    def __init__(self, settings: GateSettings) -> None:
        self.settings = settings
        super().__init__(create_app(settings), access_log=False)

    @property
    def service(self) -> Any:
        return self.app.state.gate


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., GateSettings]:
    """Settings for a test gate: a private SQLite file and a fast sweeper."""

    def build(**overrides: Any) -> GateSettings:
        values: dict[str, Any] = {
            "db_url": f"sqlite:///{tmp_path / 'gate.db'}",
            "sweep_interval_seconds": 0.1,
            "public_url": "http://gate.invalid",
        }
        values.update(overrides)
        return GateSettings(**values)

    return build


@pytest.fixture
def start_gate() -> Iterator[Callable[..., RunningGate]]:
    """Start gates for the test and stop them afterwards."""
    running: list[RunningGate] = []

    def start(settings: GateSettings) -> RunningGate:
        gate = RunningGate(settings).start()
        running.append(gate)
        return gate

    yield start
    for gate in running:
        gate.stop()


@pytest.fixture
def gate(
    make_settings: Callable[..., GateSettings], start_gate: Callable[..., RunningGate]
) -> RunningGate:
    """A gate without tokens (loopback mode)."""
    return start_gate(make_settings())


@pytest.fixture
def auth_gate(
    make_settings: Callable[..., GateSettings], start_gate: Callable[..., RunningGate]
) -> RunningGate:
    """A gate with requester tokens (agent-1, agent-2, carol) and approvers (alice, bob, carol)."""
    return start_gate(
        make_settings(requester_tokens=REQUESTER_SPECS, approver_tokens=APPROVER_SPECS)
    )


def auth(name: str) -> dict[str, str]:
    """The Authorization header of a test principal."""
    return {"Authorization": f"Bearer {TOKENS[name]}"}


# -- PostgreSQL -------------------------------------------------------------------------
# The suite-wide ``pg_server`` (tests/conftest.py) is one real PostgreSQL started with
# pgserver. The gate's tests use one database on it, and a fresh schema per test: a
# schema costs nothing, while each new database copies a template through the WAL.


@pytest.fixture(scope="session")
def gate_pg_base(pg_server: Any) -> tuple[str, str]:
    """A database for the gate's tests: (name, socket directory)."""
    name = "gate_" + uuid.uuid4().hex[:10]
    out = pg_server.psql(f"CREATE DATABASE {name};")
    assert "ERROR" not in out, out
    host = pg_server.get_uri().split("host=", 1)[1]
    return name, host


@pytest.fixture
def pg_url(gate_pg_base: tuple[str, str]) -> str:
    """A SQLAlchemy URL whose connections see only a fresh, empty schema."""
    import psycopg

    name, host = gate_pg_base
    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(dbname=name, user="postgres", host=host, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"postgresql+psycopg://postgres@/{name}?host={host}&options=-csearch_path%3D{schema}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh gate database: a SQLite file, then a schema on a real PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))
