"""Plain-language verdicts on the claims warm starts rest on, decided by the data.

A claim is **supported** when the 95% interval of the effect lies wholly on the
claimed side, **contradicted** when it lies wholly on the other side, and
**inconclusive** when it straddles no effect. A group with fewer than
``min_sessions`` sessions (default :data:`MIN_SESSIONS`), or with no failures to
compare, gets **not enough data: N sessions** and no verdict: nothing is assumed.

Where two analyses answer the same claim (marathon against mid-length: per-tool
rates via Mantel-Haenszel, and session-clustered pooled rates; outcomes: per-call
and session-clustered), the verdict needs both to agree, because calls within a
session are not independent and a per-call test alone overstates certainty.
"""

from __future__ import annotations

from warmstart.analytics.measures import ALL, Analysis, ArmsReport, TurnCurve, Verdict
from warmstart.analytics.queries import ENDED, FAILED, SUCCEEDED
from warmstart.analytics.stats import Comparison, Slope

MIN_SESSIONS = 10
ALPHA = 0.05

SUPPORTED = "supported"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive"
NOT_ENOUGH = "not enough data"

CLAIM_MARATHON = "Marathon sessions have lower per-tool error rates than mid-length ones"
CLAIM_CODE = "Code sessions' error rate falls over their first turns"
CLAIM_FILE = "File sessions' error rate rises over their first turns"
CLAIM_ALL = "The error rate falls over the first turns of a session"
CLAIM_OUTCOME = "Failed sessions have higher tool error rates than successful ones"
CLAIM_ARMS = "The warm arm has fewer errors than the cold arm"


def pct(value: float | None, digits: int = 1) -> str:
    """A proportion as a percentage string (``'3.7%'``), ``'-'`` when unknown."""
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def points(value: float | None, digits: int = 1) -> str:
    """A difference of proportions in percentage points (``'-1.9 pts'``); a value that
    would round to a signed zero gets more digits, so ``-0.0`` never hides a sign."""
    if value is None:
        return "-"
    text = f"{100 * value:+.{digits}f}"
    while value != 0 and float(text) == 0 and digits < 6:
        digits += 1
        text = f"{100 * value:+.{digits}f}"
    return f"{text} pts"


def p_text(p: float | None) -> str:
    """``p = 0.012`` or ``p < 0.001``."""
    if p is None:
        return "p = -"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _not_enough(claim: str, detail: str) -> Verdict:
    return Verdict(claim, NOT_ENOUGH, f"{NOT_ENOUGH}: {detail}")


def judge_claims(analysis: Analysis, min_sessions: int = MIN_SESSIONS) -> list[Verdict]:
    """Every claim's verdict, in a fixed order; the A/B arms claim last, and only when
    some session has an arm."""
    curves = {c.task_type: c for c in analysis.turns}
    max_turns = analysis.settings["max_turns"]
    arms = [analysis.arms.verdict] if analysis.arms and analysis.arms.verdict else []
    return [
        _marathon(analysis, min_sessions),
        _trend(CLAIM_CODE, curves.get("code"), "code", -1, max_turns, min_sessions),
        _trend(CLAIM_FILE, curves.get("file"), "file", +1, max_turns, min_sessions),
        _trend(CLAIM_ALL, curves.get(ALL), "", -1, max_turns, min_sessions),
        _outcome(analysis, min_sessions),
        *arms,
    ]


def _marathon(analysis: Analysis, min_sessions: int) -> Verdict:
    lengths = analysis.lengths
    by_name = {b.name: b for b in lengths.buckets}
    mar, mid = by_name["marathon"], by_name["mid"]
    if mar.sessions < min_sessions or mid.sessions < min_sessions:
        return _not_enough(
            CLAIM_MARATHON,
            f"{mar.sessions} marathon sessions ({lengths.marathon_messages}+ messages) and "
            f"{mid.sessions} mid-length sessions; each needs {min_sessions}",
        )
    pooled, adjusted = lengths.pooled, lengths.adjusted
    if pooled.diff is None or pooled.low is None or pooled.high is None:
        return _not_enough(
            CLAIM_MARATHON, f"{mar.sessions + mid.sessions} sessions, but no calls to compare"
        )
    if adjusted.p_value is None:
        return _not_enough(
            CLAIM_MARATHON,
            f"{mar.sessions + mid.sessions} sessions, but no tool was called in both buckets "
            "with a failure in either",
        )
    odds = "-" if adjusted.odds_ratio is None else f"{adjusted.odds_ratio:.2f}"
    if adjusted.low is not None and adjusted.high is not None:
        odds += f" ({adjusted.low:.2f}-{adjusted.high:.2f})"
    facts = (
        f"marathon sessions fail {pct(mar.error.rate)} of calls, mid-length {pct(mid.error.rate)} "
        f"({points(pooled.diff)}, 95% CI {points(pooled.low)} to {points(pooled.high)}, "
        f"sessions as clusters); per-tool odds ratio {odds}, {p_text(adjusted.p_value)} "
        f"over {adjusted.strata} tools"
    )
    per_tool_sig = adjusted.p_value < ALPHA
    if pooled.high < 0 and per_tool_sig and adjusted.excess < 0:
        return Verdict(CLAIM_MARATHON, SUPPORTED, f"{SUPPORTED}: {facts}.")
    if pooled.low > 0 and per_tool_sig and adjusted.excess > 0:
        return Verdict(CLAIM_MARATHON, CONTRADICTED, f"{CONTRADICTED}: {facts}.")
    return Verdict(CLAIM_MARATHON, INCONCLUSIVE, f"{INCONCLUSIVE}: {facts}.")


