"""Chapter 07's claims on two more models: every rule reaches every verdict on synthetic evidence;
the store's tables, the headline and the model-by-claim table from synthetic records."""
import math

import pytest

from lowrank.experiments.trained_attention import model_rules as mr
from lowrank.experiments.verdicts import CONTRADICTED, INCONCLUSIVE, REPRODUCED, WEAKER, claim_of


def _cuts(*points):
    """(n, prev, r) per n, as the records the headline carries."""
    return mr.cut_records([dict(zip(("n", "prev", "r"), q)) for q in points])


def _judge(parent, model):
    """The model's claim extending ``parent``, judged as chapter 08 judges it: through its typed record."""
    return claim_of(mr.MODEL_CLAIMS, f"{parent}-{model}").judge


def _h(model, **kw):
    p = f"ch07_pm_{model}_"
    base = {"dh": 64, "logit_maps": 100, "logit_min": 64, "logit_max": 64, "heads_n": 144, "head_lo": 0.60,
            "head_hi": 0.62, "ref": 0.632, "above_lo": 0.0, "above_hi": 0.03, "n_max": 512, "windows": 8,
            "head_mean": 0.61, "above": 1, "cut_points": _cuts((64, 1, 2), (128, 2, 4))}
    base.update(kw)
    return {p + k: v for k, v in base.items()}


@pytest.mark.parametrize("model", ["mpnet", "smollm2"])
def test_logit_bound_reaches_every_verdict(model):
    rule = _judge("bhojanapalli-trained-logit-rank", model)
    assert rule(_h(model)).verdict == REPRODUCED
    assert rule(_h(model, logit_max=65)).verdict == CONTRADICTED
    assert rule(_h(model, logit_maps=0)).verdict == INCONCLUSIVE


@pytest.mark.parametrize("model", ["mpnet", "smollm2"])
def test_barrier_reaches_every_verdict(model):
    rule = _judge("minli-trained-barrier", model)
    assert rule(_h(model)).verdict == REPRODUCED
    assert rule(_h(model, head_lo=0.2, head_hi=0.3)).verdict == WEAKER
    assert rule(_h(model, above_lo=0.2, above_hi=0.4)).verdict == CONTRADICTED
    assert rule(_h(model, head_lo=0.55, head_hi=0.62)).verdict == INCONCLUSIVE
    assert rule(_h(model, heads_n=1)).verdict == INCONCLUSIVE
    assert ("causal analogue" in rule(_h(model)).evidence) is (model == "smollm2")


@pytest.mark.parametrize("model", ["mpnet", "smollm2"])
def test_truncation_reaches_every_verdict(model):
    rule = _judge("minli-truncation", model)
    assert rule(_h(model)).verdict == REPRODUCED
    assert rule(_h(model, cut_points=_cuts((64, 16, 32), (128, 16, 32)))).verdict == WEAKER
    assert rule(_h(model, cut_points=_cuts((64, 16, 32), (128, 32, 64)))).verdict == CONTRADICTED
    assert rule(_h(model, cut_points=[])).verdict == INCONCLUSIVE
    assert 2 * math.log(64) < 16  # the weaker case above lies above 2 ln n


def test_a_model_the_store_lacks_is_judged_inconclusive():
    """Its values are NaN (its cut points ""): every record reads them and every rule says what is missing."""
    import pandas as pd

    from lowrank.experiments.trained_attention.pretrained_models import models_headline

    empty = pd.DataFrame(columns=["model"])
    h = models_headline({"models_ranks": empty, "models_cut": empty, "models_meta": empty})
    assert all(c.judge(h).verdict == INCONCLUSIVE for c in mr.MODEL_CLAIMS)


def test_every_model_claim_names_its_parent_and_glue_key():
    keys = {mr.verdict_key(c) for c in mr.MODEL_CLAIMS}
    assert len(keys) == 6 and all(c.model_of in mr.VERDICT_SHORT for c in mr.MODEL_CLAIMS)
    assert all(c.scale_key == "ch07_pm_scale" for c in mr.MODEL_CLAIMS)


