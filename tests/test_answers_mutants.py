"""The answers' words where `make mutation` found them untested: several weaker forms or conditions
of one paper are each quoted, and a claim not judged yet whose row does not say its chapter is put
on its chapters in general."""
from types import SimpleNamespace

from lowrank.experiments import answers as A
from lowrank.experiments.synthesis import NOT_JUDGED, Row
from lowrank.experiments.verdicts import BHOJANAPALLI, CONDITIONAL, PAPERS, REPRODUCED, SIMULATION, WEAKER

PAPER = {p.name: p for p in PAPERS}[BHOJANAPALLI]


def claim(verdict, *, qualifier="", statement="x holds", chapter="02"):
    return Row(chapter, "02_x", "s", BHOJANAPALLI, statement, "e", verdict, qualifier, "default", "r", kind=SIMULATION)


def test_two_weaker_forms_and_two_conditions_are_each_quoted():
    rows = [claim(WEAKER, qualifier="only on average.", statement="x holds always."),
            claim(WEAKER, qualifier="only for n < 64", statement="y holds"),
            claim(CONDITIONAL, qualifier="with causal masks"), claim(CONDITIONAL, qualifier="at a fixed width."),
            claim(REPRODUCED)]
    details = A.paper_answer(rows, PAPER).details
    assert "Only a weaker form holds of “x holds always” and “y holds”: only on average; only for n < 64." in details
    assert "True only under conditions the claim did not state: with causal masks; at a fixed width." in details


def _missing(**chapter):
    return SimpleNamespace(paper=BHOJANAPALLI, kind=SIMULATION, verdict=NOT_JUDGED, statement="z holds",
                           qualifier="", scale="default", key="", effects=(), **chapter)


def test_claims_not_judged_without_a_chapter_are_put_on_their_chapters():
    opened = "Open: 1 claim not judged yet, because their chapters have not produced its evidence in this build."
    for row in (_missing(), _missing(chapter=""), claim(NOT_JUDGED, chapter="")):
        assert A.paper_answer([row], PAPER).details[-1] == opened
    two = A.paper_answer([_missing(), claim(NOT_JUDGED, chapter="05"), claim(NOT_JUDGED, chapter="03")], PAPER)
    assert two.details[-1] == ("Open: 3 claims not judged yet, because chapters 03 and 05 have not produced their "
                               "evidence in this build.")
