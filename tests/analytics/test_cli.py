"""`warmstart analyze` and `warmstart report` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import warmstart
import warmstart.cli.analyze  # registers the commands
from warmstart.cli.app import app


@pytest.fixture(scope="module")
def tau_db(tmp_path_factory: pytest.TempPathFactory, tau_sample: Path) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('cli') / 'store.db'}"
    warmstart.ingest(tau_sample, db=url)
    return url


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_analyze_json(tau_db: str) -> None:
    code, out = invoke("analyze", "--db", tau_db, "--json")
    assert code == 0
    data = json.loads(out)
    assert (data["sessions"], data["calls"], data["failures"]) == (200, 1164, 81)
    assert [v["status"] for v in data["verdicts"]][:3] == ["not enough data"] * 3
    assert data["settings"] == {
        "max_turns": 30,
        "short_messages": 20,
        "marathon_messages": 100,
        "min_sessions": 10,
    }


def test_analyze_tables_and_flags(tau_db: str) -> None:
    code, out = invoke("analyze", "--db", tau_db, "--marathon-messages", "40", "--max-turns", "12")
    assert code == 0
    for title in ("summary", "per tool", "error rate by turn (first 12 turns)", "verdicts"):
        assert title in out
    assert "marathon (40+)" in out and "book_reservation" in out
    assert "NOT ENOUGH DATA Code sessions' error rate falls over their first turns" in out


def test_filters_reach_the_query(tau_db: str) -> None:
    code, out = invoke("analyze", "--db", tau_db, "--json", "--source", "nobody")
    assert code == 0 and json.loads(out)["sessions"] == 0
    code, out = invoke("analyze", "--db", tau_db, "--json", "--type", "mixed", "--since", "7d")
    assert code == 0 and json.loads(out)["sessions"] == 0  # τ-bench has no start times


def test_bad_thresholds_are_refused(tau_db: str) -> None:
    code, out = invoke(
        "analyze", "--db", tau_db, "--short-messages", "50", "--marathon-messages", "40"
    )
    assert code == 2 and "marathon threshold (40) must be above" in out


def test_report_writes_one_file(tau_db: str, tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.html"
    code, out = invoke("report", "--db", tau_db, "-o", str(target))
    assert code == 0
    assert out.startswith(f"wrote {target}") and "200 sessions, 1,164 calls" in out
    html = target.read_text(encoding="utf-8")
    assert html.count('<svg class="chart"') == 4 and "://" not in html
