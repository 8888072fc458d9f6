"""The abstract's words at their edges, as `make mutation` asks: how scales and names are said, each
form of the theory and the trained-models sentences, how an effect and its interval are oriented
and rounded, when a comparison is said to be re-run, and the plain text the README opens with."""
import math

import pytest

from lowrank.experiments import abstract as AB
from lowrank.experiments.synthesis import NOT_JUDGED, Row
from lowrank.experiments.verdicts import (AWAITS_RATES, BHOJANAPALLI, CONDITIONAL, CONTRADICTED, CORRECTED, INCONCLUSIVE,
                                          NOT_TESTED, PAPERS, PRETRAINED, PROOF_CHECK, REPRODUCED, SIMULATION, TRAINING,
                                          WEAKER, Paper)

NAN = math.nan
PAPER = PAPERS[0]
THESIS = f"argue that {PAPER.thesis}."
MATCH, GAP = AB.FAIR_FIELDS.format(row="match"), AB.FAIR_FIELDS.format(row="gap")
SHARED_MATCH, SHARED_GAP = AB.SHARED_FIELDS.format(row="match"), AB.SHARED_FIELDS.format(row="gap")
TEST = {AB.SPLIT_KEY: "test"}


def row(verdict, kind=SIMULATION, *, statement="A claim holds", qualifier="", scale="long", key="", awaits="",
        paper=BHOJANAPALLI):
    return Row("04", "04_x", "s", paper, statement, "e", verdict, qualifier, scale, "r", key=key, kind=kind,
               awaits=awaits)


def fields(prefix, diff, lo, hi, n=9, arms=("A", "B", ""), **more):
    """A comparison's fields as chapter 04 glues them: the loss of arm A minus arm B on the test split."""
    return {f"{prefix}arm_a": arms[0], f"{prefix}arm_b": arms[1], f"{prefix}arm_shared": arms[2],
            f"{prefix}test_diff": diff, f"{prefix}test_lo": lo, f"{prefix}test_hi": hi, f"{prefix}test_n": n,
            **{prefix + k: v for k, v in more.items()}}


def theory(*rows):
    return AB.paper_abstract(list(rows), PAPER)[1]


def evidence(*rows):
    return AB.paper_abstract(list(rows), PAPER)[-1]


def match_row(verdict=INCONCLUSIVE, awaits=""):
    return row(verdict, TRAINING, key=AB.MATCH_KEY, awaits=awaits)


def gap_row(verdict=REPRODUCED):
    return row(verdict, TRAINING, key=AB.GAP_KEY)


# -- scales, names ---------------------------------------------------------------------------------

def test_scales_are_named_short_once_each_in_order_and_unknown_ones_by_their_name():
    rows = [row(REPRODUCED, scale=s) for s in ("long", "default", "long", "custom", "weird", "", "none")]
    assert AB.scale_phrase(rows) == "the long CPU, book's default, custom and weird runs"
    assert AB.scale_phrase([row(REPRODUCED, scale="none"), row(REPRODUCED, scale="")]) == "the book's runs"


def test_a_name_is_the_statement_up_to_its_colon_lower_cased_unless_an_acronym():
    said = theory(row(CONTRADICTED, statement="Saturation: the rank stops growing."),
                  row(CONTRADICTED, statement="SGD: it finds the minimum"),
                  row(CONTRADICTED, statement="The rank is full."),
                  row(CONTRADICTED, statement="One two three four five six: a head of six words"),
                  row(CONTRADICTED, statement="One two three four five six seven: a head of seven words."))
    assert said == ("In simulation it holds in part, saturation, SGD, “The rank is full”, one two three four five six "
                    "and “One two three four five six seven: a head of seven words” are contradicted.")


def test_a_name_keeps_a_mixed_case_first_word_and_lowers_a_one_letter_one():
    said = theory(row(CONTRADICTED, statement="ViT accuracy: it plateaus"),
                  row(CONTRADICTED, statement="A bound: it holds"))
    assert said == "In simulation it holds in part, ViT accuracy and a bound are contradicted."


