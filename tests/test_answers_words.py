"""The answers' words at their edges, as `make mutation` asks: how values and scales are joined,
which verdict sets "hold with qualifications", how a qualifier's first clause and a statement are
cut, and which rows the practitioner's answer reads."""
from lowrank.experiments import answers as A
from lowrank.experiments.synthesis import NOT_JUDGED, Row
from lowrank.experiments.verdicts import (BHOJANAPALLI, BOOK, CONDITIONAL, CONTRADICTED, CORRECTED, INCONCLUSIVE,
                                          NEGLIGIBLE, NOT_TESTED, PRETRAINED, PROOF_CHECK, REPRODUCED, SIMULATION,
                                          TRAINING, WEAKER, PAPERS, Paper)

PAPER = {p.name: p for p in PAPERS}
# the book's own findings as a paper that states no thesis: its answer only reports on its claims
OWN = Paper(BOOK, "book", "")


def claim(verdict, kind=SIMULATION, *, qualifier="", statement="x holds", scale="default", key="", detail=""):
    return Row("02", "02_x", "s", BHOJANAPALLI, statement, "e", verdict, qualifier, scale, "r", key=key, kind=kind,
               detail=detail)


def test_values_are_joined_in_words():
    assert A.join_values([]) == "none"
    assert A.join_values([512]) == "512"
    assert A.join_values([8, 16, 32]) == "8, 16 and 32"


def test_every_kind_of_holding_verdict_together_holds_with_qualifications():
    rows = [claim(v) for v in (REPRODUCED, CORRECTED, WEAKER, CONDITIONAL)]
    assert A.gist(rows) == "holds with qualifications"
    assert A.gist([*rows, claim(INCONCLUSIVE)]) == "holds with qualifications where decided (4 of 5 claims)"


def test_scales_are_named_once_each_and_unknown_ones_by_their_name():
    assert A.scale_phrase([]) == "the book's runs"
    assert A.scale_phrase([claim(REPRODUCED, scale=s) for s in ("", "none")]) == "the book's runs"
    assert A.scale_phrase([claim(REPRODUCED, scale=s) for s in ("long", "tiny", "long", "")]) == \
        "the long CPU runs and tiny runs"


def test_the_answers_quote_the_qualifier_not_its_detail_and_a_statement_loses_its_full_stop():
    rows = [claim(CORRECTED, PROOF_CHECK, qualifier="the threshold is one lower."),
            claim(WEAKER, qualifier="only on average", detail="not for every input; checked", statement="x holds always."),
            claim(INCONCLUSIVE, TRAINING, qualifier="not judged yet: the rates are chosen first", detail="resumes")]
    details = A.paper_answer(rows, PAPER[BHOJANAPALLI]).details
    assert "Sharpened: the threshold is one lower." in details
    assert "Only a weaker form holds of “x holds always”: only on average." in details
    # a qualifier is quoted whole, colon and all: its explanation is the detail, which no answer quotes
    assert any("because “not judged yet: the rates are chosen first”" in d for d in details)


def test_the_practitioner_reads_claims_only_and_a_causal_threshold_only_when_it_holds():
    threshold = claim(REPRODUCED, key=A.THRESHOLD_KEY)
    no_claim = claim(INCONCLUSIVE, TRAINING, statement="(no claim collected)")
    text = " ".join(A.practitioner_answer([threshold, no_claim], [64]))
    assert "The book ran no training experiment" in text and "causal" not in text
    causal = claim(INCONCLUSIVE, key=A.CAUSAL_THRESHOLD_KEY)
    text = " ".join(A.practitioner_answer([threshold, causal, claim(NOT_JUDGED, TRAINING)], [64]))
    assert "at least n - 1, which is 63 at n = 64." in text and "causal" not in text


def own(verdict, kind=TRAINING, *, qualifier="", statement="x holds", scale="long", chapter="04", detail=""):
    """A finding of the book's own (a paper with no thesis in answers.THESIS)."""
    return Row(chapter, "s", "s", BOOK, statement, "e", verdict, qualifier, scale, "r", kind=kind, detail=detail)


