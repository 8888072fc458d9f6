"""Chapters 02 and 03: run functions at tiny sizes, headline() keys and values, the bounds."""
import math

import matplotlib.pyplot as plt
import pytest
import torch

from lowrank.book import theory_figures, theory_tables
from lowrank.experiments import multihead_bottleneck as M
from lowrank.experiments import representation_theorem as R
from lowrank.experiments.registry import validate


# Tiny sizes for every experiment of chapter 02, through the same validation the notebook uses.
SMALL_02 = dict(seed=0, construction_ns=[3, 5], d_extra=2, threshold_ns=[4, 5], concentrations=[1.0], n_targets=1,
                near=1, coarse=1, restarts=1, max_iter=300, vanish_tol=1e-5, bottleneck_n=8, bottleneck_ranks=[2, 4],
                sparse_ns=[6], sparse_kinds=["permutation", "dense"], sparse_k=2, sparse_eps=1e-3, sparse_n_targets=1,
                sparse_ranks=[1, 2], sparse_tol=0.01, sparse_max_iter=60, causal_ns=[4, 5, 6], causal_n_targets=1,
                causal_width=1, causal_restarts=2, causal_max_iter=800, dn_d=3, dn_ns=[5, 6], dn_n_targets=1,
                many_n=3, many_d=4, many_ranks=[1, 4], many_ms=[1, 2], many_restarts=2)


@pytest.fixture(scope="module")
def ch02_tables():
    return R.run(validate("02_representation_theorem", SMALL_02))


def test_ch02_headline_keys_and_values(ch02_tables):
    h = R.headline(ch02_tables)
    assert set(h) == set(R.HEADLINE_KEYS)
    assert h["ch02_construction_error"] < 1e-12 and h["ch02_construction_nmax"] == 5
    assert h["ch02_counterexample_tv"] == pytest.approx(0.25)
    assert h["ch02_ns_list"] == "4, 5"
    assert h["ch02_all_generic"] == "all"
    assert all(isinstance(line, str) for line in R.summary(ch02_tables))
    assert h["ch02_bound_violations"] == 0 and h["ch02_bound_min_below"] > 0
    assert h["ch02_causal_bound_violations"] == 0 and h["ch02_dn_bound_violations"] == 0
    assert "more than rank 2" in h["ch02_sparse_dense_nmax"]  # a phrase, never a -1 sentinel
    # many inputs at n = 3, d = 4: size 1 < n - 1 fits none; size 4 = d has 16 / 6 -> 2 inputs by counting
    cap = ch02_tables["capacity"].set_index("rank")
    assert cap.loc[1, "counting"] == 0 and cap.loc[1, "fitted_capacity"] == 0 and cap.loc[4, "counting"] == 2


def test_ch02_claims_judge_the_tiny_run(ch02_tables):
    h = R.headline(ch02_tables)
    for claim in R.CLAIMS:
        assert claim.judge(h).verdict


def test_bound_below_every_fit_and_positive_below_threshold():
    # for every target, the certified bound <= the fitted error, and > 0 below n - 1
    from lowrank.theory.representation import logit_tail, truncation_tv, tv_lower_bound
    t = R.run_threshold([4, 6], [0.5, 4.0], n_targets=2, near=5, coarse=0, restarts=2, max_iter=400, seed=1)
    bd = R.run_bounds(t, [0.5, 4.0], n_targets=2, seed=1)["bounds"]
    assert len(bd) == 2 * 2 * (4 + 6)
    assert (bd["tv_bound"] <= bd["fitted_tv"]).all()
    assert (bd["tv_bound"] <= bd["truncation_tv"] + 1e-15).all()
    below = bd[bd["rank"] < bd["n"] - 1]
    assert (below["tv_bound"] > 0).all() and (below["logit_bound"] > 0).all()
    assert (bd[bd["rank"] >= bd["n"] - 1]["tv_bound"] == 0).all()


