"""The verdicts the ledger records before and after an amendment (lowrank.experiments.ledger.committed_verdicts),
on evidence files of the test's own: a claim judged on its chapter's values, one whose value is
missing, one whose chapter has no file, and a claim the book does not test."""
import json

from lowrank.experiments import ledger as L
from lowrank.experiments.verdicts import (CONTRADICTED, REPRODUCED, Claim, Judgement, MissingEvidence, need)


def holds(values):
    """Reproduced when x is positive, else contradicted."""
    x = need(values, "ch05_x")
    return Judgement(REPRODUCED if x > 0 else CONTRADICTED, f"x = {x}", qualifier="x is positive" if x > 0 else
                     "x is not positive", detail="one run")


def bare(values):
    """Reproduced when y is there."""
    return Judgement(REPRODUCED, f"y = {need(values, 'ch05_y')}")


def unnamed(values):
    """A rule whose missing value has no key."""
    raise MissingEvidence("the sweep's table is empty")


CLAIMS = [Claim("untested", "p", "05", "s", "Not tested here", None, untested="a run at scale"),
          Claim("holds", "p", "05", "s", "X holds", holds),
          Claim("lacks-y", "p", "05", "s", "Y holds", bare),
          Claim("no-key", "p", "05", "s", "Z holds", unnamed),
          Claim("no-file", "p", "06", "s", "W holds", holds),
          Claim("other", "p", "07", "s", "V holds", bare)]


def _write(chapters, stem, values):
    (chapters / "evidence").mkdir(parents=True, exist_ok=True)
    (chapters / "evidence" / f"{stem}.json").write_text(json.dumps({
        "format": 1, "stem": stem, "scale": "default", "values": values, "verdicts": {}, "params": {}, "stores": []}))


EXPECTED = {"holds": "reproduced: x is positive; one run",
            "lacks-y": "not judged: the committed chapter 05 lacks ch05_y",
            "no-key": "not judged: the committed chapter 05 lacks the sweep's table is empty",
            "no-file": "not judged: chapter 06 has no evidence file",
            "other": "reproduced"}


def test_each_claim_is_judged_on_its_own_chapters_file_or_says_why_not(tmp_path):
    _write(tmp_path, "05_rank_barrier", {"ch05_x": 2})
    _write(tmp_path, "07_trained_attention", {"ch05_y": 1})
    assert L.committed_verdicts(CLAIMS, tmp_path) == EXPECTED
    assert L.committed_verdicts(CLAIMS, str(tmp_path)) == EXPECTED


def test_the_default_folder_is_the_books_chapters(tmp_path, monkeypatch):
    _write(tmp_path / "chapters", "05_rank_barrier", {"ch05_x": -1})
    monkeypatch.setattr(L, "ROOT", tmp_path)
    assert L.committed_verdicts(CLAIMS[:2] + CLAIMS[-1:]) == {
        "holds": "contradicted: x is not positive; one run", "other": "not judged: chapter 07 has no evidence file"}


def test_a_chapter_not_in_the_book_is_not_read(tmp_path):
    _write(tmp_path, "05_elsewhere", {"ch05_x": 2})
    assert L.committed_verdicts(CLAIMS[1:2], tmp_path) == {"holds": "not judged: chapter 05 has no evidence file"}
