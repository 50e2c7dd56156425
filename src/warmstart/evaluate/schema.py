"""The evaluation tables: experiments, their A/B runs, and offline scores.

They live on the store's own ``metadata`` so one migration
(``m002_evaluation_tables`` in :mod:`warmstart.store.migrations`) creates them beside
the sessions they were measured on, on SQLite and PostgreSQL alike. An experiment is
either ``offline`` (scores per strategy, budget and metric) or ``ab`` (one row per
``(task, trial, arm)`` run, which is what makes an interrupted experiment resumable).
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from warmstart.store.schema import metadata

eval_experiments = Table(
    "eval_experiments",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("kind", String(20), nullable=False),  # offline | ab
    Column("status", String(20), nullable=False),  # running | complete
    Column("name", Text, nullable=False, default=""),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("config_json", Text, nullable=False, default="{}"),
    Column("summary_json", Text),
    Index("ix_eval_experiments_kind", "kind"),
)

eval_runs = Table(
    "eval_runs",
    metadata,
    Column(
        "experiment_id",
        String(40),
        ForeignKey("eval_experiments.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("task_id", String(200), nullable=False),
    Column("trial", Integer, nullable=False),
    Column("arm", String(10), nullable=False),  # cold | warm
    Column("position", Integer, nullable=False),  # order in the randomised schedule
    Column("seed", Integer),
    Column("status", String(20), nullable=False),  # measured | excluded
    Column("stop_reason", String(40)),
    Column("user_turns", Integer, nullable=False, default=1),
    Column("turns", Integer, nullable=False, default=0),
    Column("calls", Integer, nullable=False, default=0),
    Column("calls_30", Integer, nullable=False, default=0),
    Column("errors_30", Integer, nullable=False, default=0),
    Column("total_errors", Integer, nullable=False, default=0),
    Column("first_success_turn", Integer),
    Column("distinct_tools", Integer, nullable=False, default=0),
    Column("success", Boolean),
    Column("prompt_tokens", Integer, nullable=False, default=0),
    Column("completion_tokens", Integer, nullable=False, default=0),
    Column("warm_tokens", Integer, nullable=False, default=0),
    Column("error_kinds_json", Text, nullable=False, default="{}"),
    Column("run_errors_json", Text, nullable=False, default="[]"),
    Column("session_ids_json", Text, nullable=False, default="[]"),
    Column("detail", Text),
    Column("started_at", Float, nullable=False),
    Column("ended_at", Float, nullable=False),
    UniqueConstraint("experiment_id", "task_id", "trial", "arm", name="uq_eval_runs_unit"),
)

eval_scores = Table(
    "eval_scores",
    metadata,
    Column(
        "experiment_id",
        String(40),
        ForeignKey("eval_experiments.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("position", Integer, nullable=False, default=0),
    Column("strategy", String(40), nullable=False),
    Column("budget", Integer, nullable=False),
    Column("metric", String(40), nullable=False),
    Column("estimate", Float),
    Column("low", Float),
    Column("high", Float),
    Column("n", Integer, nullable=False, default=0),
    UniqueConstraint("experiment_id", "strategy", "budget", "metric", name="uq_eval_scores_cell"),
)

TABLES = [eval_experiments, eval_runs, eval_scores]
