"""A claim's typed evidence and what a claim refuses, as `make mutation` asks: ``Claim.evidence`` must
be a record class that reads the chapter's values, ``Claim.judge`` hands the rule that record (read
before the rule runs) or the values themselves, and every refusal names the claim and what is wrong
in the words a chapter author sees."""
from dataclasses import dataclass
from typing import ClassVar

import pytest

from lowrank.experiments.shared.record import EvidenceTypeError, Record, value
from lowrank.experiments.verdicts import (CONTRADICTED, INCONCLUSIVE, PRETRAINED, REPRODUCED, Claim, Judgement,
                                          MissingEvidence)


@dataclass(frozen=True)
class _X(Record):
    PREFIX: ClassVar[str] = "ch05_"
    x: float
    runs: int = 3


def _typed(e: _X) -> Judgement:
    """Reproduced when x is positive, contradicted otherwise."""
    assert isinstance(e, _X), f"the rule was handed {type(e).__name__}, not its record"
    return Judgement(REPRODUCED if e.x > 0 else CONTRADICTED, f"x = {e.x} over {e.runs} runs")


def _plain(h) -> Judgement:
    """Reproduced when the values hold x."""
    assert isinstance(h, dict), f"the rule was handed {type(h).__name__}, not the values"
    return Judgement(REPRODUCED, f"x = {h['ch05_x']}") if "ch05_x" in h else Judgement(INCONCLUSIVE, "none", "no x")


def test_judge_hands_the_rule_its_record_read_from_the_chapters_values():
    c = Claim("x-positive", "p", "05", "s", "x is positive", _typed, evidence=_X)
    assert c.evidence is _X
    j = c.judge({"ch05_x": 2, "ch05_runs": 5, "ch06_other": "ignored"})
    assert (j.verdict, j.evidence) == (REPRODUCED, "x = 2.0 over 5 runs")
    assert c.judge({"ch05_x": -1}).evidence == "x = -1.0 over 3 runs"       # a field's default
    assert c.judge({"ch05_x": -1}).verdict == CONTRADICTED


def test_a_value_the_record_lacks_is_named_before_the_rule_runs():
    ran = []

    def rule(e: _X) -> Judgement:
        """Reproduced."""
        ran.append(e)
        return Judgement(REPRODUCED, "x")

    c = Claim("x", "p", "05", "s", "X holds", rule, evidence=_X)
    with pytest.raises(MissingEvidence) as info:
        c.judge({"ch05_runs": 4})
    assert info.value.key == "ch05_x" and "run chapter 05 first" in str(info.value) and ran == []
    with pytest.raises(EvidenceTypeError):
        c.judge({"ch05_x": "large"})
    assert ran == []


def test_a_claim_without_a_record_hands_its_rule_the_values():
    c = Claim("x", "p", "05", "s", "X holds", _plain)
    assert c.evidence is None
    assert c.judge({"ch05_x": "abc"}).evidence == "x = abc"
    assert c.judge({}).verdict == INCONCLUSIVE


def test_any_class_with_a_read_method_is_a_record():
    class Halvings:
        def __init__(self, lows):
            self.lows = lows

        @classmethod
        def read(cls, values):
            return cls(tuple(values.get(k, 0) for k in ("ch04_a", "ch04_b")))

    def rule(e: Halvings) -> Judgement:
        """Reproduced when both lower ends are positive."""
        return Judgement(REPRODUCED if all(v > 0 for v in e.lows) else CONTRADICTED, f"lows {e.lows}")

    c = Claim("halvings", "p", "04", "s", "Halving hurts", rule, evidence=Halvings)
    assert c.judge({"ch04_a": 1, "ch04_b": 2}).evidence == "lows (1, 2)"
    assert c.judge({"ch04_a": 1}).verdict == CONTRADICTED


class _NoRead:
    pass


class _ReadNotCallable:
    read = "ch05_x"


@pytest.mark.parametrize("evidence", [_X(1.0), _NoRead, _ReadNotCallable, "ch05_x", {"x": "ch05_x"}],
                         ids=["an instance", "no read", "read not callable", "a key", "a dict"])
def test_evidence_that_is_not_a_record_class_is_refused_in_words(evidence):
    with pytest.raises(ValueError) as info:
        Claim("x", "p", "05", "s", "X holds", _typed, evidence=evidence)
    assert str(info.value) == "claim x: its evidence must be a record class with a read(values) method"


@pytest.mark.parametrize("key", ["a", "x-2", "0x", "ab-cd-9"])
def test_plain_keys_are_accepted(key):
    assert Claim(key, "p", "05", "s", "X", _typed).key == key


@pytest.mark.parametrize("key", ["", "-x", "X", "x_y", "x y", "x.", "é"])
def test_a_key_of_other_characters_is_refused_and_quoted(key):
    with pytest.raises(ValueError) as info:
        Claim(key, "p", "05", "s", "X", _typed)
    assert str(info.value) == f"claim key {key!r}: lower-case letters, digits and '-' only"


@pytest.mark.parametrize("chapter", ["5", "005", "ab", "0x", " 05", "05 "])
def test_a_chapter_is_two_digits(chapter):
    with pytest.raises(ValueError) as info:
        Claim("x", "p", chapter, "s", "X", _typed)
    assert str(info.value) == f"claim x: chapter {chapter!r} is not two digits"


def test_refusals_name_the_claim_and_the_fault():
    with pytest.raises(ValueError) as info:
        Claim("x", "p", "05", "s", "X", _typed, kind="vibes")
    assert str(info.value) == ("claim x: kind 'vibes' is not one of ('proof check', 'simulation', "
                               "'training experiment', 'pretrained model')")
    assert Claim("x", "p", "05", "s", "X", _typed, kind=PRETRAINED).kind == PRETRAINED
    with pytest.raises(ValueError) as info:
        Claim("x", "p", "05", "s", "X", None, untested="  ")
    assert str(info.value) == "claim x: an untested claim says what testing it would take"

    def blank(h):
        """   """

    for rule in (blank, lambda h: None):
        with pytest.raises(ValueError) as info:
            Claim("x", "p", "05", "s", "X", rule)
        assert str(info.value) == "claim x: its rule needs a docstring (the sentence the book prints)"


def test_an_untested_claims_judgement_carries_what_testing_it_would_take_even_with_a_record():
    c = Claim("vit", "p", "07", "", "ViT", None, untested="a GPU and CIFAR-10", evidence=_X)
    j = c.judge({})
    assert (j.qualifier, j.evidence) == ("a GPU and CIFAR-10", "no experiment in this book")
