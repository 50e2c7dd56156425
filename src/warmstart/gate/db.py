"""The gate's tables (``gate_`` prefix), their migrations and the engines.

SQLite runs in WAL mode with one write connection whose transactions start with
``BEGIN IMMEDIATE``; PostgreSQL serialises writers on the audit head row. Either way
every write transaction (a request change plus its audit row) is atomic.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from sqlalchemy import (
    Column,
    Connection,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    insert,
    make_url,
    select,
    text,
)
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import QueuePool

from warmstart.errors import StoreError
from warmstart.store.migrations import migrate as apply_migrations
from warmstart.store.schema import migrations_record

metadata = MetaData()

migrations_table = migrations_record("gate_migrations", metadata)

requests = Table(
    "gate_requests",
    metadata,
    Column("id", String(26), primary_key=True),
    Column("action", String(200), nullable=False),
    Column("description", Text, nullable=False),
    Column("details_json", Text, nullable=False),
    Column("requester", String(200), nullable=False),
    Column("session_key", String(200)),
    Column("status", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("timeout_seconds", Integer, nullable=False),
    Column("binding_hash", String(64), nullable=False),
    Column("decided_at", Float),
    Column("decided_by", String(200)),
    Column("reason", Text),
    Column("comment", Text),
    Column("consumed_at", Float),
    Column("idempotency_key", String(200)),
    Column("body_hash", String(64)),
    UniqueConstraint("requester", "idempotency_key", name="uq_gate_requests_idempotency"),
    Index("ix_gate_requests_status_expires", "status", "expires_at"),
    Index("ix_gate_requests_rate", "requester", "action", "created_at"),
    Index("ix_gate_requests_requester_status", "requester", "status"),
)

audit = Table(
    "gate_audit",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("at", Float, nullable=False),
    Column("event", String(32), nullable=False),
    Column("request_id", String(26)),
    Column("actor", String(200), nullable=False),
    Column("data_json", Text, nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
)

audit_head = Table(
    "gate_audit_head",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("seq", Integer, nullable=False),
    Column("hash", String(64), nullable=False),
)

session_allows = Table(
    "gate_session_allows",
    metadata,
    Column("session_key", String(200), primary_key=True),
    Column("action", String(200), primary_key=True),
    Column("created_at", Float, nullable=False),
    Column("created_by", String(200), nullable=False),
)

keys = Table(
    "gate_keys",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("value", Text, nullable=False),
)

GENESIS_HASH = "0" * 64
_NAMED = re.compile(r"(?<!:):([a-z_]+)")


# Migrations: applied in order, recorded in gate_migrations, never edited once shipped.
def m001_initial(conn: Connection) -> None:
    """Requests, the hash-chained audit log with its head row, and migrations."""
    metadata.create_all(conn, tables=[requests, audit, audit_head])
    conn.execute(insert(audit_head).values(id=1, seq=0, hash=GENESIS_HASH))


def m002_session_allows(conn: Connection) -> None:
    """Per-session auto-approval of named actions, set by approvers."""
    metadata.create_all(conn, tables=[session_allows])


def m003_keys(conn: Connection) -> None:
    """The gate's own secret, shared by every server on one database."""
    metadata.create_all(conn, tables=[keys])


MIGRATIONS: list[Callable[[Connection], None]] = [m001_initial, m002_session_allows, m003_keys]


