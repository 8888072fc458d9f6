import pytest

from lowrank.experiments.verdicts import (CONDITIONAL, CORRECTED, INCONCLUSIVE, KINDS, NEGLIGIBLE, NOT_TESTED, REPRODUCED,
                                          VERDICT_MEANING, VERDICTS, WEAKER, Claim, Judgement, MissingEvidence,
                                          need)


def _rule(h):
    """Reproduced when x is positive, else inconclusive.

    Further detail that the table does not print."""
    return Judgement(REPRODUCED, f"x = {need(h, 'ch09_x')}") if need(h, "ch09_x") > 0 else \
        Judgement(INCONCLUSIVE, "x = 0", "an effect of 1")


def test_eight_verdicts_in_order_each_with_one_meaning():
    assert VERDICTS[0] == REPRODUCED and VERDICTS[-1] == NOT_TESTED and len(VERDICTS) == 8
    assert set(VERDICT_MEANING) == set(VERDICTS) and len(set(VERDICT_MEANING.values())) == 8
    # "no effect larger than the margin" is a statement about a powered experiment, not a lack of power
    assert NEGLIGIBLE != INCONCLUSIVE and "power" in VERDICT_MEANING[NEGLIGIBLE]
    # a correction that sharpens a claim is its own verdict, never a weakening
    assert CORRECTED != WEAKER and "not a weakening" in VERDICT_MEANING[CORRECTED]


@pytest.mark.parametrize("verdict", [CORRECTED, WEAKER, CONDITIONAL, NEGLIGIBLE, INCONCLUSIVE, NOT_TESTED])
def test_qualified_verdicts_need_their_qualifier(verdict):
    with pytest.raises(ValueError, match="needs a qualifier"):
        Judgement(verdict, "some evidence")
    assert Judgement(verdict, "e", "q").label == f"{verdict}: q"


def test_unknown_verdict_and_empty_evidence_are_refused():
    with pytest.raises(ValueError, match="unknown verdict"):
        Judgement("not reproduced at this scale", "e")
    with pytest.raises(ValueError, match="evidence"):
        Judgement(REPRODUCED, " ")


def test_claim_prints_the_first_docstring_paragraph_and_judges():
    c = Claim("x-positive", "paper", "09", "sec-x", "x is positive", _rule)
    assert c.rule_sentence == "Reproduced when x is positive, else inconclusive."
    assert c.judge({"ch09_x": 2}).verdict == REPRODUCED
    assert c.judge({"ch09_x": 0}).verdict == INCONCLUSIVE
    with pytest.raises(MissingEvidence, match="ch09_x"):
        c.judge({})


def test_claims_without_a_rule_sentence_or_with_bad_keys_are_refused():
    with pytest.raises(ValueError, match="docstring"):
        Claim("k", "p", "09", "s", "st", lambda h: None)
    with pytest.raises(ValueError, match="key"):
        Claim("Bad Key", "p", "09", "s", "st", _rule)


def test_need_returns_nan_as_a_value_and_names_the_chapter_of_a_missing_key():
    import math

    assert math.isnan(need({"ch05_a": float("nan")}, "ch05_a"))
    with pytest.raises(MissingEvidence, match="chapter 05"):
        need({}, "ch05_a")


def test_is_missing():
    from lowrank.experiments.verdicts import is_missing

    assert is_missing(None) and is_missing(float("nan"))
    assert not is_missing(0.0) and not is_missing(0) and not is_missing("") and not is_missing(float("inf"))


def test_judge_refuses_a_rule_that_returns_no_judgement():
    def bad(h):
        """Returns a verdict string instead of a Judgement."""
        return REPRODUCED

    with pytest.raises(TypeError, match="not a Judgement"):
        Claim("bad", "p", "09", "s", "st", bad).judge({})


def test_label_without_qualifier_and_meanings_for_every_verdict():
    from lowrank.experiments.verdicts import VERDICT_MEANING

    assert Judgement(REPRODUCED, "e").label == REPRODUCED
    assert set(VERDICT_MEANING) == set(VERDICTS) and all(VERDICT_MEANING.values())
    with pytest.raises(ValueError, match="two digits"):
        Claim("k", "p", "9", "s", "st", _rule)


def test_missing_evidence_carries_its_key():
    with pytest.raises(MissingEvidence) as info:
        need({"ch05_a": 1}, "ch05_b")
    assert info.value.key == "ch05_b" and isinstance(info.value, KeyError)


def test_untested_claims_say_what_testing_them_would_take():
    c = Claim("vit", "p", "07", "", "ViT accuracy plateaus", None, kind=KINDS[2], untested="a GPU and CIFAR-10")
    j = c.judge({})
    assert j.verdict == NOT_TESTED and j.qualifier == "a GPU and CIFAR-10" and c.rule_sentence == ""
    with pytest.raises(ValueError, match="what testing it would take"):
        Claim("vit", "p", "07", "", "ViT accuracy plateaus", None)
    with pytest.raises(ValueError, match="kind"):
        Claim("k", "p", "09", "s", "st", _rule, kind="vibes")
