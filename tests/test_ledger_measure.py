"""A claim's fingerprint covers its measure as well as its rule: a change to how the values are
computed is recorded like a change to how they are judged."""
from lowrank.experiments import ledger as L
from lowrank.experiments.rule_source import walk
from lowrank.experiments.synthesis import collect_claims


def _numeric(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def test_a_constant_only_the_measure_reads_moves_the_claims_fingerprint(monkeypatch):
    claim = next(c for c in collect_claims().claims if c.key == "mla-logit-bound")
    reached = walk(claim.rule, claim.measure)
    only = [k for k, v in reached.constants.items() if _numeric(v) and k not in walk(claim.rule).constants]
    assert only, "mla-logit-bound's measure reads a threshold of its own"
    before = L.claim_fingerprint(claim)
    assert before == L.fingerprint(claim.rule, claim.measure) != L.fingerprint(claim.rule)
    holder, name = reached.owners[only[0]]
    monkeypatch.setattr(holder, name, reached.constants[only[0]] * 2 + 1)
    assert L.claim_fingerprint(claim) != before
