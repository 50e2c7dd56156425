"""Turn the store's aggregates into the measures ``warmstart analyze`` reports.

:func:`analyze` runs the queries in :mod:`warmstart.analytics.queries` (a few
GROUP BY passes), then derives every rate with its interval and every test from
those aggregates in Python. The result, :class:`Analysis`, is plain dataclasses
so the terminal tables, ``--json`` and the HTML report all show the same numbers.
Verdicts on the claims are decided in :mod:`warmstart.analytics.verdicts`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from warmstart.analytics import queries
from warmstart.analytics.normalize import normalize_message
from warmstart.analytics.queries import ENDED, FAILED, LENGTHS, SUCCEEDED, UNKNOWN, Cell
from warmstart.analytics.stats import (
    ClusterSums,
    Comparison,
    Mean,
    OddsRatio,
    Rate,
    Slope,
    cluster_rate,
    compare_clustered,
    compare_rates,
    mantel_haenszel,
    mean_from_sums,
    quantile_from_histogram,
    welch,
    wilson,
    wls_slope,
)
from warmstart.config import MiningConfig, load_config
from warmstart.store import SessionFilter, Store

MAX_TURNS = 30
TOP_ERRORS_PER_TOOL = 5
TOP_ERRORS = 25
ALL = "all"


@dataclass(frozen=True)
class ErrorGroup:
    """One normalised error message of one tool: how often, and a redacted example."""

    tool: str
    kind: str
    pattern: str
    count: int
    example: str


@dataclass(frozen=True)
class ToolReport:
    """Error and recovery rates of one tool, overall and by session length."""

    tool: str
    calls: int
    failures: int
    error: Rate
    recovery: Rate
    by_length: dict[str, Rate]
    marathon_vs_mid: Comparison
    errors: list[ErrorGroup]


@dataclass(frozen=True)
class TurnPoint:
    """Error rate of the calls made at one turn (0 = the first assistant message)."""

    turn: int
    error: Rate


@dataclass(frozen=True)
class TurnCurve:
    """Error rate by turn over the first turns of one task type (or ``all``)."""

    task_type: str
    sessions: int
    points: list[TurnPoint]
    slope: Slope | None


@dataclass(frozen=True)
class Bucket:
    """One session-length bucket: its sessions and pooled error rate.

    ``se`` is the cluster-robust standard error (sessions as clusters).
    """

    name: str
    sessions: int
    error: Rate
    se: float | None


@dataclass(frozen=True)
class LengthReport:
    """Error rates by session length, and marathon against mid-length.

    ``pooled`` compares all calls with session-clustered errors; ``adjusted`` is the
    Mantel-Haenszel odds ratio over tools (marathon / mid), which compares per-tool
    rates whatever mix of tools each bucket uses.
    """

    short_messages: int
    marathon_messages: int
    buckets: list[Bucket]
    pooled: Comparison
    adjusted: OddsRatio


@dataclass(frozen=True)
class Distribution:
    """A per-session quantity: mean with t interval, median and 90th percentile."""

    n: int
    mean: Mean
    median: float | None
    p90: float | None


@dataclass(frozen=True)
class EntropyReport:
    """Shannon entropy (nats) of each session's tool mix, overall and per task type."""

    overall: Mean
    by_type: dict[str, Mean]


@dataclass(frozen=True)
class SessionReport:
    """Per-session measures over sessions that made at least one (non-trivial) call."""

    sessions: int
    with_calls: int
    without_calls: int
    no_success: int
    first_success_turn: Distribution
    first_success_seconds: Distribution
    errors_per_session: Distribution
    distinct_tools: Distribution
    entropy: EntropyReport


@dataclass(frozen=True)
class OutcomeGroup:
    """Sessions of one outcome class and the error rate of their calls."""

    outcome: str
    sessions: int
    error: Rate
    errors_per_session: Mean


@dataclass(frozen=True)
class OutcomeReport:
    """Error rates in failed sessions against the rest (succeeded or ended normally).

    ``calls`` is the per-call two-proportion test, ``clustered`` the same difference
    with sessions as clusters; ``errors_per_session`` a Welch test on the means.
    """

    groups: list[OutcomeGroup]
    calls: Comparison
    clustered: Comparison
    errors_per_session: dict[str, float | None]


@dataclass(frozen=True)
class ArmGroup:
    """One A/B arm: its sessions and calls, error rates and turns to first success.

    ``early`` is the error rate of the calls at turns below the turn cap (the first
    ``settings["max_turns"]`` turns); ``first_success_turn`` the mean (t interval) over
    the ``first_success_turn.n`` sessions that had a call succeed.
    """

    arm: str
    sessions: int
    calls: int
    failures: int
    error: Rate
    early: Rate
    first_success_turn: Mean


