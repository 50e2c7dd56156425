"""The HTML report: self-contained, escaped, and rendered by a real headless Chromium."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from tests.analytics.builders import session, store

import warmstart
from warmstart.analytics import analyze, render_report, write_report
from warmstart.analytics.svg import Bar, bar_chart, nice_max

CHARTS = 4  # turn curves, per-tool bars, length buckets, outcomes


@pytest.fixture(scope="module")
def tau_report(tmp_path_factory: pytest.TempPathFactory, tau_sample: Path) -> Path:
    """The report over the τ-bench corpus (SQLite)."""
    folder = tmp_path_factory.mktemp("tau-report")
    url = f"sqlite:///{folder / 'store.db'}"
    warmstart.ingest(tau_sample, db=url)
    return write_report(analyze(url), folder / "report.html")


def test_report_is_self_contained(tau_report: Path) -> None:
    html = tau_report.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"https?://|<script|<link|@import|src=", html)
    assert html.count('<svg class="chart"') == CHARTS
    assert "update_reservation_flights" in html and "Error: flight &lt;id&gt;" in html


def test_report_escapes_what_it_shows(sqlite_url: str) -> None:
    evil = "<script>alert(1)</script>"
    store(sqlite_url, [session("x", [(evil, False, f"Error: {evil}"), ("ok_tool", True)])])
    html = render_report(analyze(sqlite_url))
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_bars_scale_to_the_data() -> None:
    assert nice_max(0.034) == 0.05 and nice_max(0.37) == 0.5 and nice_max(0.0) == 0.01
    svg = bar_chart("t", [Bar("a", 0.02, 0.01, 0.03, "2/100"), Bar("b", 0.0, 0.0, 0.04, "")])
    assert svg.count('class="mark"') == 2 and "2.0%" in svg
    assert 'class="empty"' in bar_chart("t", [])


# -- Chromium ------------------------------------------------------------------------


def open_report(browser: Any, path: Path, shot: Path) -> dict[str, Any]:
    """Load the file in a laptop-sized page; collect errors, requests and chart geometry."""
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(path.as_uri(), wait_until="load")
        charts = page.eval_on_selector_all(
            "svg.chart",
            """els => els.map(el => {
                const box = el.getBoundingClientRect();
                const marks = [...el.querySelectorAll('.mark')].filter(m => {
                    const b = m.getBBox(); return b.width > 0 || b.height > 0; });
                return {width: box.width, height: box.height, marks: marks.length,
                        empty: el.querySelectorAll('text.empty').length,
                        label: el.getAttribute('aria-label')};
            })""",
        )
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        page.screenshot(path=str(shot), full_page=True)
    finally:
        context.close()
    return {"errors": errors, "requests": requests, "charts": charts, "scroll": scroll_width}


@pytest.mark.chromium
def test_tau_report_renders_in_chromium(browser: Any, tau_report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "tau-report.png"
    seen = open_report(browser, tau_report, shot)
    assert seen["errors"] == []
    assert seen["requests"] and all(u.startswith("file://") for u in seen["requests"])
    assert len(seen["charts"]) == CHARTS
    for chart in seen["charts"]:
        assert chart["width"] > 200 and chart["height"] > 50, chart
        assert chart["marks"] > 0 and chart["empty"] == 0, chart
    assert seen["scroll"] <= 1366  # fits a laptop screen without sideways scrolling
    assert shot.stat().st_size > 10_000


@pytest.mark.chromium
def test_empty_store_report_renders_in_chromium(
    browser: Any, sqlite_url: str, tmp_path: Path
) -> None:
    path = write_report(analyze(sqlite_url), tmp_path / "empty.html")
    shot = tmp_path / "empty-report.png"
    seen = open_report(browser, path, shot)
    assert seen["errors"] == []
    assert all(u.startswith("file://") for u in seen["requests"])
    assert len(seen["charts"]) == CHARTS
    for chart in seen["charts"]:
        assert chart["width"] > 200 and chart["height"] > 50, chart
        assert chart["empty"] == 1, chart  # a visible "not enough data" note, not a blank
    assert shot.stat().st_size > 5_000
