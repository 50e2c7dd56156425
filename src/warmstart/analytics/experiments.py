"""Stored A/B experiments (``warmstart eval ab``), summarised for the report.

Each experiment is summarised exactly as ``warmstart eval show ID`` does it, by the
evaluate package's own :func:`~warmstart.evaluate.ab.load_experiment` and
:func:`~warmstart.evaluate.ab.summary_table`. The evaluate package (numpy, the
runtime) is imported only here, and only when the store holds an A/B experiment, so
importing :mod:`warmstart.analytics` stays light.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import DBAPIError


def ab_experiments(db: str | None = None) -> list[dict[str, Any]]:
    """Every stored A/B experiment, newest first, as plain data: id, name, status,
    model, template, tasks, trials, runs done and planned, per-arm run counts, the
    metrics with their intervals (``metrics``) and the printed rows (``table``).
    Empty when there are none or the store has no evaluation tables."""
    from warmstart.evaluate.store import EvalStore

    store = EvalStore(db)
    try:
        listed = store.list_experiments("ab")
    except DBAPIError:  # a store without the evaluation tables
        return []
    if not listed:
        return []
    from warmstart.evaluate.ab import load_experiment, summary_table

    out = []
    for stored in listed:
        experiment = load_experiment(stored["id"], db)
        config, summary = experiment.config, experiment.summary
        out.append(
            {
                "id": experiment.id,
                "name": stored.get("name") or "",
                "status": experiment.status,
                "created_at": stored["created_at"],
                "model": config.model,
                "template": config.template,
                "tasks": config.tasks,
                "trials": config.trials,
                "task_count": len({r["task_id"] for r in experiment.runs}),
                "done": summary.get("done", 0),
                "planned": summary.get("planned", 0),
                "arms": summary.get("arms", {}),
                "metrics": summary.get("metrics", []),
                "table": summary_table(summary),
            }
        )
    return out
