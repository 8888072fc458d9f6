"""tools/sync_budget_store.py: a training checkout's finished runs come back by key, once, and the counts
docs/operations.md states follow the store."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lowrank.experiments.head_size_training import budget

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("sync_budget_store", ROOT / "tools" / "sync_budget_store.py")
sync = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sync)


def _rec(key: str, finished: bool = True) -> dict:
    return {"key": key, "experiment": budget.EXPERIMENT, "config": {}, "metrics": {"finished": finished}}


def test_new_runs_are_the_finished_ones_the_committed_store_lacks_each_once():
    committed = [_rec("a"), _rec("b")]
    source = [_rec("a"), _rec("b"), _rec("c"), _rec("d", finished=False), _rec("c"), _rec("e")]
    assert [r["key"] for r in sync.new_runs(source, committed)] == ["c", "e"]
    assert sync.new_runs(committed, committed) == []


def test_a_line_that_is_not_a_budget_record_is_named(tmp_path):
    store = tmp_path / "s.jsonl"
    store.write_text(json.dumps(_rec("a")) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"s.jsonl:2: not a JSON line"):
        sync.records(store)
    store.write_text(json.dumps(_rec("a")) + "\n" + json.dumps({**_rec("b"), "experiment": "other"}) + "\n")
    with pytest.raises(ValueError, match=r"s.jsonl:2: not a record of"):
        sync.records(store)


def test_restate_keeps_the_line_breaks_and_writes_thousands():
    text = ("At present the store holds\n406 of its 458 planned runs. The grid is complete. 164 of the 216\n"
            "judged runs are stored (a note).")
    out = sync.restate(text, 1203, 1458, 170, 216)
    assert out == ("At present the store holds\n1,203 of its 1,458 planned runs. The grid is complete. 170 of the 216\n"
                   "judged runs are stored (a note).")


def test_restate_refuses_text_without_exactly_one_such_sentence():
    with pytest.raises(ValueError, match="states 0 sentences"):
        sync.restate("nothing here. 1 of the 2 judged runs are stored", 1, 2, 1, 2)
    twice = "the store holds 1 of its 2 planned runs; the store holds 1 of its 2 planned runs; 1 of the 2 judged runs are stored"
    with pytest.raises(ValueError, match="states 2 sentences"):
        sync.restate(twice, 1, 2, 1, 2)


def test_the_docs_state_the_counts_as_restate_writes_them():
    text = sync.DOCS.read_text(encoding="utf8")
    r = budget.read(ROOT / sync.BUDGET_STORE)
    counts = (r["n_records"], r["planned"]["distinct"], r["fair"]["judged"].shape[0], r["planned"]["judged"])
    assert sync.restate(text, *counts) == text, "docs/operations.md's counts differ from the store's"


def test_the_committed_store_is_refused_as_its_own_source():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "sync_budget_store.py"), str(ROOT / sync.BUDGET_STORE)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "the committed store itself" in done.stderr
