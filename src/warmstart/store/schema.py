"""The warmstart store's tables (SQLAlchemy Core), in their current shape.

Plural table names, ``*_json`` for JSON text, UTC epoch seconds for times. Sessions
are keyed by ``source:external_id`` so re-ingesting the same input is idempotent.
Migrations in :mod:`warmstart.store.migrations` bring an older database up to this.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()


def migrations_record(name: str, meta: MetaData) -> Table:
    """A table recording applied migrations by name (the store's, or a service's own)."""
    return Table(
        name,
        meta,
        Column("name", String(100), primary_key=True),
        Column("applied_at", Float, nullable=False),
    )


migrations_table = migrations_record("warmstart_migrations", metadata)

sessions = Table(
    "sessions",
    metadata,
    Column("id", String(400), primary_key=True),
    Column("source", String(40), nullable=False),
    Column("external_id", String(360), nullable=False),
    Column("origin", Text, nullable=False, default=""),
    Column("model", String(200)),
    Column("title", Text),
    Column("started_at", Float),
    Column("ended_at", Float),
    Column("end_reason", String(60)),
    Column("outcome", Float),
    Column("task_type", String(20), nullable=False, default="mixed"),
    Column("n_messages", Integer, nullable=False, default=0),
    Column("n_calls", Integer, nullable=False, default=0),
    Column("n_failures", Integer, nullable=False, default=0),
    Column("n_distinct_tools", Integer, nullable=False, default=0),
    Column("n_recoveries", Integer, nullable=False, default=0),
    Column("first_success_turn", Integer),
    Column("fingerprint", String(200), nullable=False, default=""),
    Column("tools_json", Text),
    Column("metadata_json", Text, nullable=False, default="{}"),
    Column("ingested_at", Float, nullable=False),
    Index("ix_sessions_source", "source"),
    Index("ix_sessions_task_type", "task_type"),
)

messages = Table(
    "messages",
    metadata,
    Column(
        "session_id", String(400), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False
    ),
    Column("idx", Integer, nullable=False),
    Column("role", String(20), nullable=False),
    Column("content", Text),
    Column("content_chars", Integer, nullable=False, default=0),
    Column("tool_calls_json", Text),
    Column("tool_call_id", String(200)),
    Column("name", String(200)),
    Column("timestamp", Float),
    UniqueConstraint("session_id", "idx", name="uq_messages_session_idx"),
)

tool_calls = Table(
    "tool_calls",
    metadata,
    Column(
        "session_id", String(400), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False
    ),
    Column("idx", Integer, nullable=False),
    Column("call_id", String(200), nullable=False),
    Column("tool", String(200), nullable=False),
    Column("arguments_json", Text, nullable=False),
    Column("args_valid", Boolean, nullable=False),
    Column("turn", Integer, nullable=False),
    Column("message_idx", Integer, nullable=False),
    Column("result", Text),
    Column("result_chars", Integer, nullable=False, default=0),
    Column("paired_by", String(10), nullable=False),
    Column("ok", Boolean, nullable=False),
    Column("error_kind", String(40)),
    Column("evidence", Text),
    Column("intent", Text),
    Column("timestamp", Float),
    Column("trivial", Boolean, nullable=False, default=False),
    Column("retry_of", Integer),
    Column("recovered_by", Integer),
    UniqueConstraint("session_id", "idx", name="uq_tool_calls_session_idx"),
    Index("ix_tool_calls_tool", "tool"),
)

templates = Table(
    "templates",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(64), nullable=False),
    Column("version", Integer, nullable=False),
    Column("is_current", Boolean, nullable=False, default=True),
    Column("task_type", String(20), nullable=False, default="mixed"),
    Column("tags_json", Text, nullable=False, default="[]"),
    Column("description", Text, nullable=False, default=""),
    Column("budget", Integer, nullable=False, default=2000),
    Column("source_sessions_json", Text, nullable=False, default="[]"),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("name", "version", name="uq_templates_name_version"),
)

examples = Table(
    "examples",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("template_id", Integer, ForeignKey("templates.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("tool", String(200), nullable=False),
    Column("intent", Text, nullable=False, default=""),
    Column("arguments_json", Text, nullable=False),
    Column("result", Text, nullable=False),
    Column("result_chars", Integer, nullable=False, default=0),
    Column("ok", Boolean, nullable=False, default=True),
    Column("failed_arguments_json", Text),
    Column("failed_result", Text),
    Column("error_kind", String(40)),
    Column("tokens", Integer, nullable=False, default=0),
    Column("tool_error_rate", Float, nullable=False, default=0.0),
    Column("session_id", String(400), nullable=False, default=""),
    Column("task_type", String(20), nullable=False, default="mixed"),
    Index("ix_examples_template", "template_id"),
)

template_usage = Table(
    "template_usage",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("template_id", Integer, ForeignKey("templates.id", ondelete="CASCADE"), nullable=False),
    Column("used_at", Float, nullable=False),
    Column("task", Text),
    Column("examples", Integer, nullable=False, default=0),
    Column("tokens", Integer, nullable=False, default=0),
    Column("context", String(40), nullable=False, default="library"),
)

ingests = Table(
    "ingests",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("path", Text, nullable=False),
    Column("source", String(40), nullable=False),
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float),
    Column("report_json", Text),
)
