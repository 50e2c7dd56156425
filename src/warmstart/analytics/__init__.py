"""Analytics: where tool calls fail, by tool, turn, session length and outcome.

Reads the store with a few SQL GROUP BY passes (SQLite or PostgreSQL), derives
rates with intervals and tests, and judges the claims warm starts rest on::

    from warmstart.analytics import analyze, write_report
    analysis = analyze("sqlite:///store.db")
    write_report(analysis, "report.html")
"""

from __future__ import annotations

from warmstart.analytics.measures import Analysis, analyze
from warmstart.analytics.report import render_report, write_report

__all__ = ["Analysis", "analyze", "render_report", "write_report"]
