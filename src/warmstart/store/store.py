"""The warmstart store: open (and migrate) a database, write mined sessions, read them back.

SQLite by default, any SQLAlchemy URL otherwise (PostgreSQL for a fleet). All
aggregation that analytics needs can run as SQL over these tables.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, delete, event, func, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError

from warmstart.errors import StoreError, TemplateError
from warmstart.model import Example, MinedCall, Session, SessionStats, Template
from warmstart.paths import default_db_url
from warmstart.store import schema
from warmstart.store.migrations import migrate, schema_version
from warmstart.store.text import clean, clip

MESSAGE_CHARS = 20_000
INTENT_CHARS = 400

_ENGINES: dict[str, Engine] = {}


def safe_url(url: str) -> str:
    """The URL with any password hidden, for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<invalid database URL>"


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.close()


def _check_sqlite_file(url: str) -> None:
    path = make_url(url).database
    if not path or path == ":memory:":
        return
    file = Path(path)
    if file.exists():
        with file.open("rb") as fh:
            head = fh.read(16)
        if head and head != b"SQLite format 3\x00":
            raise StoreError(f"{file}: not a SQLite database (cannot use it as the store)")
    else:
        file.parent.mkdir(parents=True, exist_ok=True)


def engine_for(url: str) -> Engine:
    """One engine per URL per process, migrated on first use."""
    engine = _ENGINES.get(url)
    if engine is not None:
        return engine
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"invalid database URL {url!r}: {exc}") from exc
    if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    try:
        if parsed.get_backend_name() == "sqlite":
            _check_sqlite_file(url)
            engine = create_engine(parsed, connect_args={"timeout": 30})
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(parsed, pool_pre_ping=True)
        with engine.begin() as conn:
            migrate(conn)
    except (SQLAlchemyError, OSError, ImportError) as exc:
        raise StoreError(f"cannot open store {safe_url(url)}: {_short(exc)}") from exc
    _ENGINES[url] = engine
    return engine