def test_what_stays_open_counts_reasons_chapters_and_untested_claims():
    rows = [own(REPRODUCED, PROOF_CHECK, scale="default"), own(REPRODUCED, PROOF_CHECK, scale="default"),
            own(INCONCLUSIVE, qualifier="too few seeds", detail="more"), own(INCONCLUSIVE, qualifier="too few seeds"),
            own(INCONCLUSIVE, PRETRAINED, qualifier="splits disagree"), own(INCONCLUSIVE, qualifier="runs missing"),
            own(NOT_JUDGED, chapter="04"), own(NOT_JUDGED, chapter="07"),
            own(NOT_TESTED, qualifier="a GPU", scale="none"), own(NOT_TESTED, qualifier="a GPU", scale="none"),
            own(REPRODUCED, statement="(no claim collected)")]
    assert A.paper_answer(rows, OWN).text == (
        "this book make claims of which, in theory this holds; in trained models, at the scale of the long CPU "
        "runs, it is not decided. Open: 3 training claims and 1 claim on a pretrained model, inconclusive at the "
        "power of the book's runs because “too few seeds” (2 claims), “splits disagree” or for the reasons their "
        "rows state; 2 claims not judged yet, because chapters 04 and 07 have not produced their evidence in this "
        "build; 2 claims not tested, each with what testing it would take.")
    rows = [own(INCONCLUSIVE, qualifier="a"), own(INCONCLUSIVE, qualifier="b"), own(NOT_JUDGED, chapter="")]
    assert A.paper_answer(rows, OWN).text.endswith(
        "Open: 2 training claims, inconclusive at the power of the book's runs because “a” or “b”; 1 claim not "
        "judged yet, because their chapters have not produced its evidence in this build.")
    rows = [own(INCONCLUSIVE, qualifier="a"), own(INCONCLUSIVE, qualifier="a"), own(NOT_JUDGED, chapter="04")]
    assert A.paper_answer(rows, OWN).text.endswith(
        "Open: 2 training claims, inconclusive at the power of the book's runs because “a”; 1 claim not judged "
        "yet, because chapter 04 has not produced its evidence in this build.")
    assert A.paper_answer([own(NOT_TESTED, qualifier="a GPU", scale="none")], OWN).text == (
        "this book make claims of which, the book tests none of its claims. Open: 1 claim not tested, each with "
        "what testing it would take.")


def test_decided_evidence_is_named_in_full_or_counted_in_brief():
    rows = [own(REPRODUCED), own(NEGLIGIBLE, PRETRAINED), own(CONTRADICTED, statement="y holds."),
            own(CONTRADICTED, SIMULATION, statement="z holds", scale="default")]
    assert A.paper_answer(rows, OWN, brief=True).text == (
        "this book make claims of which, in simulation this is contradicted; in trained models, at the scale of "
        "the long CPU runs, it holds only in part. Contradicted in theory or simulation: “z holds”. In trained "
        "models, of 3 claims decided, 1 reproduced, 1 with no effect beyond the margin and 1 contradicted; the "
        "verdict table names them. Nothing stays open: every claim is decided.")
    assert A.paper_answer(rows, OWN).details == (
        "Reproduced in training or pretrained models: “x holds”.",
        "No effect larger than the registered margin at this scale: “x holds”.",
        "Contradicted: “z holds” and “y holds”.", "Nothing stays open: every claim is decided.")
    assert A.paper_answer([own(REPRODUCED, PROOF_CHECK)], OWN).answer == "make claims of which, in theory this holds."


def test_the_practitioner_counts_undecided_training_claims_in_number():
    decided = own(REPRODUCED)
    assert A.practitioner_answer([decided, own(INCONCLUSIVE, qualifier="q")], [64]) == (
        "The training evidence, at the scale of the long CPU runs, supports “x holds”; 1 training claim stays "
        "undecided.",)
    assert A.practitioner_answer([decided, own(INCONCLUSIVE, qualifier="q"), own(NOT_JUDGED)], [64])[0].endswith(
        "supports “x holds”; 2 training claims stay undecided.")
    assert A.practitioner_answer([decided], [64]) == (
        "The training evidence, at the scale of the long CPU runs, supports “x holds”.",)
    threshold = [claim(REPRODUCED, key=A.THRESHOLD_KEY)]
    assert A.practitioner_answer(threshold, [64, 128])[0] == (
        "A floor for `head_dim`: one head can express every attention pattern over n tokens only when its size is at "
        "least n - 1, which is 63 at n = 64 and 127 at n = 128. A head below that size cannot express every dense "
        "pattern, whatever it is trained on.")
    assert A.practitioner_answer([own(INCONCLUSIVE, qualifier="q")], [64]) == (
        "The training evidence, at the scale of the long CPU runs, does not yet support either choice: none of its "
        "1 training claim is decided, so whether a head larger than d/h pays off in training is open at this scale.",)


def test_several_corrections_and_conditions_are_each_quoted_without_their_detail():
    rows = [claim(CORRECTED, qualifier="one lower than X."), claim(CORRECTED, qualifier="two heads", detail="proven"),
            claim(CONDITIONAL, qualifier="hardmax only", detail="fails at temperature one"),
            claim(WEAKER, qualifier="on average", statement="x grows with X.")]
    details = A.paper_answer(rows, PAPER[BHOJANAPALLI]).details
    assert details[:3] == ("Sharpened: one lower than X; two heads.",
                           "Only a weaker form holds of “x grows with X”: on average.",
                           "True only under conditions the claim did not state: hardmax only.")


def test_a_reason_shared_by_two_claims_is_counted_and_a_row_without_one_is_not_quoted():
    rows = [own(INCONCLUSIVE, qualifier="a"), own(INCONCLUSIVE, qualifier="a"), own(INCONCLUSIVE, qualifier="b")]
    assert A.paper_answer(rows, OWN).details[-1] == (
        "Open: 3 training claims, inconclusive at the power of the book's runs because “a” (2 claims) or “b”.")
    assert A.paper_answer([own(INCONCLUSIVE)], OWN).details[-1] == (
        "Open: 1 training claim, inconclusive at the power of the book's runs.")
    brief = A.paper_answer([own(REPRODUCED)], OWN, brief=True).details
    assert brief[0] == "In trained models, of 1 claim decided, 1 reproduced; the verdict table names them."
