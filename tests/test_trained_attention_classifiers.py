"""Chapter 07's classifier study: grid intervals of saturation from synthetic runs, and the three
rules on synthetic evidence reaching every verdict they can return."""
import math

import pandas as pd
import pytest

from lowrank.experiments import trained_attention as ch
from lowrank.experiments.trained_attention import classifier_rules as R
from lowrank.experiments.trained_attention.classifiers import layer_intervals, saturation
from lowrank.experiments.verdicts import CONTRADICTED, INCONCLUSIVE, REPRODUCED, WEAKER, claim_of

DIMS = (1, 2, 4, 8, 16, 32)

# The rules judged as chapter 08 judges them: through the claim, which reads the typed record.
_vit = claim_of(ch.CLAIMS, "minli-vit-plateau").judge
_text = claim_of(ch.CLAIMS, "minli-imdb-plateau").judge
_layers = claim_of(ch.CLAIMS, "minli-layers").judge


def _runs(kind="vit", seeds=4, rank_star=8, acc_star=8, layers=2, layer_stars=None, capped=()):
    """Runs whose accuracy and rank / n step up to their plateau at the given d*, per block."""
    rows, grid = [], []
    for s in range(seeds):
        for d in DIMS:
            grid.append({"kind": kind, "head_dim": d, "seed": s, "dataset": "mnist5k", "corpus": "bbcnews"})
            stars = layer_stars or [rank_star] * layers
            rows.append({"kind": kind, "data": "mnist5k", "head_dim": d, "seed": s, "layers": layers,
                         "plateau": (d, s) not in capped, "test_acc": 0.97 if d >= acc_star else 0.90 + 0.002 * s,
                         "test_acc_se": 0.005, "rank_frac": 0.5 if d >= rank_star else 0.2 + 0.01 * s,
                         "layer_frac": [0.5 if d >= st else 0.2 + 0.01 * s for st in stars]})
    return pd.DataFrame(rows), pd.DataFrame(grid)


def test_saturation_gives_grid_intervals_and_the_accuracy_gap():
    runs, grid = _runs(rank_star=8, acc_star=8)
    p = saturation(runs, grid, "vit")
    assert (p["r_lo"], p["r_hi"]) == (4, 8) and (p["a_lo"], p["a_hi"]) == (4, 8)
    assert p["gap"] <= 0 and p["acc_top"] == pytest.approx(0.97) and p["seeds"] == 4
    # accuracy keeps rising past the rank's saturation: a real gap
    late = saturation(*_runs(rank_star=4, acc_star=16), "vit")
    assert late["gap"] > R.PLATEAU_MARGIN and late["a_lo"] >= late["r_hi"]
    # a rank still rising at the top: open interval
    top = saturation(*_runs(rank_star=32), "vit")
    assert math.isinf(top["r_hi"])
    # one capped run: the grid is incomplete for that seed, so nothing is judged
    assert saturation(*_runs(capped={(4, 1)}), "vit") is None


def test_layer_intervals_per_block():
    seeds, ivals = layer_intervals(*_runs(layer_stars=[4, 16]), "vit")
    assert seeds == 4 and ivals == [(2, 4), (8, 16)]
    assert layer_intervals(*_runs(layers=1), "vit") is None


def _h(key="vit", data="mnist5k", **p):
    base = {"seeds": 5, "acc_top": 0.97, "a_lo": 2, "a_hi": 4, "r_lo": 4, "r_hi": 8, "gap": 0.0, "inc": 0.0,
            "inc_lo": -0.01, "inc_hi": 0.01}
    base.update(p)
    return {f"ch07_cls_{key}_data": data, f"ch07_cls_{key}": R.saturation_record(base),
            f"ch07_cls_{key}_stored": "30 of the 30 runs"}


@pytest.mark.parametrize("rule,key,data,together", [(_vit, "vit", "mnist5k", False),
                                                    (_text, "text", "bbcnews", True)])
def test_the_plateau_rules_reach_every_verdict(rule, key, data, together):
    assert rule(_h(key, data)).verdict == REPRODUCED
    assert rule(_h(key, data, gap=R.PLATEAU_MARGIN)).verdict == REPRODUCED   # at the margin: not beyond it
    beyond = rule(_h(key, data, gap=R.PLATEAU_MARGIN + 0.001))
    assert beyond.verdict == (CONTRADICTED if together else WEAKER)
    # a saturation open at the grid's top contradicts only on a rise over the last doubling wholly above the margin
    m = R.PLATEAU_MARGIN
    assert rule(_h(key, data, r_hi=math.inf, inc=0.05, inc_lo=m + 1e-6, inc_hi=0.09)).verdict == CONTRADICTED
    j = rule(_h(key, data, r_hi=math.inf, inc=0.009, inc_lo=-0.040, inc_hi=0.058))
    assert j.verdict == INCONCLUSIVE and "smallest rise this grid could detect is 0.059" in j.qualifier
    assert "+0.009 (95 % interval -0.040 to +0.058" in j.evidence
    assert rule(_h(key, data, r_hi=math.inf, inc=0.03, inc_lo=m, inc_hi=0.05)).verdict == INCONCLUSIVE  # touching
    assert rule(_h(key, data, r_hi=math.inf, inc=0.0, inc_lo=-0.005, inc_hi=0.005)).verdict == INCONCLUSIVE
    j = rule(_h(key, data, acc_top=R.ACC_FLOOR[data] - 0.001))
    assert j.verdict == INCONCLUSIVE and "not trained well enough" in j.qualifier
    assert rule(_h(key, data, seeds=2)).verdict == INCONCLUSIVE
    empty = {f"ch07_cls_{key}_data": data, f"ch07_cls_{key}": None, f"ch07_cls_{key}_stored": "0 of the 30 runs"}
    assert rule(empty).verdict == INCONCLUSIVE
    assert "d*_rank (hardmax rank / n of the first block) (4, 8]" in rule(_h(key, data)).evidence


