"""One self-contained HTML report of an :class:`~warmstart.analytics.measures.Analysis`.

The file works offline and leaks nothing: styles are inline, charts are inline SVG
(:mod:`warmstart.analytics.svg`), there is no JavaScript, and a Content Security
Policy forbids the browser from loading anything from elsewhere. Every value shown
is escaped. Sections: verdicts, summary cards, error rate by turn per task type,
per-tool error rates, session-length comparison, outcomes, the error table,
per-session measures, A/B arms (sessions with an ``arm`` in their metadata) and the
stored A/B experiments.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from warmstart.analytics.measures import ALL, Analysis, Distribution, ToolReport
from warmstart.analytics.queries import LENGTHS
from warmstart.analytics.stats import Mean, Rate
from warmstart.analytics.svg import (
    Bar,
    Point,
    Series,
    bar_chart,
    grouped_bar_chart,
    line_chart,
)
from warmstart.analytics.verdicts import p_text, pct, points

TOP_TOOLS_CHART = 20
TOP_TOOLS_LENGTH = 8

CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d1d1f;
       background: #f5f6f8; line-height: 1.45; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 1.6rem; margin: 0 0 4px; }
h2 { font-size: 1.2rem; margin: 32px 0 8px; }
.meta { color: #555; font-size: .9rem; margin: 0 0 16px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(200px, 1fr)); gap: 12px; }
.card { background: #fff; border-radius: 10px; padding: 12px 14px; box-shadow: 0 1px 2px #0001; }
.card .label { font-size: .8rem; color: #555; text-transform: uppercase; letter-spacing: .03em; }
.card .value { font-size: 1.5rem; font-weight: 600; margin: 2px 0; }
.card .sub { font-size: .82rem; color: #555; }
.panel { background: #fff; border-radius: 10px; padding: 14px 16px; box-shadow: 0 1px 2px #0001;
         margin-bottom: 12px; overflow-x: auto; }
.verdict { display: flex; gap: 12px; align-items: baseline; padding: 8px 0;
           border-bottom: 1px solid #eee; }
.verdict:last-child { border-bottom: 0; }
.badge { flex: 0 0 auto; font-size: .75rem; font-weight: 700; padding: 2px 8px; border-radius: 99px;
         text-transform: uppercase; letter-spacing: .03em; white-space: nowrap; }
.supported { background: #d8f3e4; color: #0b5e33; }
.contradicted { background: #fde0dc; color: #8a1c10; }
.inconclusive { background: #fff1c7; color: #6b4e00; }
.not-enough-data { background: #e8e8ec; color: #444; }
.claim { font-weight: 600; }
.why { color: #333; font-size: .92rem; }
table { border-collapse: collapse; width: 100%; font-size: .88rem; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #eee; vertical-align: top; }
th { font-weight: 600; color: #333; background: #fafafa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: .84rem;
       overflow-wrap: anywhere; }
.note { color: #555; font-size: .85rem; }
svg.chart { display: block; height: auto; }
"""


def write_report(analysis: Analysis, path: str | Path, store: str = "") -> Path:
    """Write the report to ``path`` (UTF-8) and return it."""
    out = Path(path).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(analysis, store=store), encoding="utf-8")
    return out


