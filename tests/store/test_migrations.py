"""Migrating an empty database gives the expected schema, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from warmstart.errors import StoreError
from warmstart.store import Store
from warmstart.store.migrations import MIGRATIONS, schema_version
from warmstart.store.store import engine_for

EXPECTED_TABLES = {
    "warmstart_migrations",
    "sessions",
    "messages",
    "tool_calls",
    "templates",
    "examples",
    "template_usage",
    "ingests",
}


def test_migrate_empty_database(db_url: str) -> None:
    store = Store(db_url)
    insp = inspect(store.engine)
    assert set(insp.get_table_names()) >= EXPECTED_TABLES
    cols = {c["name"] for c in insp.get_columns("tool_calls")}
    assert {"ok", "error_kind", "evidence", "paired_by", "recovered_by", "result_chars"} <= cols
    with store.engine.connect() as conn:
        names = [r[0] for r in conn.exec_driver_sql("SELECT name FROM warmstart_migrations")]
    assert names == [m.__name__ for m in MIGRATIONS]
    assert store.schema_version == schema_version() == len(MIGRATIONS)


def test_reopening_applies_nothing_twice(db_url: str) -> None:
    Store(db_url)
    engine = create_engine(db_url)
    from warmstart.store.migrations import migrate

    with engine.begin() as conn:
        assert migrate(conn) == []
    engine.dispose()


def test_not_a_database_is_refused_clearly(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.db"
    bogus.write_text("these are my notes, not a database")
    with pytest.raises(StoreError, match="not a SQLite database"):
        engine_for(f"sqlite:///{bogus}")
    assert bogus.read_text() == "these are my notes, not a database"


def test_bad_url_is_refused_clearly() -> None:
    with pytest.raises(StoreError, match="invalid database URL"):
        engine_for("::nonsense::")
    with pytest.raises(StoreError, match="cannot open store"):
        engine_for("postgresql+psycopg://nobody:secret@127.0.0.1:1/none")
