import math

import pytest
import torch

from lowrank import MultiHeadAttention
from lowrank.theory import (cost_table, embed_standard_in_fixed, head_weights, layer_cost,
                            separating_input, theorem2_layer)
from lowrank.layers.attention import HeadWeights, set_head_weights
from lowrank.theory.multihead import _forward


def _x(m, n, d, seed=0, dtype=torch.float64):
    return torch.randn(m, n, d, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def test_head_weights_reproduce_the_layer():
    torch.manual_seed(0)
    layer = MultiHeadAttention(12, 3, 5, bias=False).double()
    X = _x(2, 6, 12)
    hw = head_weights(layer)
    assert hw.W_q.shape == (3, 12, 5) and hw.W_o.shape == (3, 5, 12)
    assert torch.allclose(_forward(hw, X), layer(X)[0], atol=1e-12)


@pytest.mark.parametrize("bias,causal", [(False, False), (True, False), (True, True)])
def test_embed_standard_in_fixed_same_function(bias, causal):
    torch.manual_seed(1)
    std = MultiHeadAttention(12, 4, bias=bias, causal=causal).double()
    with torch.no_grad():
        for p in std.parameters():
            p.normal_()  # large weights: a wrong softmax scale would show
    fixed = embed_standard_in_fixed(std, 5)
    assert fixed.head_dim == 5 and fixed.n_heads == 4 and not fixed.is_standard
    X = _x(3, 7, 12, seed=2)
    assert (std(X)[0] - fixed(X)[0]).abs().max() < 1e-10
    assert (std.probs(X) - fixed.probs(X)).abs().max() < 1e-10


def test_embed_float32_and_scale_matters():
    torch.manual_seed(2)
    std = MultiHeadAttention(8, 4)
    fixed = embed_standard_in_fixed(std, 8)
    X = torch.randn(4, 9, 8)
    assert (std(X)[0] - fixed(X)[0]).abs().max() < 1e-6
    # Padding without absorbing the scale gives a different function.
    naive = embed_standard_in_fixed(std, 8, absorb_scale=False)
    assert (std(X)[0] - naive(X)[0]).abs().max() > 1e-3
    assert torch.equal(head_weights(naive).W_k[:, :, :2], head_weights(std).W_k)


def test_embed_rejects_smaller_head():
    with pytest.raises(ValueError, match="head_dim must be an int >= the layer's head size 4"):
        embed_standard_in_fixed(MultiHeadAttention(8, 2), 3)


def test_theorem2_layer_meets_conditions():
    d, h, dp = 6, 3, 3
    g = theorem2_layer(d, h, dp, seed=3)
    hw = head_weights(g)
    U = hw.W_q @ hw.W_k.transpose(1, 2)
    assert torch.allclose(U, U[0].expand_as(U), atol=1e-12)
    assert torch.linalg.matrix_rank(U[0]) == dp
    assert not torch.allclose(hw.W_q[0], hw.W_q[1])  # heads differ, U is shared
    assert torch.linalg.matrix_rank(torch.einsum("hdk,hke->de", hw.W_v, hw.W_o)) == d
    assert g.in_proj.bias is None and g.in_proj.weight.dtype == torch.float64


@pytest.mark.parametrize("args,match", [((6, 2, 3), "h > d / d_p"), ((2, 4, 3), "d >= d_p"), ((6, 0, 3), "n_heads")])
def test_theorem2_layer_rejects(args, match):
    with pytest.raises(ValueError, match=match):
        theorem2_layer(*args)


def test_separating_input_case1_random_standard_layer():
    g = theorem2_layer(6, 3, 3, seed=0)
    torch.manual_seed(0)
    f = MultiHeadAttention(6, 3, bias=False).double()
    sep = separating_input(f, g, n=4)
    assert sep.case == 1 and sep.X.shape == (4, 6)
    assert torch.allclose(sep.X, sep.X[0].expand(4, 6))  # all tokens equal
    with torch.no_grad():
        gap = (f(sep.X[None])[0] - g(sep.X[None])[0]).abs().max().item()
    assert gap == pytest.approx(sep.gap) and gap > 1e-2


def _matching_sums(f, g, U_f):
    """Give f the same sum_i W_v^i W_o^i as g and the bilinear form U_f in every head."""
    d, h, dh = f.d_model, f.n_heads, f.head_dim
    gv = head_weights(g)
    total = torch.einsum("hdk,hke->de", gv.W_v, gv.W_o)
    W_v = torch.eye(d, dtype=torch.float64).reshape(d, h, dh).permute(1, 0, 2)  # [W_v^1 .. W_v^h] = I
    W_o = total.reshape(h, dh, d)
    Uq, S, Vh = torch.linalg.svd(U_f)
    W_q = (Uq[:, :dh] * S[:dh]).expand(h, d, dh)
    W_k = Vh[:dh].T.expand(h, d, dh)
    set_head_weights(f, HeadWeights(W_q, W_k, W_v, W_o, f.scale))


def test_separating_input_case2():
    g = theorem2_layer(6, 3, 3, seed=1)
    f = MultiHeadAttention(6, 3, bias=False).double()
    _matching_sums(f, g, torch.zeros(6, 6, dtype=torch.float64))
    sep = separating_input(f, g, n=3)
    assert sep.case == 2
    assert sep.X[1:].abs().max() == 0 and sep.X[0].norm() > 0  # one non-zero token
    assert sep.gap > 1e-3


def test_separating_input_case3():
    d, h, dp = 6, 3, 3
    gen = torch.Generator().manual_seed(5)
    a, b, c = (torch.randn(d, generator=gen, dtype=torch.float64) for _ in range(3))
    M, K = torch.outer(a, a), torch.outer(b, c) - torch.outer(c, b)
    U = M + K  # rank 3, symmetric part of rank 1
    g = MultiHeadAttention(d, h, dp, bias=False).double()
    Uq, S, Vh = torch.linalg.svd(U)
    gv = head_weights(theorem2_layer(d, h, dp, seed=0))
    set_head_weights(g, HeadWeights((Uq[:, :dp] * S[:dp]).expand(h, d, dp), Vh[:dp].T.expand(h, d, dp),
                                     gv.W_v, gv.W_o, g.scale))
    f = MultiHeadAttention(d, h, bias=False).double()
    _matching_sums(f, g, M * g.scale / f.scale)  # s_g U - s_f W_q W_k^T = s_g K, skew-symmetric
    sep = separating_input(f, g, n=4)
    assert sep.case == 3
    assert sep.X[2:].abs().max() == 0
    assert sep.gap > 1e-3
    # Forcing the family of case 2 here finds (almost) nothing: the quadratic forms agree.
    assert separating_input(f, g, n=4, case=2).gap < 1e-10


def test_separating_input_checks():
    g = theorem2_layer(6, 3, 3)
    with pytest.raises(ValueError, match="head_dim"):
        separating_input(MultiHeadAttention(6, 2, 3, bias=False).double(), g)
    with pytest.raises(ValueError, match="share one U"):
        separating_input(MultiHeadAttention(6, 3, bias=False).double(), MultiHeadAttention(6, 3, 3, bias=False))
    with pytest.raises(ValueError, match="no biases"):
        separating_input(MultiHeadAttention(6, 3), g)


@pytest.mark.parametrize("bias", [False, True])
def test_layer_cost_matches_module(bias):
    for d, h, dh in [(64, 8, None), (64, 8, 32), (30, 7, 16)]:
        c = layer_cost(d, h, dh, 16, bias=bias)
        m = MultiHeadAttention(d, h, dh, bias=bias)
        assert c["params"] == sum(p.numel() for p in m.parameters())
    c = layer_cost(4, 2, None, 3)
    # projections 2*3*4*12 + 2*3*4*4, products 4*2*9*2
    assert c["flops"] == 288 + 96 + 144 and c["kind"] == "standard" and c["head_dim"] == 2
    with pytest.raises(ValueError, match="divide"):
        layer_cost(10, 3, None, 4)


def test_cost_table():
    t = cost_table([64], [4, 16], [32])
    assert list(t["kind"]) == ["standard", "fixed", "standard", "fixed"]
    fixed16 = t.iloc[3]
    assert fixed16["head_dim"] == 32 and fixed16["params_vs_standard"] == pytest.approx(16 * 32 / 64)
    t2 = cost_table([60], [7], [8], head_dims=[8, 16])
    assert len(t2) == 2 and t2["params_vs_standard"].isna().all()


def _case3_pair(seed=5):
    d, h, dp = 6, 3, 3
    gen = torch.Generator().manual_seed(seed)
    a, b, c = (torch.randn(d, generator=gen, dtype=torch.float64) for _ in range(3))
    M, K = torch.outer(a, a), torch.outer(b, c) - torch.outer(c, b)
    g = MultiHeadAttention(d, h, dp, bias=False).double()
    Uq, S, Vh = torch.linalg.svd(M + K)
    gv = head_weights(theorem2_layer(d, h, dp, seed=0))
    set_head_weights(g, HeadWeights((Uq[:, :dp] * S[:dp]).expand(h, d, dp), Vh[:dp].T.expand(h, d, dp),
                                     gv.W_v, gv.W_o, g.scale))
    f = MultiHeadAttention(d, h, bias=False).double()
    _matching_sums(f, g, M * g.scale / f.scale)
    return f, g


@pytest.mark.parametrize("noise", [1e-12, 1e-9])
def test_separating_case_not_decided_by_round_off_in_the_value_sums(noise):
    # A case-3 layer whose value-output sums differ from g_V's only by `noise` (relative) stays
    # case 3: the case is decided by output gaps above SEPARATION_REL_TOL, not weight noise.
    f, g = _case3_pair()
    with torch.no_grad():
        hw = head_weights(f)
        set_head_weights(f, hw._replace(W_o=hw.W_o * (1 + noise)))
    sep = separating_input(f, g, n=4)
    assert sep.case == 3 and sep.gap > 1e-3
    assert sep.case_gaps[0] < 1e-6 and sep.case_gaps[1] < 1e-6


def test_separating_case_gaps_recorded():
    g = theorem2_layer(6, 3, 3, seed=0)
    torch.manual_seed(0)
    f = MultiHeadAttention(6, 3, bias=False).double()
    sep = separating_input(f, g, n=4)
    assert sep.case == 1 and sep.case_gaps[0] > 1e-6 and math.isnan(sep.case_gaps[1])
    forced = separating_input(f, g, n=4, case=3)
    assert forced.case == 3 and math.isnan(forced.case_gaps[0]) and forced.case_gaps[2] > 1e-6


@pytest.mark.parametrize("d,h,dp", [(6, 3, 3), (8, 4, 4), (12, 4, 4)])
def test_theorem2_in_fewer_heads_is_exact(d, h, dp):
    from lowrank.theory.multihead import theorem2_in_fewer_heads
    g = theorem2_layer(d, h, dp, seed=1)
    f = theorem2_in_fewer_heads(g)
    assert f.n_heads == d // dp and f.head_dim == dp
    assert sum(p.numel() for p in f.parameters()) == 4 * d * d
    X = torch.randn(5, 7, d, dtype=torch.float64)
    with torch.no_grad():
        assert (f(X)[0] - g(X)[0]).abs().max() < 1e-10