def render_report(analysis: Analysis, store: str = "") -> str:
    """The report as one HTML document."""
    a = analysis
    when = datetime.fromtimestamp(a.generated_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    filters = ", ".join(f"{k}={v}" for k, v in a.filters.items()) or "none"
    meta = f"Generated {when} · filters: {filters}"
    if store:
        meta += f" · store: {store}"
    body = [
        "<h1>warmstart: where tool calls fail</h1>",
        f'<p class="meta">{escape(meta)}</p>',
        _cards(a),
        "<h2>Verdicts</h2>",
        _verdicts(a),
        "<h2>Error rate by turn</h2>",
        _turns(a),
        "<h2>Error rate per tool</h2>",
        _tools(a),
        "<h2>Session length: short, mid-length, marathon</h2>",
        _lengths(a),
        "<h2>Successful and failed sessions</h2>",
        _outcomes(a),
        "<h2>Most common errors</h2>",
        _errors(a),
        "<h2>Per session</h2>",
        _per_session(a),
        "<h2>A/B arms: warm against cold</h2>",
        _arms(a),
        "<h2>A/B experiments</h2>",
        _experiments(a),
        _methods(a),
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        "<title>warmstart analytics report</title>"
        f"<style>{CSS}</style></head><body><main>" + "\n".join(body) + "</main></body></html>\n"
    )


# -- pieces --------------------------------------------------------------------------


def _ci(rate: Rate) -> str:
    if rate.rate is None:
        return "no data"
    return f"95% CI {_range(rate)}"


def _range(rate: Rate) -> str:
    """``5.6%-8.6%``, or ``-`` without data."""
    return "-" if rate.rate is None else f"{pct(rate.low)}-{pct(rate.high)}"


def _mean_text(mean: Mean, digits: int = 2) -> str:
    if mean.mean is None:
        return "-"
    if mean.low is None or mean.high is None:
        return f"{mean.mean:.{digits}f}"
    return f"{mean.mean:.{digits}f} ({mean.low:.{digits}f}-{mean.high:.{digits}f})"


def _card(label: str, value: str, sub: str) -> str:
    return (
        f'<div class="card"><div class="label">{escape(label)}</div>'
        f'<div class="value">{escape(value)}</div><div class="sub">{escape(sub)}</div></div>'
    )


def _cards(a: Analysis) -> str:
    ps = a.per_session
    first = ps.first_success_turn
    first_value = "-" if first.median is None else f"turn {first.median:g}"
    errs = ps.errors_per_session.mean
    cards = [
        _card("Sessions", f"{a.sessions:,}", f"{ps.with_calls:,} with tool calls"),
        _card("Tool calls", f"{a.calls:,}", f"{len(a.tools)} tools, {a.failures:,} failed"),
        _card("Error rate", pct(a.error.rate), _ci(a.error)),
        _card("Recovered failures", pct(a.recovery.rate), _ci(a.recovery)),
        _card(
            "First successful call",
            first_value,
            "median, 0 = first turn" if first.n else "not enough data",
        ),
        _card(
            "Errors per session",
            "-" if errs.mean is None else f"{errs.mean:.2f}",
            "mean, " + _mean_text(errs) if errs.mean is not None else "not enough data",
        ),
    ]
    return '<section class="cards">' + "".join(cards) + "</section>"


def _verdicts(a: Analysis) -> str:
    rows = []
    for v in a.verdicts:
        css = v.status.replace(" ", "-")
        rows.append(
            f'<div class="verdict"><span class="badge {css}">{escape(v.status)}</span>'
            f'<div><div class="claim">{escape(v.claim)}</div>'
            f'<div class="why">{escape(v.summary)}</div></div></div>'
        )
    return '<section class="panel">' + "".join(rows) + "</section>"


def _turns(a: Analysis) -> str:
    max_turns = a.settings["max_turns"]
    series = []
    for curve in a.turns:
        pts = [
            Point(
                p.turn,
                p.error.rate,
                p.error.low if p.error.low is not None else p.error.rate,
                p.error.high if p.error.high is not None else p.error.rate,
                f"turn {p.turn}: {p.error.k}/{p.error.n} failed ({pct(p.error.rate)})",
            )
            for p in curve.points
            if p.error.rate is not None
        ]
        name = "all sessions" if curve.task_type == ALL else f"{curve.task_type} sessions"
        series.append(Series(f"{name} ({curve.sessions})", pts, dashed=curve.task_type == ALL))
    series = series[1:] + series[:1]  # the overall line last, drawn over the others
    chart = line_chart(
        f"Error rate by turn over the first {max_turns} turns, per task type",
        series,
        "turn (0 = first assistant message)",
        max_turns - 1,
    )
    rows = []
    for curve in a.turns:
        s = curve.slope
        trend = (
            "not enough data"
            if s is None
            else f"{points(s.slope, 2)} per turn ({points(s.low, 2)} to {points(s.high, 2)}, "
            f"{p_text(s.p_value)})"
        )
        calls = sum(p.error.n for p in curve.points)
        rows.append(
            f"<tr><td>{escape(curve.task_type)}</td><td class=num>{curve.sessions:,}</td>"
            f"<td class=num>{calls:,}</td><td>{escape(trend)}</td></tr>"
        )
    table = (
        "<table><tr><th>task type</th><th class=num>sessions</th>"
        f"<th class=num>calls in first {max_turns} turns</th>"
        "<th>trend (weighted least squares, 95% CI)</th></tr>" + "".join(rows) + "</table>"
    )
    return f'<section class="panel">{chart}{table}</section>'


def _bar(label: str, rate: Rate) -> Bar | None:
    if rate.rate is None or rate.low is None or rate.high is None:
        return None
    return Bar(label, rate.rate, rate.low, rate.high, f"{rate.k}/{rate.n} ({pct(rate.rate)})")


def _tools(a: Analysis) -> str:
    bars = [b for t in a.tools[:TOP_TOOLS_CHART] if (b := _bar(t.tool, t.error)) is not None]
    chart = bar_chart(
        f"Error rate of the {min(len(a.tools), TOP_TOOLS_CHART)} most-called tools", bars
    )
    rows = "".join(_tool_row(t) for t in a.tools)
    table = (
        "<table><tr><th>tool</th><th class=num>calls</th><th class=num>failed</th>"
        "<th class=num>error rate</th><th class=num>95% CI</th>"
        "<th class=num>recovered</th><th>most common error</th></tr>" + rows + "</table>"
    )
    return f'<section class="panel">{chart}{table}</section>'


def _tool_row(t: ToolReport) -> str:
    top = t.errors[0].pattern if t.errors else ""
    rec = "-" if t.recovery.rate is None else f"{pct(t.recovery.rate)} of {t.recovery.n}"
    return (
        f"<tr><td><code>{escape(t.tool)}</code></td><td class=num>{t.calls:,}</td>"
        f"<td class=num>{t.failures:,}</td><td class=num>{pct(t.error.rate)}</td>"
        f"<td class=num>{_range(t.error)}</td>"
        f"<td class=num>{rec}</td><td><code>{escape(top)}</code></td></tr>"
    )


def _lengths(a: Analysis) -> str:
    L = a.lengths
    names = {
        "short": f"short (<{L.short_messages} msgs)",
        "mid": f"mid-length ({L.short_messages}-{L.marathon_messages - 1})",
        "marathon": f"marathon ({L.marathon_messages}+)",
    }
    values: dict[tuple[str, str], Bar] = {}
    for bucket in L.buckets:
        if (b := _bar(bucket.name, bucket.error)) is not None:
            values[("all tools", names[bucket.name])] = b
    tools = [t for t in a.tools if t.failures][:TOP_TOOLS_LENGTH]
    for t in tools:
        for name in LENGTHS:
            if (b := _bar(name, t.by_length[name])) is not None:
                values[(t.tool, names[name])] = b
    chart = grouped_bar_chart(
        "Error rate by session length, all tools and the tools that fail most",
        ["all tools", *(t.tool for t in tools)],
        [names[n] for n in LENGTHS],
        values,
    )
    rows = "".join(
        f"<tr><td>{escape(names[b.name])}</td><td class=num>{b.sessions:,}</td>"
        f"<td class=num>{b.error.n:,}</td><td class=num>{pct(b.error.rate)}</td>"
        f"<td class=num>{_range(b.error)}</td></tr>"
        for b in L.buckets
    )
    pooled, adj = L.pooled, L.adjusted
    test = (
        "marathon against mid-length: not enough data"
        if pooled.diff is None
        else f"marathon minus mid-length {points(pooled.diff)} "
        f"({points(pooled.low)} to {points(pooled.high)}, sessions as clusters, "
        f"{p_text(pooled.p_value)})"
    )
    if adj.odds_ratio is not None and adj.low is not None and adj.high is not None:
        test += (
            f"; per-tool Mantel-Haenszel odds ratio {adj.odds_ratio:.2f} "
            f"({adj.low:.2f}-{adj.high:.2f}, {p_text(adj.p_value)}, {adj.strata} tools)"
        )
    table = (
        "<table><tr><th>bucket</th><th class=num>sessions</th><th class=num>calls</th>"
        "<th class=num>error rate</th><th class=num>95% CI (Wilson)</th></tr>"
        + rows
        + f'</table><p class="note">{escape(test)}</p>'
    )
    return f'<section class="panel">{chart}{table}</section>'


def _outcomes(a: Analysis) -> str:
    o = a.outcomes
    bars = [b for g in o.groups if (b := _bar(g.outcome, g.error)) is not None]
    colours = {"succeeded": "#009E73", "ended normally": "#56B4E9", "failed": "#D55E00"}
    chart = bar_chart(
        "Error rate of calls by session outcome",
        bars,
        colours=[colours.get(b.label, "#999999") for b in bars],
        empty="not enough data: no session has an outcome",
    )
    rows = "".join(
        f"<tr><td>{escape(g.outcome)}</td><td class=num>{g.sessions:,}</td>"
        f"<td class=num>{g.error.k:,}/{g.error.n:,}</td><td class=num>{pct(g.error.rate)}</td>"
        f"<td class=num>{_range(g.error)}</td>"
        f"<td class=num>{escape(_mean_text(g.errors_per_session))}</td></tr>"
        for g in o.groups
    )
    c = o.calls
    note = (
        "failed against the rest: not enough data"
        if c.diff is None
        else f"failed minus the rest {points(c.diff)} ({points(c.low)} to {points(c.high)}, "
        f"{c.test} test, {p_text(c.p_value)})"
    )
    table = (
        "<table><tr><th>outcome</th><th class=num>sessions</th><th class=num>failed calls</th>"
        "<th class=num>error rate</th><th class=num>95% CI</th>"
        "<th class=num>errors per session (95% CI)</th></tr>"
        + rows
        + f'</table><p class="note">{escape(note)}</p>'
    )
    return f'<section class="panel">{chart}{table}</section>'


def _errors(a: Analysis) -> str:
    if not a.errors:
        return '<section class="panel"><p class="note">No failed calls.</p></section>'
    rows = "".join(
        f"<tr><td><code>{escape(e.tool)}</code></td><td>{escape(e.kind)}</td>"
        f"<td class=num>{e.count:,}</td><td><code>{escape(e.pattern)}</code></td>"
        f"<td><code>{escape(e.example)}</code></td></tr>"
        for e in a.errors
    )
    return (
        '<section class="panel"><table><tr><th>tool</th><th>kind</th><th class=num>count</th>'
        "<th>message (normalised)</th><th>example (redacted)</th></tr>"
        + rows
        + "</table></section>"
    )


def _dist_row(name: str, d: Distribution, unit: str = "") -> str:
    if d.n == 0:
        return f"<tr><td>{escape(name)}</td><td colspan=4>not enough data</td></tr>"
    return (
        f"<tr><td>{escape(name)}</td><td class=num>{d.n:,}</td>"
        f"<td class=num>{escape(_mean_text(d.mean))}{unit}</td>"
        f"<td class=num>{d.median:g}{unit}</td><td class=num>{d.p90:g}{unit}</td></tr>"
    )


def _per_session(a: Analysis) -> str:
    ps = a.per_session
    ent = ps.entropy
    entropy_rows = "".join(
        f"<tr><td>tool-mix entropy, {escape(k)} sessions (nats)</td><td class=num>{m.n:,}</td>"
        f"<td class=num>{escape(_mean_text(m))}</td><td class=num>-</td><td class=num>-</td></tr>"
        for k, m in ent.by_type.items()
    )
    overall = (
        "<tr><td>tool-mix entropy, all (nats)</td><td colspan=4>not enough data</td></tr>"
        if ent.overall.n == 0
        else f"<tr><td>tool-mix entropy, all (nats)</td><td class=num>{ent.overall.n:,}</td>"
        f"<td class=num>{escape(_mean_text(ent.overall))}</td><td class=num>-</td>"
        "<td class=num>-</td></tr>"
    )
    rows = (
        _dist_row("turns before the first successful call", ps.first_success_turn)
        + _dist_row("seconds to the first successful call", ps.first_success_seconds, " s")
        + _dist_row("failed calls per session", ps.errors_per_session)
        + _dist_row("distinct tools per session", ps.distinct_tools)
        + overall
        + entropy_rows
    )
    note = (
        f"{ps.with_calls:,} of {ps.sessions:,} sessions made tool calls; "
        f"{ps.without_calls:,} made none and {ps.no_success:,} never had a call succeed."
    )
    return (
        '<section class="panel"><table><tr><th>measure</th><th class=num>sessions</th>'
        "<th class=num>mean (95% CI)</th><th class=num>median</th><th class=num>p90</th></tr>"
        + rows
        + f'</table><p class="note">{escape(note)}</p></section>'
    )


def _arms(a: Analysis) -> str:
    arms = a.arms
    if arms is None or not arms.arms:
        return '<section class="panel"><p class="note">no A/B traffic recorded</p></section>'
    colours = {"warm": "#D55E00", "cold": "#0072B2"}
    bars = [b for g in arms.arms if (b := _bar(f"{g.arm} arm", g.error)) is not None]
    chart = bar_chart(
        "Error rate of calls per A/B arm",
        bars,
        colours=[colours.get(b.label.split()[0], "#999999") for b in bars],
        empty="not enough data: no calls in either arm",
    )
    max_turns = a.settings["max_turns"]
    rows = "".join(
        f"<tr><td>{escape(g.arm)}</td><td class=num>{g.sessions:,}</td>"
        f"<td class=num>{g.failures:,}/{g.calls:,}</td><td class=num>{pct(g.error.rate)}</td>"
        f"<td class=num>{_range(g.error)}</td>"
        f"<td class=num>{pct(g.early.rate)} ({_range(g.early)})</td>"
        f"<td class=num>{escape(_mean_text(g.first_success_turn))}</td></tr>"
        for g in arms.arms
    )
    notes = []
    for what, c in (("all calls", arms.error), (f"the first {max_turns} turns", arms.early)):
        notes.append(
            f"warm minus cold, {what}: not enough data"
            if c.diff is None
            else f"warm minus cold, {what}: {points(c.diff)} ({points(c.low)} to "
            f"{points(c.high)}, {c.test} test, {p_text(c.p_value)})"
        )
    if arms.verdict is not None:
        notes.append(f"{arms.verdict.claim}: {arms.verdict.summary}")
    table = (
        "<table><tr><th>arm</th><th class=num>sessions</th><th class=num>failed calls</th>"
        "<th class=num>error rate</th><th class=num>95% CI</th>"
        f"<th class=num>first {max_turns} turns (95% CI)</th>"
        "<th class=num>turns to first success (95% CI)</th></tr>"
        + rows
        + "</table>"
        + "".join(f'<p class="note">{escape(n)}</p>' for n in notes)
    )
    return f'<section class="panel">{chart}{table}</section>'


def _experiments(a: Analysis) -> str:
    if not a.experiments:
        return '<section class="panel"><p class="note">no experiments</p></section>'
    return "".join(_experiment(e) for e in a.experiments)


def _experiment(e: dict[str, Any]) -> str:
    arms = e.get("arms", {})
    measured = ", ".join(
        f"{arm} {arms.get(arm, {}).get('measured', 0)} measured"
        + (f" ({n} excluded)" if (n := arms.get(arm, {}).get("excluded", 0)) else "")
        for arm in ("cold", "warm")
    )
    title = f"{e['id']}" + (f" · {e['name']}" if e.get("name") else "")
    meta = (
        f"model {e['model']} · template {e['template']} · {e['task_count']} tasks "
        f"({e['tasks']}) × {e['trials']} trials · {e['done']}/{e['planned']} runs "
        f"({e['status']}) · {measured}"
    )
    columns = ("metric", "cold", "warm", "warm - cold", "p", "pairs")
    header = "".join(f"<th>{escape(c)}</th>" for c in columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(str(row.get(c, '')))}</td>" for c in columns) + "</tr>"
        for row in e.get("table", [])
    )
    return (
        f'<section class="panel experiment"><div class="claim"><code>{escape(title)}</code></div>'
        f'<p class="note">{escape(meta)}</p>'
        f"<table><tr>{header}</tr>{rows}</table>"
        '<p class="note">95% intervals over tasks; paired sign-flip test.</p></section>'
    )


def _methods(a: Analysis) -> str:
    return (
        '<h2>How these numbers are made</h2><section class="panel note">'
        "<p>A call failed when warmstart's judge found evidence in its result (an error field, "
        "a non-zero exit code, a traceback or an <code>Error:</code> prefix, a retry after an "
        "empty or not-found result, an unknown tool). Trivial tools are left out. Rates carry "
        "Wilson 95% intervals. Trends over turns are weighted least squares of the per-turn "
        "rate with a quasi-binomial dispersion. Marathon against mid-length uses the "
        "Mantel-Haenszel odds ratio over tools and a session-clustered difference of pooled "
        "rates; a verdict needs both. Calls within one session are not independent, so per-call "
        "p-values are optimistic; the session-clustered intervals are the honest ones. "
        f"A group needs at least {a.settings['min_sessions']} sessions for a verdict. "
        f"Thresholds: short under {a.settings['short_messages']} messages, marathon from "
        f"{a.settings['marathon_messages']}.</p></section>"
    )