@dataclass(frozen=True)
class ArmsReport:
    """Sessions that carry an ``arm`` (proxy ``--ab`` traffic, eval runs), warm vs cold.

    ``error`` and ``early`` are warm minus cold (Newcombe interval and test) on all
    calls and on the early calls; ``verdict`` judges "warm arm has fewer errors".
    """

    arms: list[ArmGroup]
    error: Comparison
    early: Comparison
    verdict: Verdict | None


@dataclass(frozen=True)
class Verdict:
    """A plain-language verdict on one claim, decided by the data."""

    claim: str
    status: str
    summary: str


@dataclass
class Analysis:
    """Everything ``warmstart analyze`` measures, ready for tables, JSON or HTML."""

    generated_at: float
    filters: dict[str, Any]
    settings: dict[str, int]
    sessions: int
    calls: int
    failures: int
    error: Rate
    recovery: Rate
    tools: list[ToolReport]
    errors: list[ErrorGroup]
    turns: list[TurnCurve]
    lengths: LengthReport
    per_session: SessionReport
    outcomes: OutcomeReport
    arms: ArmsReport | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    experiments: list[dict[str, Any]] = field(default_factory=list)
    """Stored A/B experiments, summarised as ``warmstart eval show`` does."""

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return asdict(self)


def analyze(
    db: str | None = None,
    flt: SessionFilter | None = None,
    config: MiningConfig | None = None,
    *,
    max_turns: int = MAX_TURNS,
    min_sessions: int | None = None,
    workers: int = 2,
    experiments: bool = True,
) -> Analysis:
    """Measure where tool calls fail in the (filtered) store, and judge the claims.

    ``config`` gives the length thresholds (``short_messages``, ``marathon_messages``);
    ``max_turns`` caps the turn curves; ``min_sessions`` is how many sessions a group
    needs before a verdict is drawn from it (see :mod:`warmstart.analytics.verdicts`);
    ``workers`` how many database connections run the queries side by side;
    ``experiments`` whether to summarise the stored A/B experiments for the report.
    """
    from warmstart.analytics.verdicts import MIN_SESSIONS, judge_claims

    flt = flt or SessionFilter()
    cfg = config or load_config()
    if max_turns < 2:
        raise ValueError("max_turns must be at least 2")
    short, marathon = int(cfg.short_messages), int(cfg.marathon_messages)
    min_sessions = MIN_SESSIONS if min_sessions is None else int(min_sessions)
    raw = queries.gather(Store(db).engine, flt, max_turns, short, marathon, workers=workers)
    cells, groups = raw.cells, raw.groups

    error_groups = _error_groups(raw.errors)
    tools = _tools(cells, error_groups)
    calls = sum(c.calls for c in cells)
    failures = sum(c.failures for c in cells)
    recovered = sum(c.recovered for c in cells)
    analysis = Analysis(
        generated_at=time.time(),
        filters={k: v for k, v in asdict(flt).items() if v is not None},
        settings={
            "max_turns": max_turns,
            "short_messages": short,
            "marathon_messages": marathon,
            "min_sessions": min_sessions,
        },
        sessions=sum(g.sessions for g in groups),
        calls=calls,
        failures=failures,
        error=wilson(failures, calls),
        recovery=wilson(recovered, failures),
        tools=tools,
        errors=sorted(
            (g for per_tool in error_groups.values() for g in per_tool),
            key=lambda g: (-g.count, g.tool, g.pattern),
        )[:TOP_ERRORS],
        turns=_turn_curves(cells, groups, max_turns),
        lengths=_lengths(cells, groups, short, marathon),
        per_session=_per_session(
            groups, raw.hist_failures, raw.hist_tools, raw.hist_first, raw.mix
        ),
        outcomes=_outcomes(groups),
    )
    analysis.arms = _arms(raw.arms, max_turns, min_sessions)
    analysis.verdicts = judge_claims(analysis, min_sessions=min_sessions)
    if experiments:
        from warmstart.analytics.experiments import ab_experiments

        analysis.experiments = ab_experiments(db)
    return analysis


# -- error messages ------------------------------------------------------------------


