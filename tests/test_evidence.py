"""Chapters hand their evidence to chapter 08 as data: the files, their checks, and the committed
evidence against the committed notebooks and stores."""
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from lowrank.experiments import registry, synthesis
from lowrank.experiments import evidence as E
from lowrank.core.glued import read_glue

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
CLAIM_STEMS = [s.stem for s in synthesis.claim_sources()]


def test_plain_values_only():
    assert E.plain_value({"a": (1, np.float64(0.5), np.int64(3)), "b": None}) == {"a": [1, 0.5, 3], "b": None}
    assert isinstance(E.plain_value(np.float32(0.25)), float)
    with pytest.raises(TypeError, match=r"values\['fig'\] is a object"):
        E.plain_value({"fig": object()}, "values")
    with pytest.raises(TypeError, match="key 3"):
        E.plain_value({3: 1})


def test_written_evidence_reads_back_with_its_verdicts_and_stores(tmp_path, monkeypatch):
    monkeypatch.delenv(E.EVIDENCE_DIR_ENV, raising=False)
    assert E.write_evidence("05_rank_barrier", {}, {}) is None
    assert not (tmp_path / "05_rank_barrier.json").exists()
    # a store the chapter reads is stamped; chapter 06 names its stores as path parameters
    store = tmp_path / "inc.jsonl"
    store.write_text('{"a": 1}\n')
    monkeypatch.chdir(tmp_path)
    values = {"ch06_x": float("nan"), "ch06_y": (1, 2)}
    monkeypatch.setenv(E.EVIDENCE_DIR_ENV, str(tmp_path / "ev"))
    monkeypatch.setenv(E.SCALE_ENV, "smoke")
    E.write_evidence("06_rank_saturation", values, {"increment_store": "inc.jsonl", "n": 3})
    found = E.read_evidence(tmp_path / "ev" / "06_rank_saturation.json")
    assert found.scale == "smoke" and found.chapter == "06" and found.params == {"increment_store": "inc.jsonl", "n": 3}
    assert math.isnan(found.values["ch06_x"]) and found.values["ch06_y"] == [1, 2]
    assert [s.param for s in found.stores] == ["increment_store"]
    # the chapter's own verdicts on these values are recorded, by claim key; here every value is missing
    keys = [c.key for c in registry.module("06_rank_saturation").CLAIMS]
    assert list(found.verdicts) == sorted(keys) or set(found.verdicts) == set(keys)
    assert {v["verdict"] for v in found.verdicts.values()} == {"not judged"}
    assert E.stale_stores(found, tmp_path) == []
    store.write_text('{"a": 2}\n')
    assert E.stale_stores(found, tmp_path) == ["inc.jsonl (parameter increment_store) changed after chapter 06 ran"]
    store.unlink()
    assert E.stale_stores(found, tmp_path) == ["inc.jsonl (parameter increment_store) is gone"]


def test_a_damaged_evidence_file_is_named(tmp_path):
    bad = tmp_path / "05_x.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="05_x.json is not JSON"):
        E.read_evidence(bad)
    bad.write_text(json.dumps({"format": E.FORMAT, "stem": "05_x"}))
    with pytest.raises(ValueError, match="lacks scale, values, verdicts, params, stores"):
        E.read_evidence(bad)


@pytest.mark.parametrize("stem", CLAIM_STEMS)
def test_committed_evidence_is_as_new_as_its_chapter_and_stores(stem):
    """The evidence file holds exactly the values the committed notebook glued (so it came from the
    same execution), the stores it read are unchanged since, and the chapter's own verdicts are
    the ones chapter 08 reaches on the same values."""
    path = E.evidence_path(CHAPTERS, stem)
    assert path.is_file(), f"{stem} has no evidence file: re-execute it with tools/execute_notebooks.py"
    found = E.read_evidence(path)
    glued = {k: v for k, v in read_glue(CHAPTERS / f"{stem}.ipynb").items() if not k.startswith(f"ch{stem[:2]}_fig")}
    assert found.stem == stem and found.scale == "default"
    changed = sorted(k for k in found.values if k in glued and not E.same_value(found.values[k], glued[k]))
    assert not changed, f"{stem}: evidence differs from the notebook's glue at {changed[:5]}: re-execute the chapter"
    assert set(found.values) <= set(glued) | {k for k in found.values if not isinstance(found.values[k], str)}
    assert E.stale_stores(found, CHAPTERS) == []
    for c in registry.module(stem).CLAIMS:
        j = c.judge(found.values)
        assert found.verdicts[c.key] == {"verdict": j.verdict, "qualifier": j.qualifier, "detail": j.detail}


