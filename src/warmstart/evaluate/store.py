"""Reading and writing evaluation results in the warmstart store.

Experiments are rows in ``eval_experiments`` with their config and summary as JSON; an
A/B experiment adds one ``eval_runs`` row per finished ``(task, trial, arm)`` run, written
as soon as the run ends, so an interrupted experiment loses at most the run in flight
and ``--resume`` knows exactly what is left.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, func, select, update

from warmstart.evaluate import schema
from warmstart.evaluate.errors import EvaluationError
from warmstart.store import Store
from warmstart.store import schema as core

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_id() -> str:
    """A ULID: 26 characters, sortable by creation time, unique without coordination."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return "".join(reversed(chars))


def _experiment_row(row: Any) -> dict[str, Any]:
    data = dict(row)
    data["config"] = json.loads(data.pop("config_json") or "{}")
    summary = data.pop("summary_json")
    data["summary"] = json.loads(summary) if summary else None
    return data


def _run_row(row: Any) -> dict[str, Any]:
    data = {k: v for k, v in dict(row).items() if k != "experiment_id"}
    data["error_kinds"] = json.loads(data.pop("error_kinds_json") or "{}")
    data["run_errors"] = json.loads(data.pop("run_errors_json") or "[]")
    data["session_ids"] = json.loads(data.pop("session_ids_json") or "[]")
    if data.get("success") is not None:
        data["success"] = bool(data["success"])
    return data