def test_a_name_or_a_condition_ending_in_a_capital_keeps_it():
    said = theory(row(CONTRADICTED, statement="The bound of Lemma IX."),
                  row(CONDITIONAL, statement="Barrier: low rank", qualifier="the case of Lemma IX."))
    assert said == "In simulation it holds in part: “The bound of Lemma IX” is contradicted; the barrier holds only " \
                   "for the case of Lemma IX."


def test_a_name_that_extends_another_is_said_once():
    said = theory(row(CONTRADICTED, statement="Saturation: the rank stops growing"),
                  row(CONTRADICTED, statement="Saturation by the paper's own criterion: the increment falls"))
    assert said == "In simulation it holds in part, saturation is contradicted."


# -- the theory sentence ---------------------------------------------------------------------------

def test_the_theory_sentence_says_where_and_whether_it_holds():
    assert theory(row(REPRODUCED, PROOF_CHECK), row(REPRODUCED, PROOF_CHECK)) == "In theory it holds."
    assert theory(row(REPRODUCED, SIMULATION)) == "In simulation it holds."
    assert theory(row(REPRODUCED, PROOF_CHECK), row(REPRODUCED, SIMULATION)) == "In theory and simulation it holds."
    assert theory(row(WEAKER, PROOF_CHECK, qualifier="for large n")) == "In theory it holds in part."
    assert theory(row(INCONCLUSIVE), row(NOT_JUDGED)) == "In simulation it is not decided yet."


def test_a_correction_is_quoted_without_its_aside_or_full_stop_and_only_when_nothing_weighs_more():
    assert theory(row(CORRECTED, qualifier="the bound is n - 1 (not n).")) == \
        "In simulation it holds, sharpened: the bound is n - 1."
    assert theory(row(CORRECTED, qualifier="x"), row(CONDITIONAL, statement="Barrier: low rank",
                                                      qualifier="hardmax (random weights)")) == \
        "In simulation it holds in part, the barrier holds only for hardmax."


def test_contradictions_then_a_condition_each_named():
    said = theory(row(CONTRADICTED, statement="Saturation: x"), row(CONTRADICTED, statement="Barrier: y"),
                  row(CONDITIONAL, statement="The rank is full.", qualifier="small steps (lr < 0.1)."))
    assert said == ("In simulation it holds in part: saturation and barrier are contradicted; “The rank is full” holds "
                    "only for small steps.")


# -- the trained-models sentence -------------------------------------------------------------------

def test_nothing_decided_counts_what_is_open_and_why():
    assert evidence(row(INCONCLUSIVE, TRAINING)) == "In trained models (the long CPU runs), its 1 claim is open."
    assert evidence(row(INCONCLUSIVE, TRAINING, awaits=AWAITS_RATES), row(NOT_JUDGED, PRETRAINED, scale="default")) == (
        "In trained and pretrained models (the long CPU and book's default runs), its 2 claims are open (1 while each "
        "model's learning rate is chosen).")
    assert evidence(*[row(INCONCLUSIVE, PRETRAINED, awaits=AWAITS_RATES)] * 2, row(NOT_TESTED, TRAINING),
                    row(NOT_TESTED, TRAINING)) == (
        "In pretrained models (the long CPU runs), its 2 claims are open while each model's learning rate is chosen; "
        "2 more are not tested.")


