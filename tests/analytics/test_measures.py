"""Every measure on hand-built stores whose figures are known, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import math
import statistics

import pytest
from tests.analytics.builders import session, store, text_session

from warmstart.analytics import analyze, render_report
from warmstart.analytics.measures import Analysis
from warmstart.analytics.stats import shannon_entropy
from warmstart.config import MiningConfig
from warmstart.model import Session
from warmstart.store import SessionFilter

NOT_ENOUGH = "not enough data"


def verdict(a: Analysis, word: str) -> tuple[str, str]:
    """(status, summary) of the verdict whose claim mentions ``word``."""
    found = [v for v in a.verdicts if word in v.claim]
    assert len(found) == 1, [v.claim for v in a.verdicts]
    return found[0].status, found[0].summary


def as_json(a: Analysis) -> dict[str, object]:
    """The --json payload, which must be strict JSON (no NaN or infinity)."""
    data: dict[str, object] = json.loads(json.dumps(a.as_dict(), allow_nan=False))
    return data


def test_empty_store_says_not_enough_data_everywhere(db_url: str) -> None:
    a = analyze(db_url)
    assert (a.sessions, a.calls, a.failures) == (0, 0, 0)
    assert a.error.rate is None and a.tools == [] and a.errors == []
    assert [c.task_type for c in a.turns] == ["all"] and a.turns[0].slope is None
    assert len(a.verdicts) == 5
    for v in a.verdicts:
        assert v.status == NOT_ENOUGH
        assert v.summary.startswith(f"{NOT_ENOUGH}: 0 ")
    ps = a.per_session
    for dist in (ps.first_success_turn, ps.first_success_seconds, ps.errors_per_session):
        assert dist.n == 0 and dist.mean.mean is None and dist.median is None
    assert a.outcomes.groups == [] and a.outcomes.calls.diff is None
    assert as_json(a)["calls"] == 0
    html = render_report(a)
    assert html.count('<svg class="chart"') == 4
    assert html.count('class="empty"') == 4


def test_sessions_without_calls_and_a_single_tool(db_url: str) -> None:
    store(
        db_url,
        [
            text_session("t1"),
            text_session("t2"),
            text_session("t3"),
            session("one", [("read_file", True), ("read_file", False), ("read_file", True)]),
        ],
    )
    a = analyze(db_url)
    assert a.sessions == 4
    ps = a.per_session
    assert (ps.with_calls, ps.without_calls, ps.no_success) == (1, 3, 0)
    assert [t.tool for t in a.tools] == ["read_file"]
    tool = a.tools[0]
    assert (tool.calls, tool.failures) == (3, 1)
    assert (tool.recovery.k, tool.recovery.n) == (1, 1)  # fixed by the next call
    assert ps.entropy.overall.mean == 0.0 and ps.entropy.overall.n == 1
    assert ps.first_success_turn.median == 0.0
    assert ps.first_success_seconds.n == 0  # no timestamps: nothing made up
    assert all(v.status == NOT_ENOUGH for v in a.verdicts)
    assert "not enough data: 1 sessions" in verdict(a, "first turns of a session")[1]
    as_json(a)
    assert render_report(a).count('class="mark"') > 0


def test_per_tool_rates_error_groups_and_redaction(db_url: str) -> None:
    secret = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
    store(
        db_url,
        [
            session(
                "s1",
                [
                    ("execute_code", False, "Error: file /home/ann/a.py not found"),
                    ("execute_code", True),
                    ("read_file", False, "Error: file /srv/b.py not found"),
                    ("read_file", False, f"Error: upstream refused api_key={secret}"),
                ],
            ),
            session("s2", [("read_file", False, "Error: file /srv/c.py not found")]),
        ],
    )
    a = analyze(db_url)
    tools = {t.tool: t for t in a.tools}
    assert [t.tool for t in a.tools] == ["read_file", "execute_code"]  # most calls first
    rf, ec = tools["read_file"], tools["execute_code"]
    assert (rf.calls, rf.failures, rf.recovery.k, rf.recovery.n) == (3, 3, 0, 3)
    assert (ec.calls, ec.failures, ec.recovery.k, ec.recovery.n) == (2, 1, 1, 1)
    assert rf.error.rate == 1.0 and ec.error.rate == 0.5
    assert ec.error.low is not None and ec.error.low < 0.5 < ec.error.high  # type: ignore[operator]

    top = a.errors[0]
    assert (top.tool, top.kind, top.pattern, top.count) == (
        "read_file",
        "error-prefix",
        "Error: file <path> not found",
        2,
    )
    assert top.example in ("Error: file /srv/b.py not found", "Error: file /srv/c.py not found")
    assert [(e.tool, e.count) for e in a.errors] == [
        ("read_file", 2),
        ("execute_code", 1),
        ("read_file", 1),
    ]
    leaked = [e for e in a.errors if "upstream" in e.pattern]
    assert len(leaked) == 1
    assert secret not in leaked[0].example and "[REDACTED:" in leaked[0].example
    assert secret not in json.dumps(a.as_dict()) and secret not in render_report(a)


def _trend_sessions(source: str, tool: str, rising: bool) -> list[Session]:
    """10 sessions of 10 calls: failures at the first turns (falling) or the last (rising)."""
    out = []
    for j in range(10):
        calls = []
        for t in range(10):
            turn = 9 - t if rising else t
            calls.append((tool, not j < max(0, 8 - 3 * turn)))
        out.append(session(f"{source}-{tool}-{j}", calls, source=source))
    return out


def test_turn_trends_decide_the_code_and_file_claims(db_url: str) -> None:
    store(
        db_url,
        _trend_sessions("a", "execute_code", rising=False)
        + _trend_sessions("a", "read_file", rising=True)
        + _trend_sessions("b", "execute_code", rising=True)
        + _trend_sessions("b", "read_file", rising=False),
    )
    a = analyze(db_url, SessionFilter(source="a"))
    curves = {c.task_type: c for c in a.turns}
    assert sorted(curves) == ["all", "code", "file"]
    code = curves["code"]
    assert code.sessions == 10
    assert [(p.turn, p.error.k, p.error.n) for p in code.points[:4]] == [
        (0, 8, 10),
        (1, 5, 10),
        (2, 2, 10),
        (3, 0, 10),
    ]
    assert code.slope is not None and code.slope.high < 0
    assert curves["file"].slope is not None and curves["file"].slope.low > 0
    assert verdict(a, "Code")[0] == "supported"
    assert verdict(a, "File")[0] == "supported"
    assert "10 code sessions" in verdict(a, "Code")[1]

    b = analyze(db_url, SessionFilter(source="b"))
    assert verdict(b, "Code")[0] == "contradicted"
    assert verdict(b, "File")[0] == "contradicted"
    only_code = analyze(db_url, SessionFilter(task_type="code"))
    assert only_code.sessions == 20 and [t.tool for t in only_code.tools] == ["execute_code"]


def _length_sessions(source: str, marathon_fails: int, mid_fails: int) -> list[Session]:
    """3 short, 10 mid-length (9 messages) and 10 marathon (13 messages) sessions over
    two tools; failures spread over the first sessions of each bucket."""
    out = [session(f"{source}-short-{j}", [("lookup", True)], source=source) for j in range(3)]
    for bucket, n_calls, fails in (("mid", 4, mid_fails), ("mar", 6, marathon_fails)):
        budget = fails
        for j in range(10):
            calls = []
            for i in range(n_calls):
                failed = budget > 0 and i < 2
                budget -= failed
                calls.append(("lookup" if i % 2 == 0 else "book", not failed))
            out.append(session(f"{source}-{bucket}-{j}", calls, source=source))
    return out


def test_marathon_against_mid_length(db_url: str) -> None:
    cfg = MiningConfig(short_messages=5, marathon_messages=12)
    store(db_url, _length_sessions("a", 2, 20) + _length_sessions("b", 20, 2), cfg)
    a = analyze(db_url, SessionFilter(source="a"), cfg)
    buckets = {b.name: b for b in a.lengths.buckets}
    assert {k: (b.sessions, b.error.k, b.error.n) for k, b in buckets.items()} == {
        "short": (3, 0, 3),
        "mid": (10, 20, 40),
        "marathon": (10, 2, 60),
    }
    assert a.lengths.short_messages == 5 and a.lengths.marathon_messages == 12
    assert a.lengths.adjusted.strata == 2 and a.lengths.adjusted.excess < 0
    lookup = next(t for t in a.tools if t.tool == "lookup")
    assert (lookup.by_length["mid"].k, lookup.by_length["mid"].n) == (10, 20)
    assert lookup.marathon_vs_mid.diff is not None and lookup.marathon_vs_mid.diff < 0
    status, summary = verdict(a, "Marathon")
    assert status == "supported", summary
    assert "marathon sessions fail 3.3% of calls, mid-length 50.0%" in summary

    b = analyze(db_url, SessionFilter(source="b"), cfg)
    assert verdict(b, "Marathon")[0] == "contradicted"
    few = analyze(db_url, SessionFilter(source="a"), cfg, min_sessions=11)
    assert verdict(few, "Marathon")[1].startswith(
        "not enough data: 10 marathon sessions (12+ messages) and 10 mid-length sessions"
    )
    default = analyze(db_url, SessionFilter(source="a"))  # 20/100 thresholds: all short
    assert {b.name: b.sessions for b in default.lengths.buckets} == {
        "short": 23,
        "mid": 0,
        "marathon": 0,
    }


def test_outcomes_and_time_to_first_success(db_url: str) -> None:
    sessions = [
        session(f"ok{j}", [("x", True), ("x", True)], outcome=1.0, started_at=1000.0, step=2.0)
        for j in range(4)
    ]
    sessions += [
        session(f"bad{j}", [("x", False), ("x", True)], outcome=0.0, started_at=2000.0, step=5.0)
        for j in range(3)
    ]
    sessions += [
        session("crash", [("x", False)], end_reason="error"),
        session("norm1", [("x", True)], end_reason="cli_close"),
        session("norm2", [("x", True)], end_reason="user_exit"),
        session("unknown", [("x", True)]),
    ]
    store(db_url, sessions)
    a = analyze(db_url, min_sessions=3)
    groups = {g.outcome: (g.sessions, g.error.k, g.error.n) for g in a.outcomes.groups}
    assert groups == {
        "succeeded": (4, 0, 8),
        "ended normally": (2, 0, 2),
        "failed": (4, 4, 7),
        "unknown": (1, 0, 1),
    }
    calls = a.outcomes.calls
    assert (calls.a.k, calls.a.n, calls.b.k, calls.b.n) == (4, 7, 0, 10)
    assert verdict(a, "Failed sessions")[0] == "supported"

    seconds = a.per_session.first_success_seconds
    assert seconds.n == 7  # the sessions with a start time and a success
    assert seconds.median == 2.0
    assert seconds.mean.mean == pytest.approx((4 * 2.0 + 3 * 10.0) / 7)
    first = a.per_session.first_success_turn
    assert (first.n, first.median, first.p90) == (10, 0.0, 1.0)
    assert a.per_session.no_success == 1
    errs = a.per_session.errors_per_session
    assert errs.mean.mean == pytest.approx(4 / 11)


def test_entropy_diversity_and_filters(db_url: str) -> None:
    store(
        db_url,
        [
            session(
                "A",
                [("a", True), ("a", True), ("b", True), ("c", True)],
                model="m1",
                started_at=100.0,
                source="x",
            ),
            session("B", [("a", True)], model="m2", started_at=200.0, source="y"),
            session("C", [("a", True), ("b", False)], model="m2", started_at=300.0, source="y"),
        ],
    )
    a = analyze(db_url)
    expected = [shannon_entropy([2, 1, 1]), 0.0, math.log(2)]
    assert a.per_session.entropy.overall.mean == pytest.approx(statistics.mean(expected))
    assert a.per_session.entropy.overall.sd == pytest.approx(statistics.stdev(expected))
    assert a.per_session.entropy.by_type["mixed"].n == 3
    tools = a.per_session.distinct_tools
    assert (tools.n, tools.median, tools.mean.mean) == (3, 2.0, 2.0)

    assert analyze(db_url, SessionFilter(model="m2")).sessions == 2
    assert analyze(db_url, SessionFilter(source="x")).calls == 4
    since = analyze(db_url, SessionFilter(since=250.0))
    assert (since.sessions, since.calls, since.failures) == (1, 2, 1)
    assert since.per_session.entropy.overall.mean == pytest.approx(math.log(2))
    assert [e.tool for e in since.errors] == ["b"]
    assert analyze(db_url, SessionFilter(source="nobody")).sessions == 0