def test_the_layer_rule_reaches_every_verdict():
    def h(*sets):
        return {"ch07_cls_layers": list(sets), "ch07_cls_layers_what": "blocks"}
    same = R.layers_record("mnist5k", 5, [(2, 4), (2, 8)], acc_top=0.97)
    apart = R.layers_record("bbcnews", 5, [(1, 2), (4, 8)], acc_top=0.95)
    assert _layers(h(same)).verdict == REPRODUCED
    assert _layers(h(same, apart)).verdict == CONTRADICTED
    # half-open grid intervals that touch, (2, 4] and (4, 8], share no point
    touching = R.layers_record("mnist5k", 5, [(2, 4), (4, 8)], acc_top=0.97)
    assert _layers(h(touching)).verdict == CONTRADICTED
    assert _layers(h(R.layers_record("mnist5k", 5, [(2, 4), (3, 8)], acc_top=0.97))).verdict == REPRODUCED
    j = _layers(h(R.layers_record("mnist5k", 5, [(2, 4), (2, math.inf)], acc_top=0.97)))
    assert j.verdict == INCONCLUSIVE and "does not saturate" in j.qualifier
    assert _layers(h(R.layers_record("mnist5k", 2, [(2, 4), (2, 8)], acc_top=0.97))).verdict == INCONCLUSIVE
    assert _layers(h()).verdict == INCONCLUSIVE


def test_layer_records_are_plain_data_and_the_evidence_shows_an_open_end():
    import ast
    import json
    rec = R.layers_record("mnist5k", 5, [(2, 4), (2, math.inf)], acc_top=0.97)
    assert rec == {"data": "mnist5k", "seeds": 5, "acc_top": 0.97, "intervals": [[2.0, 4.0], [2.0, None]]}
    assert ast.literal_eval(repr(rec)) == rec and json.loads(json.dumps(rec)) == rec
    assert R.layers_text([rec]) == "mnist5k: 5 seeds, accuracy 0.9700, (2, 4] | (2, inf]"
    sat = R.saturation_record({"seeds": 5, "acc_top": 0.97, "a_lo": 2, "a_hi": math.inf, "r_lo": 4, "r_hi": 8,
                               "gap": 0.0, "inc": math.nan, "inc_lo": 0.0, "inc_hi": 0.0})
    assert sat["a_hi"] is None and sat["inc"] is None and ast.literal_eval(repr(sat)) == sat
    j = _vit({"ch07_cls_vit_data": "mnist5k", "ch07_cls_vit": sat, "ch07_cls_vit_stored": "30 runs"})
    assert "d*_acc above 2" in j.evidence


def test_the_layer_rule_reads_no_model_below_its_accuracy_floor():
    def h(*sets):
        return {"ch07_cls_layers": list(sets), "ch07_cls_layers_what": "blocks"}
    floor = R.ACC_FLOOR["bbcnews"]
    apart_low = R.layers_record("bbcnews", 5, [(1, 2), (4, 8)], acc_top=floor - 0.001)
    same = R.layers_record("mnist5k", 5, [(2, 4), (2, 8)], acc_top=0.97)
    # the disjoint blocks of an under-trained model do not decide; the model is named as left out
    j = _layers(h(same, apart_low))
    assert j.verdict == REPRODUCED and "bbcnews (accuracy 0.899 below 0.90)" in j.evidence
    assert _layers(h(same, R.layers_record("bbcnews", 5, [(1, 2), (4, 8)], acc_top=floor))).verdict == CONTRADICTED
    j = _layers(h(apart_low))
    assert j.verdict == INCONCLUSIVE and "trained well enough" in j.qualifier


def test_the_claims_are_the_chapters_and_left_the_inventory():
    from lowrank.experiments.inventory import UNTESTED

    keys = {c.key for c in ch.CLAIMS}
    assert {"minli-vit-plateau", "minli-imdb-plateau", "minli-layers"} <= keys
    assert not keys & {c.key for c in UNTESTED}
    assert all(c.scale_key == "ch07_cls_scale" for c in ch.CLASSIFIER_CLAIMS)


def test_the_figure_and_table_draw_full_and_empty_stores():
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from lowrank.book.plotting import subplots
    from lowrank.book.trained_figures import plot_classifiers
    from lowrank.experiments.trained_attention.plots import classifier_summary

    runs, grid = _runs(layer_stars=[4, 8])
    text_runs, text_grid = _runs(kind="text", layers=4)
    full = {"classifiers": pd.concat([runs, text_runs]), "classifier_grid": pd.concat([grid, text_grid])}
    empty = {"classifiers": pd.DataFrame(), "classifier_grid": full["classifier_grid"]}
    for tables in (full, empty):
        fig, axes = subplots(2, 2)
        data = classifier_summary(tables["classifiers"], head_dims=DIMS)
        plot_classifiers(axes, **data)
        drawn = [bool(ax.get_lines()) for ax in axes.ravel()]
        plt.close(fig)
        assert drawn == [tables is full] * 4
    shown = ch.classifier_status_table(full).data
    assert list(shown["runs stored"]) == ["24 of 24", "24 of 24"] and shown["d_h = 8"].iloc[0] == "0.970 / 0.50"
    assert ch.classifier_status_table(empty).data["runs stored"].tolist() == ["0 of 24", "0 of 24"]
