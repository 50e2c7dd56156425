"""Small, dependency-free statistics for analytics: intervals, tests, entropy.

Everything here works from counts and sums that SQL can produce (``COUNT``, ``SUM``,
sums of squares), so analytics never needs one row per message in Python. Formulas:

- proportions: Wilson score interval (good coverage at small n and near 0 or 1, where
  the textbook Wald interval fails); differences: Newcombe's hybrid score interval;
- two proportions: pooled z test, or Fisher's exact test when an expected cell is < 5;
- stratified 2x2 tables (per-tool rates): Mantel-Haenszel odds ratio with the
  Robins-Breslow-Greenland interval and the Mantel-Haenszel chi-square test;
- ratios over sessions (a session's calls are not independent): cluster-robust
  variance of the ratio estimator from per-group sums;
- means: Student t interval from n, sum and sum of squares; two means: Welch;
- trend over turns: weighted least squares of the per-turn rate with a
  quasi-binomial dispersion, t interval.

The t distribution is computed from the regularised incomplete beta function, so no
SciPy is needed (it would double the import time of ``warmstart analyze``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""


@dataclass(frozen=True)
class Rate:
    """A proportion ``k / n`` with its Wilson interval; ``rate`` is None when n is 0."""

    k: int
    n: int
    rate: float | None
    low: float | None
    high: float | None

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    """Group ``a`` against group ``b``: difference ``a - b``, its interval and a p-value."""

    a: Rate
    b: Rate
    diff: float | None
    low: float | None
    high: float | None
    p_value: float | None
    test: str

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "a": self.a.as_dict(),
            "b": self.b.as_dict(),
            "diff": self.diff,
            "low": self.low,
            "high": self.high,
            "p_value": self.p_value,
            "test": self.test,
        }


@dataclass(frozen=True)
class OddsRatio:
    """A (stratified) odds ratio with its 95% interval and test p-value."""

    odds_ratio: float | None
    low: float | None
    high: float | None
    p_value: float | None
    excess: float
    """Failures in group 1 above (positive) or below what equal odds would give."""
    strata: int
    test: str

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class Slope:
    """A linear trend: change in rate per unit of x, its interval and p-value."""

    slope: float
    low: float
    high: float
    p_value: float
    dispersion: float
    points: int
    n: int

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return asdict(self)


@dataclass(frozen=True)
class Mean:
    """A mean with its t interval (None where n is too small for one)."""

    n: int
    mean: float | None
    low: float | None
    high: float | None
    sd: float | None

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return asdict(self)


# -- distributions ------------------------------------------------------------------


def normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def two_sided_p(z: float) -> float:
    """Two-sided p-value of a standard normal statistic."""
    return min(1.0, 2.0 * normal_sf(abs(z)))


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-14:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (bisection on :func:`t_sf`; plenty fast here)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > 1.0 - p:
        hi *= 2.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        if t_sf(mid, df) > 1.0 - p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2.0


# -- proportions ---------------------------------------------------------------------


def wilson(k: int, n: int, z: float = Z95) -> Rate:
    """``k`` of ``n`` with its Wilson score interval (95% by default)."""
    k, n = int(k), int(n)
    if n <= 0:
        return Rate(k, 0, None, None, None)
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Rate(k, n, p, low, high)


def _hypergeom_logpmf(x: int, n1: int, n2: int, m: int) -> float:
    """log P(X = x) with X the successes in group 1: n1, n2 group sizes, m total successes."""
    return _log_comb(n1, x) + _log_comb(n2, m - x) - _log_comb(n1 + n2, m)


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided p-value of Fisher's exact test on ``k1/n1`` against ``k2/n2``."""
    m = k1 + k2
    lo, hi = max(0, m - n2), min(n1, m)
    observed = _hypergeom_logpmf(k1, n1, n2, m)
    total = 0.0
    for x in range(lo, hi + 1):
        lp = _hypergeom_logpmf(x, n1, n2, m)
        if lp <= observed + 1e-7:
            total += math.exp(lp)
    return min(1.0, total)


