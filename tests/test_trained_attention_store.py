"""Chapter 07's committed long-scale store: every record carries provenance and was trained from a
checkout that already held the rules judging it, every retrieval run records its plateau status,
and the cheapest stored retrieval run, re-run in full with today's code, matches what is stored.

A code change that changes what a run computes fails here (DESIGN.md section 3). The store must
exist: a missing store fails (no silent skip), since the chapter reads it at the default scale.
"""
import math
from pathlib import Path

import pytest
import torch
import yaml

from lowrank.experiments import ledger
from lowrank.experiments import trained_attention as ch
from lowrank.experiments.trained_attention.classifiers import CLASSIFIER_EXPERIMENT, classifier_run
from lowrank.core.provenance import cpu_name
from lowrank.tasks.retrieval import train_retrieval

from helpers import store_records

STORE = Path(__file__).resolve().parents[1] / ch.LONG_STORE
# Re-run tolerance. Same code, seed and thread count give the same float32 arithmetic on one
# machine; another CPU may round differently, so allow 0.005 of accuracy (a few binomial standard
# errors of a 10,000-sequence test set) and 2 % of the test loss.
ACC_TOL, LOSS_REL_TOL = 0.005, 0.02
# The grid's own step cap, from the parameter set that wrote the store.
GRID_CAP = yaml.safe_load((STORE.parents[2] / "chapters/params/long/07_trained_attention.yaml").read_text())[
    "retrieval_max_steps"]


def _records():
    return store_records(STORE)


def test_the_store_holds_the_retrieval_runs():
    assert ch.RETRIEVAL_EXPERIMENT in {r["experiment"] for r in _records()}


def _rule_before_data(claim):
    """The claim's newest ledger event recorded before its data were seen (else its registration):
    later amendments made with the data in view (wording, a change of what the fingerprint covers)
    are in the ledger, marked as such, and change no record."""
    events = [e for e in ledger.read_ledger() if e.claim == claim]
    unseen = [e for e in events if not e.data_seen]
    return unseen[-1] if unseen else events[0]


# The claims each experiment's records are judged by: a record must descend from every one's rule.
JUDGED_BY = {
    ch.RETRIEVAL_EXPERIMENT: ("minli-model-reduction",),
    ch.TRUNCATION_EXPERIMENT: ("minli-truncation",),
    CLASSIFIER_EXPERIMENT: ("minli-vit-plateau", "minli-imdb-plateau", "minli-layers"),
}


def test_records_come_from_a_clean_checkout_holding_their_rules():
    rules = {c: _rule_before_data(c) for claims in JUDGED_BY.values() for c in claims}
    for r in _records():
        rev = r["provenance"]["git_revision"]
        assert not rev.endswith("+dirty"), f"record {r['key']} was trained from a modified checkout ({rev})"
        assert r["experiment"] in JUDGED_BY, f"record {r['key']}: no claim judges experiment {r['experiment']!r}"
        for claim in JUDGED_BY[r["experiment"]]:
            after = ledger.committed_after(rules[claim], rev)
            assert after is not False, f"record {r['key']} ({rev}) predates the rule of {claim} that judges it"


def test_every_retrieval_run_records_its_plateau_status():
    for r in _records():
        if r["experiment"] != ch.RETRIEVAL_EXPERIMENT:
            continue
        m, c = r["metrics"], r["config"]
        assert isinstance(m["plateau"], bool) and c["plateau_tol"] == ch.PLATEAU_TOL
        assert m["stable_steps"] <= c["max_steps"] and (m["plateau"] or m["stable_steps"] == c["max_steps"])
        assert m["plateau"] == (m["plateau_change"] < c["plateau_tol"])


