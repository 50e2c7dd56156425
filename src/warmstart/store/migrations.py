"""Forward migrations, applied lazily when a store is opened.

An ordered list of small named functions; each is recorded in
``warmstart_migrations`` once applied and never edited after it ships. A new
column gets a new migration (``add_column_if_missing``) *and* its place in
:mod:`warmstart.store.schema`, so fresh and migrated stores end up identical.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from sqlalchemy import Connection, Table, inspect, select

from warmstart.store import schema

Migration = Callable[[Connection], None]


def m001_initial(conn: Connection) -> None:
    """Sessions, messages, tool calls, templates, examples, usage, ingests."""
    schema.metadata.create_all(
        conn,
        tables=[
            schema.sessions,
            schema.messages,
            schema.tool_calls,
            schema.templates,
            schema.examples,
            schema.template_usage,
            schema.ingests,
        ],
    )


def m002_evaluation_tables(conn: Connection) -> None:
    """Evaluation experiments, their A/B runs and offline scores.

    Results of ``warmstart eval`` belong beside the sessions they were measured on, and
    an A/B experiment must survive an interruption: its finished runs are rows here, so
    ``--resume`` can skip them.
    """
    from warmstart.evaluate import schema as evaluate_schema

    schema.metadata.create_all(conn, tables=evaluate_schema.TABLES)


MIGRATIONS: list[Migration] = [m001_initial, m002_evaluation_tables]


def schema_version() -> int:
    """The schema version this code writes: the number of migrations it knows."""
    return len(MIGRATIONS)


def applied(conn: Connection) -> set[str]:
    """Names of the migrations already recorded in this database."""
    if not inspect(conn).has_table(schema.migrations_table.name):
        return set()
    rows = conn.execute(schema.migrations_table.select()).all()
    return {row.name for row in rows}


def migrate(
    conn: Connection,
    migrations: Sequence[Migration] | None = None,
    table: Table = schema.migrations_table,
) -> list[str]:
    """Apply every migration not yet recorded in ``table``; return the names applied now.

    The store's own list is the default; a service with its own tables (the gate)
    passes its list and its record table and gets the same behaviour.
    """
    table.create(conn, checkfirst=True)
    done = {row.name for row in conn.execute(select(table.c.name))}
    ran: list[str] = []
    for migration in MIGRATIONS if migrations is None else migrations:
        if migration.__name__ in done:
            continue
        migration(conn)
        conn.execute(table.insert().values(name=migration.__name__, applied_at=time.time()))
        ran.append(migration.__name__)
    return ran
