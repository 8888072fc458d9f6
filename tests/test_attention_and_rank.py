"""Chapter 01's computations at tiny sizes: headline keys and values."""
import math

import pytest

from lowrank.book import theory_figures, theory_tables
from lowrank.experiments import attention_and_rank as AR
from lowrank.experiments.registry import validate

SMALL = dict(seed=0, n=12, head_dims=[1, 2, 16], n_trials=3, scales=[1.0, 8.0], rtols=[0.0, 1e-3],
             d_model=64, seq_lens=[8])


@pytest.fixture(scope="module")
def tables():
    return AR.run(validate("01_attention_and_rank", SMALL))


def test_headline_keys_and_values(tables):
    h = AR.headline(tables)
    assert tuple(h) == AR.HEADLINE_KEYS and all(k.startswith("ch01_") for k in h)
    assert h["ch01_n"] == 12 and h["ch01_d_model"] == 64 and h["ch01_dh_min"] == 1
    assert h["ch01_logit_excess"] <= 0 and h["ch01_logit_excess_phrase"] == "never exceeds"
    assert h["ch01_logit_draws"] == 3 * 3 and 0 <= h["ch01_logit_at_bound"] <= h["ch01_logit_draws"]
    assert h["ch01_ref_dh"] == 2 and h["ch01_cold_k"] == 8.0 and h["ch01_coarse_tol"] == "rtol=0.001"
    assert 1 <= h["ch01_rank_cold"] <= h["ch01_rank_warm"] <= 12
    assert h["ch01_rank_warm_coarse"] <= h["ch01_rank_warm"]
    assert isinstance(h["ch01_first_full"], (int, str)) and 0 < h["ch01_prob_rank_dhmin"] <= 12


def test_tables(tables):
    assert tables["default_tol"].startswith("rtol=n*eps") and tables["tolerances"][0] == tables["default_tol"]
    cost = tables["cost"]
    std = cost[cost.layer == "standard"]
    assert (std["ratio to 4d^2"] == 1.0).all()
    fixed = cost[cost.layer == "fixed, d_p = n = 8"]
    assert list(fixed["ratio to 4d^2"]) == [h * 8 / 64 for h in AR.COST_HEADS]
    assert tables["gap"] < 1e-14
    assert set(tables["by_head_dim"].matrix) == {"logits", "probs"}
    assert not tables["by_scale"]["mean"].isna().any()


def test_phrase_when_the_logits_exceed_the_bound(tables):
    import pandas as pd

    bumped = dict(tables)
    df = tables["ranks"].copy()
    sel = (df.matrix == "logits") & (df.tolerance == tables["default_tol"]) & (df.head_dim == 1)
    df.loc[sel, "value"] += 2
    bumped["ranks"] = df
    h = AR.headline(bumped)
    assert h["ch01_logit_excess"] == 2 and h["ch01_logit_excess_phrase"] == "exceeds, by at most 2,"
    assert isinstance(df, pd.DataFrame)


def test_first_full_is_a_phrase_when_no_head_size_reaches_full_rank():
    t = AR.run({**SMALL, "head_dims": [1], "n": 40, "n_trials": 2})
    assert AR.headline(t)["ch01_first_full"] == "none of the head sizes tried"


def test_rank_vs_head_dim_refuses_bad_sizes():
    with pytest.raises(ValueError):
        AR.rank_vs_head_dim(1, [1])
    assert math.isfinite(AR.softmax_transpose_gap(5, 1))


def test_figures_and_cost_table_draw_from_run(tables):
    import matplotlib.pyplot as plt
    for draw in (theory_figures.rank_vs_head_size, theory_figures.temperature):
        fig = draw(tables)
        assert fig.axes and all(ax.has_data() for ax in fig.axes), draw.__name__
        plt.close(fig)
    html = theory_tables.parameter_cost(tables["cost"]).to_html()
    assert "fixed, d_p = n = 8" in html and "heads h" in html
