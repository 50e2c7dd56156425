"""The τ-bench airline corpus: analyze's figures against counts made by hand from the JSON.

The expected numbers are computed here from the gzipped corpus with plain ``json``:
a call failed when its result starts with ``Error:``, or when it returned ``[]`` and
the same tool was called again right after with other arguments (the retry rule
the judge applies). Calls are paired with results by position within their
assistant turn, because τ-bench reuses call ids within a trajectory.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import warmstart
from warmstart.analytics import analyze


def _calls(traj: list[dict[str, Any]]) -> list[list[Any]]:
    """[tool, arguments, result] per call, each result paired within its turn."""
    seq: list[list[Any]] = []
    latest: dict[str, list[Any]] = {}
    for m in traj:
        if m["role"] == "assistant":
            latest = {}
            for tc in m.get("tool_calls") or []:
                seq.append([tc["function"]["name"], tc["function"]["arguments"], None])
                latest[tc["id"]] = seq[-1]
        elif m["role"] == "tool":
            latest[m["tool_call_id"]][2] = m["content"] or ""
    return seq


@pytest.fixture(scope="module")
def by_hand(tau_sample: Path) -> dict[str, Any]:
    """Counts made straight from the corpus JSON."""
    with gzip.open(tau_sample, "rt", encoding="utf-8") as fh:
        corpus = json.load(fh)
    calls: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    prefixed: dict[float, list[int]] = {1.0: [0, 0], 0.0: [0, 0]}
    judged: dict[float, list[int]] = {1.0: [0, 0], 0.0: [0, 0]}
    flight_dates = 0
    for item in corpus:
        seq = _calls(item["traj"])
        for i, (tool, args, result) in enumerate(seq):
            error = result.startswith("Error:")
            retry = (
                result.strip() == "[]"
                and i + 1 < len(seq)
                and seq[i + 1][0] == tool
                and seq[i + 1][1] != args
            )
            calls[tool] += 1
            failed[tool] += error or retry
            prefixed[item["reward"]][0] += error
            prefixed[item["reward"]][1] += 1
            judged[item["reward"]][0] += error or retry
            judged[item["reward"]][1] += 1
            if tool == "update_reservation_flights" and re.fullmatch(
                r"Error: flight \w+ not available on date [\d-]+", result
            ):
                flight_dates += 1
    return {
        "sessions": len(corpus),
        "solved": sum(1 for item in corpus if item["reward"] == 1.0),
        "longest": max(len(item["traj"]) for item in corpus),
        "calls": calls,
        "failed": failed,
        "prefixed": prefixed,
        "judged": judged,
        "flight_dates": flight_dates,
    }


def test_the_corpus_is_what_the_brief_says(by_hand: dict[str, Any]) -> None:
    assert (by_hand["sessions"], by_hand["solved"]) == (200, 84)
    assert sum(by_hand["calls"].values()) == 1164
    assert by_hand["prefixed"] == {1.0: [13, 347], 0.0: [60, 817]}


def test_tau_bench_figures(db_url: str, tau_sample: Path, by_hand: dict[str, Any]) -> None:
    warmstart.ingest(tau_sample, db=db_url)
    a = analyze(db_url)
    assert (a.sessions, a.calls) == (200, 1164)
    assert a.failures == sum(by_hand["failed"].values())
    assert {t.tool: t.calls for t in a.tools} == dict(by_hand["calls"])
    assert {t.tool: t.failures for t in a.tools} == dict(by_hand["failed"])

    groups = {g.outcome: g for g in a.outcomes.groups}
    assert set(groups) == {"succeeded", "failed"}
    assert groups["succeeded"].sessions == by_hand["solved"]
    assert [groups["succeeded"].error.k, groups["succeeded"].error.n] == by_hand["judged"][1.0]
    assert [groups["failed"].error.k, groups["failed"].error.n] == by_hand["judged"][0.0]

    flights = next(t for t in a.tools if t.tool == "update_reservation_flights")
    top = flights.errors[0]
    assert top.pattern == "Error: flight <id> not available on date <date>"
    assert top.count == by_hand["flight_dates"]

    statuses = {v.claim: v for v in a.verdicts}
    marathon = next(v for c, v in statuses.items() if c.startswith("Marathon"))
    assert by_hand["longest"] < 100
    assert marathon.summary.startswith("not enough data: 0 marathon sessions")
    code = next(v for c, v in statuses.items() if c.startswith("Code"))
    assert code.summary == "not enough data: 0 code sessions (needs 10)"
    overall = a.turns[0]
    assert overall.task_type == "all" and overall.slope is not None
    trend = next(v for c, v in statuses.items() if "first turns of a session" in c)
    expected = (
        "contradicted"
        if overall.slope.low > 0
        else "supported"
        if overall.slope.high < 0
        else "inconclusive"
    )
    assert trend.status == expected
    assert a.per_session.first_success_seconds.n == 0  # τ-bench has no timestamps
