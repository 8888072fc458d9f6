"""The abstract of the landing page and the README (lowrank.experiments.abstract): short, read from
the rows and chapter 04's fields, the parameter-matched comparison first, readable while chapter
04's fair re-run is being stored, and the README's copy equal to the book's."""
import re
from pathlib import Path

import pytest

from lowrank.book import readme
from lowrank.experiments import abstract as AB
from lowrank.experiments.synthesis import Row
from lowrank.experiments.verdicts import (AWAITS_RATES, BHOJANAPALLI, CONDITIONAL, CONTRADICTED, CORRECTED, INCONCLUSIVE, MIN_LI,
                                          NOT_TESTED, PRETRAINED, PROOF_CHECK, REPRODUCED, SIMULATION, TRAINING, PAPERS)

PAPER = {p.name: p for p in PAPERS}

ROOT = Path(__file__).resolve().parents[1]
# An abstract does its job in 150 to 250 words (the box adds one short sentence with a link).
MAX_WORDS = 250


def row(verdict, kind, paper=BHOJANAPALLI, key="", qualifier="", statement="A claim holds", scale="long", detail="",
        awaits=""):
    return Row("04", "04_x", "s", paper, statement, "e", verdict, qualifier, scale, "r", key=key, kind=kind,
               detail=detail, awaits=awaits)


def arms(prefix, a, b, shared=""):
    return {f"{prefix}arm_a": a, f"{prefix}arm_b": b, f"{prefix}arm_shared": shared}


def fields(prefix, arm, diff, lo, hi, n=9, param_gap=0.06):
    return {**arms(prefix, *arm), f"{prefix}test_diff": diff, f"{prefix}test_lo": lo, f"{prefix}test_hi": hi,
            f"{prefix}test_n": n, f"{prefix}param_gap": param_gap}


MATCH_ARMS = ("standard d = 112, h = 4", "fixed h = 32 at d = 64 (d_p = 16)")
GAP_ARMS = ("standard (d_h = 2)", "fixed (d_p = 16)", "h = 32")
VALUES = {**fields(AB.FAIR_FIELDS.format(row="match"), MATCH_ARMS, -0.0341, -0.0565, -0.0116),
          **fields(AB.FAIR_FIELDS.format(row="gap"), GAP_ARMS, 0.0781, 0.0612, 0.0941),
          AB.SPLIT_KEY: "test"}


def book_rows(match=INCONCLUSIVE, gap=REPRODUCED, match_q="both splits disagree", gap_q="", awaits=""):
    return [row(REPRODUCED, PROOF_CHECK),
            row(CORRECTED, SIMULATION, qualifier="the threshold is n - 1 (shift)", detail="sharper"),
            row(match, TRAINING, key=AB.MATCH_KEY, qualifier=match_q, awaits=awaits if match == INCONCLUSIVE else ""),
            row(gap, TRAINING, key=AB.GAP_KEY, qualifier=gap_q, awaits=awaits if gap == INCONCLUSIVE else ""),
            row(CONTRADICTED, TRAINING), row(NOT_TESTED, TRAINING, scale="none"),
            row(CONDITIONAL, SIMULATION, MIN_LI, statement="Low-rank barrier: the rank stays below 0.63 n",
                qualifier="hardmax attention with random weights", detail="fails at temperature 1"),
            row(CONTRADICTED, SIMULATION, MIN_LI, statement="Saturation: the rank stops growing at log n"),
            row(CONTRADICTED, PRETRAINED, MIN_LI, scale="default")]


def test_the_practitioner_reads_the_parameter_matched_comparison_first():
    said = AB.practitioner_abstract(book_rows(), VALUES)
    assert len(said) == 2
    first, second = said
    assert first.startswith("Choosing `head_dim` at about equal parameters (6 % apart)")
    assert "standard d = 112, h = 4 reached a test loss 0.034 nats lower (95 % interval 0.012 to 0.057, 9 seeds) " \
           "than fixed h = 32 at d = 64 (d_p = 16)" in first and "inconclusive" in first
    # the gap row is told with the lower-loss arm first, and never as parameter-matched
    assert "at h = 32, fixed (d_p = 16) reached a test loss 0.078 nats lower (95 % interval 0.061 to 0.094) " in second
    assert "not at equal parameters" in second


def test_while_the_learning_rate_grid_is_stored_the_comparison_is_said_to_be_re_run():
    rows = book_rows(match_q="not judged yet: the rates are chosen first", gap=INCONCLUSIVE,
                     gap_q="not judged yet: the rates are chosen first", awaits=AWAITS_RATES)
    first, second = AB.practitioner_abstract(rows, VALUES)
    assert "is being re-run; so far in the long CPU runs, standard d = 112" in first and "0.034 nats lower" in first
    assert second.startswith("Adding parameters through a fixed head size (so far): at h = 32, fixed (d_p = 16)")
    bho = " ".join(AB.paper_abstract(rows, PAPER[BHOJANAPALLI]))
    assert "; 2 are open while each model's learning rate is chosen;" in bho


