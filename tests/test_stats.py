import math

import numpy as np
import pytest

from lowrank.measure.stats import MIN_BOOTSTRAP, bootstrap_interval, mean_se, paired_difference, t_interval


def test_one_value_has_no_standard_error_or_interval():
    m, se, n = mean_se([3.0])
    assert (m, n) == (3.0, 1) and math.isnan(se)
    e = t_interval([3.0])
    assert math.isnan(e.lo) and math.isnan(e.hi)
    assert "no interval" in e.text()


def test_t_interval_matches_hand_value():
    e = t_interval([1.0, 2.0, 3.0])  # mean 2, se 1/sqrt(3), t(0.975, 2) = 4.302653
    assert e.mean == 2.0
    assert e.hi - e.mean == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)


def test_paired_difference_is_tighter_than_unpaired_when_seeds_share_noise():
    rng = np.random.default_rng(0)
    seed_effect = rng.normal(0, 1.0, 8)
    a, b = seed_effect + 0.1 + rng.normal(0, 0.01, 8), seed_effect + rng.normal(0, 0.01, 8)
    paired = paired_difference(a, b)
    assert paired.lo > 0  # the 0.1 effect is found once seeds are paired
    unpaired_se = math.hypot(mean_se(a)[1], mean_se(b)[1])
    assert paired.se < unpaired_se / 10


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="equal lengths"):
        paired_difference([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="not finite"):
        mean_se([1.0, float("nan")])
    with pytest.raises(ValueError, match="no values"):
        mean_se([])
    with pytest.raises(ValueError, match="at least"):
        bootstrap_interval([1.0, 2.0], n_boot=MIN_BOOTSTRAP - 1)


def test_bootstrap_interval_covers_the_mean():
    x = np.random.default_rng(1).normal(5.0, 1.0, 200)
    e = bootstrap_interval(x)
    assert e.lo < 5.0 < e.hi and e.hi - e.lo < 0.5
