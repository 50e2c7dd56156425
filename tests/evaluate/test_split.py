"""Splitting by task: all trials of a τ-bench task land on one side, reproducibly."""

from __future__ import annotations

from collections import defaultdict

import pytest

from warmstart.evaluate import EvaluationError, split_by_task
from warmstart.evaluate.split import task_key
from warmstart.store import Store


@pytest.mark.parametrize("tau_db_url", ["sqlite"], indirect=True)
def test_tau_bench_trials_stay_together(tau_db_url: str) -> None:
    sessions = Store(tau_db_url).list_sessions()
    split = split_by_task(sessions, test_share=0.25, seed=0)
    assert len(split.train) + len(split.test) == 200
    assert not set(split.train) & set(split.test)
    sides: dict[str, set[str]] = defaultdict(set)
    for s in sessions:
        task = s["metadata"]["task_id"]
        sides[task].add("test" if s["id"] in split.test else "train")
    assert all(len(v) == 1 for v in sides.values())  # no task on both sides
    assert len(split.test_groups) == 13 and len(split.test) == 52  # ceil(0.25 * 50) tasks x 4
    assert split.train_groups.isdisjoint(split.test_groups)

    again = split_by_task(list(reversed(sessions)), test_share=0.25, seed=0)
    assert (again.train, again.test) == (split.train, split.test)
    other = split_by_task(sessions, test_share=0.25, seed=1)
    assert other.test != split.test


def test_sessions_without_task_ids_are_their_own_group() -> None:
    rows = [{"id": f"s{i}", "source": "x", "metadata": {}} for i in range(4)]
    assert task_key(rows[0]) == "s0"
    split = split_by_task(rows, test_share=0.5, seed=0)
    assert len(split.test) == 2 and len(split.train) == 2
    with pytest.raises(EvaluationError, match="at least two tasks"):
        split_by_task(rows[:1])
    with pytest.raises(EvaluationError, match="between 0 and 1"):
        split_by_task(rows, test_share=1.0)
