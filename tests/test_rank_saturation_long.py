"""Chapter 06's long-scale increment store at toy size: the writer resumes and records provenance,
the reader skips bad lines and reads a partial store as partial, the increment rule's values from
a store equal those from the same draws computed here, and the command refuses bad input."""
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lowrank.book.runner import load_yaml
from lowrank.book.sets import set_parameters
from lowrank.experiments import rank_saturation as ch
from lowrank.experiments.rank_saturation import long, store as st
from lowrank.experiments.rank_saturation.rules import _criterion_keys
from lowrank.experiments.verdicts import INCONCLUSIVE, claim_of
from lowrank.stores.sweep import ResultStore
from lowrank.train import run_key

from helpers import PROVENANCE_FIELDS

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "chapters" / "06_rank_saturation.ipynb"
# Three lengths, head sizes to max(16, 2 n), a few draws each: a second of work.
P = dict(seed=0, device="cpu", ns=[8, 16, 32], max_head_dim=16, points_per_octave=2, rows_per_cell=64, min_trials=4,
         fractions=[0.5, 0.75, 0.9], increment=0.01, n_boot=2000, increment_store=None, increment_run_store=None,
         increment_top_min=16, increment_top_factor=2, increment_rows_per_cell=256)


def _lines(path):
    return [ln for ln in Path(path).read_text().splitlines() if ln.strip()]


def test_the_writer_appends_one_record_per_length_with_provenance_and_resumes(tmp_path, monkeypatch):
    store = tmp_path / "s.jsonl"
    st.fill_store(P, store)
    recs = ResultStore(store).records()
    assert [r["config"]["n"] for r in recs] == [8, 16, 32] and {r["experiment"] for r in recs} == {st.EXPERIMENT}
    for r in recs:
        assert r["key"] == run_key(r["config"]) and r["wall_s"] > 0
        assert all(isinstance(r["provenance"].get(f), str) and r["provenance"][f] for f in PROVENANCE_FIELDS)
        assert r["config"]["head_dims"][-1] == max(16, 2 * r["config"]["n"])
        assert r["config"]["trials"] == max(4, 256 // r["config"]["n"])
    # a rerun computes nothing; after losing the last record it computes that length only
    ran, real = [], st.run_length

    def counting(config, run_dir=None):
        ran.append(config["n"])
        return real(config, run_dir=run_dir)

    monkeypatch.setattr(st, "run_length", counting)
    before = store.read_bytes()
    st.fill_store(P, store)
    assert ran == [] and store.read_bytes() == before
    store.write_text("\n".join(_lines(store)[:2]) + "\n")
    st.fill_store(P, store)
    assert ran == [32] and [r["config"]["n"] for r in ResultStore(store).records()] == [8, 16, 32]
    # the resumed record holds the same ranks: same config, same seed
    assert ResultStore(store).records()[-1]["metrics"] == recs[-1]["metrics"]


def test_a_partial_store_is_read_as_partial_and_bad_lines_are_skipped_with_a_warning(tmp_path):
    store = tmp_path / "s.jsonl"
    st.fill_store({**P, "ns": [8, 32]}, store)
    lines = _lines(store)
    bad = json.loads(lines[1])
    bad["metrics"]["ranks"] = bad["metrics"]["ranks"][:-8] + "AAAAAAAA"  # its ranks no longer decode
    store.write_text(lines[0] + "\nnot json\n" + json.dumps(bad) + "\n")
    with pytest.warns(RuntimeWarning) as caught:
        got = st.read_store(store, P)
    text = " ".join(str(w.message) for w in caught)
    assert "line 2" in text and "n = 32" in text
    assert got["ns"] == [8] and got["missing"] == [16, 32] and got["other"] == 0
    assert sorted(got["table"]["n"].unique()) == [8]


def test_a_missing_store_names_its_path_and_the_command_that_makes_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nothere\.jsonl.*rank_saturation\.long --store"):
        st.read_store(tmp_path / "nothere.jsonl", P)


def test_ranks_survive_the_compact_encoding_and_non_integers_are_refused():
    R = np.array([[0, 1, 65535], [7, 7, 8]], dtype=float)
    m = {"ranks": st.encode_ranks(R), "shape": [2, 3], "mean_rank": R.mean(1).tolist()}
    assert np.array_equal(st.decode_ranks(m), R)
    with pytest.raises(ValueError, match="disagree"):
        st.decode_ranks({**m, "mean_rank": [0.0, 0.0]})
    with pytest.raises(ValueError, match="integers"):
        st.encode_ranks(R + 0.5)


def _same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_the_increment_values_from_a_store_equal_those_from_the_same_draws_computed_here(tmp_path):
    store = tmp_path / "s.jsonl"
    st.fill_store(P, store)
    direct = pd.concat([ch.nested_hardmax_table([c["n"]], c["head_dims"], n_trials=c["trials"], seed=c["seed"])
                        for c in st.long_configs(P)], ignore_index=True)
    read = st.read_store(store, P)["table"]
    key = ["n", "head_dim", "trial"]
    pd.testing.assert_frame_equal(read.sort_values(key).reset_index(drop=True),
                                  direct.sort_values(key).reset_index(drop=True), check_dtype=False)
    pts = ch.point_summary(ch.saturation_points(direct, fractions=P["fractions"], increment=P["increment"]),
                           boot := ch.curve_bootstrap(direct, n_boot=P["n_boot"], fractions=P["fractions"],
                                                      increment=P["increment"], seed=P["seed"]))
    here = ch.increment_evidence(P, pts, boot)
    stored = ch.increment_evidence({**P, "increment_store": str(store)}, pts.iloc[:0], boot.iloc[:0])
    assert here["source"] == "grid" and stored["source"] == "store"
    crit = "increment < 0.01"
    a = _criterion_keys("x_", crit, {crit: here["laws"]}, here["points"])
    b = _criterion_keys("x_", crit, {crit: stored["laws"]}, stored["points"])
    assert a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a), (a, b)
    assert a["x_n_estimable"] >= 1  # the toy grid reaches the criterion somewhere, so the check bites
    pd.testing.assert_frame_equal(here["points"].reset_index(drop=True), stored["points"].reset_index(drop=True),
                                  check_dtype=False)


