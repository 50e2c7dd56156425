"""The statistics against published reference values and independent computations."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmstart.analytics.stats import (
    ClusterSums,
    Comparison,
    Mean,
    Rate,
    cluster_rate,
    compare_clustered,
    compare_rates,
    fisher_exact,
    mantel_haenszel,
    mean_from_sums,
    quantile_from_histogram,
    shannon_entropy,
    t_quantile,
    t_sf,
    welch,
    wilson,
    wls_slope,
)


def bounds(r: Rate | Comparison) -> tuple[float, float]:
    """The interval rounded to 4 places, as the papers print it."""
    assert r.low is not None and r.high is not None
    return round(r.low, 4), round(r.high, 4)


def test_wilson_matches_newcombe_1998() -> None:
    # Newcombe, Statistics in Medicine 17:857 (1998), Table I.
    assert bounds(wilson(81, 263)) == (0.2553, 0.3662)
    assert bounds(wilson(0, 10)) == (0.0, 0.2775)
    assert bounds(wilson(1, 29)) == (0.0061, 0.1718)


def test_wilson_without_data_is_none() -> None:
    r = wilson(0, 0)
    assert (r.rate, r.low, r.high) == (None, None, None)


@given(st.integers(0, 10**6), st.integers(1, 10**6))
def test_wilson_interval_holds_the_rate(k: int, n: int) -> None:
    k = min(k, n)
    r = wilson(k, n)
    assert r.low is not None and r.high is not None and r.rate is not None
    assert 0.0 <= r.low <= r.rate <= r.high <= 1.0


def test_newcombe_difference_matches_the_paper() -> None:
    # Newcombe, Statistics in Medicine 17:873 (1998), example (a): 56/70 - 48/80.
    c = compare_rates(wilson(56, 70), wilson(48, 80))
    assert c.diff == pytest.approx(0.2)
    assert bounds(c) == (0.0524, 0.3339)
    assert c.test == "z"


def test_fisher_exact_reference_values() -> None:
    assert fisher_exact(3, 4, 1, 4) == pytest.approx(0.485714, abs=1e-6)  # lady tasting tea
    assert fisher_exact(8, 10, 1, 6) == pytest.approx(0.034965, abs=1e-6)  # SciPy's docs


def test_small_counts_use_fisher() -> None:
    assert compare_rates(wilson(0, 5), wilson(3, 6)).test == "fisher"


def test_t_distribution_reference_values() -> None:
    assert t_quantile(0.975, 1) == pytest.approx(12.7062047, abs=1e-6)
    assert t_quantile(0.975, 10) == pytest.approx(2.2281389, abs=1e-6)
    assert t_quantile(0.975, 28) == pytest.approx(2.0484071, abs=1e-6)
    assert t_quantile(0.025, 5) == pytest.approx(-2.5705818, abs=1e-6)
    assert 2 * t_sf(2.0, 20) == pytest.approx(0.0592655, abs=1e-6)  # R: 2*pt(-2, 20)


def test_welch_matches_the_textbook_example() -> None:
    # Welch's t-test, Wikipedia "Examples", first pair of samples.
    a = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
    b = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]
    ma = mean_from_sums(len(a), sum(a), sum(x * x for x in a))
    mb = mean_from_sums(len(b), sum(b), sum(x * x for x in b))
    diff, low, high, p = welch(ma, mb)
    assert diff is not None and low is not None and high is not None
    assert diff == pytest.approx(statistics.mean(a) - statistics.mean(b))
    assert p == pytest.approx(0.021, abs=0.0005)
    assert low < diff < high < 0


def test_mean_from_sums_agrees_with_statistics() -> None:
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    m = mean_from_sums(len(values), sum(values), sum(v * v for v in values))
    assert m.mean is not None
    assert m.mean == pytest.approx(statistics.mean(values))
    assert m.sd == pytest.approx(statistics.stdev(values))
    half = t_quantile(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    assert (m.low, m.high) == pytest.approx((m.mean - half, m.mean + half))
    assert mean_from_sums(1, 5.0, 25.0) == Mean(1, 5.0, None, None, None)
    assert mean_from_sums(0, 0.0, 0.0).mean is None


def test_single_stratum_mantel_haenszel_is_woolf() -> None:
    a, b, c, d = 10, 90, 20, 80
    res = mantel_haenszel([(a, b, c, d)])
    assert res.odds_ratio is not None
    assert res.odds_ratio == pytest.approx(a * d / (b * c))
    se = math.sqrt(1 / a + 1 / b + 1 / c + 1 / d)
    assert res.low == pytest.approx(res.odds_ratio * math.exp(-1.959964 * se), rel=1e-5)
    assert res.excess < 0 and res.p_value is not None and res.p_value < 0.05


def test_mantel_haenszel_adjusts_for_the_mix_of_strata() -> None:
    # Same odds in each stratum (no effect), very different mixes: the pooled rates
    # differ (Simpson), the stratified odds ratio does not.
    tables = [(1, 99, 10, 990), (500, 500, 50, 50)]
    pooled_a = wilson(501, 1100)
    pooled_b = wilson(60, 1100)
    assert compare_rates(pooled_a, pooled_b).p_value < 1e-6  # type: ignore[operator]
    res = mantel_haenszel(tables)
    assert res.odds_ratio == pytest.approx(1.0)
    assert res.p_value == pytest.approx(1.0)


def test_mantel_haenszel_with_a_zero_cell() -> None:
    res = mantel_haenszel([(0, 50, 20, 30)])
    assert res.odds_ratio == 0.0 and res.low is None and res.excess < 0
    assert res.p_value is not None and res.p_value < 0.001
    assert mantel_haenszel([]).p_value is None


def test_cluster_rate_expands_the_ratio_variance() -> None:
    rng = random.Random(7)
    sessions = [(c, rng.randint(0, c)) for c in (rng.randint(1, 30) for _ in range(40))]
    calls = sum(c for c, _ in sessions)
    fails = sum(f for _, f in sessions)
    p = fails / calls
    n = len(sessions)
    direct = math.sqrt(n / (n - 1) * sum((f - p * c) ** 2 for c, f in sessions) / calls**2)
    sums = ClusterSums(
        n=n,
        c=calls,
        f=fails,
        cc=sum(c * c for c, _ in sessions),
        ff=sum(f * f for _, f in sessions),
        cf=sum(c * f for c, f in sessions),
    )
    rate, se = cluster_rate(sums)
    assert (rate.k, rate.n) == (fails, calls)
    assert se == pytest.approx(direct)


def test_clustered_comparison_is_wider_than_per_call_when_sessions_differ() -> None:
    def sums(sessions: list[tuple[int, int]]) -> ClusterSums:
        return ClusterSums(
            len(sessions),
            sum(c for c, _ in sessions),
            sum(f for _, f in sessions),
            sum(c * c for c, _ in sessions),
            sum(f * f for _, f in sessions),
            sum(c * f for c, f in sessions),
        )

    # Failures concentrated in a few sessions: calls are far from independent.
    a = sums([(50, 25)] * 2 + [(50, 0)] * 8)
    b = sums([(50, 5)] * 10)
    clustered = compare_clustered(a, b)
    per_call = compare_rates(clustered.a, clustered.b)
    assert clustered.diff == pytest.approx(per_call.diff)
    assert clustered.high - clustered.low > per_call.high - per_call.low  # type: ignore[operator]


def test_wls_slope_recovers_a_linear_trend() -> None:
    points = [(t, int(1000 * (0.30 - 0.01 * t)), 1000) for t in range(20)]
    s = wls_slope(points)
    assert s is not None
    assert s.slope == pytest.approx(-0.01, abs=2e-4)
    assert s.high < 0 and s.p_value < 1e-6 and s.points == 20 and s.n == 20_000


def test_wls_slope_without_trend_is_not_significant() -> None:
    rng = random.Random(3)
    points = [(t, sum(rng.random() < 0.1 for _ in range(400)), 400) for t in range(30)]
    s = wls_slope(points)
    assert s is not None and s.low < 0 < s.high and s.p_value > 0.05


def test_wls_slope_needs_points_and_failures() -> None:
    assert wls_slope([(0, 1, 10), (1, 2, 10)]) is None
    assert wls_slope([(0, 0, 10), (1, 0, 10), (2, 0, 10)]) is None
    assert wls_slope([(0, 1, 10), (1, 0, 0), (2, 2, 10)]) is None  # empty turns don't count


def test_entropy_and_quantiles() -> None:
    assert shannon_entropy([5]) == 0.0
    assert shannon_entropy([3, 3]) == pytest.approx(math.log(2))
    assert shannon_entropy([2, 1, 1]) == pytest.approx(1.5 * math.log(2))
    assert shannon_entropy([]) == 0.0
    hist = [(0, 5), (1, 3), (10, 2)]
    values = [0] * 5 + [1] * 3 + [10] * 2
    assert quantile_from_histogram(hist, 0.5) == statistics.median(values) == 0.5
    assert quantile_from_histogram(hist, 0.9) == 10.0
    assert quantile_from_histogram([(7, 1)], 0.5) == 7.0
    assert quantile_from_histogram([], 0.5) is None