def compare_rates(a: Rate, b: Rate) -> Comparison:
    """Difference of two proportions: Newcombe interval, z test (Fisher when counts are small)."""
    if a.n == 0 or b.n == 0 or a.rate is None or b.rate is None:
        return Comparison(a, b, None, None, None, None, "none")
    diff = a.rate - b.rate
    assert a.low is not None and a.high is not None and b.low is not None and b.high is not None
    low = diff - math.sqrt((a.rate - a.low) ** 2 + (b.high - b.rate) ** 2)
    high = diff + math.sqrt((a.high - a.rate) ** 2 + (b.rate - b.low) ** 2)
    pooled = (a.k + b.k) / (a.n + b.n)
    expected = min(pooled * a.n, (1 - pooled) * a.n, pooled * b.n, (1 - pooled) * b.n)
    if expected < 5:
        return Comparison(a, b, diff, low, high, fisher_exact(a.k, a.n, b.k, b.n), "fisher")
    se = math.sqrt(pooled * (1 - pooled) * (1 / a.n + 1 / b.n))
    p = two_sided_p(diff / se) if se > 0 else 1.0
    return Comparison(a, b, diff, low, high, p, "z")


@dataclass(frozen=True)
class ClusterSums:
    """Per-group sums over sessions for a ratio of failures to calls.

    ``n`` sessions; ``c`` calls and ``f`` failures summed; ``cc``, ``ff``, ``cf`` the
    sums of squares and cross products, all one SQL ``SUM`` each.
    """

    n: int
    c: float
    f: float
    cc: float
    ff: float
    cf: float


def cluster_rate(s: ClusterSums) -> tuple[Rate, float | None]:
    """The pooled failure rate and its cluster-robust standard error (sessions as clusters).

    Var(p) = n/(n-1) * sum_i (f_i - p c_i)^2 / C^2, expanded into the sums SQL gives.
    """
    rate = wilson(round(s.f), round(s.c))
    if s.n < 2 or s.c <= 0:
        return rate, None
    p = s.f / s.c
    resid = max(0.0, s.ff - 2 * p * s.cf + p * p * s.cc)
    var = s.n / (s.n - 1) * resid / (s.c * s.c)
    return rate, math.sqrt(var)


def compare_clustered(a: ClusterSums, b: ClusterSums) -> Comparison:
    """Difference of two pooled rates with cluster-robust errors: a z test that does not
    pretend a long session's many calls are independent observations."""
    ra, sea = cluster_rate(a)
    rb, seb = cluster_rate(b)
    if ra.rate is None or rb.rate is None or sea is None or seb is None:
        return Comparison(ra, rb, None, None, None, None, "none")
    diff = ra.rate - rb.rate
    se = math.sqrt(sea * sea + seb * seb)
    if se == 0:
        return Comparison(ra, rb, diff, diff, diff, 1.0 if diff == 0 else 0.0, "cluster-z")
    return Comparison(
        ra, rb, diff, diff - Z95 * se, diff + Z95 * se, two_sided_p(diff / se), "cluster-z"
    )


def mantel_haenszel(tables: Sequence[tuple[int, int, int, int]]) -> OddsRatio:
    """Common odds ratio over 2x2 strata ``(a, b, c, d)`` = (fail, ok) in group 1, group 2.

    Used to compare per-tool error rates between session-length buckets without the
    comparison being driven by which tools each bucket happens to use.
    """
    rows = [(a, b, c, d, a + b + c + d) for a, b, c, d in tables if a + b > 0 and c + d > 0]
    if not rows:
        return OddsRatio(None, None, None, None, 0.0, 0, "mantel-haenszel")
    r_sum = sum(a * d / t for a, b, c, d, t in rows)
    s_sum = sum(b * c / t for a, b, c, d, t in rows)
    # Mantel-Haenszel chi-square (no continuity correction).
    num = sum(a - (a + b) * (a + c) / t for a, b, c, d, t in rows)
    var = sum(
        (a + b) * (c + d) * (a + c) * (b + d) / (t * t * (t - 1)) for a, b, c, d, t in rows if t > 1
    )
    p = two_sided_p(num / math.sqrt(var)) if var > 0 else None
    if r_sum == 0 or s_sum == 0:  # a zero odds ratio (or infinite): no interval, the test stands
        orr = 0.0 if r_sum == 0 and s_sum > 0 else None
        return OddsRatio(orr, None, None, p, num, len(rows), "mantel-haenszel")
    orr = r_sum / s_sum
    # Robins-Breslow-Greenland variance of log OR.
    pr = sum((a + d) / t * a * d / t for a, b, c, d, t in rows)
    ps = sum(((a + d) / t * b * c / t + (b + c) / t * a * d / t) for a, b, c, d, t in rows)
    qs = sum((b + c) / t * b * c / t for a, b, c, d, t in rows)
    v = pr / (2 * r_sum**2) + ps / (2 * r_sum * s_sum) + qs / (2 * s_sum**2)
    se = math.sqrt(v)
    low, high = orr * math.exp(-Z95 * se), orr * math.exp(Z95 * se)
    return OddsRatio(orr, low, high, p, num, len(rows), "mantel-haenszel")


