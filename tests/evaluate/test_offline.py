"""Offline replay on the bundled τ-bench corpus: deterministic, honest intervals, and the
warmstart-versus-naive relation checked against an independent computation."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from warmstart.evaluate import EvalStore, EvaluationError, OfflineConfig, evaluate_offline
from warmstart.evaluate.strategies import STRATEGIES
from warmstart.mining.examples import collect_pool, materialize
from warmstart.mining.select import Selector
from warmstart.model import Example
from warmstart.store import SessionFilter, Store

pytestmark = pytest.mark.parametrize("tau_db_url", ["sqlite"], indirect=True)

BUDGET = 2000


Fixes = set[tuple[str, str | None]]


def _naive(
    train: list[dict[str, Any]], calls: dict[str, list[dict[str, Any]]]
) -> tuple[list[Example], Fixes]:
    """Calls in store order from the longest train sessions, first fit into the budget;
    a fix counts as shown when a failed call and the call that recovered it are both in."""
    chosen: list[Example] = []
    taken: set[tuple[str, int]] = set()
    failed: list[dict[str, Any]] = []
    left, misses = BUDGET, 0
    for session in sorted(train, key=lambda s: (-s["n_messages"], s["id"])):
        for row in calls[session["id"]]:
            if row["trivial"] or not row["args_valid"]:
                continue
            ex = materialize(
                Example(
                    tool=row["tool"],
                    intent=row["intent"] or "",
                    arguments=row["arguments_json"],
                    result=row["result"] or "",
                    result_chars=row["result_chars"],
                    ok=row["ok"],
                )
            )
            if ex.tokens <= left:
                chosen.append(ex)
                taken.add((row["session_id"], row["idx"]))
                if not row["ok"]:
                    failed.append(row)
                left, misses = left - ex.tokens, 0
            else:
                misses += 1
                if misses >= 50:
                    break
        if misses >= 50:
            break
    fixes = {
        (r["tool"], r["error_kind"])
        for r in failed
        if r["recovered_by"] is not None and (r["session_id"], r["recovered_by"]) in taken
    }
    return chosen, fixes


def _scores(
    examples: list[Example], fixes: Fixes, truth: list[dict[str, Any]]
) -> tuple[float, float]:
    """(tool recall averaged over sessions, error coverage pooled over failed calls)."""
    shown = {ex.tool for ex in examples if ex.ok}
    recalls = [len(t["ok"] & shown) / len(t["ok"]) for t in truth if t["ok"]]
    failed = [f for t in truth for f in t["failed"]]
    covered = [f for f in failed if f[0] in shown and f in fixes]
    return sum(recalls) / len(recalls), len(covered) / len(failed)


def test_warmstart_beats_naive_at_2000_tokens(tau_db_url: str) -> None:
    report = evaluate_offline(
        tau_db_url,
        OfflineConfig(budgets=(BUDGET,), strategies=("naive", "warmstart"), resamples=300),
    )
    store = Store(tau_db_url)
    sessions = {s["id"]: s for s in store.list_sessions()}
    calls: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in store.iter_calls():
        calls[row["session_id"]].append(row)
    train = [sessions[i] for i in report.split.train]
    truth = [
        {
            "ok": {r["tool"] for r in calls[i] if r["ok"]},
            "failed": [(r["tool"], r["error_kind"]) for r in calls[i] if not r["ok"]],
        }
        for i in report.split.test
    ]
    assert sum(len(t["failed"]) for t in truth) > 10  # the coverage has something to cover

    naive, naive_fixes = _naive(train, calls)
    pool = collect_pool(store.iter_calls(SessionFilter(ids=sorted(report.split.train))))
    template = Selector(pool.examples).select(10**9, max_examples=64)
    warm = Selector(template).select(BUDGET)
    for examples in (naive, warm):
        assert sum(ex.tokens for ex in examples) <= BUDGET

    naive_recall, naive_cov = _scores(naive, naive_fixes, truth)
    warm_fixes = {(ex.tool, ex.error_kind) for ex in warm if ex.is_recovery}
    warm_recall, warm_cov = _scores(warm, warm_fixes, truth)
    assert report.score("naive", BUDGET, "tool_recall").estimate == pytest.approx(naive_recall)
    assert report.score("naive", BUDGET, "error_coverage").estimate == pytest.approx(naive_cov)
    assert report.score("warmstart", BUDGET, "tool_recall").estimate == pytest.approx(warm_recall)
    assert report.score("warmstart", BUDGET, "error_coverage").estimate == pytest.approx(warm_cov)
    # computed above, independently of the evaluation code: warmstart demonstrates more
    # of the tools the test sessions needed and fixes more of the errors they hit
    assert warm_recall > naive_recall
    assert warm_cov > naive_cov


def test_deterministic_with_a_seed_and_intervals_contain_estimates(tau_db_url: str) -> None:
    config = OfflineConfig(budgets=(500, 2000), resamples=300, seed=3)
    first = evaluate_offline(tau_db_url, config, save=False)
    again = evaluate_offline(
        tau_db_url, OfflineConfig(budgets=(500, 2000), resamples=300, seed=3), save=False
    )
    assert [s.as_row() for s in first.scores] == [s.as_row() for s in again.scores]
    assert first.experiment_id is None and EvalStore(tau_db_url).list_experiments() == []
    assert {s.strategy for s in first.scores} == set(STRATEGIES)
    assert len(first.scores) == 4 * 2 * 5
    for score in first.scores:
        est, low, high = score.interval.estimate, score.interval.low, score.interval.high
        assert est is not None and low is not None and high is not None, score
        assert low - 1e-9 <= est <= high + 1e-9, score
    for strategy in STRATEGIES:  # more budget never shows fewer examples
        small = first.score(strategy, 500, "examples").estimate or 0
        assert (first.score(strategy, 2000, "examples").estimate or 0) > small
    # the fixed strategies give every test session the same history: zero-width tokens
    naive_tokens = first.score("naive", 2000, "tokens")
    assert naive_tokens.low == naive_tokens.high == naive_tokens.estimate
    other = evaluate_offline(
        tau_db_url,
        OfflineConfig(budgets=(500,), strategies=("naive",), resamples=50, seed=4),
        save=False,
    )
    assert other.split.test != first.split.test


def test_saved_as_an_experiment(tau_db_url: str) -> None:
    report = evaluate_offline(
        tau_db_url, OfflineConfig(budgets=(1000,), strategies=("warmstart+task",), resamples=50)
    )
    store = EvalStore(tau_db_url)
    assert report.experiment_id is not None
    stored = store.experiment(report.experiment_id)
    assert (stored["kind"], stored["status"]) == ("offline", "complete")
    assert stored["config"]["split"]["test_sessions"] == 52
    assert store.scores(report.experiment_id) == [s.as_row() for s in report.scores]
    table = report.markdown().splitlines()
    assert table[0].startswith("| strategy | budget | tool recall | error coverage |")
    assert table[2].startswith("| warmstart+task | 1000 | ")


def test_bad_requests_are_refused(tau_db_url: str) -> None:
    with pytest.raises(EvaluationError, match="unknown strategy 'best'"):
        evaluate_offline(tau_db_url, OfflineConfig(strategies=("best",)), save=False)
    with pytest.raises(EvaluationError, match="positive"):
        evaluate_offline(tau_db_url, OfflineConfig(budgets=(0,)), save=False)
    with pytest.raises(EvaluationError, match="no sessions from source 'hermes'"):
        evaluate_offline(tau_db_url, OfflineConfig(source="hermes"), save=False)
