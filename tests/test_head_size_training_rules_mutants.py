"""Chapter 04's training rule on the words and numbers a verdict carries, as `make mutation` asks: a
verdict on two models of unequal size says so without losing its own qualifier or detail, keeps the
measured effects the answers quote, and the evidence prints the change over the last doubling with
its interval. The rule itself (:func:`rules.judge`) judges unpowered unless told otherwise."""
import pytest

from lowrank.experiments.head_size_training import rules as R
from lowrank.experiments.head_size_training.row_record import Arms, RowEvidence
from lowrank.experiments.verdicts import CONTRADICTED, INCONCLUSIVE, REPRODUCED, Effect

NAN = float("nan")
UNEQUAL = ("the two models differ in parameters (1,000 against 2,000, 2.00 times), so the difference is not the head "
           "layout's alone")


def row(val=(0.05, 0.01, 0.09), test=None, *, n=9, params=(NAN, NAN), change=(0.01, -0.01, 0.03), **kw):
    """A row with every run stored at 8,000 steps after 4,000: ``val`` / ``test`` (diff, lo, hi) on
    ``n`` seeds, each split's change over the doubling ``change`` on as many seeds."""
    test = val if test is None else test
    base = dict(arms=Arms("a", "b"), steps=8000, tokens=16_384_000.0, planned=4 * n, stored=4 * n, prev_steps=4000.0,
                param_gap=NAN, plan_sd=0.02, params=params, rates=(NAN, NAN), lr_edge="", lr_stored=0, lr_planned=0,
                effects=(Effect("validation", *val, n), Effect("test", *test, n)),
                changes=(Effect("validation", *change, n), Effect("test", *change, n)))
    return RowEvidence(**{**base, **kw})


def test_an_unqualified_verdict_on_unequal_models_names_them_and_keeps_its_effects():
    ev = row(params=(1000.0, 2000.0))
    j = R.judge(ev, powered=True)
    assert (j.verdict, j.qualifier, j.detail) == (REPRODUCED, UNEQUAL, "")
    assert j.effects == ev.effects and j.effects[0].text == "validation +0.050 nats (+0.010 to +0.090), 9 seeds"
    ev = row((-0.05, -0.09, -0.01), params=(2000.0, 1000.0))
    j = R.judge(ev, powered=True)
    assert j.verdict == CONTRADICTED and j.effects == ev.effects
    assert j.qualifier.startswith("the two models differ in parameters (2,000 against 1,000, 2.00 times)")


def test_a_qualified_verdict_on_unequal_models_adds_them_as_its_detail():
    ev = row((0.05, 0.01, 0.09), (-0.05, -0.09, -0.01), params=(1000.0, 2000.0))
    j = R.judge(ev, powered=True)
    assert j.qualifier == "the validation and test splits do not agree, and the rule needs both"
    assert j.detail == UNEQUAL and j.effects == ev.effects
    assert j.label == f"{INCONCLUSIVE}: the validation and test splits do not agree, and the rule needs both; {UNEQUAL}"


def test_a_verdict_with_a_detail_on_unequal_models_keeps_the_detail_first():
    ev = row((0.05, -0.01, 0.11), params=(1000.0, 2000.0))
    j = R.judge(ev, powered=True)
    assert j.qualifier == "both intervals contain 0 and reach beyond the margin of 0.03 nats"
    assert j.detail == f"the smallest effect this run could detect is 0.060 nats (the larger half-width); {UNEQUAL}"
    assert j.effects == ev.effects


@pytest.mark.parametrize("params", [(1000.0, 1000.0), (NAN, NAN)], ids=["equal", "unknown"])
def test_a_verdict_on_equal_or_unknown_sizes_keeps_its_effects_and_says_nothing_of_them(params):
    ev = row(params=params)
    j = R.judge(ev)
    assert (j.verdict, j.qualifier, j.effects) == (REPRODUCED, "", ev.effects)


def test_the_rule_is_unpowered_unless_told():
    ev = row(n=2)            # two seeds: an interval, but far fewer than the power rule asks
    assert R.judge(ev).verdict == REPRODUCED
    j = R.judge(ev, powered=True)
    assert j.verdict == INCONCLUSIVE and j.qualifier.startswith("judged on 2 seeds where the power rule asks for 9")


def test_the_evidence_prints_each_splits_change_with_its_interval():
    j = R.judge(row(change=(0.01, -0.012, 0.032)))
    assert ("; change over the last doubling from 4,000 steps, validation: +0.010 nats (95% interval -0.012 to "
            "+0.032, 9 seeds); change over the last doubling from 4,000 steps, test: +0.010 nats (95% interval "
            "-0.012 to +0.032, 9 seeds)") in j.evidence