def test_decided_claims_are_counted_by_verdict_and_the_open_ones_after():
    assert evidence(row(REPRODUCED, TRAINING), row(INCONCLUSIVE, TRAINING, awaits=AWAITS_RATES),
                    row(NOT_TESTED, TRAINING)) == (
        "In trained models (the long CPU runs), 1 of 2 claims are decided: 1 reproduced; 1 is open while each model's "
        "learning rate is chosen; 1 more is not tested.")
    assert evidence(row(REPRODUCED, PRETRAINED), row(CONTRADICTED, TRAINING),
                    row(INCONCLUSIVE, TRAINING, awaits=AWAITS_RATES), row(INCONCLUSIVE, TRAINING)) == (
        "In trained and pretrained models (the long CPU runs), 2 of 4 claims are decided: 1 reproduced and 1 "
        "contradicted; 2 are open (1 while each model's learning rate is chosen).")
    assert evidence(row(REPRODUCED, TRAINING), row(INCONCLUSIVE, TRAINING), row(INCONCLUSIVE, TRAINING)) == (
        "In trained models (the long CPU runs), 1 of 3 claims are decided: 1 reproduced; 2 are open.")


def test_a_paper_without_a_thesis_or_tested_claims_says_so():
    own = Paper("Own", "own", "")
    assert AB.paper_abstract([row(NOT_TESTED, TRAINING, paper="Own")], own) == (
        "make claims about attention's rank.", "The book does not test its 1 training claim.")
    rows = [row(NOT_TESTED, TRAINING), row(NOT_TESTED, TRAINING), row(REPRODUCED, statement="(no claim collected)")]
    assert AB.paper_abstract(rows, PAPER) == (THESIS, "The book does not test its 2 training claims.")
    assert AB.paper_abstract([row(REPRODUCED, statement="(no claim collected)")], PAPER) == (
        "make no claim the book lists.",)


# -- the practitioner's sentences ------------------------------------------------------------------

def test_an_effect_is_rounded_to_what_the_interval_can_tell():
    said = AB.practitioner_abstract([gap_row()], {**TEST, **fields(MATCH, -0.0004, -2.0, -0.05)})
    assert said == ("Choosing `head_dim` at about equal parameters: A reached a test loss 0.0004 nats lower (95 % "
                    "interval 0.05 to 2.00, 9 seeds) than B; verdict: not judged yet.",)


def test_at_no_difference_the_first_model_stays_the_subject_and_the_interval_contains_zero():
    said = AB.practitioner_abstract([match_row(), gap_row()], {
        **TEST, **fields(MATCH, 0.0, -0.01, 0.01), **fields(GAP, -1.0, -1.5, -0.5, arms=("C", "D", "h = 2"))})
    assert said == ("Choosing `head_dim` at about equal parameters in the long CPU runs: A reached a test loss 0 nats "
                    "lower (95 % interval -0.010 to +0.010, which contains 0, 9 seeds) than B; verdict: inconclusive.",
                    "Adding parameters through a fixed head size: at h = 2, C reached a test loss 1 nats lower (95 % "
                    "interval 0.5 to 1.5) than D, but not at equal parameters (reproduced).")


def test_an_interval_with_an_end_at_zero_contains_it():
    said = AB.practitioner_abstract([match_row()], {**TEST, **fields(MATCH, 0.0, 0.0, 0.02)})
    assert said == ("Choosing `head_dim` at about equal parameters in the long CPU runs: A reached a test loss 0 nats "
                    "lower (95 % interval +0.000 to +0.020, which contains 0, 9 seeds) than B; verdict: inconclusive.",)


def test_an_interval_across_or_touching_zero_is_signed_in_the_subjects_direction():
    said = AB.practitioner_abstract([match_row(), gap_row()], {
        **TEST, **fields(MATCH, 0.02, -0.01, 0.05, param_gap=0.25), **fields(GAP, -0.02, -0.04, 0.0)})
    assert said == ("Choosing `head_dim` at about equal parameters (25 % apart) in the long CPU runs: B reached a test "
                    "loss 0.02 nats lower (95 % interval -0.050 to +0.010, which contains 0, 9 seeds) than A; verdict: "
                    "inconclusive.",
                    "Adding parameters through a fixed head size: A reached a test loss 0.02 nats lower (95 % interval "
                    "-0.040 to +0.000, which contains 0) than B, but not at equal parameters (reproduced).")


