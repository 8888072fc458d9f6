"""Quantiles and intervals shared by the chapters (lowrank.experiments.shared.intervals)."""
import math

import numpy as np
import pytest

from lowrank.experiments.shared.intervals import t_lower_bound, t_quantile, wilson_interval, z_quantile


def test_quantiles_are_the_textbook_values():
    assert z_quantile(0.975) == pytest.approx(1.959964, abs=1e-6)
    assert t_quantile(0.95, 4) == pytest.approx(2.131847, abs=1e-6)
    assert t_quantile(0.95, 10_000) == pytest.approx(z_quantile(0.95), abs=1e-3)


def test_wilson_interval_never_collapses_and_stays_in_the_unit_interval():
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)  # k = 0 still gets an upper end
    lo, hi = wilson_interval(10, 10)
    assert hi == pytest.approx(1.0) and lo == pytest.approx(0.7225, abs=1e-4)
    lo, hi = wilson_interval(5, 10)
    assert lo < 0.5 < hi and lo + hi == pytest.approx(1.0)
    assert wilson_interval(5, 10, 0.99)[0] < lo
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


def test_t_lower_bound_is_below_the_mean_unless_there_is_no_spread():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    se = x.std(ddof=1) / 2
    assert t_lower_bound(x) == pytest.approx(2.5 - t_quantile(0.95, 3) * se)
    assert t_lower_bound(x, 0.99) < t_lower_bound(x)
    assert t_lower_bound(np.array([0.7, 0.7, 0.7])) == pytest.approx(0.7)
    assert t_lower_bound(np.array([0.3])) == 0.3