@pytest.mark.slow
def test_cheapest_stored_retrieval_run_reproduces():
    recs = [r for r in _records() if r["experiment"] == ch.RETRIEVAL_EXPERIMENT]
    cheapest = min(recs, key=lambda r: r["metrics"]["steps_run"] * r["config"]["n"])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the store was written with one thread
    try:
        m = train_retrieval(cheapest["config"])
    finally:
        torch.set_num_threads(threads)
    stored = cheapest["metrics"]
    assert (m["plateau"], m["stable_steps"]) == (stored["plateau"], stored["stable_steps"]), cheapest["config"]
    assert abs(m["test_acc"] - stored["test_acc"]) <= ACC_TOL, (m["test_acc"], stored["test_acc"], cheapest["config"])
    assert math.isclose(m["test_loss"], stored["test_loss"], rel_tol=LOSS_REL_TOL, abs_tol=1e-6), (
        m["test_loss"], stored["test_loss"])
    assert m["hardmax_rank"] == pytest.approx(stored["hardmax_rank"], abs=0.05 * cheapest["config"]["n"])


@pytest.mark.slow
def test_cheapest_stored_classifier_run_reproduces():
    """On the CPU model that wrote it, the run reproduces to its step and float tolerance. A run of
    several thousand steps through MKL's vendor-specific kernels does not survive a change of CPU
    vendor bit for bit, so on another CPU it must land inside the spread of its own config's seeds
    (the store's other seeds bound what a correct engine produces), which a broken engine would not."""
    recs = [r for r in _records() if r["experiment"] == CLASSIFIER_EXPERIMENT]
    if not recs:
        pytest.skip("the store holds no classifier run yet")
    cheapest = min(recs, key=lambda r: r["wall_s"])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the store was written with one thread
    try:
        m = classifier_run(cheapest["config"])
    finally:
        torch.set_num_threads(threads)
    stored = cheapest["metrics"]
    assert m["plateau"] == stored["plateau"], cheapest["config"]
    assert m["hardmax_rank"] == pytest.approx(stored["hardmax_rank"], rel=0.05)
    if cheapest["provenance"].get("cpu") == cpu_name():
        assert m["steps_run"] == stored["steps_run"], cheapest["config"]
        assert abs(m["test_acc"] - stored["test_acc"]) <= ACC_TOL + 3 * stored["test_acc_se"], (
            m["test_acc"], stored["test_acc"], cheapest["config"])
        assert math.isclose(m["test_loss"], stored["test_loss"], rel_tol=LOSS_REL_TOL, abs_tol=1e-6), (
            m["test_loss"], stored["test_loss"])
        return
    same = _seeds_of(recs, cheapest["config"])
    assert len(same) >= 3, "too few seeds of this config to bound a run on another CPU"
    for key, slack in (("steps_run", cheapest["config"]["eval_every"] * cheapest["config"]["patience"]),
                       ("test_acc", ACC_TOL + 3 * stored["test_acc_se"]),
                       ("test_loss", LOSS_REL_TOL * stored["test_loss"])):
        values = [r["metrics"][key] for r in same]
        assert min(values) - slack <= m[key] <= max(values) + slack, (key, m[key], sorted(values))


def _seeds_of(recs: list[dict], config: dict) -> list[dict]:
    """The records whose config differs from ``config`` in the seed only."""
    def bare(c):
        return {k: v for k, v in c.items() if k != "seed"}
    return [r for r in recs if bare(r["config"]) == bare(config)]


def test_runs_past_the_cap_descend_from_the_cap_extension():
    """A retrieval run with a step cap above the grid's was trained under the cap extension, so its
    checkout must hold the first ledger event that names EXTENDED_CAP (registered before any such run)."""
    events = [e for e in ledger.read_ledger() if e.claim == "minli-model-reduction"]
    first_cap = next(e for e in events if e.thresholds.get("EXTENDED_CAP") == ch.EXTENDED_CAP)
    for r in _records():
        if r["experiment"] != ch.RETRIEVAL_EXPERIMENT or int(r["config"]["max_steps"]) <= GRID_CAP:
            continue
        assert int(r["config"]["max_steps"]) == ch.EXTENDED_CAP, f"record {r['key']}: cap {r['config']['max_steps']}"
        after = ledger.committed_after(first_cap, r["provenance"]["git_revision"])
        assert after is not False, f"record {r['key']} predates the cap extension"