class Database:
    """Engines for one gate database, with migrations applied on open."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._raw_writer: sqlite3.Connection | None = None
        self._raw_reader: sqlite3.Connection | None = None
        if self.is_sqlite and (":memory:" in url or url.rstrip("/") in {"sqlite:", "sqlite:/"}):
            raise StoreError("the gate needs a SQLite file, not an in-memory database")
        try:
            if self.is_sqlite:
                args = {"timeout": 30, "check_same_thread": False}
                self.reader = create_engine(url, connect_args=args, pool_size=8)
                self.writer = create_engine(
                    url,
                    connect_args=args,
                    poolclass=QueuePool,
                    pool_size=1,
                    max_overflow=0,
                    pool_timeout=60,
                )
                for engine in (self.reader, self.writer):
                    event.listen(engine, "connect", _sqlite_pragmas)
                event.listen(self.writer, "connect", _sqlite_manual_transactions)
                event.listen(self.writer, "begin", _sqlite_begin_immediate)
            else:
                self.reader = create_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True)
                self.writer = self.reader
            self.migrate()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open the gate database {_redact(url)}: {exc}") from exc

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction holding the gate's single writer lock."""
        if self.is_sqlite:
            with self._write_lock, self.writer.begin() as conn:
                yield conn
            return
        with self.writer.begin() as conn:
            conn.execute(select(audit_head.c.seq).where(audit_head.c.id == 1).with_for_update())
            yield conn

    @contextmanager
    def write_raw(self) -> Iterator[Raw]:
        """A write transaction for hot-path SQL (see :class:`Raw`).

        On SQLite it runs on one dedicated driver connection: checking a connection out
        of the pool and back costs several times the statements themselves.
        """
        if not self.is_sqlite:
            with self.write() as conn:
                yield Raw(conn.connection.driver_connection, False)
            return
        with self._write_lock:
            if self._raw_writer is None:
                self._raw_writer = self._sqlite_connect(autocommit=True)
            driver = self._raw_writer
            driver.execute("BEGIN IMMEDIATE")
            try:
                yield Raw(driver, True)
            except BaseException:
                driver.rollback()
                raise
            driver.commit()

    @contextmanager
    def read_raw(self) -> Iterator[Raw]:
        """A read-only connection for hot-path SQL (dedicated on SQLite)."""
        if not self.is_sqlite:
            with self.read() as conn:
                yield Raw(conn.connection.driver_connection, False)
            return
        with self._read_lock:
            if self._raw_reader is None:
                self._raw_reader = self._sqlite_connect(autocommit=False)
            yield Raw(self._raw_reader, True)

    def _sqlite_connect(self, autocommit: bool) -> sqlite3.Connection:
        path = make_url(self.url).database or ""
        conn = sqlite3.connect(path, timeout=30, check_same_thread=False)
        _sqlite_pragmas(conn, None)
        if autocommit:
            conn.isolation_level = None
        return conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only connection."""
        with self.reader.connect() as conn:
            yield conn

    def migrate(self) -> list[str]:
        """Apply pending migrations; returns the names applied now."""
        with self.writer.begin() as conn:
            if not self.is_sqlite:
                conn.execute(text("SELECT pg_advisory_xact_lock(7366533)"))
            return apply_migrations(conn, MIGRATIONS, migrations_table)

    def applied_migrations(self) -> list[str]:
        """Names of applied migrations, in order of application."""
        with self.read() as conn:
            rows = conn.execute(
                select(migrations_table.c.name).order_by(migrations_table.c.applied_at)
            )
            return list(rows.scalars())

    def dispose(self) -> None:
        """Close every pooled and dedicated connection."""
        for conn in (self._raw_writer, self._raw_reader):
            if conn is not None:
                conn.close()
        self._raw_writer = self._raw_reader = None
        self.reader.dispose()
        if self.writer is not self.reader:
            self.writer.dispose()


class Raw:
    """Hot-path SQL straight on the driver connection, inside the caller's transaction.

    SQLAlchemy's execution machinery costs several times what SQLite takes to run a
    small statement; the few statements every request runs skip it. SQL is written
    with ``:name`` parameters and adapted once to the driver's style.
    """

    _pyformat: ClassVar[dict[str, str]] = {}

    def __init__(self, driver: Any, sqlite: bool) -> None:
        self.driver = driver
        self.sqlite = sqlite

    def _sql(self, sql: str) -> str:
        if self.sqlite:
            return sql
        converted = self._pyformat.get(sql)
        if converted is None:
            converted = self._pyformat[sql] = _NAMED.sub(r"%(\1)s", sql)
        return converted

    def execute(self, sql: str, params: dict[str, Any]) -> Any:
        """Run one statement; returns the driver cursor."""
        assert self.driver is not None
        return self.driver.execute(self._sql(sql), params)

    def first(self, sql: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The first row as a dict, or None."""
        cur = self.execute(sql, params)
        row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cur.description], row, strict=True))

    def value(self, sql: str, params: dict[str, Any]) -> Any:
        """The first column of the first row."""
        row = self.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def rowcount(self, sql: str, params: dict[str, Any]) -> int:
        """Run a change; how many rows it touched."""
        return int(self.execute(sql, params).rowcount)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _sqlite_manual_transactions(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None


def _sqlite_begin_immediate(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE")


def _redact(url: str) -> str:
    """The URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return url