def _short(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass
class SessionFilter:
    """Which sessions a query covers; every field optional."""

    source: str | None = None
    task_type: str | None = None
    since: float | None = None
    model: str | None = None
    min_messages: int | None = None
    max_sessions: int | None = None
    ids: Sequence[str] | None = None

    def apply(self, query: Any) -> Any:
        """Add this filter's WHERE clauses to a select over ``sessions``."""
        s = schema.sessions
        if self.source:
            query = query.where(s.c.source == self.source)
        if self.task_type:
            query = query.where(s.c.task_type == self.task_type)
        if self.since is not None:
            query = query.where(s.c.started_at >= self.since)
        if self.model:
            query = query.where(s.c.model == self.model)
        if self.min_messages:
            query = query.where(s.c.n_messages >= self.min_messages)
        if self.ids is not None:
            query = query.where(s.c.id.in_(list(self.ids)))
        return query


class Store:
    """A handle on one warmstart database."""

    def __init__(self, url: str | None = None) -> None:
        self.url = url or default_db_url()
        self.engine = engine_for(self.url)

    def __repr__(self) -> str:
        return f"Store({safe_url(self.url)!r})"

    @property
    def schema_version(self) -> int:
        """The migration count this store is at."""
        return schema_version()

    # -- sessions -----------------------------------------------------------------
    def fingerprints(self, source: str) -> dict[str, str]:
        """Stored fingerprints of every session from ``source``."""
        s = schema.sessions
        with self.engine.connect() as conn:
            rows = conn.execute(select(s.c.id, s.c.fingerprint).where(s.c.source == source))
            return {row.id: row.fingerprint for row in rows}

    def write_sessions(
        self,
        batch: Iterable[tuple[Session, list[MinedCall], SessionStats]],
        existing: Collection[str] | None = None,
    ) -> tuple[int, int]:
        """Insert or replace sessions with their messages and calls, in one transaction.

        ``existing`` (keys already stored, when the caller knows them) lets new
        sessions skip the delete. Rows of the whole batch go to the driver in one
        ``executemany`` per table: this path carries every message of every
        ingest, so it avoids per-row statement building. Returns
        ``(added, updated)``; a failure rolls back this batch only, so nothing
        already in the store is lost.
        """
        now = time.time()
        session_rows: list[dict[str, Any]] = []
        message_rows: list[dict[str, Any]] = []
        call_rows: list[dict[str, Any]] = []
        replace: list[str] = []
        for session, calls, stats in batch:
            key = clean(session.key) or ""
            if existing is None or key in existing:
                replace.append(key)
            session_rows.append(_session_values(session, key, stats, now))
            message_rows.extend(_message_values(key, session))
            call_rows.extend(_call_values(key, calls))
        try:
            with self.engine.begin() as conn:
                updated = self._delete_sessions(conn, replace) if replace else 0
                for table, rows in (
                    (schema.sessions, session_rows),
                    (schema.messages, message_rows),
                    (schema.tool_calls, call_rows),
                ):
                    if rows:
                        sql, getter = self._insert_sql(table)
                        conn.exec_driver_sql(sql, list(map(getter, rows)))
        except (SQLAlchemyError, DBAPIError) as exc:
            raise StoreError(f"cannot write to store {safe_url(self.url)}: {_short(exc)}") from exc
        return len(session_rows) - updated, updated

    def _insert_sql(self, table: Any) -> tuple[str, Callable[[dict[str, Any]], Any]]:
        """A driver-level INSERT of every column of ``table`` with positional
        placeholders, and the getter that turns a row dict into its parameters."""
        cache: dict[str, tuple[str, Callable[[dict[str, Any]], Any]]] = self.__dict__.setdefault(
            "_insert_cache", {}
        )
        hit = cache.get(table.name)
        if hit is None:
            cols = [c.name for c in table.columns]
            mark = "?" if self.engine.dialect.paramstyle == "qmark" else "%s"
            sql = (
                f"INSERT INTO {table.name} ({', '.join(cols)}) "
                f"VALUES ({', '.join([mark] * len(cols))})"
            )
            hit = cache[table.name] = (sql, itemgetter(*cols))
        return hit

    @staticmethod
    def _delete_sessions(conn: Connection, keys: list[str]) -> int:
        conn.execute(delete(schema.tool_calls).where(schema.tool_calls.c.session_id.in_(keys)))
        conn.execute(delete(schema.messages).where(schema.messages.c.session_id.in_(keys)))
        result = conn.execute(delete(schema.sessions).where(schema.sessions.c.id.in_(keys)))
        return int(result.rowcount or 0)

    def list_sessions(
        self, flt: SessionFilter | None = None, limit: int | None = None, offset: int = 0
    ) -> list[dict[str, Any]]:
        """Session rows (newest first), as dicts."""
        s = schema.sessions
        query = (flt or SessionFilter()).apply(select(s)).order_by(s.c.started_at.desc(), s.c.id)
        if limit is not None:
            query = query.limit(limit).offset(offset)
        with self.engine.connect() as conn:
            return [_session_row(row._mapping) for row in conn.execute(query)]

    def resolve_session(self, ident: str) -> str:
        """Accept a full key (``source:id``) or a unique external id; return the key."""
        s = schema.sessions
        with self.engine.connect() as conn:
            if conn.execute(select(s.c.id).where(s.c.id == ident)).first():
                return ident
            rows = conn.execute(select(s.c.id).where(s.c.external_id == ident).limit(2)).all()
        if len(rows) == 1:
            return str(rows[0].id)
        if not rows:
            raise StoreError(f"no session {ident!r} in the store (see `warmstart sessions list`)")
        raise StoreError(f"session id {ident!r} is ambiguous; use the full source:id key")

    def get_session(self, ident: str) -> dict[str, Any]:
        """One session with its messages and mined calls."""
        key = self.resolve_session(ident)
        s, m, c = schema.sessions, schema.messages, schema.tool_calls
        with self.engine.connect() as conn:
            row = conn.execute(select(s).where(s.c.id == key)).one()
            msgs = conn.execute(select(m).where(m.c.session_id == key).order_by(m.c.idx)).all()
            calls = conn.execute(select(c).where(c.c.session_id == key).order_by(c.c.idx)).all()
        data = _session_row(row._mapping)
        data["messages"] = [
            {k: v for k, v in dict(r._mapping).items() if k != "session_id"} for r in msgs
        ]
        data["calls"] = [
            {k: v for k, v in dict(r._mapping).items() if k != "session_id"} for r in calls
        ]
        return data

    def iter_calls(self, flt: SessionFilter | None = None) -> Iterator[dict[str, Any]]:
        """Mined calls of the filtered sessions, in session then call order."""
        s, c = schema.sessions, schema.tool_calls
        sess = (flt or SessionFilter()).apply(select(s.c.id))
        if flt and flt.max_sessions:
            sess = sess.order_by(s.c.n_messages.desc(), s.c.id).limit(flt.max_sessions)
        query = (
            select(c, s.c.task_type, s.c.outcome, s.c.n_messages)
            .join(s, s.c.id == c.c.session_id)
            .where(c.c.session_id.in_(sess.scalar_subquery()))
            .order_by(c.c.session_id, c.c.idx)
        )
        with self.engine.connect() as conn:
            for row in conn.execution_options(stream_results=True, yield_per=2000).execute(query):
                yield dict(row._mapping)

    def summary(self, flt: SessionFilter | None = None) -> dict[str, Any]:
        """Totals for a store summary: sessions, messages, calls, failures, task types."""
        s = schema.sessions
        base = (flt or SessionFilter()).apply(
            select(
                func.count(),
                func.coalesce(func.sum(s.c.n_messages), 0),
                func.coalesce(func.sum(s.c.n_calls), 0),
                func.coalesce(func.sum(s.c.n_failures), 0),
                func.coalesce(func.sum(s.c.n_recoveries), 0),
            )
        )
        by_type = (flt or SessionFilter()).apply(
            select(s.c.task_type, func.count()).group_by(s.c.task_type)
        )
        by_source = (flt or SessionFilter()).apply(
            select(s.c.source, func.count()).group_by(s.c.source)
        )
        c = schema.tool_calls
        tools = select(func.count(func.distinct(c.c.tool))).select_from(
            c.join(s, s.c.id == c.c.session_id)
        )
        tools = (flt or SessionFilter()).apply(tools)
        with self.engine.connect() as conn:
            n, msgs, calls, fails, recov = conn.execute(base).one()
            types = {row[0]: row[1] for row in conn.execute(by_type)}
            sources = {row[0]: row[1] for row in conn.execute(by_source)}
            n_tools = conn.execute(tools).scalar_one()
        return {
            "sessions": int(n),
            "messages": int(msgs),
            "calls": int(calls),
            "failures": int(fails),
            "recovery_pairs": int(recov),
            "distinct_tools": int(n_tools),
            "task_types": types,
            "sources": sources,
        }

    # -- ingests ------------------------------------------------------------------
    def record_ingest(self, path: str, source: str, started: float, report: dict[str, Any]) -> None:
        """Keep a row per ingest run with its report (what was skipped and why)."""
        with self.engine.begin() as conn:
            conn.execute(
                schema.ingests.insert().values(
                    path=clean(path),
                    source=source,
                    started_at=started,
                    finished_at=time.time(),
                    report_json=clean(json.dumps(report)),
                )
            )

    # -- templates ----------------------------------------------------------------
    def save_template(self, template: Template) -> Template:
        """Store a new version of ``template.name``; older versions are kept."""
        t, e = schema.templates, schema.examples
        now = time.time()
        with self.engine.begin() as conn:
            latest = conn.execute(
                select(func.max(t.c.version)).where(t.c.name == template.name)
            ).scalar()
            version = (latest or 0) + 1
            conn.execute(update(t).where(t.c.name == template.name).values(is_current=False))
            inserted = conn.execute(
                t.insert().values(
                    name=template.name,
                    version=version,
                    is_current=True,
                    task_type=template.task_type,
                    tags_json=json.dumps(template.tags),
                    description=clean(template.description) or "",
                    budget=template.budget,
                    source_sessions_json=json.dumps(template.source_sessions),
                    created_at=now,
                )
            ).inserted_primary_key
            assert inserted is not None
            template_id = int(inserted[0])
            if template.examples:
                conn.execute(
                    e.insert(),
                    [_example_row(ex, template_id, i) for i, ex in enumerate(template.examples)],
                )
        template.version = version
        template.id = int(template_id)
        template.created_at = now
        return template

    def template_key(self, name: str, version: int | None = None) -> tuple[int, float]:
        """Row id and creation time of the current (or a given) version: a cheap cache key.

        The time is part of it because SQLite may hand a deleted row's id to a new one.
        """
        t = schema.templates
        query = select(t.c.id, t.c.created_at).where(t.c.name == name)
        query = (
            query.where(t.c.version == version)
            if version is not None
            else query.order_by(t.c.is_current.desc(), t.c.version.desc()).limit(1)
        )
        with self.engine.connect() as conn:
            found = conn.execute(query).first()
        if found is None:
            which = f" version {version}" if version is not None else ""
            raise TemplateError(f"no template {name!r}{which} (see `warmstart templates list`)")
        return int(found.id), float(found.created_at)

    def load_template(self, name: str, version: int | None = None) -> Template:
        """The current (or a given) version of a template, with its examples."""
        t, e = schema.templates, schema.examples
        query = select(t).where(t.c.name == name)
        query = (
            query.where(t.c.version == version)
            if version is not None
            else query.order_by(t.c.is_current.desc(), t.c.version.desc()).limit(1)
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
            if row is None:
                which = f" version {version}" if version is not None else ""
                raise TemplateError(f"no template {name!r}{which} (see `warmstart templates list`)")
            ex_rows = conn.execute(
                select(e).where(e.c.template_id == row.id).order_by(e.c.position)
            ).all()
            usage = self._usage_counts(conn, [row.id])
        examples = [_example_from_row(r._mapping) for r in ex_rows]
        return _template_from_row(row._mapping, examples, usage.get(row.id, 0))

    def list_templates(
        self,
        task_type: str | None = None,
        tags: Sequence[str] = (),
        all_versions: bool = False,
    ) -> list[Template]:
        """Templates (current versions unless ``all_versions``), examples not loaded."""
        t, e = schema.templates, schema.examples
        query = (
            select(t, func.count(e.c.id).label("n_examples"))
            .outerjoin(e, e.c.template_id == t.c.id)
            .group_by(*t.c)
            .order_by(t.c.name, t.c.version)
        )
        if not all_versions:
            query = query.where(t.c.is_current.is_(True))
        if task_type:
            query = query.where(t.c.task_type == task_type)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            usage = self._usage_counts(conn, [r.id for r in rows])
        out = []
        for row in rows:
            tpl = _template_from_row(row._mapping, [], usage.get(row.id, 0))
            tpl.example_count = int(row.n_examples)
            if set(tags) <= set(tpl.tags):
                out.append(tpl)
        return out

    def delete_template(self, name: str, version: int | None = None) -> int:
        """Delete all versions of a template (or one); return how many went."""
        t, e, u = schema.templates, schema.examples, schema.template_usage
        with self.engine.begin() as conn:
            query = select(t.c.id).where(t.c.name == name)
            if version is not None:
                query = query.where(t.c.version == version)
            ids = [r.id for r in conn.execute(query)]
            if not ids:
                raise TemplateError(f"no template {name!r} to delete")
            conn.execute(delete(e).where(e.c.template_id.in_(ids)))
            conn.execute(delete(u).where(u.c.template_id.in_(ids)))
            conn.execute(delete(t).where(t.c.id.in_(ids)))
            remaining = conn.execute(
                select(t.c.id).where(t.c.name == name).order_by(t.c.version.desc()).limit(1)
            ).first()
            if remaining is not None:
                conn.execute(update(t).where(t.c.id == remaining.id).values(is_current=True))
        return len(ids)

    def record_usage(
        self, template_id: int, task: str | None, examples: int, tokens: int, context: str
    ) -> None:
        """Count one use of a template (least-used-first selection reads this)."""
        with self.engine.begin() as conn:
            conn.execute(
                schema.template_usage.insert().values(
                    template_id=template_id,
                    used_at=time.time(),
                    task=clip(task, 2000),
                    examples=examples,
                    tokens=tokens,
                    context=context,
                )
            )

    @staticmethod
    def _usage_counts(conn: Connection, ids: list[int]) -> dict[int, int]:
        if not ids:
            return {}
        u = schema.template_usage
        rows = conn.execute(
            select(u.c.template_id, func.count())
            .where(u.c.template_id.in_(ids))
            .group_by(u.c.template_id)
        )
        return {int(r[0]): int(r[1]) for r in rows}

    def template_stats(self) -> dict[str, Any]:
        """Totals over current templates: count, by type, examples, usage."""
        t, e, u = schema.templates, schema.examples, schema.template_usage
        with self.engine.connect() as conn:
            total = conn.execute(select(func.count()).where(t.c.is_current.is_(True))).scalar_one()
            versions = conn.execute(select(func.count()).select_from(t)).scalar_one()
            by_type = {
                r[0]: r[1]
                for r in conn.execute(
                    select(t.c.task_type, func.count())
                    .where(t.c.is_current.is_(True))
                    .group_by(t.c.task_type)
                )
            }
            n_examples = conn.execute(
                select(func.count())
                .select_from(e.join(t, t.c.id == e.c.template_id))
                .where(t.c.is_current.is_(True))
            ).scalar_one()
            uses = conn.execute(select(func.count()).select_from(u)).scalar_one()
            tokens = conn.execute(select(func.coalesce(func.sum(u.c.tokens), 0))).scalar_one()
        return {
            "templates": int(total),
            "versions": int(versions),
            "by_type": by_type,
            "examples": int(n_examples),
            "uses": int(uses),
            "tokens_injected": int(tokens),
        }


def _session_values(session: Session, key: str, stats: SessionStats, now: float) -> dict[str, Any]:
    return {
        "id": key,
        "source": session.source,
        "external_id": clean(session.external_id),
        "origin": clean(session.origin) or "",
        "model": clip(session.model, 200),
        "title": clip(session.title, 1000),
        "started_at": session.started_at,
        "ended_at": session.ended_at,
        "end_reason": clip(session.end_reason, 60),
        "outcome": session.outcome,
        "task_type": stats.task_type,
        "n_messages": stats.messages,
        "n_calls": stats.calls,
        "n_failures": stats.failures,
        "n_distinct_tools": stats.distinct_tools,
        "n_recoveries": stats.recoveries,
        "first_success_turn": stats.first_success_turn,
        "fingerprint": session.fingerprint,
        "tools_json": None if session.tools is None else json.dumps(session.tools),
        "metadata_json": clean(json.dumps(session.metadata, default=str)),
        "ingested_at": now,
    }


def _message_values(key: str, session: Session) -> Iterator[dict[str, Any]]:
    for i, m in enumerate(session.messages):
        content = m.content
        yield {
            "session_id": key,
            "idx": i,
            "role": m.role,
            "content": clip(content, MESSAGE_CHARS),
            "content_chars": len(content) if content else 0,
            "tool_calls_json": clean(
                json.dumps(
                    [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls]
                )
            )
            if m.tool_calls
            else None,
            "tool_call_id": clip(m.tool_call_id, 200),
            "name": clip(m.name, 200),
            "timestamp": m.timestamp,
        }


def _call_values(key: str, calls: list[MinedCall]) -> Iterator[dict[str, Any]]:
    for c in calls:
        yield {
            "session_id": key,
            "idx": c.index,
            "call_id": clip(c.call_id, 200),
            "tool": clip(c.tool, 200),
            "arguments_json": clean(c.arguments),
            "args_valid": c.args_valid,
            "turn": c.turn,
            "message_idx": c.message_index,
            "result": clean(c.result),
            "result_chars": c.result_chars,
            "paired_by": c.paired_by,
            "ok": c.ok,
            "error_kind": c.error_kind,
            "evidence": clip(c.evidence, 500),
            "intent": clip(c.intent, INTENT_CHARS),
            "timestamp": c.timestamp,
            "trivial": c.trivial,
            "retry_of": c.retry_of,
            "recovered_by": c.recovered_by,
        }


def _session_row(row: Any) -> dict[str, Any]:
    data = dict(row)
    data["metadata"] = json.loads(data.pop("metadata_json") or "{}")
    tools = data.pop("tools_json")
    data["tools"] = json.loads(tools) if tools else None
    return data


def _example_row(ex: Example, template_id: int, position: int) -> dict[str, Any]:
    return {
        "template_id": template_id,
        "position": position,
        "tool": ex.tool,
        "intent": clean(ex.intent) or "",
        "arguments_json": clean(ex.arguments),
        "result": clean(ex.result) or "",
        "result_chars": ex.result_chars,
        "ok": ex.ok,
        "failed_arguments_json": clean(ex.failed_arguments),
        "failed_result": clean(ex.failed_result),
        "error_kind": ex.error_kind,
        "tokens": ex.tokens,
        "tool_error_rate": ex.tool_error_rate,
        "session_id": clean(ex.session_key) or "",
        "task_type": ex.task_type,
    }


def _example_from_row(row: Any) -> Example:
    return Example(
        id=int(row["id"]),
        tool=row["tool"],
        intent=row["intent"],
        arguments=row["arguments_json"],
        result=row["result"],
        result_chars=int(row["result_chars"]),
        ok=bool(row["ok"]),
        session_key=row["session_id"],
        task_type=row["task_type"],
        failed_arguments=row["failed_arguments_json"],
        failed_result=row["failed_result"],
        error_kind=row["error_kind"],
        tokens=int(row["tokens"]),
        tool_error_rate=float(row["tool_error_rate"]),
    )


def _template_from_row(row: Any, examples: list[Example], usage: int) -> Template:
    return Template(
        id=int(row["id"]),
        name=row["name"],
        version=int(row["version"]),
        task_type=row["task_type"],
        tags=json.loads(row["tags_json"]),
        description=row["description"],
        budget=int(row["budget"]),
        source_sessions=json.loads(row["source_sessions_json"]),
        created_at=float(row["created_at"]),
        usage_count=usage,
        examples=examples,
        example_count=len(examples),
    )
