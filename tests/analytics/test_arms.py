"""A/B arms in analytics, and stored A/B experiments in the report."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from tests.analytics.builders import Call, session
from tests.analytics.test_report import open_report

from warmstart.analytics import analyze, render_report, write_report
from warmstart.analytics.tables import tables
from warmstart.analytics.verdicts import CLAIM_ARMS
from warmstart.ingestion import record_session
from warmstart.store import Store

OK, FAIL = ("search", True), ("search", False)


def record(url: str, key: str, calls: Sequence[Call], metadata: dict[str, Any]) -> None:
    """One proxy session with the given metadata, through the in-process ingest path."""
    base = session(key, calls, source="proxy")
    record_session(dataclasses.replace(base, metadata=metadata), url)


def small_ab(url: str) -> None:
    """2 warm sessions (1 of 4 calls failed), 3 cold (3 of 5), and three without an arm."""
    record(url, "w0", [OK, OK], {"arm": "warm"})
    record(url, "w1", [FAIL, OK], {"arm": "warm", "model": "m"})
    record(url, "c0", [FAIL, FAIL, OK], {"arm": "cold"})
    record(url, "c1", [FAIL], {"arm": "cold"})
    record(url, "c2", [OK], {"arm": "cold"})
    record(url, "none", [FAIL, FAIL], {})
    record(url, "other", [FAIL], {"arm": "other"})
    record(url, "nested", [FAIL], {"inner": {"arm": "warm"}})


def test_arms_counts_and_rates(db_url: str) -> None:
    small_ab(db_url)
    a = analyze(db_url, max_turns=2, min_sessions=2, experiments=False)
    assert a.arms is not None
    got = {
        g.arm: (
            g.sessions,
            g.calls,
            g.failures,
            (g.error.k, g.error.n),
            (g.early.k, g.early.n),
            g.first_success_turn.n,
            g.first_success_turn.mean,
        )
        for g in a.arms.arms
    }
    # cold: turns 0-1 hold c0's two failures, c1's failure and c2's success; c1 never succeeds
    assert got == {
        "cold": (3, 5, 3, (3, 5), (3, 4), 2, pytest.approx(1.0)),
        "warm": (2, 4, 1, (1, 4), (1, 4), 2, pytest.approx(0.5)),
    }
    assert a.arms.error.diff == pytest.approx(1 / 4 - 3 / 5)
    assert a.arms.early.diff == pytest.approx(1 / 4 - 3 / 4)
    assert a.arms.error.low is not None and a.arms.error.low < a.arms.error.diff
    assert a.arms.error.test == "fisher" and a.arms.error.p_value is not None
    assert a.arms.verdict is not None and a.arms.verdict.status == "inconclusive"
    assert a.verdicts[-1] == a.arms.verdict
    data = a.as_dict()["arms"]
    assert [(g["arm"], g["sessions"], g["failures"]) for g in data["arms"]] == [
        ("cold", 3, 3),
        ("warm", 2, 1),
    ]


def test_arms_follow_the_filter(sqlite_url: str) -> None:
    small_ab(sqlite_url)
    record_session(
        dataclasses.replace(session("t", [FAIL], source="test"), metadata={"arm": "warm"}),
        sqlite_url,
    )
    from warmstart.store import SessionFilter

    a = analyze(sqlite_url, SessionFilter(source="proxy"), experiments=False)
    assert a.arms is not None
    assert {g.arm: g.sessions for g in a.arms.arms} == {"cold": 3, "warm": 2}


def test_too_few_sessions_draw_no_verdict(sqlite_url: str) -> None:
    small_ab(sqlite_url)
    a = analyze(sqlite_url, min_sessions=10, experiments=False)
    assert a.arms is not None and a.arms.verdict is not None
    assert a.arms.verdict.status == "not enough data"
    assert a.arms.verdict.summary == (
        "not enough data: 5 sessions (2 warm, 3 cold); each arm needs 10"
    )


@pytest.mark.parametrize(
    ("warm", "cold", "status", "diff"),
    [
        ([OK] * 5, [FAIL, FAIL, OK, OK, OK], "supported", "-40.0 pts"),
        ([FAIL, FAIL, OK, OK, OK], [OK] * 5, "contradicted", "+40.0 pts"),
    ],
)
def test_arms_verdict(
    sqlite_url: str, warm: list[Call], cold: list[Call], status: str, diff: str
) -> None:
    for i in range(12):
        record(sqlite_url, f"w{i}", warm, {"arm": "warm"})
        record(sqlite_url, f"c{i}", cold, {"arm": "cold"})
    a = analyze(sqlite_url, experiments=False)
    assert a.arms is not None and a.arms.verdict is not None
    assert (a.arms.verdict.claim, a.arms.verdict.status) == (CLAIM_ARMS, status)
    assert f"difference {diff}" in a.arms.verdict.summary


def test_no_arms_no_table_and_a_note(sqlite_url: str) -> None:
    record(sqlite_url, "none", [FAIL, OK], {"model": "m"})
    a = analyze(sqlite_url)
    assert a.arms is not None and a.arms.arms == [] and a.arms.verdict is None
    assert len(a.verdicts) == 5  # the arms claim is only judged when arms exist
    assert not any(t.title.startswith("A/B arms") for t in tables(a))
    html = render_report(a)
    assert "no A/B traffic recorded" in html and "no experiments" in html
    assert a.as_dict()["experiments"] == []


def test_arms_table_and_report(sqlite_url: str) -> None:
    small_ab(sqlite_url)
    a = analyze(sqlite_url, max_turns=2, min_sessions=2)
    table = next(t for t in tables(a) if t.title.startswith("A/B arms"))
    assert [r["arm"] for r in table.rows] == ["cold", "warm", "warm - cold"]
    assert table.rows[1]["failed calls"] == "1 of 4"
    assert table.rows[0]["error rate (95% CI)"].startswith("60.0% (")
    assert table.rows[2]["error rate (95% CI)"].startswith("-35.0 pts (")
    html = render_report(a)
    assert "no A/B traffic recorded" not in html
    assert "Error rate of calls per A/B arm" in html
    assert "<td>warm</td><td class=num>2</td><td class=num>1/4</td>" in html
    assert "warm minus cold, all calls: -35.0 pts" in html
    assert "warm minus cold, the first 2 turns: -50.0 pts" in html
    assert html.count('<svg class="chart"') == 5


# -- stored experiments --------------------------------------------------------------


def stored_experiment(url: str) -> str:
    """An A/B experiment stored directly (no model): 2 tasks, 1 trial, both arms."""
    from warmstart.evaluate.ab import ABConfig
    from warmstart.evaluate.store import EvalStore

    store = EvalStore(url)
    config = ABConfig(model="tiny-model", tasks="tasks.jsonl", template="tpl-x", trials=1)
    ident = store.create_experiment("ab", dataclasses.asdict(config), name="first try")
    errors = {("t1", "cold"): 1, ("t2", "cold"): 3, ("t1", "warm"): 0, ("t2", "warm"): 1}
    for position, ((task, arm), errs) in enumerate(sorted(errors.items())):
        store.add_run(
            ident,
            {
                "task_id": task,
                "trial": 0,
                "arm": arm,
                "position": position,
                "status": "measured",
                "stop_reason": "final_answer",
                "turns": 4,
                "calls": 4,
                "calls_30": 4,
                "errors_30": errs,
                "total_errors": errs,
                "first_success_turn": 1,
                "distinct_tools": 2,
                "started_at": 1.0,
                "ended_at": 2.0,
            },
        )
    store.update_experiment(ident, status="complete", summary={"planned": 4})
    return ident


def test_experiment_appears_in_the_report(db_url: str) -> None:
    ident = stored_experiment(db_url)
    a = analyze(db_url)
    assert [
        (e["id"], e["model"], e["template"], e["task_count"], e["trials"]) for e in a.experiments
    ] == [(ident, "tiny-model", "tpl-x", 2, 1)]
    (exp,) = a.experiments
    assert (exp["done"], exp["planned"], exp["status"]) == (4, 4, "complete")
    rate = next(m for m in exp["metrics"] if m["metric"] == "error_rate_30")
    assert rate["cold"]["estimate"] == pytest.approx(0.5)  # (1/4 + 3/4) / 2
    assert rate["warm"]["estimate"] == pytest.approx(0.125)  # (0/4 + 1/4) / 2
    html = render_report(a)
    assert "no experiments" not in html
    assert ident in html and "first try" in html
    assert "model tiny-model · template tpl-x · 2 tasks (tasks.jsonl) × 1 trials" in html
    assert "<td>error rate, first 30 turns</td><td>0.5 [0.25, 0.75]</td><td>0.125 [" in html
    assert "cold 2 measured, warm 2 measured" in html


def test_report_without_evaluation_tables(sqlite_url: str) -> None:
    with Store(sqlite_url).engine.begin() as conn:
        for table in ("eval_scores", "eval_runs", "eval_experiments"):
            conn.execute(text(f"DROP TABLE {table}"))
    a = analyze(sqlite_url)
    assert a.experiments == []
    assert "no experiments" in render_report(a)


# -- Chromium ------------------------------------------------------------------------


@pytest.mark.chromium
def test_arms_chart_renders_in_chromium(browser: Any, sqlite_url: str, tmp_path: Path) -> None:
    small_ab(sqlite_url)
    stored_experiment(sqlite_url)
    path = write_report(analyze(sqlite_url, min_sessions=2), tmp_path / "arms.html")
    seen = open_report(browser, path, tmp_path / "arms.png")
    assert seen["errors"] == []
    (chart,) = [c for c in seen["charts"] if c["label"] == "Error rate of calls per A/B arm"]
    assert chart["marks"] == 2 and chart["empty"] == 0
    assert chart["width"] > 200 and chart["height"] > 50
    assert seen["scroll"] <= 1366