def test_causal_bound_matches_fit_on_small_n():
    from lowrank.theory.representation import causal_rank_bound, causal_targets, causal_tv_lower_bound
    for n in (4, 5, 6, 7):
        P = causal_targets(n, batch=1, seed=n)[0]
        assert causal_rank_bound(P) == n // 2
        assert causal_tv_lower_bound(P, n // 2 - 1) > 0 and causal_tv_lower_bound(P, n // 2) == 0
    t = R.run_causal([4, 6], n_targets=1, width=1, restarts=3, max_iter=1500, seed=0)
    assert list(t["causal_threshold"]["fitted_threshold"]) == [2, 3]
    assert (t["causal"]["tv_bound"] <= t["causal"]["fitted_tv"]).all()


def test_input_limited_error_is_exact_and_bounds_the_fit():
    from lowrank.theory.representation import input_limited_logit_error, logit_tail
    from lowrank.theory.targets import dirichlet_targets
    P = dirichlet_targets(6, seed=3)[0]
    X = torch.randn(6, 8, dtype=torch.float64)
    assert input_limited_logit_error(X, P) < 1e-10  # d >= n: every logit reachable
    X = torch.randn(6, 2, dtype=torch.float64)
    assert input_limited_logit_error(X, P) >= logit_tail(P, 2) - 1e-12  # rank-2 logits at best


SMALL_03 = dict(seed=0, d_model=8, n=4, heads=[1, 2, 4], concentration=1.0, restarts=1, max_iter=200, vanish_tol=1e-5,
                embed_d_model=6, embed_heads=2, embed_head_dim=4, embed_n=3, embed_batch=2, t2_d=6, t2_heads=3,
                t2_head_dim=3, t2_n=3, t2_samples=3, t2_std_restarts=1, t2_fixed_restarts=1, t2_std_max_iter=50,
                t2_fixed_max_iter=50, cost_d_models=[64], cost_heads=[4], cost_seq_lens=[16], paper_d=64,
                paper_heads=[4, 16], paper_ns=[8, 32])


@pytest.fixture(scope="module")
def ch03_tables():
    return M.run(validate("03_multihead_bottleneck", SMALL_03))


def test_ch03_headline_keys_and_values(ch03_tables):
    h = M.headline(ch03_tables)
    assert set(h) == set(M.HEADLINE_KEYS)
    assert h["ch03_embed_error"] < 1e-10 and h["ch03_embed_naive_error"] > 1e-3
    assert h["ch03_sep_case"] in (1, 2, 3) and h["ch03_sep_gap"] > 0
    assert h["ch03_cost_ratio"] == pytest.approx(4 * 16 / 64)
    assert h["ch03_paper_h"] == pytest.approx(2.0)
    assert all(isinstance(line, str) for line in M.summary(ch03_tables))
    assert h["ch03_t2_fewer_exact"] < 1e-10 and h["ch03_t2_params_std"] == 4 * 36
    for claim in M.CLAIMS:
        assert claim.judge(h).verdict


def _drawn(fig) -> bool:
    ok = bool(fig.axes) and all(ax.has_data() for ax in fig.axes if ax.get_label() != "<colorbar>")
    plt.close(fig)
    return ok


def test_ch02_figures_and_tables_draw_from_run(ch02_tables):
    t = ch02_tables
    assert t["params"]["sparse_kinds"] == ["permutation", "dense"]
    for draw in (theory_figures.construction_example, theory_figures.threshold, theory_figures.sparse_vs_dense,
                 theory_figures.causal):
        assert _drawn(draw(t)), draw.__name__
    shown = {"construction": theory_tables.construction, "vanish": theory_tables.vanishing,
             "bottleneck": theory_tables.bottleneck, "causal_threshold": theory_tables.causal_threshold,
             "d_below_n": theory_tables.d_below_n, "many_inputs": theory_tables.many_inputs}
    html = {key: show(t[key]).to_html() for key, show in shown.items()}
    assert "error vanishes from head size" in html["vanish"] and "not reached" not in html["construction"]
    assert "head size 4: max-row TV" in html["many_inputs"] and "certified TV bound" in html["bottleneck"]


def test_ch03_figures_and_tables_draw_from_run(ch03_tables):
    t = ch03_tables
    for draw in (theory_figures.head_count, theory_figures.theorem2_restarts, theory_figures.separation):
        assert _drawn(draw(t)), draw.__name__
    html = theory_tables.head_count(t["per_layer"], 8, 4).to_html()
    assert "head size d/h" in html and "fixed d_p = 4: worst head's TV" in html
    for show, key in ((theory_tables.theorem2, "t2"), (theory_tables.separation_by_case, "by_case"),
                      (theory_tables.cost_ratios, "costs"), (theory_tables.paper_settings, "paper")):
        assert "<table" in show(t[key]).to_html()
    assert "n = 16: fixed / standard" in theory_tables.cost_ratios(t["costs"]).to_html()
