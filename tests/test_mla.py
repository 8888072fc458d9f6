import math

import pytest
import torch

import lowrank
from lowrank.layers.mla import MultiHeadLatentAttention, logit_rank_bound, rope
from lowrank.measure.rank import numerical_rank


def _x(B=2, n=7, d=12, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, n, d, generator=g, dtype=dtype)


def _layer(d_model=12, n_heads=3, *, seed=0, **kw):
    torch.manual_seed(seed)
    kw = {"kv_latent": 4, "head_dim": 5, "rope_dim": 4, **kw}
    return MultiHeadLatentAttention(d_model, n_heads, **kw).double()


# --- an explicit per-head computation, written out from the definition ---------------------

def _linear(layer, t):
    return t @ layer.weight.detach().T + (0 if layer.bias is None else layer.bias.detach())


def _rope_rows(A, base):
    """Row i of A turned by angle i * base^(-2j/r) in each column pair (j, j + r/2), one by one."""
    n, r = A.shape
    out = A.clone()
    for i in range(n):
        for j in range(r // 2):
            theta = i * base ** (-2 * j / r)
            a, b = A[i, j].item(), A[i, j + r // 2].item()
            out[i, j] = a * math.cos(theta) - b * math.sin(theta)
            out[i, j + r // 2] = a * math.sin(theta) + b * math.cos(theta)
    return out


def _reference(m, x):
    """(logits, probs, y) for one sequence x (n, d_model), head by head."""
    n = x.shape[0]
    dh, dr, dv = m.head_dim, m.rope_dim, m.v_head_dim
    c_kv = _linear(m.kv_down, x)
    c_q = x if m.q_down is None else _linear(m.q_down, x)
    k_r = _rope_rows(_linear(m.k_rope, x), m.rope_base) if dr else torch.zeros(n, 0, dtype=x.dtype)
    scale = 1 / math.sqrt(dh + dr)
    logits, probs, outs = [], [], []
    for j in range(m.n_heads):
        W_uk = m.k_up.weight.detach()[j * dh:(j + 1) * dh]
        W_uv = m.v_up.weight.detach()[j * dv:(j + 1) * dv]
        W_q = m.q_up.weight.detach()[j * (dh + dr):(j + 1) * (dh + dr)]
        b = {name: (getattr(m, name).bias.detach() if m.bias else None) for name in ("k_up", "v_up", "q_up")}
        k_c = c_kv @ W_uk.T + (b["k_up"][j * dh:(j + 1) * dh] if m.bias else 0)
        v = c_kv @ W_uv.T + (b["v_up"][j * dv:(j + 1) * dv] if m.bias else 0)
        q = c_q @ W_q.T + (b["q_up"][j * (dh + dr):(j + 1) * (dh + dr)] if m.bias else 0)
        q_c, q_r = q[:, :dh], _rope_rows(q[:, dh:], m.rope_base)
        s = (q_c @ k_c.T + q_r @ k_r.T) * scale
        if m.causal:
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        a = torch.softmax(s, dim=-1)
        logits.append(s), probs.append(a), outs.append(a @ v)
    y = _linear(m.out_proj, torch.cat(outs, dim=-1))
    return torch.stack(logits), torch.stack(probs), y


@pytest.mark.parametrize("kw", [
    dict(),
    dict(rope_dim=0),
    dict(q_latent=3, causal=True),
    dict(q_latent=6, v_head_dim=7, bias=True, rope_base=100.0),
    dict(kv_latent=9, head_dim=2, rope_dim=6, causal=True, bias=True),
])
def test_layer_matches_the_explicit_per_head_computation(kw):
    m = _layer(**kw)
    x = _x()
    assert m.scale == 1 / math.sqrt(m.head_dim + m.rope_dim)
    logits, probs = m.logits(x), m.probs(x)
    y_fast, _ = m(x)
    y_ref, p = m(x, need_weights=True)
    for b in range(x.shape[0]):
        s, a, y = _reference(m, x[b])
        torch.testing.assert_close(logits[b], s, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(probs[b], a, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(p[b], a, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(y_ref[b], y, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(y_fast[b], y, rtol=1e-10, atol=1e-10)


def test_rope_scores_depend_on_position_differences_only():
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(2, 1, 8, generator=g, dtype=torch.float64)
    S = rope(a.expand(10, 8)) @ rope(b.expand(10, 8)).T
    for shift in range(-9, 10):
        diag = torch.diagonal(S, offset=shift)
        torch.testing.assert_close(diag, diag[:1].expand_as(diag), rtol=0, atol=1e-12)
    assert not torch.allclose(S[0, 0], S[0, 1])  # and it does depend on them
    assert torch.equal(rope(torch.zeros(3, 5, 0)), torch.zeros(3, 5, 0))


@pytest.mark.parametrize("causal", [False, True])
def test_fast_path_matches_reference_path_in_float32(causal):
    torch.manual_seed(0)
    m = MultiHeadLatentAttention(16, 4, kv_latent=6, head_dim=8, rope_dim=4, q_latent=10, causal=causal)
    x = _x(d=16, dtype=torch.float32)
    fast, none = m(x)
    ref, p = m(x, need_weights=True)
    assert none is None and p.shape == (2, 4, 7, 7)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", [0.05, 1.0])
def test_fast_path_honours_a_custom_scale(causal, scale):
    """A logit scale other than the default reaches the fused kernel: both paths agree, and they differ
    from the default scale's output (so a fused path that dropped ``scale`` would fail here)."""
    torch.manual_seed(0)
    m = MultiHeadLatentAttention(16, 4, kv_latent=6, head_dim=8, rope_dim=4, causal=causal, scale=scale)
    x = _x(d=16, dtype=torch.float32)
    fast, _ = m(x)
    ref, _ = m(x, need_weights=True)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)
    m.scale = 1.0 / math.sqrt(8 + 4)
    default, _ = m(x)
    assert (fast - default).abs().max() > 1e-3


def test_padding_mask_on_both_paths():
    torch.manual_seed(0)
    m = MultiHeadLatentAttention(16, 2, kv_latent=4, head_dim=8, rope_dim=2, causal=True)
    x = _x(d=16, dtype=torch.float32)
    keep = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    keep[1, ..., 5:] = False
    fast, _ = m(x, attn_mask=keep)
    ref, p = m(x, attn_mask=keep, need_weights=True)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)
    assert p[1, :, :, 5:].abs().max() == 0
    torch.testing.assert_close(m.absorbed_logits(x, attn_mask=keep), m.logits(x, attn_mask=keep))


def test_causal_mask_hides_later_tokens_on_both_paths():
    m = _layer(causal=True)
    x = _x(n=9)
    p = m.probs(x)
    assert torch.triu(p, diagonal=1).abs().max() == 0
    torch.testing.assert_close(p.sum(-1), torch.ones(2, 3, 9, dtype=torch.float64))
    later = x.clone()
    later[:, 5:] += 3.0  # change tokens 5.. only
    for need in (False, True):
        y, _ = m(x, need_weights=need)
        y2, _ = m(later, need_weights=need)
        torch.testing.assert_close(y[:, :5], y2[:, :5], rtol=1e-12, atol=1e-12)
        assert not torch.allclose(y[:, 5:], y2[:, 5:])
    # Without the mask the same change reaches the earlier tokens.
    free = _layer(causal=False)
    assert not torch.allclose(free(x)[0][:, :5], free(later)[0][:, :5])


@pytest.mark.parametrize("kw", [dict(), dict(q_latent=3), dict(bias=True, rope_dim=0), dict(bias=True, causal=True)])
def test_absorbed_form_gives_the_same_logits(kw):
    m = _layer(**kw)
    x = _x()
    q, k = m.absorbed_qk(x)
    width = m.kv_latent + m.rope_dim + (1 if m.bias else 0)
    assert q.shape == (2, 3, 7, width) and k.shape == (2, 1, 7, width)  # one key per token for all heads
    torch.testing.assert_close(m.absorbed_logits(x), m.logits(x), rtol=1e-12, atol=1e-12)


def test_hardmax_rows_are_one_hot_at_the_argmax():
    m = _layer()
    x = _x()
    p = m.probs(x, hardmax=True)
    assert set(p.unique().tolist()) == {0.0, 1.0}
    assert torch.equal(p.argmax(-1), m.logits(x).argmax(-1))
    _, p2 = m(x, need_weights=True, hardmax=True)
    assert torch.equal(p2, p)


# --- the logit-rank bound -------------------------------------------------------------------

# d_model, n_heads, kv_latent, head_dim, rope_dim, q_latent, bias, n, the bound worked by hand
RANK_CASES = [
    (32, 2, 4, 8, 4, None, False, 24, 8),     # the latent binds the content part: 4 + 4
    (32, 3, 3, 8, 0, None, False, 20, 3),     # the latent binds, no rotary part
    (32, 2, 16, 6, 0, None, False, 20, 6),    # the head size binds, no rotary part
    (32, 2, 8, 8, 4, 2, False, 20, 6),        # the query latent binds: 2 + 4
    (32, 2, 2, 4, 8, None, False, 12, 10),    # the rotary part is larger than the content part
    (32, 1, 1, 16, 2, None, False, 16, 3),    # a one-dimensional latent
    (3, 2, 8, 8, 6, None, False, 30, 9),      # the width binds the content part, not the rotary part
    (16, 2, 2, 8, 0, None, True, 30, 3),      # a bias adds the constant column to the latent
    (32, 2, 8, 8, 4, None, False, 5, 5),      # n caps the sum
    (32, 2, 32, 8, 8, None, False, 12, 12),   # 8 + 8 capped at n = 12
]


@pytest.mark.parametrize("d, h, c, dh, dr, cq, bias, n, expected", RANK_CASES)
def test_logit_rank_bound_is_reached_and_never_exceeded(d, h, c, dh, dr, cq, bias, n, expected):
    bound = logit_rank_bound(n, head_dim=dh, kv_latent=c, rope_dim=dr, q_latent=cq, d_model=d, bias=bias)
    assert bound == expected
    for seed in range(3):
        m = _layer(d, h, kv_latent=c, head_dim=dh, rope_dim=dr, q_latent=cq, bias=bias, seed=seed)
        assert m.logit_rank_bound(n) == expected
        # numerical rank, float64, default tolerance (sigma_i > max(n, n) eps sigma_1), every head
        ranks = numerical_rank(m.logits(_x(B=3, n=n, d=d, seed=seed)))
        assert ranks.shape == (3, h)
        assert (ranks == expected).all(), ranks


def test_logit_rank_bound_without_width_or_bias_is_the_plain_formula():
    assert logit_rank_bound(100, head_dim=16, kv_latent=4, rope_dim=8) == 12
    assert logit_rank_bound(100, head_dim=16, kv_latent=64, rope_dim=8, q_latent=10) == 18
    assert logit_rank_bound(100, head_dim=16, kv_latent=64, rope_dim=0) == 16
    assert logit_rank_bound(10, head_dim=16, kv_latent=64, rope_dim=8) == 10
    # DeepSeek-V3's sizes: the head size binds, not the latent, so a head's logits reach 192.
    assert logit_rank_bound(4096, head_dim=128, kv_latent=512, rope_dim=64, q_latent=1536) == 192


def test_bound_is_not_met_by_degenerate_weights():
    # The bound is an upper bound: zero rotary weights leave only the content part.
    m = _layer(32, 2, kv_latent=4, head_dim=8, rope_dim=4)
    with torch.no_grad():
        m.k_rope.weight.zero_()
    assert (numerical_rank(m.logits(_x(n=20, d=32))) == 4).all()


# --- inputs, gradients, exports ---------------------------------------------------------------

@pytest.mark.parametrize("kw, match", [
    (dict(d_model=0), "d_model must be a positive int, got 0"),
    (dict(n_heads=True), "n_heads must be a positive int, got True"),
    (dict(kv_latent=0), "kv_latent must be a positive int, got 0"),
    (dict(head_dim=2.0), "head_dim must be a positive int, got 2.0"),
    (dict(rope_dim=3), "rope_dim must be even .* got 3"),
    (dict(rope_dim=-2), "rope_dim must be a non-negative int, got -2"),
    (dict(q_latent=0), "q_latent must be None or a positive int, got 0"),
    (dict(v_head_dim=-1), "v_head_dim must be None or a positive int, got -1"),
    (dict(rope_base=0.0), "rope_base must be a positive finite float, got 0.0"),
    (dict(scale=float("inf")), "scale must be a positive finite float, got inf"),
])
def test_bad_arguments_are_refused_by_name_and_value(kw, match):
    args = {"d_model": 12, "n_heads": 3, "kv_latent": 4, "head_dim": 5, "rope_dim": 4, **kw}
    with pytest.raises(ValueError, match=match):
        MultiHeadLatentAttention(args.pop("d_model"), args.pop("n_heads"), **args)


def test_bad_input_shape_and_bound_arguments():
    with pytest.raises(ValueError, match=r"x must be \(B, n, d_model=12\), got \(2, 5, 8\)"):
        _layer()(torch.zeros(2, 5, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="n must be a positive int, got 0"):
        logit_rank_bound(0, head_dim=4, kv_latent=4, rope_dim=0)
    with pytest.raises(ValueError, match="rope_dim must be even"):
        logit_rank_bound(8, head_dim=4, kv_latent=4, rope_dim=5)
    with pytest.raises(ValueError, match="q_latent must be None or a positive int, got 0"):
        logit_rank_bound(8, head_dim=4, kv_latent=4, rope_dim=0, q_latent=0)
    with pytest.raises(ValueError, match="even number of columns"):
        rope(torch.zeros(4, 3))


@pytest.mark.parametrize("kw", [dict(q_latent=6, bias=True), dict(rope_dim=0, causal=True)])
def test_gradients_reach_every_parameter(kw):
    torch.manual_seed(0)
    m = MultiHeadLatentAttention(12, 3, kv_latent=4, head_dim=5, rope_dim=kw.pop("rope_dim", 4), **kw)
    y, _ = m(_x(dtype=torch.float32))
    (y ** 2).sum().backward()
    names = {name for name, _ in m.named_parameters()}
    assert {"kv_down.weight", "k_up.weight", "v_up.weight", "q_up.weight", "out_proj.weight"} <= names
    for name, p in m.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


def test_exported_from_the_package():
    assert lowrank.MultiHeadLatentAttention is MultiHeadLatentAttention
    assert "MultiHeadLatentAttention" in lowrank.__all__
