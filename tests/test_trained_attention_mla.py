"""Chapter 07's trained MLA language models: the evidence, the two rules on synthetic evidence
reaching every verdict, the claims, the figure and table."""
import math

import matplotlib
import pandas as pd
import pytest

from lowrank.experiments import trained_attention as ch
from lowrank.experiments.trained_attention import latent_rules as R
from lowrank.experiments.verdicts import (BOOK, CONTRADICTED, INCONCLUSIVE, MIN_LI, REPRODUCED, PROOF_CHECK, TRAINING,
                                          WEAKER, claim_of)

matplotlib.use("Agg")

# The rules judged as chapter 08 judges them: through the claim, which reads the typed record.
_bound_rule = claim_of(ch.CLAIMS, "mla-logit-bound-trained").judge
_sat_rule = claim_of(ch.CLAIMS, "minli-mla-trained").judge


def _heads(fracs, *, n=10, bound=6, logit=6, heads=2):
    """A head table: fracs {kv_latent: [hardmax rank / n per seed]}, every head and one window alike."""
    rows = []
    for lat, per_seed in fracs.items():
        for seed, f in enumerate(per_seed):
            for j in range(heads):
                rows.append({"layer": 0, "head": j, "window": 0, "n": n, "logit_rank": logit, "bound": bound,
                             "hardmax_rank": round(f * n), "kv_latent": lat, "seed": seed})
    return pd.DataFrame(rows)


def _runs(fracs, loss=4.0):
    return pd.DataFrame([{"kv_latent": lat, "seed": s, "val_loss": loss, "val_acc": 0.2, "test_loss": loss,
                          "test_acc": 0.2, "n_params": 1, "vocab_size": 512, "wall_s": 1.0}
                         for lat, per in fracs.items() for s in range(len(per))])


def _grid(fracs):
    return pd.DataFrame([{"corpus": "shakespeare", "d_model": 32, "n_layers": 1, "n_heads": 2, "head_dim": 16,
                          "rope_dim": 4, "seq_len": 10, "steps": 5, "seed": s, "kv_latent": lat}
                         for lat, per in fracs.items() for s in range(len(per))])


def test_paired_saturation_pairs_by_seed():
    fr = {2: [0.3, 0.4, 0.5], 4: [0.5, 0.6, 0.7], 8: [0.5, 0.6, 0.7]}
    s = ch.paired_saturation(_heads(fr))
    assert s["seeds"] == 3 and (s["latent_first"], s["latent_prev"], s["latent_last"]) == (2, 4, 8)
    # every seed rises by 0.2 and is flat over the last step: zero-width paired intervals
    assert s["rise"] == pytest.approx(0.2) and s["rise_lo"] == pytest.approx(0.2)
    assert s["increment"] == pytest.approx(0.0) and s["increment_hi"] == pytest.approx(0.0)


def _headline(fr, **kw):
    t = {"mla_runs": _runs(fr, kw.pop("loss", 4.0)), "mla_heads": _heads(fr, **kw), "mla_grid": _grid(fr)}
    h = ch.latent_headline(t)
    assert set(h) == set(ch.LATENT_KEYS)
    return h


def test_bound_rule_reaches_every_verdict():
    fr = {2: [0.5, 0.5, 0.5], 4: [0.6, 0.6, 0.6]}
    j = _bound_rule(_headline(fr))
    assert j.verdict == REPRODUCED and "+0" in j.evidence and "100% of the heads" in j.evidence
    assert "at CPU scale, on Shakespeare" in j.evidence
    assert _bound_rule(_headline(fr, logit=7)).verdict == CONTRADICTED
    h = _headline(fr)
    h["ch07_mla_bound"] = None
    assert _bound_rule(h).verdict == INCONCLUSIVE


def _sat(**kw):
    base = dict(seeds=3, latent_first=2, latent_prev=16, latent_last=32, rise=0.1, rise_lo=0.05, rise_hi=0.15,
                increment=0.001, increment_lo=-0.004, increment_hi=0.006, loss=4.0, uniform=math.log(512))
    h = _headline({2: [0.5] * 3, 4: [0.5] * 3})
    h["ch07_mla_saturation"] = R.saturation_record({**base, **kw})
    return _sat_rule(h)


def test_saturation_rule_reaches_every_verdict():
    assert _sat().verdict == REPRODUCED
    assert _sat(increment=0.05, increment_lo=0.02, increment_hi=0.08).verdict == WEAKER
    j = _sat(increment=0.01, increment_lo=-0.01, increment_hi=0.03)
    assert j.verdict == INCONCLUSIVE and "0.01" in j.qualifier
    assert _sat(rise=-0.1, rise_lo=-0.15, rise_hi=-0.05).verdict == CONTRADICTED
    assert _sat(rise=0.01, rise_lo=-0.02, rise_hi=0.04).verdict == INCONCLUSIVE
    assert "fewer than 3" in _sat(seeds=2).qualifier
    assert "not trained" in _sat(loss=5.8).qualifier
    # the headline's own evidence: flat ranks give a rise interval of zero width at 0, not detectable
    h = _headline({2: [0.5] * 3, 4: [0.5] * 3})
    assert _sat_rule(h).verdict == INCONCLUSIVE


def test_the_claims_are_registered_in_the_chapter():
    keys = {c.key: c for c in ch.CLAIMS}
    assert keys["mla-logit-bound-trained"].paper == BOOK and keys["minli-mla-trained"].paper == MIN_LI
    for c in ch.LATENT_CLAIMS:
        assert c.section == "sec-ch07-mla" and "at CPU scale, on Shakespeare" in c.statement
    # the logit bound holds for any weights: a proof check wherever it is measured, never training evidence
    assert keys["mla-logit-bound-trained"].kind == PROOF_CHECK and keys["minli-mla-trained"].kind == TRAINING
    assert {"ch07_verdict_mla", "ch07_verdict_mla_bound"} <= set(ch.HEADLINE_KEYS)
    assert set(ch.LATENT_KEYS) <= set(ch.HEADLINE_KEYS)


def test_figure_and_table_draw():
    import matplotlib.pyplot as plt
    fr = {2: [0.3, 0.4, 0.5], 4: [0.5, 0.6, 0.7], 8: [0.5, 0.6, 0.7]}
    t = {"mla_runs": _runs(fr), "mla_heads": _heads(fr), "mla_grid": _grid(fr)}
    fig, axes = plt.subplots(1, 2)
    from lowrank.book.trained_figures import plot_latent
    from lowrank.experiments.trained_attention.plots import mla_summary
    plot_latent(axes, **mla_summary(t["mla_runs"], t["mla_heads"]))
    assert axes[0].get_legend_handles_labels()[1][0].startswith("bound")
    plt.close(fig)
    html = ch.latent_table(t).to_html()
    assert "kv_latent" in html and "rtol=max(m,n)eps" in html


def test_a_tiny_grid_trains_and_is_read():
    cfgs = ch.latent_configs(kv_latents=[2, 4], seeds=1, seed=7, head_dim=4, rope_dim=2, d_model=8, n_heads=2,
                             n_layers=1, seq_len=8, steps=3, batch_size=2, lr=1e-3)
    assert [c["kv_latent"] for c in cfgs] == [2, 4] and all(c["attention"] == "mla" for c in cfgs)
    t = ch.run_latent(cfgs, rank_windows=2)
    heads = t["mla_heads"]
    assert len(t["mla_runs"]) == 2 and len(heads) == 2 * 2 * 2
    assert (heads.logit_rank <= heads.bound).all() and set(heads.bound) == {4, 6}
