"""Chapter 06's committed long-scale increment store: every record is a length of the long grid with
its provenance, was computed from a clean checkout holding the rule that judges it, and the cheapest
record, recomputed by today's code, gives the same ranks (integers: same config, same numbers).

The store is committed empty and filled by the long run; while it is empty the checks on its
records skip (the chapter then reads no length and says so). A missing store fails.
"""
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lowrank.experiments import ledger
from lowrank.experiments import rank_saturation as ch
from lowrank.experiments.rank_saturation import long, store as st
from lowrank.stores.sweep import ResultStore
from lowrank.train import run_key

from helpers import PROVENANCE_FIELDS

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / st.LONG_STORE
CLAIM = "saturation-increment"


def _records():
    assert STORE.is_file(), f"the committed store {STORE} is missing: restore it from git (it is not regenerated here)"
    recs = ResultStore(STORE).records()
    if not recs:
        pytest.skip(f"{STORE.name} holds no record yet: fill it with `{st.LONG_COMMAND}`")
    return recs


def test_every_record_is_a_length_of_the_long_grid_with_its_provenance():
    keys = {run_key(c) for c in st.long_configs(long.long_parameters(ROOT))}
    for r in _records():
        assert r["experiment"] == st.EXPERIMENT and r["key"] in keys, (
            f"record of n = {r['config'].get('n')} is not a length of the long grid "
            "(chapters/params/long/06_rank_saturation.yaml)")
        assert isinstance(r.get("wall_s"), float) and r["wall_s"] > 0
        missing = [f for f in PROVENANCE_FIELDS if not (isinstance(r["provenance"].get(f), str) and r["provenance"][f])]
        assert not missing, f"record of n = {r['config']['n']} lacks provenance {missing}"
        R = st.decode_ranks(r["metrics"])
        assert R.shape == (len(r["config"]["head_dims"]), r["config"]["trials"])
        assert R.min() >= 1 and R.max() <= r["config"]["n"]


def _amendment() -> str:
    """The commit that recorded the rule the store is judged by: the increment rule's ledger event
    that registered the long grid, the one that names the store (later amendments, recorded while
    the rule is today's, change how it is fingerprinted or worded, not what the store holds)."""
    events = [e for e in ledger.read_ledger() if e.claim == CLAIM]
    claim = next(c for c in ch.CLAIMS if c.key == CLAIM)
    naming = [e for e in events if st.LONG_STORE in e.reason]
    if not naming or events[-1].fingerprint != ledger.claim_fingerprint(claim):
        pytest.skip(f"the amendment of {CLAIM} that registers the long grid is not recorded yet")
    commit = ledger.event_commit(naming[-1])
    if not commit:
        pytest.skip("git history not available")
    return commit


def test_every_record_was_computed_from_a_clean_checkout_holding_the_amended_rule():
    recs = _records()
    commit = _amendment()
    for r in recs:
        rev = r["provenance"]["git_revision"]
        assert not rev.endswith("+dirty"), f"record of n = {r['config']['n']} was computed from a modified checkout"
        ok = subprocess.run(["git", "merge-base", "--is-ancestor", commit, rev], cwd=ROOT,
                            capture_output=True).returncode == 0
        assert ok, f"record of n = {r['config']['n']} was computed at {rev[:10]}, before the rule's amendment {commit}"


@pytest.mark.slow
def test_the_cheapest_record_is_reproduced_exactly_by_todays_code():
    cheapest = min(_records(), key=lambda r: r["config"]["n"])
    got = st.run_length(cheapest["config"])
    want, have = st.decode_ranks(cheapest["metrics"]), st.decode_ranks(got)
    differ = int((want != have).sum())
    assert differ == 0, (f"recomputed n = {cheapest['config']['n']}: {differ} of {want.size} ranks differ from "
                         f"{STORE.name}; the code no longer reproduces the store: rerun `{st.LONG_COMMAND}` into a new "
                         "store and commit it")
    assert np.array_equal(want, have)