def test_chapter_08_judges_from_evidence_alone(tmp_path):
    """Chapter 08 needs no other notebook: from a folder holding only the evidence files it gives
    the verdict counts and sentences of its committed page."""
    shutil.copytree(CHAPTERS / E.FOLDER, tmp_path / E.FOLDER)
    tables = synthesis.run({"chapters_dir": str(tmp_path), "practitioner_ns": (512, 4096)})
    H = synthesis.headline(tables)
    committed = read_glue(CHAPTERS / "08_synthesis.ipynb")
    for key in ("ch08_n_claims", "ch08_totals", "ch08_found_bhojanapalli", "ch08_found_min_li",
                *(k for k in synthesis.HEADLINE_KEYS if k.startswith("ch08_n_"))):
        assert H[key] == committed[key], key
    assert {r.scale for r in tables["rows"] if r.judged} <= {"default", "long", "none"}


_REPR = re.compile(r"^<[^>]* at 0x[0-9a-f]+>$|^(Html|VerdictCards|Styler|Figure)\(.*\)$|^np\.\w+\(", re.S)


@pytest.mark.parametrize("notebook", sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.stem)
def test_results_of_every_chapter_hold_plain_values_never_a_repr(notebook, tmp_path):
    from lowrank.book.outputs import write_outputs

    results = write_outputs(notebook, tmp_path)
    json.dumps(results)  # no default: a value JSON cannot hold fails here
    reprs = sorted(k for k, v in results.items() if isinstance(v, str) and _REPR.match(v))
    assert not reprs, f"{notebook.stem}: {reprs[:5]} hold an object's repr"


@pytest.mark.slow
def test_chapter_08_executes_first_from_a_folder_with_no_other_notebook(tmp_path):
    """Chapter 08 executed before (and without) every other chapter: from the evidence files alone
    it glues the verdict counts and sentences of its committed page."""
    import papermill as pm

    shutil.copytree(CHAPTERS / E.FOLDER, tmp_path / E.FOLDER)
    shutil.copy(CHAPTERS / "08_synthesis.ipynb", tmp_path / "08_synthesis.ipynb")
    assert not [p for p in tmp_path.glob("0[1-7]_*.ipynb")]
    out = tmp_path / "ran.ipynb"
    pm.execute_notebook(str(tmp_path / "08_synthesis.ipynb"), str(out), cwd=str(tmp_path), progress_bar=False,
                        parameters={"chapters_dir": "."}, kernel_name="python3")
    ran, committed = read_glue(out), read_glue(CHAPTERS / "08_synthesis.ipynb")
    for key in ("ch08_n_claims", "ch08_totals", "ch08_found_bhojanapalli", "ch08_found_min_li",
                *(k for k in synthesis.HEADLINE_KEYS if k.startswith("ch08_n_"))):
        assert ran[key] == committed[key], key


def test_same_value_counts_nan_equal_and_a_tuple_equal_to_its_list():
    nan = float("nan")
    assert E.same_value(nan, nan) and E.same_value((1, [2.0, nan]), [1, (2.0, nan)])
    assert E.same_value({"a": [nan]}, {"a": (nan,)})
    assert not E.same_value(nan, 1.0) and not E.same_value(1.0, nan)
    assert not E.same_value([1, 2], [1, 2, 3]) and not E.same_value([1, 2], [2, 1])
    assert not E.same_value({"a": 1}, {"a": 1, "b": 2}) and not E.same_value({"a": 1}, {"a": 2})
    assert not E.same_value("1", 1) and E.same_value("x", "x")


def test_book_evidence_is_read_for_the_listed_chapters_that_have_a_file(tmp_path):
    assert E.evidence_path(tmp_path, "05_x") == tmp_path / "evidence" / "05_x.json"
    (tmp_path / "evidence").mkdir()
    for stem, scale in (("05_x", "smoke"), ("06_y", "long")):
        E.evidence_path(tmp_path, stem).write_text(json.dumps({
            "format": E.FORMAT, "stem": stem, "scale": scale, "values": {f"ch{stem[:2]}_v": 1}, "verdicts": {},
            "params": {}, "stores": []}))
    found = E.read_book_evidence(tmp_path, ["05_x", "07_z", "06_y"])
    assert list(found) == ["05_x", "06_y"] and found["06_y"].scale == "long" and found["05_x"].chapter == "05"
    assert E.read_book_evidence(tmp_path, []) == {}