class EvalStore:
    """Evaluation experiments in one warmstart store (opened and migrated by :class:`Store`)."""

    def __init__(self, url: str | None = None) -> None:
        self.store = Store(url)
        self.url = self.store.url
        self.engine = self.store.engine

    # experiments ----------------------------------------------------------------

    def create_experiment(self, kind: str, config: Mapping[str, Any], name: str = "") -> str:
        """A new experiment row (status ``running``); returns its id."""
        ident = new_id()
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(
                schema.eval_experiments.insert().values(
                    id=ident,
                    kind=kind,
                    status="running",
                    name=name,
                    created_at=now,
                    updated_at=now,
                    config_json=json.dumps(config, default=str),
                )
            )
        return ident

    def update_experiment(
        self, ident: str, *, status: str | None = None, summary: Mapping[str, Any] | None = None
    ) -> None:
        """Set the status and/or summary, and touch ``updated_at``."""
        values: dict[str, Any] = {"updated_at": time.time()}
        if status is not None:
            values["status"] = status
        if summary is not None:
            values["summary_json"] = json.dumps(summary, default=str)
        e = schema.eval_experiments
        with self.engine.begin() as conn:
            conn.execute(update(e).where(e.c.id == ident).values(**values))

    def resolve(self, ident: str) -> str:
        """A full id from an id or a unique prefix of one (at least 4 characters)."""
        e = schema.eval_experiments
        with self.engine.connect() as conn:
            if conn.execute(select(e.c.id).where(e.c.id == ident)).first():
                return ident
            found: list[str] = []
            if len(ident) >= 4:
                found = [
                    r.id
                    for r in conn.execute(
                        select(e.c.id).where(e.c.id.startswith(ident.upper())).limit(2)
                    )
                ]
        if len(found) == 1:
            return found[0]
        if not found:
            raise EvaluationError(f"no experiment {ident!r} (see `warmstart eval list`)")
        raise EvaluationError(f"experiment id {ident!r} is ambiguous; give more characters")

    def experiment(self, ident: str) -> dict[str, Any]:
        """One experiment with its config and summary (no runs or scores)."""
        key = self.resolve(ident)
        e = schema.eval_experiments
        with self.engine.connect() as conn:
            row = conn.execute(select(e).where(e.c.id == key)).one()
        return _experiment_row(row._mapping)

    def list_experiments(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Experiments, newest first, with how many runs each has stored."""
        e, r = schema.eval_experiments, schema.eval_runs
        runs = (
            select(r.c.experiment_id, func.count().label("n"))
            .group_by(r.c.experiment_id)
            .subquery()
        )
        query = (
            select(e, func.coalesce(runs.c.n, 0).label("runs"))
            .outerjoin(runs, runs.c.experiment_id == e.c.id)
            .order_by(e.c.created_at.desc(), e.c.id.desc())
        )
        if kind:
            query = query.where(e.c.kind == kind)
        with self.engine.connect() as conn:
            out = []
            for row in conn.execute(query):
                data = _experiment_row(row._mapping)
                out.append(data)
            return out

    # offline scores ---------------------------------------------------------------

    def save_scores(self, ident: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Store offline scores: ``strategy, budget, metric, estimate, low, high, n``."""
        values = [
            {
                "experiment_id": ident,
                "position": position,
                "strategy": row["strategy"],
                "budget": int(row["budget"]),
                "metric": row["metric"],
                "estimate": row["estimate"],
                "low": row["low"],
                "high": row["high"],
                "n": int(row["n"]),
            }
            for position, row in enumerate(rows)
        ]
        if values:
            with self.engine.begin() as conn:
                conn.execute(schema.eval_scores.insert(), values)

    def scores(self, ident: str) -> list[dict[str, Any]]:
        """The stored offline scores of an experiment, in the order they were saved."""
        s = schema.eval_scores
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(s).where(s.c.experiment_id == self.resolve(ident)).order_by(s.c.position)
            ).all()
        hidden = ("experiment_id", "position")
        return [{k: v for k, v in dict(r._mapping).items() if k not in hidden} for r in rows]

    # A/B runs ---------------------------------------------------------------------

    def add_run(self, ident: str, run: Mapping[str, Any]) -> None:
        """Store one finished run (a later row for the same unit replaces it)."""
        values = dict(run)
        values["experiment_id"] = ident
        for key in ("error_kinds", "run_errors", "session_ids"):
            values[f"{key}_json"] = json.dumps(
                values.pop(key, None) or ({} if key == "error_kinds" else []), default=str
            )
        r = schema.eval_runs
        with self.engine.begin() as conn:
            conn.execute(
                delete(r).where(
                    (r.c.experiment_id == ident)
                    & (r.c.task_id == values["task_id"])
                    & (r.c.trial == values["trial"])
                    & (r.c.arm == values["arm"])
                )
            )
            conn.execute(r.insert().values(**values))
            conn.execute(
                update(schema.eval_experiments)
                .where(schema.eval_experiments.c.id == ident)
                .values(updated_at=time.time())
            )

    def runs(self, ident: str) -> list[dict[str, Any]]:
        """Every stored run of an experiment, in schedule order."""
        r = schema.eval_runs
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(r).where(r.c.experiment_id == self.resolve(ident)).order_by(r.c.position)
            ).all()
        return [_run_row(row._mapping) for row in rows]

    def delete_runs(self, ident: str, units: Sequence[tuple[str, int, str]]) -> int:
        """Forget some runs (to run them again); returns how many went."""
        r = schema.eval_runs
        gone = 0
        with self.engine.begin() as conn:
            for task_id, trial, arm in units:
                gone += conn.execute(
                    delete(r).where(
                        (r.c.experiment_id == ident)
                        & (r.c.task_id == task_id)
                        & (r.c.trial == trial)
                        & (r.c.arm == arm)
                    )
                ).rowcount
        return gone

    def session_count(self, ids: Sequence[str]) -> int:
        """How many of ``ids`` are stored sessions (checks that runs were recorded)."""
        if not ids:
            return 0
        s = core.sessions
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).where(s.c.id.in_(list(ids)))).scalar_one())

    def first_user_messages(self, ids: Sequence[str]) -> dict[str, str]:
        """The first user message of each session in ``ids`` (its task text)."""
        m = core.messages
        out: dict[str, str] = {}
        wanted = list(ids)
        with self.engine.connect() as conn:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                first = (
                    select(m.c.session_id, func.min(m.c.idx).label("idx"))
                    .where(m.c.session_id.in_(chunk), m.c.role == "user")
                    .group_by(m.c.session_id)
                    .subquery()
                )
                query = select(m.c.session_id, m.c.content).join(
                    first, (first.c.session_id == m.c.session_id) & (first.c.idx == m.c.idx)
                )
                for row in conn.execute(query):
                    out[row.session_id] = row.content or ""
        return out
