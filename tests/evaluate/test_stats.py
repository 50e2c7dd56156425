"""Bootstrap intervals and the paired sign-flip test, against cases worked by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warmstart.evaluate.stats import (
    Interval,
    fmt_interval,
    mean_interval,
    paired_test,
    ratio_interval,
)


def test_ratio_is_pooled_and_interval_brackets_it() -> None:
    found = ratio_interval([1, 0, 3, 2], [2, 1, 4, 2], resamples=500, seed=1)
    assert found.estimate == pytest.approx(6 / 9)
    assert found.low is not None and found.high is not None
    assert found.low <= found.estimate <= found.high
    assert (found.n, found.groups) == (4, 4)


def test_groups_are_resampled_whole() -> None:
    # two groups, each internally constant: a resample can only mix whole groups,
    # so every resampled mean is 0, 1/2 or 1 and the interval ends are among them
    values = [0.0] * 5 + [1.0] * 5
    grouped = mean_interval(values, ["a"] * 5 + ["b"] * 5, resamples=400, seed=3)
    assert grouped.groups == 2 and grouped.estimate == 0.5
    assert {grouped.low, grouped.high} <= {0.0, 0.5, 1.0}
    assert (grouped.low, grouped.high) == (0.0, 1.0)
    loose = mean_interval(values, resamples=400, seed=3)
    assert loose.low is not None and loose.low > 0.0  # ten independent items: narrower


def test_no_data_and_none_values() -> None:
    assert ratio_interval([], []) == Interval(None, None, None, 0, 0)
    assert ratio_interval([1.0], [0.0]).estimate is None
    kept = mean_interval([None, 2.0, None, 4.0], ["x", "x", "y", "y"], resamples=100)
    assert kept.estimate == 3.0 and kept.n == 2


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=30), st.integers(0, 10_000))
def test_interval_contains_the_mean(values: list[float], seed: int) -> None:
    found = mean_interval(values, resamples=200, seed=seed)
    assert found.estimate is not None and found.low is not None and found.high is not None
    slack = 1e-9 * max(1.0, max(abs(v) for v in values))
    assert found.low - slack <= found.estimate <= found.high + slack


def test_paired_exact_p_values() -> None:
    # four pairs all improving by the same amount: only the all-minus and all-plus
    # sign patterns are as extreme, so p = 2 / 2**4
    same = paired_test([1, 1, 1, 1], [0, 0, 0, 0])
    assert same.p_value == pytest.approx(0.125) and same.method.startswith("exact")
    assert same.difference.estimate == -1.0
    # by brute force for a mixed case
    d = np.array([2.0, -1.0, 3.0, 0.5, -0.5])
    extreme = sum(
        abs(np.mean(d * np.array(signs))) >= abs(d.mean()) - 1e-12
        for signs in itertools.product([-1, 1], repeat=5)
    )
    mixed = paired_test([0.0] * 5, d.tolist())
    assert mixed.p_value == pytest.approx(extreme / 32)
    assert paired_test([1, 2], [1, 2]).p_value == 1.0


def test_paired_drops_incomplete_pairs_and_goes_monte_carlo() -> None:
    result = paired_test([1.0, None, 3.0], [2.0, 5.0, None])
    assert result.n == 1 and result.difference.estimate == 1.0
    many = paired_test([0.0] * 40, [1.0] * 40, resamples=2000, seed=0)
    assert many.method.startswith("sign-flip permutation (2000")
    assert many.p_value == pytest.approx(1 / 2001)  # never exactly zero
    assert paired_test([], []).p_value is None
    with pytest.raises(ValueError):
        paired_test([1.0], [])


def test_formatting() -> None:
    assert fmt_interval(Interval(0.5, 0.25, 0.75, 4, 4)) == "0.5 [0.25, 0.75]"
    assert fmt_interval(Interval(12345.6, 12000.0, 13000.0, 4, 4)) == "12346 [12000, 13000]"
    assert fmt_interval(Interval(None, None, None, 0, 0)) == "-"
