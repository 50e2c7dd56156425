"""Bootstrap intervals and a paired test, in plain numpy.

Evaluations here compare small samples (tens of tasks, a few trials each), where a
normal approximation is a guess; so intervals are percentile bootstraps and the paired
test is an exact (or Monte Carlo) sign-flip permutation test. Both resample *groups*
when given them: trials of one task are correlated, and treating them as independent
would make intervals too narrow. scipy is not a dependency, hence numpy only.

Every estimate here is a ratio of sums (a mean is ``sum(values) / count``), which lets
one vectorised routine serve means, shares and pooled rates alike.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 2000
EXACT_LIMIT = 16
"""Pairs up to which the sign-flip test enumerates all 2**n assignments."""


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap interval; all None when there is no data."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int
    groups: int

    def as_dict(self) -> dict[str, float | int | None]:
        """Plain JSON-able form."""
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "groups": self.groups,
        }


@dataclass(frozen=True)
class PairedResult:
    """A paired comparison of ``b`` against ``a``: mean of ``b - a``, its interval, a p-value."""

    n: int
    difference: Interval
    p_value: float | None
    method: str

    def as_dict(self) -> dict[str, object]:
        """Plain JSON-able form."""
        return {
            "n": self.n,
            "difference": self.difference.as_dict(),
            "p_value": self.p_value,
            "method": self.method,
        }


def _group_sums(
    numerators: Sequence[float],
    denominators: Sequence[float],
    groups: Sequence[Hashable] | None,
) -> tuple[np.ndarray, np.ndarray]:
    num = np.asarray(numerators, dtype=np.float64)
    den = np.asarray(denominators, dtype=np.float64)
    if num.shape != den.shape:
        raise ValueError("numerators and denominators differ in length")
    if groups is None:
        return num, den
    if len(groups) != len(num):
        raise ValueError("groups and values differ in length")
    index: dict[Hashable, int] = {}
    ids = np.array([index.setdefault(g, len(index)) for g in groups], dtype=np.int64)
    return (
        np.bincount(ids, weights=num, minlength=len(index)),
        np.bincount(ids, weights=den, minlength=len(index)),
    )


def ratio_interval(
    numerators: Sequence[float],
    denominators: Sequence[float],
    groups: Sequence[Hashable] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """``sum(numerators) / sum(denominators)`` with a percentile bootstrap interval.

    Resampling draws whole groups with replacement (each item is its own group when
    ``groups`` is None). Resamples whose denominator is zero are left out. With no data,
    or a zero denominator, every field is None.
    """
    num, den = _group_sums(numerators, denominators, groups)
    n = len(numerators)
    total = float(den.sum())
    if n == 0 or total == 0:
        return Interval(None, None, None, n, len(num))
    estimate = float(num.sum()) / total
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(num), size=(resamples, len(num)))
    res_num = num[picks].sum(axis=1)
    res_den = den[picks].sum(axis=1)
    valid = res_den > 0
    ratios = res_num[valid] / res_den[valid]
    if ratios.size == 0:
        return Interval(estimate, None, None, n, len(num))
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    return Interval(estimate, float(low), float(high), n, len(num))


def mean_interval(
    values: Sequence[float | None],
    groups: Sequence[Hashable] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """The mean of the values that are not None, with a (grouped) bootstrap interval."""
    keep = [i for i, v in enumerate(values) if v is not None]
    nums = [float(values[i]) for i in keep]  # type: ignore[arg-type]
    kept_groups = None if groups is None else [groups[i] for i in keep]
    return ratio_interval(
        nums,
        [1.0] * len(nums),
        kept_groups,
        resamples=resamples,
        confidence=confidence,
        seed=seed,
    )


def _sign_flip_p(d: np.ndarray, resamples: int, seed: int) -> tuple[float, str]:
    """Two-sided p-value of the mean difference under random sign flips."""
    n = len(d)
    observed = abs(float(d.mean()))
    tolerance = 1e-12 * max(1.0, observed)
    if not np.any(d):
        return 1.0, "sign-flip (all differences zero)"
    if n <= EXACT_LIMIT:
        codes = np.arange(2**n, dtype=np.int64)[:, None]
        signs = 1.0 - 2.0 * ((codes >> np.arange(n, dtype=np.int64)) & 1)
        means = np.abs(signs @ d) / n
        return float(np.mean(means >= observed - tolerance)), "exact sign-flip permutation"
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(resamples, n))
    means = np.abs(signs @ d) / n
    hits = int(np.sum(means >= observed - tolerance))
    return (hits + 1) / (resamples + 1), f"sign-flip permutation ({resamples} random flips)"


def paired_test(
    a: Sequence[float | None],
    b: Sequence[float | None],
    groups: Sequence[Hashable] | None = None,
    *,
    resamples: int = 20_000,
    interval_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedResult:
    """Compare paired observations: is ``b`` (e.g. warm) different from ``a`` (cold)?

    Pairs with a None on either side are dropped. The p-value is two-sided, from a
    sign-flip permutation test on the mean difference: exact for up to
    :data:`EXACT_LIMIT` pairs, Monte Carlo with ``resamples`` flips above (the p-value
    then never reaches zero). The interval is a (grouped) bootstrap of the mean of
    ``b - a``. Under "no effect" each pair's two runs are exchangeable, so flipping
    each pair's sign is valid even when pairs of one task are correlated.
    """
    if len(a) != len(b):
        raise ValueError("paired samples differ in length")
    keep = [i for i in range(len(a)) if a[i] is not None and b[i] is not None]
    diffs = np.array([float(b[i]) - float(a[i]) for i in keep], dtype=np.float64)  # type: ignore[arg-type]
    kept_groups = None if groups is None else [groups[i] for i in keep]
    interval = ratio_interval(
        diffs.tolist(),
        [1.0] * len(diffs),
        kept_groups,
        resamples=interval_resamples,
        confidence=confidence,
        seed=seed,
    )
    if len(diffs) == 0:
        return PairedResult(0, interval, None, "no complete pairs")
    p, method = _sign_flip_p(diffs, resamples, seed)
    return PairedResult(len(diffs), interval, p, method)


def fmt_interval(interval: Interval, digits: int = 3, percent: bool = False) -> str:
    """``0.512 [0.401, 0.630]`` (or ``-`` with no data), for tables."""
    if interval.estimate is None:
        return "-"
    scale = 100.0 if percent else 1.0
    suffix = "%" if percent else ""

    def one(x: float | None) -> str:
        if x is None or math.isnan(x):
            return "?"
        if percent:
            return f"{x * scale:.1f}{suffix}"
        if abs(x) >= 10**digits:
            return f"{x:.0f}"
        return f"{x:.{digits}g}"

    if interval.low is None:
        return one(interval.estimate)
    return f"{one(interval.estimate)} [{one(interval.low)}, {one(interval.high)}]"
