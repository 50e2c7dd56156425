"""The analysis as titled tables of strings, for the terminal (``warmstart analyze``).

Kept apart from the CLI so the command stays a thin parse-call-render layer and
the tables can be tested without a terminal. Numbers are formatted here, once:
rates as percentages with their 95% interval, slopes in points per turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from warmstart.analytics.measures import ALL, Analysis, Distribution
from warmstart.analytics.stats import Mean, Rate
from warmstart.analytics.verdicts import p_text, pct, points


@dataclass(frozen=True)
class TextTable:
    """A titled table: column names and rows of cells keyed by column."""

    title: str
    columns: tuple[str, ...]
    rows: list[dict[str, str]]


def rate_ci(rate: Rate) -> str:
    """``7.0% (5.6%-8.6%)``, or ``-`` without data."""
    if rate.rate is None:
        return "-"
    return f"{pct(rate.rate)} ({pct(rate.low)}-{pct(rate.high)})"


def mean_ci(mean: Mean, digits: int = 2) -> str:
    """``0.45 (0.28-0.61)``, or ``-`` without data."""
    if mean.mean is None:
        return "-"
    if mean.low is None or mean.high is None:
        return f"{mean.mean:.{digits}f}"
    return f"{mean.mean:.{digits}f} ({mean.low:.{digits}f}-{mean.high:.{digits}f})"


def tables(a: Analysis, top_tools: int = 30) -> list[TextTable]:
    """Every table ``warmstart analyze`` prints, in order (verdicts are printed as text
    after them, too long for a table cell); the A/B arms table only when some session
    has an arm."""
    out = [
        _summary(a),
        _tools(a, top_tools),
        _turns(a),
        _lengths(a),
        _outcomes(a),
        _errors(a),
        _per_session(a),
    ]
    if a.arms and a.arms.arms:
        out.append(_arms(a))
    return out


def _summary(a: Analysis) -> TextTable:
    ps = a.per_session
    rows = [
        {"measure": "sessions", "value": f"{a.sessions:,} ({ps.with_calls:,} with tool calls)"},
        {"measure": "tool calls", "value": f"{a.calls:,} ({len(a.tools)} tools)"},
        {"measure": "failed calls", "value": f"{a.failures:,}"},
        {"measure": "error rate (95% CI)", "value": rate_ci(a.error)},
        {"measure": "failures recovered (95% CI)", "value": rate_ci(a.recovery)},
    ]
    return TextTable("summary", ("measure", "value"), rows)


def _tools(a: Analysis, top: int) -> TextTable:
    rows = []
    for t in a.tools[:top]:
        m = t.marathon_vs_mid
        rows.append(
            {
                "tool": t.tool,
                "calls": f"{t.calls:,}",
                "failed": f"{t.failures:,}",
                "error rate (95% CI)": rate_ci(t.error),
                "recovered": "-"
                if t.recovery.rate is None
                else f"{pct(t.recovery.rate)} of {t.recovery.n}",
                "marathon vs mid": "-"
                if m.diff is None
                else f"{points(m.diff)} ({p_text(m.p_value)}, {m.test})",
                "top error": t.errors[0].pattern if t.errors else "",
            }
        )
    columns = (
        "tool",
        "calls",
        "failed",
        "error rate (95% CI)",
        "recovered",
        "marathon vs mid",
        "top error",
    )
    more = f" (top {top} of {len(a.tools)})" if len(a.tools) > top else ""
    return TextTable(f"per tool{more}", columns, rows)


def _turns(a: Analysis) -> TextTable:
    curves = a.turns
    names = ["all" if c.task_type == ALL else c.task_type for c in curves]
    by_turn: dict[int, dict[str, str]] = {}
    for name, curve in zip(names, curves, strict=True):
        for p in curve.points:
            row = by_turn.setdefault(p.turn, {"turn": str(p.turn)})
            row[name] = f"{pct(p.error.rate)} of {p.error.n}"
    rows = [by_turn[t] for t in sorted(by_turn)]
    trend = {"turn": "trend/turn"}
    for name, curve in zip(names, curves, strict=True):
        s = curve.slope
        trend[name] = (
            "not enough data"
            if s is None
            else f"{points(s.slope, 2)} ({points(s.low, 2)} to {points(s.high, 2)})"
        )
    rows.append(trend)
    title = f"error rate by turn (first {a.settings['max_turns']} turns) per task type"
    return TextTable(title, ("turn", *names), rows)


def _lengths(a: Analysis) -> TextTable:
    L = a.lengths
    label = {
        "short": f"short (<{L.short_messages} messages)",
        "mid": f"mid-length ({L.short_messages}-{L.marathon_messages - 1})",
        "marathon": f"marathon ({L.marathon_messages}+)",
    }
    rows = [
        {
            "bucket": label[b.name],
            "sessions": f"{b.sessions:,}",
            "calls": f"{b.error.n:,}",
            "error rate (95% CI)": rate_ci(b.error),
        }
        for b in L.buckets
    ]
    p, adj = L.pooled, L.adjusted
    rows.append(
        {
            "bucket": "marathon - mid (clustered)",
            "sessions": "",
            "calls": "",
            "error rate (95% CI)": "-"
            if p.diff is None
            else f"{points(p.diff)} ({points(p.low)} to {points(p.high)}, {p_text(p.p_value)})",
        }
    )
    rows.append(
        {
            "bucket": "per-tool odds ratio (MH)",
            "sessions": "",
            "calls": "",
            "error rate (95% CI)": "-"
            if adj.odds_ratio is None or adj.low is None or adj.high is None
            else f"{adj.odds_ratio:.2f} ({adj.low:.2f}-{adj.high:.2f}, {p_text(adj.p_value)})",
        }
    )
    return TextTable(
        "error rate by session length",
        ("bucket", "sessions", "calls", "error rate (95% CI)"),
        rows,
    )


def _outcomes(a: Analysis) -> TextTable:
    rows = [
        {
            "outcome": g.outcome,
            "sessions": f"{g.sessions:,}",
            "failed calls": f"{g.error.k:,} of {g.error.n:,}",
            "error rate (95% CI)": rate_ci(g.error),
            "errors per session": mean_ci(g.errors_per_session),
        }
        for g in a.outcomes.groups
    ]
    return TextTable(
        "error rate by session outcome",
        ("outcome", "sessions", "failed calls", "error rate (95% CI)", "errors per session"),
        rows,
    )


def _errors(a: Analysis) -> TextTable:
    rows = [
        {
            "tool": e.tool,
            "kind": e.kind,
            "count": f"{e.count:,}",
            "message": e.pattern,
            "example (redacted)": e.example,
        }
        for e in a.errors
    ]
    return TextTable(
        "most common errors", ("tool", "kind", "count", "message", "example (redacted)"), rows
    )


def _dist(name: str, d: Distribution) -> dict[str, str]:
    if d.n == 0:
        return {"measure": name, "sessions": "0", "mean (95% CI)": "not enough data"}
    return {
        "measure": name,
        "sessions": f"{d.n:,}",
        "mean (95% CI)": mean_ci(d.mean),
        "median": f"{d.median:g}",
        "p90": f"{d.p90:g}",
    }


def _per_session(a: Analysis) -> TextTable:
    ps = a.per_session
    rows = [
        _dist("turns before first successful call", ps.first_success_turn),
        _dist("seconds to first successful call", ps.first_success_seconds),
        _dist("failed calls per session", ps.errors_per_session),
        _dist("distinct tools per session", ps.distinct_tools),
        {
            "measure": "tool-mix entropy (nats)",
            "sessions": f"{ps.entropy.overall.n:,}",
            "mean (95% CI)": mean_ci(ps.entropy.overall)
            if ps.entropy.overall.n
            else "not enough data",
        },
    ]
    rows += [
        {
            "measure": f"  entropy, {name} sessions",
            "sessions": f"{m.n:,}",
            "mean (95% CI)": mean_ci(m),
        }
        for name, m in ps.entropy.by_type.items()
    ]
    return TextTable(
        f"per session ({ps.without_calls:,} sessions without tool calls left out)",
        ("measure", "sessions", "mean (95% CI)", "median", "p90"),
        rows,
    )


def _arms(a: Analysis) -> TextTable:
    assert a.arms is not None
    max_turns = a.settings["max_turns"]
    early = f"first {max_turns} turns (95% CI)"
    rows = [
        {
            "arm": g.arm,
            "sessions": f"{g.sessions:,}",
            "failed calls": f"{g.failures:,} of {g.calls:,}",
            "error rate (95% CI)": rate_ci(g.error),
            early: rate_ci(g.early),
            "turns to first success": mean_ci(g.first_success_turn),
        }
        for g in a.arms.arms
    ]
    for label, c in (("warm - cold", a.arms.error), ("", a.arms.early)):
        text = (
            "-"
            if c.diff is None
            else f"{points(c.diff)} ({points(c.low)} to {points(c.high)}, {p_text(c.p_value)})"
        )
        if label:
            rows.append({"arm": label, "error rate (95% CI)": text})
        else:
            rows[-1][early] = text
    columns = (
        "arm",
        "sessions",
        "failed calls",
        "error rate (95% CI)",
        early,
        "turns to first success",
    )
    return TextTable("A/B arms (sessions with an arm in their metadata)", columns, rows)