@pytest.mark.parametrize("values", [
    {MATCH + "arm_a": "A", MATCH + "test_diff": -0.03, MATCH + "test_lo": -0.05, MATCH + "test_hi": -0.01,
     MATCH + "test_n": 9},                                        # one arm named
    fields(MATCH, NAN, -0.05, -0.01),                             # no difference
    fields(MATCH, -0.03, -0.05, -0.01, n=0),                      # no seed
], ids=["one-arm", "no-difference", "no-seed"])
def test_a_comparison_without_both_arms_or_a_measured_difference_quotes_no_number(values):
    assert AB.practitioner_abstract([match_row(), gap_row()], {**TEST, **values}) == (
        "Choosing `head_dim` at about equal parameters: the book's comparison is inconclusive.",)


def test_the_share_apart_falls_back_to_the_parameter_counts_and_never_divides_by_zero():
    def head(**counts):
        values = {**TEST, **fields(MATCH, -0.03, -0.05, -0.01, param_gap=NAN, **counts)}
        return AB.practitioner_abstract([match_row(REPRODUCED)], values)[0].split(" in the ")[0]

    assert head(params_a=106.0, params_b=100.0) == "Choosing `head_dim` at about equal parameters (6 % apart)"
    assert head(params_a=2.0, params_b=0.0) == "Choosing `head_dim` at about equal parameters"
    assert head(params_a=NAN, params_b=100.0) == "Choosing `head_dim` at about equal parameters"


def test_with_no_matched_row_its_comparison_is_not_judged_yet_and_the_gap_is_told_with_the_seeds():
    values = {**TEST, **fields(MATCH, -0.03, -0.05, -0.01)}
    assert AB.practitioner_abstract([gap_row()], values) == (
        "Choosing `head_dim` at about equal parameters: A reached a test loss 0.03 nats lower (95 % interval 0.01 to "
        "0.05, 9 seeds) than B; verdict: not judged yet.",)
    assert AB.practitioner_abstract([gap_row()], TEST) == (
        "Choosing `head_dim` at about equal parameters: the book's comparison is not judged yet.",)
    assert AB.practitioner_abstract([row(NOT_JUDGED, TRAINING, key=AB.MATCH_KEY)], {}) == (
        "Choosing `head_dim` at about equal parameters: the book's comparison is not judged yet.",)
    # the matched comparison unmeasured: the seeds are said with the gap's; no gap row: no verdict after it
    values = {**TEST, **fields(GAP, -0.05, -0.08, -0.02, arms=("C", "D", ""))}
    assert AB.practitioner_abstract([match_row()], values)[1] == (
        "Adding parameters through a fixed head size: C reached a test loss 0.05 nats lower (95 % interval 0.02 to "
        "0.08, 9 seeds) than D, but not at equal parameters.")


def test_the_second_comparison_says_its_seeds_when_they_are_not_the_firsts():
    """A gap measured on fewer seeds than the matched comparison must not read as if it had as many."""
    values = {**TEST, **fields(SHARED_MATCH, -0.03, -0.05, -0.01),
              **fields(GAP, -0.08, -0.14, -0.03, n=4, arms=("C", "D", "h = 32"), stored=31, planned=36)}
    second = AB.practitioner_abstract([match_row(REPRODUCED), gap_row(INCONCLUSIVE)], values)[1]
    assert second == ("Adding parameters through a fixed head size (so far): at h = 32, C reached a test loss 0.08 "
                      "nats lower (95 % interval 0.03 to 0.14, 4 seeds) than D, but not at equal parameters.")
    values[GAP + "test_n"] = 9
    second = AB.practitioner_abstract([match_row(REPRODUCED), gap_row(INCONCLUSIVE)], values)[1]
    assert "(95 % interval 0.03 to 0.14) than D" in second


def test_both_ends_of_an_interval_are_written_to_the_same_places():
    said = AB.practitioner_abstract([match_row(REPRODUCED)], {**TEST, **fields(MATCH, -0.053, -0.07, -0.037)})
    assert "(95 % interval 0.037 to 0.070, 9 seeds)" in said[0]


