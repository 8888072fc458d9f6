"""Claims are addressed by key: a claim inserted at the front of a CLAIMS tuple moves no verdict."""
import pytest

from lowrank.experiments.verdicts import MIN_LI, Claim, claim_of


def _claim(key):
    return Claim(key, MIN_LI, "07", "sec-x", "A statement", None, untested="a test")


def test_claim_of_finds_a_claim_by_key_wherever_it_stands():
    a, b = _claim("first-claim"), _claim("second-claim")
    assert claim_of((a, b), "second-claim") is b and claim_of((b, a), "second-claim") is b


def test_claim_of_names_the_key_and_the_keys_known():
    with pytest.raises(KeyError, match="no claim 'third-claim'; known claims: first-claim, second-claim"):
        claim_of((_claim("first-claim"), _claim("second-claim")), "third-claim")
    with pytest.raises(KeyError, match="known claims: none"):
        claim_of((), "any")


def test_every_verdict_key_names_a_claim_of_its_chapter():
    from lowrank.experiments import rank_barrier, trained_attention
    for module in (rank_barrier.rules, trained_attention):
        keys = [c.key for c in module.CLAIMS]
        assert set(module.VERDICT_CLAIMS.values()) <= set(keys)
        assert len(set(module.VERDICT_CLAIMS.values())) == len(module.VERDICT_CLAIMS)


def test_chapter_07_verdicts_follow_their_claims_keys_not_their_places(monkeypatch):
    """Judged on the values chapter 07 glued (as chapter 08 reads them), with a claim inserted at the
    front of CLAIMS: every verdict is the one its own claim gives."""
    from pathlib import Path

    from lowrank.experiments import trained_attention as ch
    from lowrank.core.glued import read_glue

    values = read_glue(Path(__file__).resolve().parents[1] / "chapters" / "07_trained_attention.ipynb")
    before = ch.verdict_values(values)
    for name, key in ch.VERDICT_CLAIMS.items():
        j = claim_of(ch.CLAIMS, key).judge(values)
        assert before[f"ch07_verdict_{name}"] == j.label and before[f"ch07_verdict_{name}_word"] == j.verdict
        # the glued verdicts are the ones the glued evidence gives: the typed records survive the glue
        assert values[f"ch07_verdict_{name}"] == j.label and values[f"ch07_verdict_{name}_word"] == j.verdict
    monkeypatch.setattr(ch, "CLAIMS", (_claim("decoy-first"),) + ch.CLAIMS[::-1])
    assert ch.verdict_values(values) == before


def test_chapter_07_glues_its_records_as_plain_data():
    """The records its rules read come back from the glue as lists and dicts of plain values, and
    write as strict JSON (no nan, no inf)."""
    import json
    from pathlib import Path

    from lowrank.core.glued import read_glue

    values = read_glue(Path(__file__).resolve().parents[1] / "chapters" / "07_trained_attention.ipynb")
    keys = ["ch07_red_single", "ch07_red_pair", "ch07_trr_points", "ch07_mla_bound", "ch07_mla_saturation",
            "ch07_cls_vit", "ch07_cls_text", "ch07_cls_layers", "ch07_pm_mpnet_cut_points",
            "ch07_pm_smollm2_cut_points"]
    for key in keys:
        v = values[key]
        assert v is None or isinstance(v, (list, dict)), key
        assert json.loads(json.dumps(v, allow_nan=False)) == v, key
    assert all(isinstance(values[f"ch07_verdict_{name}_word"], str) for name in ("mechanism", "layers", "mla"))
