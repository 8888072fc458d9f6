from pathlib import Path

import pytest

from lowrank.book.glued import read_book_glue
from lowrank.experiments.synthesis import CLAIMS, VERDICTS, MissingEvidence, verdict_table

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"


@pytest.fixture(scope="module")
def glue():
    return read_book_glue(CHAPTERS, exclude=("08_synthesis",))


def test_every_claim_gets_evidence_and_a_known_verdict(glue):
    table = verdict_table(glue)
    assert len(table) == len(CLAIMS)
    assert set(table.verdict) <= set(VERDICTS)
    assert table.evidence.str.len().min() > 20
    assert list(table.columns) == ["paper", "claim", "chapter", "evidence", "verdict"]


def _verdict(glue, claim_start, **changes):
    table = verdict_table({**glue, **changes})
    return table.loc[table.claim.str.startswith(claim_start), "verdict"].item()


def test_verdicts_follow_the_numbers(glue):
    assert _verdict(glue, "Theorem 1, sufficiency", ch02_construction_error=1e-15) == "reproduced"
    assert _verdict(glue, "Theorem 1, sufficiency", ch02_construction_error=1e-3) == "contradicted"
    assert _verdict(glue, "Theorem 1, necessity", ch02_vanish_list="7, 15, 31", ch02_ns_list="8, 16, 32") == "reproduced"
    assert _verdict(glue, "Theorem 1, necessity", ch02_vanish_list="3, 15, 31", ch02_ns_list="8, 16, 32") == "contradicted"
    assert _verdict(glue, "Low-rank barrier", ch05_cells_above=0, ch05_settings_hold=6,
                    ch05_settings_total=17) == "holds only under stated conditions"
    assert _verdict(glue, "Low-rank barrier", ch05_cells_above=3) == "contradicted"
    assert _verdict(glue, "Saturation", ch06_power_better=4, ch06_fitted=4, ch06_alpha_main_lo=0.5) == "contradicted"
    assert _verdict(glue, "Saturation", ch06_power_better=1, ch06_fitted=4) == "reproduced"
    assert _verdict(glue, "Training: at many heads", ch04_gap_ppl=5.0) == "reproduced"
    assert _verdict(glue, "Training: at many heads", ch04_gap_ppl=-5.0) == "not reproduced at this scale"


def test_missing_evidence_names_the_chapter():
    with pytest.raises(MissingEvidence, match="chapter 02"):
        verdict_table({})


def test_trained_model_verdicts_follow_the_numbers(glue):
    assert _verdict(glue, "The mechanism", ch07_logit_range="exactly 32", ch07_mini_dh=32,
                    ch07_clf_exact=24, ch07_clf_cases=24) == "reproduced"
    assert _verdict(glue, "The mechanism", ch07_logit_range="33 to 40", ch07_mini_dh=32) == "contradicted"
    assert _verdict(glue, "The barrier describes", ch07_hard_frac_nmax=0.7, ch07_barrier=0.63) == "contradicted"
    assert _verdict(glue, "The barrier describes", ch07_hard_frac_nmax=0.2, ch07_barrier=0.63,
                    ch07_full_default=1.0) == "holds only under stated conditions"
    assert _verdict(glue, "Model reduction", ch07_acc_sat=4, ch07_sat_hard=4, ch07_clf_ln_n=4.2) == "reproduced"
    assert _verdict(glue, "Model reduction", ch07_acc_sat=8, ch07_sat_hard=16) == "not reproduced at this scale"
