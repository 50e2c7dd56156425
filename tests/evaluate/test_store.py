"""The evaluation tables: created by their migration on SQLite and PostgreSQL, and the
experiment, run and score round trips that ``eval show`` and ``--resume`` rely on."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from warmstart.evaluate import EvalStore, EvaluationError
from warmstart.evaluate.store import new_id
from warmstart.store.migrations import MIGRATIONS


def test_migration_creates_the_tables(db_url: str) -> None:
    store = EvalStore(db_url)
    insp = inspect(store.engine)
    assert {"eval_experiments", "eval_runs", "eval_scores"} <= set(insp.get_table_names())
    assert "m002_evaluation_tables" in [m.__name__ for m in MIGRATIONS]
    runs = {c["name"] for c in insp.get_columns("eval_runs")}
    assert {
        "task_id",
        "trial",
        "arm",
        "status",
        "errors_30",
        "calls_30",
        "session_ids_json",
        "first_success_turn",
        "user_turns",
    } <= runs
    uniques = insp.get_unique_constraints("eval_runs")
    assert any(u["column_names"] == ["experiment_id", "task_id", "trial", "arm"] for u in uniques)


def test_round_trips(db_url: str) -> None:
    store = EvalStore(db_url)
    ident = store.create_experiment("ab", {"model": "m", "trials": 2}, name="first")
    assert len(ident) == 26 and store.resolve(ident[:12]) == ident
    run = {
        "task_id": "t",
        "trial": 0,
        "arm": "cold",
        "position": 1,
        "seed": 5,
        "status": "measured",
        "stop_reason": "final_answer",
        "user_turns": 1,
        "turns": 3,
        "calls": 3,
        "calls_30": 3,
        "errors_30": 1,
        "total_errors": 1,
        "first_success_turn": 2,
        "distinct_tools": 2,
        "success": True,
        "prompt_tokens": 10,
        "completion_tokens": 4,
        "warm_tokens": 0,
        "error_kinds": {"exception": 1},
        "run_errors": [],
        "session_ids": ["warmstart-eval:x"],
        "detail": None,
        "started_at": 1.0,
        "ended_at": 2.0,
    }
    store.add_run(ident, run)
    store.add_run(ident, {**run, "total_errors": 2})  # the same unit again replaces it
    stored = store.runs(ident)
    assert len(stored) == 1 and stored[0]["total_errors"] == 2
    assert stored[0]["error_kinds"] == {"exception": 1} and stored[0]["success"] is True
    store.update_experiment(ident, status="complete", summary={"done": 1})
    listed = store.list_experiments("ab")
    assert [(e["id"], e["runs"], e["status"], e["name"]) for e in listed] == [
        (ident, 1, "complete", "first")
    ]
    assert store.experiment(ident)["summary"] == {"done": 1}
    assert store.delete_runs(ident, [("t", 0, "cold")]) == 1 and store.runs(ident) == []

    offline = store.create_experiment("offline", {})
    rows = [
        {
            "strategy": s,
            "budget": 500,
            "metric": "tokens",
            "estimate": 1.5,
            "low": 1.0,
            "high": 2.0,
            "n": 3,
        }
        for s in ("b", "a")
    ]
    store.save_scores(offline, rows)
    assert store.scores(offline) == rows
    assert [e["kind"] for e in store.list_experiments()] == ["offline", "ab"]


def test_unknown_ids_and_sortable_ids(sqlite_url: str) -> None:
    store = EvalStore(sqlite_url)
    with pytest.raises(EvaluationError, match="no experiment 'ZZZZ'"):
        store.experiment("ZZZZ")
    ids = [new_id() for _ in range(50)]
    assert len(set(ids)) == 50
    assert all(len(i) == 26 for i in ids)
