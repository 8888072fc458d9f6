"""The verdict layer's small helpers at their edges, as `make mutation` asks: the one-line reason of
a verdict card, numbers as a headline record carries them, and what a judgement or a claim refuses."""
import math

import numpy as np
import pytest

from lowrank.experiments.verdicts import (CONTRADICTED, INCONCLUSIVE, REPRODUCED, Claim, Judgement, one_line_reason,
                                          plain_number, upper_end)


def test_a_cards_reason_is_the_qualifier_else_holds_as_stated_else_the_evidence():
    assert one_line_reason(CONTRADICTED, "the rank keeps growing; at every n", "r = 5") == \
        "the rank keeps growing; at every n"
    assert one_line_reason(REPRODUCED, "", "r = 5") == "holds as stated"
    assert one_line_reason(INCONCLUSIVE, "", "r = 5") == "r = 5"


def test_a_number_that_is_not_finite_is_carried_as_none_and_read_back_as_an_open_end():
    assert plain_number(2) == 2.0 and type(plain_number(2)) is float and type(plain_number(np.float32(0.5))) is float
    assert plain_number(math.inf) is None and plain_number(-math.inf) is None and plain_number(math.nan) is None
    assert upper_end(None) == math.inf and upper_end(3) == 3.0 and type(upper_end(3)) is float
    assert upper_end(plain_number(math.inf)) == math.inf and upper_end(plain_number(0.25)) == 0.25


def test_a_judgement_refuses_a_detail_without_its_qualifier_and_waiting_unless_inconclusive():
    with pytest.raises(ValueError, match="^a detail needs the qualifier it explains$"):
        Judgement(REPRODUCED, "r = 5", detail="at n = 64")
    with pytest.raises(ValueError, match="^only an inconclusive verdict awaits data, not 'reproduced'$"):
        Judgement(REPRODUCED, "r = 5", awaits="learning rates")
    assert Judgement(INCONCLUSIVE, "r = 5", qualifier="too few seeds", awaits="learning rates").awaits


def _rule(h):
    """Reproduced."""
    return Judgement(REPRODUCED, "x")


def test_a_claims_measure_must_be_a_function():
    with pytest.raises(ValueError, match="^claim x: its measure is a int, not a function$"):
        Claim("x", "p", "05", "s", "X holds", _rule, measure=3)
    assert Claim("x", "p", "05", "s", "X holds", _rule, measure=len).measure is len
