import math

import numpy as np
import pytest
import torch

from lowrank.layers.mla import MultiHeadLatentAttention
from lowrank.measure.rank import DEFAULT_TOL, FLOAT32, FLOAT32_TOL, hardmax_rank
from lowrank.theory import barrier as B
from lowrank.theory.mla import (MLA_MATRICES, mla_head_logits, mla_rank_table, sample_mla_logits,
                                sample_mla_weights)
from lowrank.theory.sampling import sample_inputs, sample_qk


@pytest.mark.parametrize("q_latent, rope_dim", [(None, 0), (None, 4), (3, 6)])
def test_sampled_head_is_the_layer_with_those_weights(q_latent, rope_dim):
    d, n = 10, 9
    w = sample_mla_weights(d, head_dim=5, kv_latent=4, rope_dim=rope_dim, q_latent=q_latent, seed=2)
    X = sample_inputs(n, d, inputs="gaussian", seed=3)
    m = MultiHeadLatentAttention(d, 1, kv_latent=4, head_dim=5, rope_dim=rope_dim, q_latent=q_latent).double()
    with torch.no_grad():
        m.kv_down.weight.copy_(w.W_dkv[0].T)
        m.k_up.weight.copy_(w.W_uk[0].T)
        m.q_up.weight.copy_(w.W_q[0].T)
        if rope_dim:
            m.k_rope.weight.copy_(w.W_kr[0].T)
        if q_latent:
            m.q_down.weight.copy_(w.W_dq[0].T)
    torch.testing.assert_close(mla_head_logits(X, w), m.logits(X)[:, 0], rtol=1e-12, atol=1e-12)


def test_weight_variances_give_unit_variance_queries_and_keys():
    w = sample_mla_weights(256, head_dim=64, kv_latent=16, rope_dim=0, q_latent=32, batch=64, seed=0)
    X = sample_inputs(64, 256, batch=64, seed=1)
    k_c = X @ w.W_dkv @ w.W_uk
    q = X @ w.W_dq @ w.W_q
    assert abs(k_c.var().item() - 1) < 0.05 and abs(q.var().item() - 1) < 0.05
    # the standard temperature: logits of unit variance
    s = mla_head_logits(X, w)
    assert abs(s.var().item() - 1) < 0.1


def test_sampler_is_seeded_and_draws_independent_trials():
    a = sample_mla_logits(12, head_dim=4, kv_latent=2, rope_dim=2, batch=3, seed=7)
    assert a.shape == (3, 12, 12) and a.dtype == torch.float64
    assert torch.equal(a, sample_mla_logits(12, head_dim=4, kv_latent=2, rope_dim=2, batch=3, seed=7))
    assert not torch.equal(a, sample_mla_logits(12, head_dim=4, kv_latent=2, rope_dim=2, batch=3, seed=8))
    assert not torch.allclose(a[0], a[1])


@pytest.mark.parametrize("q_latent, causal", [(None, False), (3, True)])
def test_logit_rank_equals_the_bound_in_every_draw(q_latent, causal):
    t = mla_rank_table([24], [1, 3, 8, 20], head_dims=[8], rope_dims=[0, 4], q_latent=q_latent,
                       n_trials=10, causal=causal, summary=False)
    logits = t[t.matrix == "logits"]
    assert len(logits) == 2 * 4 * 10 and set(logits.tolerance) == {DEFAULT_TOL}
    assert (logits.value == logits.logit_bound).all()
    # kv_latent 1, 3, 8, 20 with rope_dim 0 and 4; a query latent of 3 caps the content part at 3
    assert set(logits.logit_bound) == ({1, 3, 5, 7} if q_latent else {1, 3, 8, 5, 7, 12})


def test_a_one_dimensional_latent_picks_at_most_two_columns():
    # S_ij = (q_i . w) g_j: every row's argmax is argmax_j g_j or argmin_j g_j, by the sign of q_i . w.
    for kw in (dict(kv_latent=1), dict(kv_latent=16, q_latent=1)):
        t = mla_rank_table([32], [kw["kv_latent"]], head_dims=[8], rope_dims=[0], q_latent=kw.get("q_latent"),
                           n_trials=40, summary=False)
        ranks = t[t.matrix == "hardmax attention"].value
        assert ranks.max() == 2 and ranks.mean() > 1.9


def test_ranks_stay_in_range_and_the_table_is_tidy():
    t = mla_rank_table([16, 20], [2, 6], head_dims=[4], rope_dims=[0, 2], n_trials=6, causal=True)
    assert len(t) == 2 * 2 * 2 * 3
    assert list(dict.fromkeys(t.matrix)) == list(MLA_MATRICES)
    assert ((t["mean"] >= 1) & (t["mean"] <= t.n)).all() and (t.draws == 6).all()
    np.testing.assert_allclose(t.frac, t["mean"] / t.n)
    assert (t.barrier == (t.n + 1) / 2).all()  # the causal model's barrier
    assert t.label.str.contains(" of ").all()