def test_cut_records_are_plain_data():
    import ast
    import json
    pts = [{"n": 64, "prev": 1, "r": 2}, {"n": 128, "prev": 32, "r": 64}]
    recs = mr.cut_records(pts)
    assert recs == pts and ast.literal_eval(repr(recs)) == recs and json.loads(json.dumps(recs)) == recs


# --- the committed store, its estimate, the chapter's tables ------------------------------------

from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "data" / "results" / "07_pretrained_models_long.jsonl"


def _long_params():
    import yaml

    p = yaml.safe_load((ROOT / "chapters" / "params" / "long" / "07_trained_attention.yaml").read_text())
    return {**p, "seed": p.get("seed", 0)}


def _records():
    from lowrank.experiments.trained_attention.pretrained_models import models_configs
    from lowrank.experiments.trained_attention.runs import models_arguments
    from lowrank.stores.sweep import ResultStore
    from lowrank.train import run_key

    want = {run_key(c) for c in models_configs(**models_arguments(_long_params()))}
    return [r for r in ResultStore(STORE).records() if r["key"] in want], want


def test_the_store_holds_the_long_grid_with_provenance():
    recs, want = _records()
    assert {r["key"] for r in recs} == want
    for r in recs:
        assert r["provenance"]["git_revision"] and r["provenance"]["code_hash"] and r["wall_s"] > 0


def test_the_estimate_is_within_3x_of_the_stores_measured_time():
    from lowrank.experiments.trained_attention.estimate import models_seconds

    recs, _ = _records()
    measured = sum(r["wall_s"] for r in recs)
    estimated = models_seconds(_long_params())
    assert measured / 3 <= estimated <= 3 * measured, (estimated, measured)
    assert models_seconds({**_long_params(), "models_run": False}) == 0


def test_the_default_scale_reads_the_store_and_every_model_claim_is_judged():
    from lowrank.experiments.trained_attention import MODEL_CLAIMS, model_claim_table, models_cut_display
    from lowrank.experiments.trained_attention.model_rules import verdict_key
    from lowrank.experiments.trained_attention.pretrained_models import models_configs, models_headline, run_models
    from lowrank.experiments.trained_attention.runs import models_arguments

    p = {**_long_params(), "models_run": False}
    t = run_models(models_configs(**models_arguments(p)), run=False)
    h = models_headline(t)
    assert h["ch07_pm_scale"] == "long" and h["ch07_pm_smollm2_causal"] is True
    assert h["ch07_pm_mpnet_causal"] is False and h["ch07_pm_smollm2_kv"] == 3
    for c in MODEL_CLAIMS:
        j = c.judge(h)
        h[verdict_key(c)], h[verdict_key(c) + "_word"] = j.label, j.verdict
    assert all(h[verdict_key(c) + "_word"] != "inconclusive" or "no" in h[verdict_key(c)] for c in MODEL_CLAIMS)
    h.update({"ch07_mini_dh": 32, "ch07_verdict_mechanism_word": "reproduced", "ch07_logit_range": "exactly 32",
              "ch07_verdict_barrier_word": "x", "ch07_head_mean": 0.2, "ch07_barrier": 0.63, "ch07_n_max": 512,
              "ch07_verdict_truncation_word": "y", "ch07_trr_text": "z"})
    table = model_claim_table(h)
    # the verdict word comes from its own value, never cut from a label
    assert table.loc["all-MiniLM-L6-v2"].iloc[1].startswith("reproduced: ")
    first = next(c for c in MODEL_CLAIMS if c.key.endswith("-mpnet") and c.model_of == "minli-truncation")
    assert table.loc["all-mpnet-base-v2"].iloc[3].startswith(h[verdict_key(first) + "_word"] + " (")
    assert list(table.index) == ["all-MiniLM-L6-v2", "all-mpnet-base-v2", "SmolLM2-135M-Instruct"]
    assert "does not apply (causal)" in table.loc["SmolLM2-135M-Instruct"].iloc[2]
    assert "does not apply" not in table.loc["all-mpnet-base-v2"].iloc[2]
    assert len(models_cut_display(t).data) == len(t["models_cut"])


