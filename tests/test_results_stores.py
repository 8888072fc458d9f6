"""Every committed results store (data/results/*.jsonl): each record is keyed by the hash of its
config and carries its provenance and wall time. Each store's own checks (its grid, its rules
commit, re-running its cheapest run) are in its chapter's store test."""
import pytest

from lowrank.stores.sweep import ResultStore
from lowrank.train import run_key

from helpers import PROVENANCE_FIELDS, RESULTS

STORES = sorted(RESULTS.glob("*.jsonl"))


@pytest.mark.parametrize("store", STORES or [pytest.param(None, id="no-stores")], ids=lambda p: getattr(p, "stem", None))
def test_every_record_is_keyed_by_its_config_with_provenance_and_wall_time(store):
    assert store is not None, f"no results store in {RESULTS}: the book's long runs are committed there"
    # a store committed before its long run holds no record yet; its chapter's store test says
    # whether it may be empty
    for r in ResultStore(store).records():
        assert run_key(r["config"]) == r["key"], f"record {r['key']}: the key is not the hash of its config"
        prov = r.get("provenance")
        assert isinstance(prov, dict), f"record {r['key']} has no provenance"
        missing = [f for f in PROVENANCE_FIELDS if not (isinstance(prov.get(f), str) and prov[f])]
        assert not missing, f"record {r['key']} lacks provenance {missing}"
        assert isinstance(r.get("wall_s"), float) and r["wall_s"] > 0, f"record {r['key']} has no wall time"