def test_tolerances_are_labelled_in_the_rank_vocabulary():
    t = mla_rank_table([16], [4], head_dims=[4], rope_dims=[2], n_trials=3, rtols=(0, FLOAT32, 0.5))
    logits = t[t.matrix == "logits"]
    assert list(logits.tolerance) == [DEFAULT_TOL, FLOAT32_TOL, "rtol=0.5"]
    assert logits["mean"].iloc[0] == 6 and logits["mean"].iloc[2] < 6  # a coarse tolerance drops directions


def test_one_draw_gives_no_standard_error():
    t = mla_rank_table([8], [2], head_dims=[4], rope_dims=[2], n_trials=1)
    assert t.draws.eq(1).all() and t.se.isna().all()


def test_a_cell_does_not_depend_on_the_rest_of_the_grid():
    one = mla_rank_table([16], [4], head_dims=[4], rope_dims=[2], n_trials=5, seed=3, summary=False)
    grid = mla_rank_table([16], [2, 4], head_dims=[4], rope_dims=[2], n_trials=5, seed=3, summary=False)
    part = grid[grid.kv_latent == 4].reset_index(drop=True)
    assert one.value.tolist() == part.value.tolist()


def _standard_hardmax_ranks(n, head_dim, trials, seed):
    Q, K = sample_qk(n, head_dim, batch=trials, independent_weights=True, seed=seed)
    return hardmax_rank(Q @ K.transpose(-2, -1)).double()


def test_a_wide_latent_without_rope_is_a_standard_head_in_law():
    # k_C = c_KV W_UK has covariance W_UK^T W_UK, which tends to the identity as the latent widens.
    n, dh, trials = 32, 4, 400
    t = mla_rank_table([n], [dh, 1024], head_dims=[dh], rope_dims=[0], n_trials=trials, seed=1)
    h = t[t.matrix == "hardmax attention"].set_index("kv_latent")
    std = _standard_hardmax_ranks(n, dh, trials, seed=2)
    std_mean, std_se = std.mean().item(), std.std().item() / math.sqrt(trials)
    se = math.hypot(h.loc[1024, "se"], std_se)
    assert abs(h.loc[1024, "mean"] - std_mean) < 4 * se
    # ... but at kv_latent = head_dim the anisotropic keys pick fewer columns than a standard head's.
    assert h.loc[dh, "mean"] < std_mean - 4 * math.hypot(h.loc[dh, "se"], std_se)


def test_orthonormal_inputs_respect_min_and_li_barrier():
    # Without a query latent the query rows are i.i.d. given the keys, the barrier's hypothesis.
    n = 32
    t = mla_rank_table([n], [2, 64], head_dims=[16], rope_dims=[0, 8], n_trials=100)
    h = t[t.matrix == "hardmax attention"]
    np.testing.assert_allclose(h.barrier, B.expected_distinct_columns(n))
    assert (h["mean"] <= h.barrier + 3 * h.se).all()
    assert (h[h.kv_latent == 64]["mean"] > 0.4 * n).all()  # far above the tiny latent's few columns


def test_given_token_vectors_are_used():
    X = sample_inputs(12, 5, inputs="sphere", seed=0)[0]  # (n, d) with d < n
    t = mla_rank_table([12], [4], head_dims=[4], rope_dims=[2], n_trials=4, inputs=X, summary=False)
    assert set(t.inputs) == {"given"}
    logits = t[t.matrix == "logits"]
    assert (logits.logit_bound == 6).all() and (logits.value == 6).all()
    with pytest.raises(ValueError, match="expected n_trials=4"):
        mla_rank_table([12], [4], head_dims=[4], rope_dims=[2], n_trials=4, inputs=X.expand(3, 12, 5))


@pytest.mark.parametrize("kw, match", [
    (dict(n_trials=0), "n_trials must be a positive int, got 0"),
    (dict(ns=[]), "ns must be a non-empty sequence"),
    (dict(kv_latents=4), "kv_latents must be a non-empty sequence"),
    (dict(ns=[1]), "every n must be an int >= 2, got 1"),
    (dict(rope_dims=[3]), "rope_dim must be even"),
    (dict(kv_latents=[0]), "kv_latent must be a positive int, got 0"),
    (dict(q_latent=0), "q_latent must be None or a positive int, got 0"),
    (dict(inputs="uniform"), "inputs must be one of"),
])
def test_bad_arguments_are_refused(kw, match):
    args = {**dict(ns=[8], kv_latents=[2], head_dims=[4], rope_dims=[2], n_trials=2), **kw}
    with pytest.raises(ValueError, match=match):
        mla_rank_table(args.pop("ns"), args.pop("kv_latents"), **args)