def _trend(
    claim: str,
    curve: TurnCurve | None,
    label: str,
    sign: int,
    max_turns: int,
    min_sessions: int,
) -> Verdict:
    who = f"{label} sessions" if label else "sessions"
    if curve is None or curve.sessions < min_sessions:
        n = curve.sessions if curve is not None else 0
        return _not_enough(claim, f"{n} {who} (needs {min_sessions})")
    slope: Slope | None = curve.slope
    if slope is None:
        calls = sum(p.error.n for p in curve.points)
        fails = sum(p.error.k for p in curve.points)
        return _not_enough(
            claim,
            f"{curve.sessions} {who}, {fails} failed of {calls} calls over "
            f"{len(curve.points)} turns: no trend to fit",
        )
    facts = (
        f"over the first {max_turns} turns of {curve.sessions} {who} the error rate changes by "
        f"{points(slope.slope, 2)} per turn (95% CI {points(slope.low, 2)} to "
        f"{points(slope.high, 2)}, {p_text(slope.p_value)})"
    )
    falls, rises = slope.high < 0, slope.low > 0
    if (sign < 0 and falls) or (sign > 0 and rises):
        return Verdict(claim, SUPPORTED, f"{SUPPORTED}: {facts}.")
    if (sign < 0 and rises) or (sign > 0 and falls):
        return Verdict(claim, CONTRADICTED, f"{CONTRADICTED}: {facts}.")
    return Verdict(claim, INCONCLUSIVE, f"{INCONCLUSIVE}: {facts}.")


def _outcome(analysis: Analysis, min_sessions: int) -> Verdict:
    groups = {g.outcome: g for g in analysis.outcomes.groups}
    failed = groups[FAILED].sessions if FAILED in groups else 0
    ok = sum(groups[n].sessions for n in (SUCCEEDED, ENDED) if n in groups)
    if failed < min_sessions or ok < min_sessions:
        return _not_enough(
            CLAIM_OUTCOME,
            f"{failed} failed and {ok} successful sessions; each needs {min_sessions}",
        )
    calls: Comparison = analysis.outcomes.calls
    clustered: Comparison = analysis.outcomes.clustered
    if calls.diff is None or calls.low is None or calls.high is None:
        return _not_enough(CLAIM_OUTCOME, f"{failed + ok} sessions, but no calls to compare")
    facts = (
        f"calls in failed sessions fail {pct(calls.a.rate)} "
        f"({pct(calls.a.low)}-{pct(calls.a.high)}), in successful ones {pct(calls.b.rate)} "
        f"({pct(calls.b.low)}-{pct(calls.b.high)}); difference {points(calls.diff)} "
        f"(95% CI {points(calls.low)} to {points(calls.high)}, {p_text(calls.p_value)})"
    )
    c_low, c_high = clustered.low, clustered.high
    if c_low is None or c_high is None:
        c_low, c_high = calls.low, calls.high
    else:
        facts += f"; with sessions as clusters {points(c_low)} to {points(c_high)}"
    if calls.low > 0 and c_low > 0:
        return Verdict(CLAIM_OUTCOME, SUPPORTED, f"{SUPPORTED}: {facts}.")
    if calls.high < 0 and c_high < 0:
        return Verdict(CLAIM_OUTCOME, CONTRADICTED, f"{CONTRADICTED}: {facts}.")
    return Verdict(CLAIM_OUTCOME, INCONCLUSIVE, f"{INCONCLUSIVE}: {facts}.")


def judge_arms(arms: ArmsReport, max_turns: int, min_sessions: int) -> Verdict:
    """Warm against cold on the error rate of all their calls (warm minus cold)."""
    n = {a.arm: a.sessions for a in arms.arms}
    warm, cold = n.get("warm", 0), n.get("cold", 0)
    if warm < min_sessions or cold < min_sessions:
        return _not_enough(
            CLAIM_ARMS,
            f"{warm + cold} sessions ({warm} warm, {cold} cold); each arm needs {min_sessions}",
        )
    c, early = arms.error, arms.early
    if c.diff is None or c.low is None or c.high is None:
        return _not_enough(CLAIM_ARMS, f"{warm + cold} sessions, but no calls to compare")
    facts = (
        f"warm calls fail {pct(c.a.rate)} ({pct(c.a.low)}-{pct(c.a.high)}), cold "
        f"{pct(c.b.rate)} ({pct(c.b.low)}-{pct(c.b.high)}); difference {points(c.diff)} "
        f"(95% CI {points(c.low)} to {points(c.high)}, {p_text(c.p_value)})"
    )
    if early.diff is not None:
        facts += f"; in the first {max_turns} turns {points(early.diff)}"
    if c.high < 0:
        return Verdict(CLAIM_ARMS, SUPPORTED, f"{SUPPORTED}: {facts}.")
    if c.low > 0:
        return Verdict(CLAIM_ARMS, CONTRADICTED, f"{CONTRADICTED}: {facts}.")
    return Verdict(CLAIM_ARMS, INCONCLUSIVE, f"{INCONCLUSIVE}: {facts}.")