def _error_groups(rows: Iterable[tuple[str, str, str, int]]) -> dict[str, list[ErrorGroup]]:
    """Group exact messages by normalised form; keep each group's most frequent exact
    message as its example, redacted (redaction runs once per group, not per call)."""
    from warmstart.mining.redact import redact_text

    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    example: dict[tuple[str, str, str], tuple[int, str]] = {}
    for tool, kind, evidence, n in rows:
        key = (tool, kind, normalize_message(evidence) or kind or "failed")
        counts[key] += n
        best = example.get(key)
        if best is None or n > best[0]:
            example[key] = (n, evidence)
    by_tool: dict[str, list[ErrorGroup]] = defaultdict(list)
    for (tool, kind, pattern), n in counts.items():
        by_tool[tool].append(
            ErrorGroup(
                tool=tool,
                kind=kind,
                pattern=redact_text(pattern).text,
                count=n,
                example=redact_text(example[(tool, kind, pattern)][1]).text,
            )
        )
    for items in by_tool.values():
        items.sort(key=lambda g: (-g.count, g.pattern))
    return by_tool


# -- per tool ------------------------------------------------------------------------


def _tools(cells: list[Cell], errors: dict[str, list[ErrorGroup]]) -> list[ToolReport]:
    """One report per tool, most-called first."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    by_length: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for c in cells:
        t = totals[c.tool]
        t[0] += c.calls
        t[1] += c.failures
        t[2] += c.recovered
        b = by_length[(c.tool, c.length)]
        b[0] += c.calls
        b[1] += c.failures
    out = []
    for tool, (n, k, rec) in sorted(totals.items(), key=lambda kv: (-kv[1][0], kv[0])):
        lengths = {
            name: wilson(by_length[(tool, name)][1], by_length[(tool, name)][0]) for name in LENGTHS
        }
        out.append(
            ToolReport(
                tool=tool,
                calls=n,
                failures=k,
                error=wilson(k, n),
                recovery=wilson(rec, k),
                by_length=lengths,
                marathon_vs_mid=compare_rates(lengths["marathon"], lengths["mid"]),
                errors=errors.get(tool, [])[:TOP_ERRORS_PER_TOOL],
            )
        )
    return out


# -- by turn -------------------------------------------------------------------------


def _turn_curves(
    cells: list[Cell], groups: list[queries.SessionGroup], max_turns: int
) -> list[TurnCurve]:
    """``all`` first, then each task type that has calls; slopes over turns < max_turns."""
    per: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for c in cells:
        if c.turn >= max_turns:
            continue
        for key in (ALL, c.task_type):
            point = per[key][c.turn]
            point[0] += c.failures
            point[1] += c.calls
    sessions: dict[str, int] = defaultdict(int)
    for g in groups:
        sessions[ALL] += g.with_calls
        sessions[g.task_type] += g.with_calls
    curves = []
    for key in [ALL, *sorted(k for k in per if k != ALL)]:
        turns = per.get(key, {})
        points = [TurnPoint(t, wilson(*turns[t])) for t in sorted(turns)]
        slope = wls_slope([(t, k, n) for t, (k, n) in turns.items()])
        curves.append(TurnCurve(key, sessions.get(key, 0), points, slope))
    return curves


# -- by session length ---------------------------------------------------------------


def _cluster_sums(groups: Iterable[queries.SessionGroup]) -> ClusterSums:
    items = list(groups)
    return ClusterSums(
        n=sum(g.with_calls for g in items),
        c=float(sum(g.calls for g in items)),
        f=float(sum(g.failures for g in items)),
        cc=float(sum(g.calls_sq for g in items)),
        ff=float(sum(g.failures_sq for g in items)),
        cf=float(sum(g.calls_failures for g in items)),
    )


def _lengths(
    cells: list[Cell], groups: list[queries.SessionGroup], short: int, marathon: int
) -> LengthReport:
    """Buckets with clustered rates; marathon vs mid pooled and tool-adjusted."""
    sums = {name: _cluster_sums(g for g in groups if g.length == name) for name in LENGTHS}
    buckets = []
    for name in LENGTHS:
        rate, se = cluster_rate(sums[name])
        buckets.append(Bucket(name, sums[name].n, rate, se))
    strata: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for c in cells:
        if c.length == "marathon":
            strata[c.tool][0] += c.failures
            strata[c.tool][1] += c.calls - c.failures
        elif c.length == "mid":
            strata[c.tool][2] += c.failures
            strata[c.tool][3] += c.calls - c.failures
    tables = [(a, b, c, d) for a, b, c, d in strata.values()]
    return LengthReport(
        short_messages=short,
        marathon_messages=marathon,
        buckets=buckets,
        pooled=compare_clustered(sums["marathon"], sums["mid"]),
        adjusted=mantel_haenszel(tables),
    )


# -- per session ---------------------------------------------------------------------


def distribution(hist: list[tuple[int, int]] | list[tuple[float, int]]) -> Distribution:
    """Mean (t interval), median and p90 of values given as ``(value, count)``."""
    n = sum(c for _, c in hist)
    total = sum(v * c for v, c in hist)
    squares = sum(v * v * c for v, c in hist)
    return Distribution(
        n=n,
        mean=mean_from_sums(n, float(total), float(squares)),
        median=quantile_from_histogram(hist, 0.5),
        p90=quantile_from_histogram(hist, 0.9),
    )


def _per_session(
    groups: list[queries.SessionGroup],
    hist_failures: list[tuple[int, int]],
    hist_tools: list[tuple[int, int]],
    hist_first: list[tuple[int, int]],
    mix: list[queries.MixRow],
) -> SessionReport:
    sessions = sum(g.sessions for g in groups)
    with_calls = sum(g.with_calls for g in groups)
    first = distribution(hist_first)
    entropy: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    seconds: dict[float, int] = defaultdict(int)
    for row in mix:
        acc = entropy[row.task_type]
        acc[0] += row.sessions
        acc[1] += row.entropy
        acc[2] += row.entropy_sq
        if row.seconds is not None and row.seconds >= 0:
            seconds[row.seconds] += row.sessions
    all_n = int(sum(v[0] for v in entropy.values()))
    all_h = sum(v[1] for v in entropy.values())
    all_h2 = sum(v[2] for v in entropy.values())
    return SessionReport(
        sessions=sessions,
        with_calls=with_calls,
        without_calls=sessions - with_calls,
        no_success=with_calls - first.n,
        first_success_turn=first,
        first_success_seconds=distribution(sorted(seconds.items())),
        errors_per_session=distribution(hist_failures),
        distinct_tools=distribution(hist_tools),
        entropy=EntropyReport(
            overall=mean_from_sums(all_n, all_h, all_h2),
            by_type={k: mean_from_sums(int(v[0]), v[1], v[2]) for k, v in sorted(entropy.items())},
        ),
    )


# -- outcomes ------------------------------------------------------------------------


def _outcomes(groups: list[queries.SessionGroup]) -> OutcomeReport:
    """Failed sessions against succeeded-or-ended-normally ones (unknown left out).

    Every number comes from the per-session counts, which cover exactly the calls
    the per-tool tables count (trivial tools excluded).
    """

    def pooled(names: tuple[str, ...]) -> tuple[Rate, Mean, ClusterSums]:
        members = [g for g in groups if g.outcome in names]
        sums = _cluster_sums(members)
        rate = wilson(int(sums.f), int(sums.c))
        return rate, mean_from_sums(sums.n, sums.f, sums.ff), sums

    out_groups = []
    for name in (SUCCEEDED, ENDED, FAILED, UNKNOWN):
        n_sessions = sum(g.sessions for g in groups if g.outcome == name)
        if n_sessions:
            rate, mean, _ = pooled((name,))
            out_groups.append(OutcomeGroup(name, n_sessions, rate, mean))
    failed_rate, failed_mean, failed_sums = pooled((FAILED,))
    ok_rate, ok_mean, ok_sums = pooled((SUCCEEDED, ENDED))
    diff, low, high, p = welch(failed_mean, ok_mean)
    return OutcomeReport(
        groups=out_groups,
        calls=compare_rates(failed_rate, ok_rate),
        clustered=compare_clustered(failed_sums, ok_sums),
        errors_per_session={"diff": diff, "low": low, "high": high, "p_value": p},
    )


# -- A/B arms ------------------------------------------------------------------------


def _arms(rows: list[queries.ArmRow], max_turns: int, min_sessions: int) -> ArmsReport:
    """Per-arm rates and warm minus cold; the verdict only when some session has an arm."""
    from warmstart.analytics.verdicts import judge_arms

    arms = [
        ArmGroup(
            arm=r.arm,
            sessions=r.sessions,
            calls=r.calls,
            failures=r.failures,
            error=wilson(r.failures, r.calls),
            early=wilson(r.failures_early, r.calls_early),
            first_success_turn=mean_from_sums(r.first_n, float(r.first_sum), float(r.first_sq)),
        )
        for r in rows
    ]
    by_arm = {a.arm: a for a in arms}
    empty = wilson(0, 0)
    warm, cold = by_arm.get("warm"), by_arm.get("cold")
    report = ArmsReport(
        arms=arms,
        error=compare_rates(warm.error if warm else empty, cold.error if cold else empty),
        early=compare_rates(warm.early if warm else empty, cold.early if cold else empty),
        verdict=None,
    )
    if not arms:
        return report
    return replace(report, verdict=judge_arms(report, max_turns, min_sessions))
