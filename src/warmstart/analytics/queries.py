"""The SQL behind analytics: a handful of GROUP BY passes that run in the database.

Every query is SQLAlchemy Core that renders the same on SQLite and PostgreSQL, and
returns aggregates, never one row per message or per call: one row per (turn, task
type, length bucket, tool) cell, per distinct error message, per (task type, seconds
to first success). The ``tool_calls`` table is scanned three times (cells, error
messages, per-session tool mix), side by side when :func:`gather` has workers; the
sessions table answers the rest from the counts the miner stored at ingest.

Trivial tools (``MiningConfig.trivial_tools``) are left out everywhere, as they
are from the per-session counts, so the two always agree.

Constants (turn cap, length thresholds) are validated integers inlined as literals
rather than bound parameters: PostgreSQL treats ``$1`` in SELECT and ``$5`` in
GROUP BY as different expressions and rejects the grouping.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    Float,
    and_,
    case,
    cast,
    func,
    literal_column,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import JSON
from sqlalchemy.exc import OperationalError
from sqlalchemy.sql.elements import ColumnElement

from warmstart.store import SessionFilter, schema

SUCCEEDED, ENDED, FAILED, UNKNOWN = "succeeded", "ended normally", "failed", "unknown"
"""Outcome classes: reward >= 0.5; no outcome but a normal end reason; reward < 0.5 or
``end_reason = 'error'``; nothing known."""

LENGTHS = ("short", "mid", "marathon")


@dataclass(frozen=True)
class Cell:
    """Calls in one (tool, turn, task type, length bucket) cell."""

    tool: str
    turn: int
    task_type: str
    length: str
    calls: int
    failures: int
    recovered: int


@dataclass(frozen=True)
class SessionGroup:
    """Sums over the sessions of one (task type, length bucket, outcome) group."""

    task_type: str
    length: str
    outcome: str
    sessions: int
    with_calls: int
    calls: int
    failures: int
    calls_sq: int
    failures_sq: int
    calls_failures: int


def _int(value: int) -> ColumnElement[Any]:
    return literal_column(str(int(value)))


def length_bucket(short: int, marathon: int) -> ColumnElement[Any]:
    """``short`` under ``short`` messages, ``marathon`` from ``marathon`` on, else ``mid``."""
    n = schema.sessions.c.n_messages
    return case(
        (n < _int(short), literal_column("'short'")),
        (n < _int(marathon), literal_column("'mid'")),
        else_=literal_column("'marathon'"),
    )


def outcome_class() -> ColumnElement[Any]:
    """Outcome class of a session (see :data:`SUCCEEDED` and friends)."""
    s = schema.sessions.c
    return case(
        (
            or_(s.outcome < literal_column("0.5"), s.end_reason == literal_column("'error'")),
            literal_column(f"'{FAILED}'"),
        ),
        (s.outcome >= literal_column("0.5"), literal_column(f"'{SUCCEEDED}'")),
        (s.end_reason.is_not(None), literal_column(f"'{ENDED}'")),
        else_=literal_column(f"'{UNKNOWN}'"),
    )


def _failed() -> ColumnElement[Any]:
    return case((schema.tool_calls.c.ok, _int(0)), else_=_int(1))


def _calls_join(flt: SessionFilter, *columns: Any) -> Any:
    s, c = schema.sessions, schema.tool_calls
    query = (
        select(*columns)
        .select_from(c.join(s, s.c.id == c.c.session_id))
        .where(c.c.trivial.is_(False))
    )
    return flt.apply(query)


def _filtered(flt: SessionFilter) -> bool:
    return flt != SessionFilter()


def call_cells(
    conn: Connection, flt: SessionFilter, max_turns: int, short: int, marathon: int
) -> list[Cell]:
    """Calls, failures and recovered failures per (tool, turn, task type, length) cell;
    turns from ``max_turns`` on are pooled into turn ``max_turns``.

    The GROUP BY deliberately does not start with ``tool``: SQLite would then walk
    ``ix_tool_calls_tool`` and fetch every row at random, about twice as slow as
    the sequential scan it does otherwise.
    """
    c = schema.tool_calls.c
    turn = case((c.turn < _int(max_turns), c.turn), else_=_int(max_turns)).label("turn_b")
    length = length_bucket(short, marathon).label("length_b")
    task_type = schema.sessions.c.task_type.label("task_b")
    recovered = case((and_(c.ok.is_(False), c.recovered_by.is_not(None)), _int(1)), else_=_int(0))
    query = _calls_join(
        flt,
        c.tool,
        turn,
        task_type,
        length,
        func.count().label("calls"),
        func.sum(_failed()).label("failures"),
        func.sum(recovered).label("recovered"),
    ).group_by(turn, task_type, length, c.tool)
    return [
        Cell(
            tool=row.tool,
            turn=int(row.turn_b),
            task_type=row.task_b,
            length=row.length_b,
            calls=int(row.calls),
            failures=int(row.failures or 0),
            recovered=int(row.recovered or 0),
        )
        for row in conn.execute(query)
    ]


def error_messages(conn: Connection, flt: SessionFilter) -> Iterator[tuple[str, str, str, int]]:
    """Failed calls grouped by exact ``(tool, error kind, evidence)``, with counts.

    Grouping by the exact text in SQL first means Python only normalises each
    distinct message once, however often it occurred. Sessions are joined only
    when a filter needs them (the join then runs for failed rows only).
    """
    c = schema.tool_calls
    columns = (c.c.tool, c.c.error_kind, c.c.evidence, func.count().label("n"))
    if _filtered(flt):
        query = _calls_join(flt, *columns)
    else:
        query = select(*columns).where(c.c.trivial.is_(False))
    query = query.where(c.c.ok.is_(False)).group_by(c.c.error_kind, c.c.tool, c.c.evidence)
    for row in conn.execution_options(stream_results=True, yield_per=5000).execute(query):
        yield row.tool, row.error_kind or "", row.evidence or "", int(row.n)


def session_groups(
    conn: Connection, flt: SessionFilter, short: int, marathon: int
) -> list[SessionGroup]:
    """Per-group sums over sessions: the raw material for means and cluster-robust rates,
    from the counts the miner stored on each session."""
    s = schema.sessions.c
    length = length_bucket(short, marathon).label("length_b")
    outcome = outcome_class().label("outcome_b")
    has_calls = case((s.n_calls > _int(0), _int(1)), else_=_int(0))
    query = flt.apply(
        select(
            s.task_type,
            length,
            outcome,
            func.count().label("sessions"),
            func.sum(has_calls).label("with_calls"),
            func.sum(s.n_calls).label("calls"),
            func.sum(s.n_failures).label("failures"),
            func.sum(s.n_calls * s.n_calls).label("calls_sq"),
            func.sum(s.n_failures * s.n_failures).label("failures_sq"),
            func.sum(s.n_calls * s.n_failures).label("calls_failures"),
        )
    ).group_by(s.task_type, length, outcome)
    return [
        SessionGroup(
            task_type=row.task_type,
            length=row.length_b,
            outcome=row.outcome_b,
            **{
                key: int(getattr(row, key) or 0)
                for key in (
                    "sessions",
                    "with_calls",
                    "calls",
                    "failures",
                    "calls_sq",
                    "failures_sq",
                    "calls_failures",
                )
            },
        )
        for row in conn.execute(query)
    ]


ARMS = ("cold", "warm")
"""The A/B arms the proxy (``--ab``) and the eval harness write into session metadata."""


@dataclass(frozen=True)
class ArmRow:
    """Sums over the sessions of one A/B arm (``metadata_json`` key ``arm``).

    ``calls_early``/``failures_early`` count the calls at turns below the turn cap;
    ``first_n``, ``first_sum`` and ``first_sq`` are the count, sum and sum of squares
    of the sessions' turn of their first successful call (sessions without one left out).
    """

    arm: str
    sessions: int
    calls: int
    failures: int
    first_n: int
    first_sum: int
    first_sq: int
    calls_early: int = 0
    failures_early: int = 0


def arm_of(dialect: str) -> ColumnElement[Any]:
    """The ``arm`` value in ``sessions.metadata_json``, extracted by the database.

    The metadata is always valid JSON (written by ``json.dumps``). The path is a
    literal, not a bound parameter, so the expression can be grouped by on PostgreSQL.
    """
    col = schema.sessions.c.metadata_json
    if dialect == "postgresql":
        return func.json_extract_path_text(cast(col, JSON), literal_column("'arm'"))
    return func.json_extract(col, literal_column("'$.arm'"))


def arm_groups(conn: Connection, flt: SessionFilter, max_turns: int) -> list[ArmRow]:
    """Per-arm session sums, then (only when some session has an arm) per-arm calls
    and failures at turns below ``max_turns``; empty when no session has an arm."""
    s, c = schema.sessions, schema.tool_calls
    arm = arm_of(conn.dialect.name).label("arm_b")
    has_first = case((s.c.first_success_turn.is_(None), _int(0)), else_=_int(1))
    query = (
        flt.apply(
            select(
                arm,
                func.count().label("sessions"),
                func.sum(s.c.n_calls).label("calls"),
                func.sum(s.c.n_failures).label("failures"),
                func.sum(has_first).label("first_n"),
                func.sum(s.c.first_success_turn).label("first_sum"),
                func.sum(s.c.first_success_turn * s.c.first_success_turn).label("first_sq"),
            )
        )
        .where(arm.in_(ARMS))
        .group_by(arm)
    )
    keys = ("sessions", "calls", "failures", "first_n", "first_sum", "first_sq")
    rows = {
        row.arm_b: {key: int(getattr(row, key) or 0) for key in keys} for row in conn.execute(query)
    }
    if not rows:
        return []
    arm = arm_of(conn.dialect.name).label("arm_b")
    early = (
        _calls_join(flt, arm, func.count().label("calls"), func.sum(_failed()).label("failures"))
        .where(arm.in_(ARMS), c.c.turn < _int(max_turns))
        .group_by(arm)
    )
    counts = {row.arm_b: (int(row.calls), int(row.failures or 0)) for row in conn.execute(early)}
    return [
        ArmRow(
            name,
            **rows[name],
            calls_early=counts.get(name, (0, 0))[0],
            failures_early=counts.get(name, (0, 0))[1],
        )
        for name in ARMS
        if name in rows
    ]


def session_histogram(conn: Connection, flt: SessionFilter, column: str) -> list[tuple[int, int]]:
    """``(value, sessions)`` for one per-session count, over sessions that made calls."""
    s = schema.sessions.c
    col = getattr(s, column)
    query = (
        flt.apply(select(col, func.count()))
        .where(s.n_calls > _int(0), col.is_not(None))
        .group_by(col)
    )
    return [(int(v), int(n)) for v, n in conn.execute(query)]


def _ensure_ln(conn: Connection) -> None:
    """SQLite builds without the math functions lack ``ln``: add it to this connection."""
    if conn.dialect.name != "sqlite":
        return
    try:
        conn.exec_driver_sql("SELECT ln(1)").scalar()
    except OperationalError:
        raw = conn.connection.driver_connection
        assert raw is not None
        raw.create_function("ln", 1, math.log, deterministic=True)


@dataclass(frozen=True)
class MixRow:
    """Sessions of one task type whose first success came after ``seconds`` (rounded to
    0.1 s; None without timestamps), with the sum and sum of squares of their
    tool-mix entropies."""

    task_type: str
    seconds: float | None
    sessions: int
    entropy: float
    entropy_sq: float


def session_mix(conn: Connection, flt: SessionFilter) -> list[MixRow]:
    """Tool-mix entropy and time to first success per session, aggregated in SQL.

    Calls are counted per (session, tool) first, without the sessions table, then
    per session: Shannon entropy ``ln N - sum(c ln c) / N`` (nats) and the earliest
    successful call's timestamp. Only then are the (far fewer) per-session rows
    joined to ``sessions`` for the filter, the task type and the start time, and
    grouped by (task type, seconds to first success): the result is a histogram.
    """
    _ensure_ln(conn)
    s, c = schema.sessions, schema.tool_calls
    first_ok = case((c.c.ok, c.c.timestamp), else_=None)
    per_tool = select(
        c.c.session_id,
        cast(func.count(), Float).label("n"),
        func.min(first_ok).label("first_ok"),
    ).where(c.c.trivial.is_(False))
    if _filtered(flt):
        per_tool = per_tool.where(c.c.session_id.in_(flt.apply(select(s.c.id))))
    per_tool_q = per_tool.group_by(c.c.session_id, c.c.tool).subquery()
    n = per_tool_q.c.n
    per_session = (
        select(
            per_tool_q.c.session_id,
            func.sum(n).label("total"),
            func.sum(n * func.ln(n)).label("nlogn"),
            func.min(per_tool_q.c.first_ok).label("first_ok"),
        )
        .group_by(per_tool_q.c.session_id)
        .subquery()
    )
    entropy = func.ln(per_session.c.total) - per_session.c.nlogn / per_session.c.total
    delay = per_session.c.first_ok - s.c.started_at
    seconds = func.round(delay * literal_column("10")) / literal_column("10.0")
    query = flt.apply(
        select(
            s.c.task_type,
            seconds.label("seconds"),
            func.count().label("sessions"),
            func.sum(entropy).label("h"),
            func.sum(entropy * entropy).label("h2"),
        ).select_from(per_session.join(s, s.c.id == per_session.c.session_id))
    ).group_by(s.c.task_type, seconds)
    return [
        MixRow(
            task_type=row.task_type,
            seconds=None if row.seconds is None else float(row.seconds),
            sessions=int(row.sessions),
            entropy=float(row.h or 0.0),
            entropy_sq=float(row.h2 or 0.0),
        )
        for row in conn.execute(query)
    ]


@dataclass(frozen=True)
class Raw:
    """Everything analytics reads from the store, before any statistics."""

    cells: list[Cell]
    errors: list[tuple[str, str, str, int]]
    groups: list[SessionGroup]
    hist_failures: list[tuple[int, int]]
    hist_tools: list[tuple[int, int]]
    hist_first: list[tuple[int, int]]
    mix: list[MixRow]
    arms: list[ArmRow]


def _shared_memory_db(engine: Engine) -> bool:
    """An in-memory SQLite database is private to one connection: no side-by-side reads."""
    return engine.dialect.name == "sqlite" and engine.url.database in (None, "", ":memory:")


def gather(
    engine: Engine,
    flt: SessionFilter,
    max_turns: int,
    short: int,
    marathon: int,
    workers: int = 2,
) -> Raw:
    """Run every query, the three passes over ``tool_calls`` side by side.

    Each pass is one SQL statement, so on one connection they run one after the
    other; with ``workers`` > 1 each runs on its own connection in a thread (the
    drivers release the GIL while the database works), and the wall time becomes
    that of the slowest pass. SQLite in WAL mode and PostgreSQL both serve
    concurrent readers. A write landing between the passes (an ingest running at
    the same time) can make them disagree by the sessions it adds.
    """

    def cells(conn: Connection) -> list[Cell]:
        return call_cells(conn, flt, max_turns, short, marathon)

    def errors(conn: Connection) -> list[tuple[str, str, str, int]]:
        return list(error_messages(conn, flt))

    def mix(conn: Connection) -> list[MixRow]:
        return session_mix(conn, flt)

    def small(conn: Connection) -> tuple[Any, ...]:
        return (
            session_groups(conn, flt, short, marathon),
            session_histogram(conn, flt, "n_failures"),
            session_histogram(conn, flt, "n_distinct_tools"),
            session_histogram(conn, flt, "first_success_turn"),
            arm_groups(conn, flt, max_turns),
        )

    tasks: list[Callable[[Connection], Any]] = [cells, mix, errors, small]

    def run(task: Callable[[Connection], Any]) -> Any:
        with engine.connect() as conn:
            return task(conn)

    if workers <= 1 or _shared_memory_db(engine):
        with engine.connect() as conn:
            results = [task(conn) for task in tasks]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="analyze") as pool:
            results = list(pool.map(run, tasks))
    groups, hist_failures, hist_tools, hist_first, arms = results[3]
    return Raw(
        cells=results[0],
        errors=results[2],
        groups=groups,
        hist_failures=hist_failures,
        hist_tools=hist_tools,
        hist_first=hist_first,
        mix=results[1],
        arms=arms,
    )