# -- means ---------------------------------------------------------------------------


def mean_from_sums(n: int, total: float, squares: float) -> Mean:
    """Mean with a Student t interval from ``n``, the sum and the sum of squares."""
    if n <= 0:
        return Mean(0, None, None, None, None)
    mean = total / n
    if n < 2:
        return Mean(n, mean, None, None, None)
    var = max(0.0, (squares - n * mean * mean) / (n - 1))
    sd = math.sqrt(var)
    half = t_quantile(0.975, n - 1) * sd / math.sqrt(n)
    return Mean(n, mean, mean - half, mean + half, sd)


def welch(a: Mean, b: Mean) -> tuple[float | None, float | None, float | None, float | None]:
    """Welch's test of ``a.mean - b.mean``: ``(diff, low, high, p_value)``."""
    if a.mean is None or b.mean is None or a.sd is None or b.sd is None:
        return None, None, None, None
    diff = a.mean - b.mean
    va, vb = a.sd**2 / a.n, b.sd**2 / b.n
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff, diff, 1.0 if diff == 0 else 0.0
    df = (va + vb) ** 2 / (va * va / (a.n - 1) + vb * vb / (b.n - 1))
    t = diff / se
    half = t_quantile(0.975, df) * se
    return diff, diff - half, diff + half, min(1.0, 2 * t_sf(abs(t), df))


def quantile_from_histogram(hist: Sequence[tuple[float, int]], q: float) -> float | None:
    """The ``q`` quantile of values given as ``(value, count)`` pairs, interpolated
    between order statistics as NumPy's default does (median of 0, 1 is 0.5)."""
    items = sorted((float(v), int(c)) for v, c in hist if c > 0)
    total = sum(c for _, c in items)
    if total == 0:
        return None
    target = q * (total - 1)
    lo_index, frac = math.floor(target), target - math.floor(target)

    def value_at(index: int) -> float:
        seen = 0
        for value, count in items:
            seen += count
            if index < seen:
                return value
        return items[-1][0]

    low = value_at(lo_index)
    if frac == 0:
        return low
    return low + (value_at(lo_index + 1) - low) * frac


# -- trends --------------------------------------------------------------------------


def wls_slope(points: Sequence[tuple[float, int, int]]) -> Slope | None:
    """Trend of a rate over ``x`` from ``(x, failures, calls)`` points.

    Weighted least squares of ``failures/calls`` on ``x`` with weights ``calls`` (the
    linear-probability model, so the slope reads as "points per turn"). Its variance
    is the binomial one under no trend, ``p(1-p)/Sxx``, inflated by the quasi-binomial
    dispersion (weighted residual variance over ``p(1-p)``) when the points scatter
    more than binomial noise allows, as they do when sessions differ. The interval
    and p-value use t with ``points - 2`` degrees of freedom. None when fewer than
    three points have calls, or there is no variation to fit.
    """
    pts = [(float(x), int(k), int(n)) for x, k, n in points if n > 0]
    if len(pts) < 3:
        return None
    w = sum(n for _, _, n in pts)
    k_total = sum(k for _, k, _ in pts)
    p = k_total / w
    xbar = sum(n * x for x, _, n in pts) / w
    sxx = sum(n * (x - xbar) ** 2 for x, _, n in pts)
    if sxx <= 0 or p in (0.0, 1.0):
        return None
    ybar = p
    sxy = sum(n * (x - xbar) * (k / n - ybar) for x, k, n in pts)
    slope = sxy / sxx
    intercept = ybar - slope * xbar
    df = len(pts) - 2
    rss = sum(n * (k / n - intercept - slope * x) ** 2 for x, k, n in pts)
    dispersion = max(1.0, (rss / df) / (p * (1 - p))) if df > 0 else 1.0
    se = math.sqrt(dispersion * p * (1 - p) / sxx)
    tq = t_quantile(0.975, df)
    pval = min(1.0, 2 * t_sf(abs(slope / se), df)) if se > 0 else 1.0
    return Slope(slope, slope - tq * se, slope + tq * se, pval, dispersion, len(pts), w)


# -- diversity -----------------------------------------------------------------------


def shannon_entropy(counts: Sequence[int]) -> float:
    """Shannon entropy in nats of a count vector (0 for one category or none).

    SQL computes the same as ``ln(N) - sum(c ln c) / N`` per session.
    """
    total = sum(c for c in counts if c > 0)
    if total == 0:
        return 0.0
    return -sum(c / total * math.log(c / total) for c in counts if c > 0)