def test_until_the_fair_runs_are_measured_the_shared_rate_runs_are_quoted_and_labelled():
    """Chapter 04 as its fair design is being stored: the rule's fields are empty (counts aside),
    the runs at one shared rate are quoted, with how much of the fair design is stored."""
    fair = {f"{AB.FAIR_FIELDS.format(row=r)}{k}": v for r in ("match", "gap")
            for k, v in (("test_diff", float("nan")), ("test_n", 0), ("lr_stored", 6), ("lr_planned", 18),
                         ("stored", 0), ("planned", 36), ("param_gap", float("nan")))}
    fair.update(arms(AB.FAIR_FIELDS.format(row="match"), *MATCH_ARMS))
    fair.update(arms(AB.FAIR_FIELDS.format(row="gap"), *GAP_ARMS))
    shared = {}
    for row in ("match", "gap"):
        for k in ("test_diff", "test_lo", "test_hi", "test_n"):
            shared[AB.SHARED_FIELDS.format(row=row) + k] = VALUES[AB.FAIR_FIELDS.format(row=row) + k]
    shared.update({AB.SHARED_FIELDS.format(row="match") + "params_a": 426048.0,
                   AB.SHARED_FIELDS.format(row="match") + "params_b": 401792.0})
    rows = book_rows(match_q="the fair design is not stored yet", gap=INCONCLUSIVE, gap_q="not stored yet")
    first, second = AB.practitioner_abstract(rows, {**fair, **shared, AB.SPLIT_KEY: "test"})
    assert first.startswith("Choosing `head_dim` at about equal parameters (6 % apart): the fair comparison (each "
                            "model at its tuned learning rate) is being re-run, 6 of 54 runs stored; at one "
                            "shared rate in the long CPU runs, standard d = 112, h = 4 reached a test loss 0.034 nats "
                            "lower")
    assert second.startswith("Adding parameters through a fixed head size (shared rate): at h = 32, fixed (d_p = 16)")
    assert "nan" not in first + second
    # nothing measured at all: the state, with how much is stored, and no number
    bare = AB.practitioner_abstract(rows, {**fair, AB.SPLIT_KEY: "test"})
    assert bare == ("Choosing `head_dim` at about equal parameters: the fair comparison (each model at its tuned "
                    "learning rate) is being re-run, 6 of 54 runs stored.",)


def test_missing_fields_give_the_verdict_not_a_typed_number():
    said = AB.practitioner_abstract(book_rows(), {})
    assert said == ("Choosing `head_dim` at about equal parameters: the book's comparison is inconclusive.",)
    # without the split chapter 04 reports, no number is quoted either
    no_split = {k: v for k, v in VALUES.items() if k != AB.SPLIT_KEY}
    assert AB.practitioner_abstract(book_rows(), no_split)[0].endswith("the book's comparison is inconclusive.")
    assert AB.practitioner_abstract([row(REPRODUCED, PROOF_CHECK)], VALUES) == ()


def test_an_interval_across_zero_is_said_to_contain_it():
    values = {**VALUES, AB.FAIR_FIELDS.format(row="match") + "test_hi": 0.01}
    assert "95 % interval -0.057 to +0.010, which contains 0" in AB.practitioner_abstract(book_rows(), values)[0]


def test_each_paper_gets_its_thesis_theory_and_a_count_that_reads_as_decided():
    rows = book_rows()
    bho = " ".join(AB.paper_abstract(rows, PAPER[BHOJANAPALLI]))
    assert "In theory and simulation it holds, sharpened: the threshold is n - 1" in bho
    assert "In trained models (the long CPU runs), 2 of 3 claims are decided: 1 reproduced and 1 contradicted; " \
           "1 is open; 1 more is not tested." in bho
    minli = " ".join(AB.paper_abstract(rows, PAPER[MIN_LI]))
    assert "saturation is contradicted; the low-rank barrier holds only for hardmax attention with random weights" in minli
    assert "In pretrained models (the book's default runs), 1 of 1 claim is decided: 1 contradicted." in minli
    assert AB.paper_abstract([], PAPER[MIN_LI]) == ("make no claim the book lists.",)


@pytest.fixture(scope="module")
def book():
    from lowrank.experiments import synthesis

    tables = synthesis.run({"chapters_dir": str(ROOT / "chapters"), "practitioner_ns": ()})
    return AB.abstract(tables["rows"], tables["values"])


def test_the_books_abstract_is_short_and_quotes_no_rule_internals(book):
    text = AB.abstract_text(book)
    words = len(re.sub(r"[*`]", "", text).split())
    assert 100 <= words <= MAX_WORDS, words
    for internal in ("per doubling", "interval excludes", "Bonferroni", "floor", "margin", "bootstrap"):
        assert internal not in text
    assert re.search(r"\d+ of \d+ claims? (is|are) decided", text)
    assert text.index("at about equal parameters") < text.index("Adding parameters through a fixed head size")


def test_the_readme_opens_with_the_books_abstract():
    text = (ROOT / "README.md").read_text(encoding="utf8")
    block = readme.readme_block(text)
    assert block is not None and text.index(readme.BEGIN) < text.index("\n## "), "the README must open with it"
    assert block == readme.abstract_markdown(ROOT), "README's abstract is stale: run python -m lowrank.book.readme"


def test_the_readme_block_is_rewritten_in_place(tmp_path):
    (tmp_path / "chapters").symlink_to(ROOT / "chapters")
    (tmp_path / "README.md").write_text(f"# t\n\n{readme.BEGIN}\nstale\n{readme.END}\n\n## After\n")
    assert readme.main([str(tmp_path), "--check"]) == 1
    assert readme.main([str(tmp_path)]) == 0
    text = (tmp_path / "README.md").read_text()
    assert "stale" not in text and text.endswith(f"{readme.END}\n\n## After\n") and "argue that" in text
    assert readme.main([str(tmp_path), "--check"]) == 0
    (tmp_path / "README.md").write_text("no markers\n")
    assert readme.main([str(tmp_path)]) == 2
