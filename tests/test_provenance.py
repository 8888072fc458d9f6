"""Provenance of stored results: every sweep record says which code, when and where."""
import json
import re

import pytest

from lowrank.core import provenance as prov
from lowrank.stores.sweep import ResultStore, sweep


def test_code_hash_changes_with_any_source_byte(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    first = prov.code_hash.__wrapped__(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    assert prov.code_hash.__wrapped__(tmp_path) == first
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")
    assert prov.code_hash.__wrapped__(tmp_path) != first


def test_code_hash_refuses_a_file(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("")
    with pytest.raises(ValueError, match="folder"):
        prov.code_hash.__wrapped__(f)


def test_git_revision_outside_a_checkout(tmp_path):
    assert prov.git_revision.__wrapped__(tmp_path) == "unknown"


def test_provenance_fields():
    p = prov.provenance(device="cpu")
    for k in ("git_revision", "code_hash", "date", "machine", "cpu", "cpu_count", "python", "device"):
        assert p[k] not in (None, ""), k
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["date"])
    json.dumps(p)


def test_every_sweep_record_carries_provenance(tmp_path):
    store = tmp_path / "s.jsonl"
    sweep([{"seed": 0}, {"seed": 1}], experiment="t", store=store, runs_dir=tmp_path / "runs",
          run_fn=lambda c, run_dir: {"loss": float(c["seed"])}, progress=False)
    recs = ResultStore(store).records()
    assert len(recs) == 2
    for r in recs:
        assert r["provenance"]["code_hash"] == prov.code_hash()
        assert r["wall_s"] >= 0


def test_physical_memory_is_a_plausible_size():
    have = prov.physical_memory()
    assert have is None or 2**28 <= have <= 2**50