def test_the_long_command_refuses_the_committed_store(capsys):
    from lowrank.experiments.trained_attention.measure_models import main

    assert main(["--store", str(STORE)]) == 2
    assert "never written" in capsys.readouterr().err


def test_chapter_08_counts_a_claim_once_and_names_its_other_models():
    from types import SimpleNamespace

    from lowrank.experiments.claims import ChapterSource, collect_claims
    from lowrank.experiments.synthesis import judge_claims, verdict_counts
    from lowrank.experiments.verdicts import MIN_LI, PRETRAINED, Claim, Judgement

    def parent(h):
        """Parent rule."""
        return Judgement(REPRODUCED, f"MiniLM {h['ch07_x']}")

    def child(h):
        """Child rule."""
        return Judgement(CONTRADICTED, f"decoder {h['ch07_x']}")

    claims = (Claim("p-claim", MIN_LI, "07", "sec-a", "A claim", parent, kind=PRETRAINED),
              Claim("p-claim-smollm2", MIN_LI, "07", "sec-a", "A claim (SmolLM2-135M-Instruct)", child,
                    kind=PRETRAINED, model_of="p-claim", model="SmolLM2-135M-Instruct"))
    src = ChapterSource("07", "07_trained_attention", "fake")
    col = collect_claims([src], load=lambda name: SimpleNamespace(CLAIMS=claims), untested=())
    rows = judge_claims(col, {"ch07_x": 1})
    assert [r.key for r in rows] == ["p-claim"] and rows[0].verdict == REPRODUCED
    assert "SmolLM2-135M-Instruct" in rows[0].evidence and "contradicted" in rows[0].evidence
    assert verdict_counts(rows)[REPRODUCED] == 1 and verdict_counts(rows)[CONTRADICTED] == 0


def test_the_real_pretrained_rows_name_their_models():
    from lowrank.experiments.claims import collect_claims

    col = collect_claims()
    extended = {c.model_of for c in col.claims if c.model_of}
    assert extended == {"bhojanapalli-trained-logit-rank", "minli-trained-barrier", "minli-truncation"}
    keys = {c.key for c in col.claims}
    assert extended <= keys


def test_every_key_a_model_rule_reads_is_a_headline_key():
    from lowrank.experiments import trained_attention as ch

    for c in mr.MODEL_CLAIMS:
        model = c.key.rsplit("-", 1)[1]
        keys = c.evidence.keys().values()
        assert keys
        for k in keys:
            assert k.startswith(f"ch07_pm_{model}_") and k in ch.HEADLINE_KEYS, k


@pytest.mark.slow
def test_the_cheapest_stored_measurement_is_reproduced():
    """MPNet's ranks measured again (about 1.5 CPU minutes; needs make models) match the stored record."""
    from lowrank.data import pretrained_models as pm
    from lowrank.experiments.trained_attention.pretrained_models import models_run

    try:
        pm.verify_model("mpnet")
    except Exception:
        pytest.skip("all-mpnet-base-v2 is not fetched (make models)")
    recs, _ = _records()
    stored = next(r for r in recs if r["config"]["model"] == "mpnet" and r["config"]["part"] == "ranks")
    again = models_run(stored["config"])
    for col in ("n", "layer", "head", "logit_max", "logit_min", "hard", "windows"):
        assert again["per_head"][col] == stored["metrics"]["per_head"][col], col
    assert again["per_head"]["a_rank"] == pytest.approx(stored["metrics"]["per_head"]["a_rank"], abs=0.25)
