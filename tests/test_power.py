"""The shared power rule: the seeds a paired t interval needs to reach a margin."""
import math

import pytest

from lowrank.experiments.shared.intervals import t_quantile
from lowrank.experiments.shared.power import seeds_for_margin


def half_width(sd, n):
    return t_quantile(0.975, n - 1) * sd / math.sqrt(n)


@pytest.mark.parametrize("sd", [0.01, 0.02, 0.0385, 0.05])
def test_the_seeds_reach_the_margin_and_one_fewer_does_not(sd):
    n = seeds_for_margin(sd, 0.03, least=2, most=64)
    assert half_width(sd, n) <= 0.03
    if n > 2:
        assert half_width(sd, n - 1) > 0.03


def test_the_bounds_hold_and_a_missing_spread_asks_for_the_least():
    assert seeds_for_margin(float("nan"), 0.03, least=9, most=16) == 9
    assert seeds_for_margin(1e-6, 0.03, least=9, most=16) == 9
    assert seeds_for_margin(10.0, 0.03, least=9, most=16) == 16


def test_a_higher_level_asks_for_more_seeds():
    assert seeds_for_margin(0.04, 0.03, level=0.99, most=64) > seeds_for_margin(0.04, 0.03, level=0.95, most=64)


@pytest.mark.parametrize("kwargs", [dict(least=1), dict(least=10, most=9)])
def test_bounds_that_cannot_hold_are_refused(kwargs):
    with pytest.raises(ValueError, match="least"):
        seeds_for_margin(0.03, 0.03, **kwargs)


def test_a_margin_must_be_positive():
    with pytest.raises(ValueError, match="margin"):
        seeds_for_margin(0.03, 0.0)


def test_by_default_between_2_and_16_seeds():
    assert seeds_for_margin(float("nan"), 0.03) == 2
    assert seeds_for_margin(1e-6, 0.03) == 2
    assert seeds_for_margin(10.0, 0.03) == 16


def test_equal_bounds_fix_the_count():
    assert seeds_for_margin(10.0, 0.03, least=9, most=9) == 9
    assert seeds_for_margin(1e-6, 0.03, least=9, most=9) == 9


def test_chapter_04_asks_its_first_seeds_when_the_spread_is_missing():
    from lowrank.experiments.head_size_training.rules import POWER_SEEDS, required_seeds

    assert required_seeds(None) == required_seeds(float("nan")) == POWER_SEEDS
