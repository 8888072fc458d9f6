"""Chapter 04's row evidence as a typed record: it travels as plain values and comes back equal."""
import json
import math

import pytest

from lowrank.experiments.head_size_training.row_record import FIELDS, Arms, RowEvidence
from lowrank.experiments.verdicts import Effect, MissingEvidence

NAN = float("nan")
P = "ch04_rule_budget_gap_"


def record(**kw):
    base = dict(arms=Arms("standard (d_h = 2)", "fixed (d_p = 16)", "h = 32"), steps=8000, tokens=16384000.0,
                planned=36, stored=36, prev_steps=4000.0, param_gap=1.37, plan_sd=0.02, params=(169728.0, 401792.0),
                rates=(0.01, 0.005), lr_edge="", lr_stored=18, lr_planned=18,
                effects=(Effect("validation", 0.07, 0.05, 0.09, 9), Effect("test", 0.06, 0.04, 0.08, 9)),
                changes=(Effect("validation", 0.01, -0.01, 0.03, 9), Effect("test", 0.0, -0.02, 0.02, 9)))
    return RowEvidence(**{**base, **kw})


def same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_a_record_survives_plain_values_and_json():
    r = record()
    values = json.loads(json.dumps(r.values(P)))
    assert set(values) == {P + f for f in FIELDS}
    assert RowEvidence.read(values, P) == r


def test_a_row_at_one_budget_keeps_its_unknowns():
    one = record(prev_steps=NAN, params=(NAN, NAN), rates=(NAN, NAN),
                 changes=(Effect("validation", NAN, NAN, NAN, 0), Effect("test", NAN, NAN, NAN, 0)))
    back = RowEvidence.read(one.values(P), P)
    assert all(same(x, y) for x, y in zip(back.params + back.rates, one.params + one.rates))
    assert math.isnan(back.prev_steps) and [c.seeds for c in back.changes] == [0, 0]


def test_the_arms_say_what_the_row_measures():
    assert record().arms.what == "at h = 32, standard (d_h = 2) minus fixed (d_p = 16) loss"
    assert Arms("a", "b").what == "a minus b loss"


@pytest.mark.parametrize("field", ["arm_a", "steps", "stored", "plan_sd", "test_hi", "val_change_n"])
def test_a_missing_value_the_rule_needs_is_named(field):
    values = record().values(P)
    del values[P + field]
    with pytest.raises(MissingEvidence) as e:
        RowEvidence.read(values, P)
    assert e.value.key == P + field


def test_optional_values_default_to_unknown_and_none():
    values = {k: v for k, v in record().values(P).items()
              if not k.endswith(("_lr_a", "_lr_b", "_params_a", "_params_b", "_lr_stored", "_lr_planned", "_lr_edge",
                                 "_arm_shared", "_param_gap"))}
    r = RowEvidence.read(values, P)
    assert all(math.isnan(x) for x in r.params + r.rates + (r.param_gap,))
    assert (r.lr_stored, r.lr_planned, r.lr_edge, r.arms.shared) == (0, 0, "", "")