def test_the_shared_rate_runs_are_said_to_be_a_re_run_whatever_the_verdict():
    values = {**TEST, **fields(SHARED_MATCH, -0.03, -0.05, -0.01), **fields(SHARED_GAP, 0.05, 0.02, 0.08)}
    assert AB.practitioner_abstract([match_row(REPRODUCED), gap_row()], values) == (
        "Choosing `head_dim` at about equal parameters: the fair comparison (each model at its tuned learning rate) is "
        "being re-run; at one shared rate in the long CPU runs, A reached a test loss 0.03 nats lower (95 % interval "
        "0.01 to 0.05, 9 seeds) than B.",
        "Adding parameters through a fixed head size (shared rate): B reached a test loss 0.05 nats lower (95 % "
        "interval 0.02 to 0.08) than A, but not at equal parameters.")


@pytest.mark.parametrize("counts, pending", [
    (dict(lr_stored=6, lr_planned=18, stored=36, planned=36), ", 42 of 54 runs stored"),
    (dict(lr_stored=18, lr_planned=18, stored=6, planned=36), ", 24 of 54 runs stored"),
    (dict(lr_stored=18, lr_planned=18, stored=36, planned=36), None),
    (dict(lr_stored=6, lr_planned=NAN, stored=36, planned=36), None),
    (dict(lr_stored=NAN, lr_planned=18, stored=36, planned=36), None),
])
def test_an_undecided_comparison_is_said_to_be_re_run_while_its_fields_count_fewer_runs_than_planned(counts, pending):
    for verdict in (INCONCLUSIVE, NOT_JUDGED):
        values = {**TEST, **fields(MATCH, -0.03, -0.05, -0.01, **counts)}
        first = AB.practitioner_abstract([match_row(verdict)], values)[0]
        if pending is None:
            assert first.endswith("than B; verdict: " + ("inconclusive." if verdict == INCONCLUSIVE else
                                                          "not judged yet.")), first
        else:
            assert first.startswith("Choosing `head_dim` at about equal parameters: the fair comparison (each model "
                                    f"at its tuned learning rate) is being re-run{pending}; so far in the long CPU "
                                    "runs, A reached"), first


def test_a_count_with_nothing_planned_adds_nothing():
    values = {**TEST, **fields(MATCH, -0.03, -0.05, -0.01, lr_stored=3, lr_planned=0, stored=6, planned=36)}
    first = AB.practitioner_abstract([match_row()], values)[0]
    assert ", 6 of 36 runs stored;" in first
    values = {**TEST, **fields(MATCH, -0.03, -0.05, -0.01, lr_stored=1, lr_planned=1, stored=6, planned=36)}
    assert ", 7 of 37 runs stored;" in AB.practitioner_abstract([match_row()], values)[0]


# -- the whole -------------------------------------------------------------------------------------

def test_the_abstract_gives_each_paper_and_the_practitioner_from_the_values():
    rows = [match_row(), gap_row(), row(REPRODUCED, PROOF_CHECK)]
    said = AB.abstract(rows, {**TEST, **fields(MATCH, -0.03, -0.05, -0.01)}, PAPERS)
    assert [name for name, _ in said["papers"]] == [p.name for p in PAPERS]
    assert "A reached a test loss 0.03 nats lower" in said["practitioner"][0]


def test_the_text_is_one_paragraph_per_paper_and_one_for_the_practitioner():
    said = {"papers": (("P", ("argue that x.", "In theory it holds.")), ("Q", ("make no claim the book lists.",))),
            "practitioner": ("First.", "Second.")}
    assert AB.abstract_text(said) == ("**P** argue that x. In theory it holds.\n\n**Q** make no claim the book lists."
                                      "\n\nFirst. Second.")
    assert AB.abstract_text({**said, "practitioner": ()}) == ("**P** argue that x. In theory it holds.\n\n**Q** make "
                                                              "no claim the book lists.")
