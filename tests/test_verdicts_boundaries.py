"""The verdict framework's and the shared intervals' edges, as `make mutation` asks: the exact
messages a reader or a chapter sees, and the intervals at the smallest samples they accept."""
import numpy as np
import pytest

from lowrank.experiments.shared.intervals import t_lower_bound, t_quantile, wilson_interval
from lowrank.experiments.verdicts import NOT_TESTED, Claim, Judgement, MissingEvidence, need


def test_a_missing_key_names_its_chapter_and_nothing_else():
    with pytest.raises(MissingEvidence) as info:
        need({}, "ch05_a")
    assert str(info.value) == "\"headline value 'ch05_a' not found: run chapter 05 first\""
    assert MissingEvidence("no key").key == ""


def test_a_judgement_without_evidence_is_refused_in_words():
    with pytest.raises(ValueError, match="^a judgement needs its evidence$"):
        Judgement(NOT_TESTED, " ", "what testing it would take")


def test_an_untested_claim_says_no_experiment_and_a_bad_rule_names_what_it_returned():
    j = Claim("vit", "p", "07", "", "ViT", None, untested="a GPU").judge({})
    assert (j.verdict, j.evidence) == (NOT_TESTED, "no experiment in this book")

    def bad(h):
        """Returns a number."""
        return 1

    with pytest.raises(TypeError, match="^claim bad: rule returned int, not a Judgement$"):
        Claim("bad", "p", "09", "s", "st", bad).judge({})


def test_wilson_interval_of_one_trial():
    lo, hi = wilson_interval(1, 1)
    assert hi == 1.0 and lo == pytest.approx(0.2065, abs=1e-4)


def test_t_lower_bound_of_two_values():
    x = np.array([0.0, 1.0])
    assert t_lower_bound(x) == pytest.approx(0.5 - t_quantile(0.95, 1) * x.std(ddof=1) / np.sqrt(2))


def test_a_paper_needs_a_name_and_a_plain_slug():
    from lowrank.experiments.verdicts import PAPERS, Paper

    assert [p.slug for p in PAPERS] == ["bhojanapalli", "min_li"] and all(p.thesis for p in PAPERS)
    assert Paper("X (2027)", "x_2027", "").thesis == ""
    for slug in ("", "X", "2x", "x-y", "x y"):
        with pytest.raises(ValueError, match="slug"):
            Paper("X", slug, "t")
    with pytest.raises(ValueError, match="a name is needed"):
        Paper(" ", "x", "t")


def test_an_effect_prints_its_estimate_interval_and_seeds():
    from lowrank.experiments.verdicts import Effect

    assert Effect("test", 0.0341, -0.0116, 0.0565, 9).text == "test +0.034 nats (-0.012 to +0.057), 9 seeds"
    assert Effect("validation", -0.5, -1.0, 0.25, 3, unit="n").text == "validation -0.500 n (-1.000 to +0.250), 3 seeds"