def _tables(tmp_path, store):
    Q = {**P, "softmax_ns": [8, 16], "softmax_max_head_dim": 4, "softmax_points_per_octave": 1, "softmax_trials": 2,
         "softmax_rtols": [0.0, 0.001], "increment_store": str(store)}
    return ch.run(Q)


def test_an_empty_store_judges_no_length_and_says_so(tmp_path):
    store = tmp_path / "empty.jsonl"
    store.write_text("")
    H = ch.headline(_tables(tmp_path, store))
    assert H["ch06_inc_n_estimable"] == 0 and H["ch06_inc_held"].startswith("none of the 3 lengths")
    assert H["ch06_inc_scale"] == "long" and H["ch06_inc_points"] == "none yet"
    j = claim_of(ch.CLAIMS, "saturation-increment").judge(H)
    assert j.verdict == INCONCLUSIVE and f"at least {H['ch06_inc_min_draws']} draws" in j.evidence


def test_a_partial_store_gives_the_rule_the_lengths_it_holds(tmp_path):
    store = tmp_path / "s.jsonl"
    st.fill_store({**P, "ns": [8, 16]}, store)
    H = ch.headline(_tables(tmp_path, store))
    assert H["ch06_inc_held"].startswith("2 of the 3 lengths") and "missing: n = 32" in H["ch06_inc_held"]
    assert "(n = 32)" not in H["ch06_inc_points"] and H["ch06_n_total"] == 3
    assert H["ch06_inc_min_draws"] == 256 // 16 and "git revision" in H["ch06_inc_provenance"]


def test_the_long_set_and_the_command_compute_the_grid_the_default_page_reads():
    default = set_parameters(NOTEBOOK, {})
    longset = set_parameters(NOTEBOOK, load_yaml((ROOT / long.LONG_SET).read_text()))  # `lowrank run 06 --scale long`
    command = long.long_parameters(ROOT)
    assert longset["increment_run_store"] is not None and default["increment_store"] == st.LONG_STORE
    keys = {run_key(c) for c in st.long_configs(command)}
    assert ch.run_keys(default) == ch.run_keys(longset) == keys and len(keys) == len(default["ns"])
    units, _ = ch.estimate(longset)
    assert units["nested_long"] == ch.long_units(longset) > 0 and "nested_long" not in ch.estimate(default)[0]
    # the rule's printed sentence names the grid the store holds
    sentence = claim_of(ch.CLAIMS, "saturation-increment").rule_sentence
    configs = ch.long_configs(default)
    for text in (st.LONG_STORE, f"max({default['increment_top_min']}, {default['increment_top_factor']} n)",
                 f"max({default['min_trials']}, {default['increment_rows_per_cell']} // n)",
                 f"{configs[-1]['head_dims'][-1]} at n = {configs[-1]['n']}",
                 f"{configs[0]['trials']} at n = {configs[0]['n']}",
                 f"{configs[-1]['trials']} at n = {configs[-1]['n']}",
                 f"{min(default['ns'])} to {max(default['ns'])}", f"({default['points_per_octave']} per octave)"):
        assert text in sentence, text


def test_the_command_fills_the_grid_its_long_set_states_and_resumes(tmp_path, capsys, monkeypatch):
    (tmp_path / long.LONG_SET).parent.mkdir(parents=True)
    (tmp_path / long.LONG_SET).write_text("\n".join(f"{k}: {P[k]}" for k in st.GRID_PARAMETERS) + "\n")
    monkeypatch.setattr(long, "BOOK_ROOT", tmp_path)
    store = tmp_path / "out" / "s.jsonl"
    assert long.main(["--store", str(store)]) == 0
    assert "3 of 3 lengths" in capsys.readouterr().out
    before = store.read_bytes()
    assert long.main(["--store", str(store)]) == 0 and store.read_bytes() == before
    assert {r["key"] for r in ResultStore(store).records()} == {run_key(c) for c in st.long_configs(P)}


@pytest.mark.parametrize("argv, words", [
    (["--store", "out.txt"], "must name a .jsonl file"),
    ([], "the following arguments are required: --store"),
    (["--store", "foreign.jsonl"], "is not a results store"),
    (["--store", "book/s.jsonl"], "does not state ns"),
])
def test_the_command_refuses_bad_input_with_status_2_and_one_line(tmp_path, capsys, monkeypatch, argv, words):
    (tmp_path / "foreign.jsonl").write_text("someone else's notes\n")
    (tmp_path / long.LONG_SET).parent.mkdir(parents=True)
    (tmp_path / long.LONG_SET).write_text("seed: 0\n")  # a long set that lost its grid
    monkeypatch.setattr(long, "BOOK_ROOT", tmp_path)
    argv = [str(tmp_path / a) if a.endswith("jsonl") else a for a in argv]
    try:
        rc = long.main(argv)
    except SystemExit as e:  # argparse's own refusals
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert (tmp_path / "foreign.jsonl").read_text() == "someone else's notes\n" and not (tmp_path / "book").exists()


@pytest.mark.slow
def test_the_command_exits_2_as_a_process(tmp_path):
    out = subprocess.run([sys.executable, "-m", "lowrank.experiments.rank_saturation.long", "--store",
                          str(tmp_path / "x.csv")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert not (tmp_path / "x.csv").exists()
