import math

import pytest
import torch
from torch import nn

from lowrank.layers.attention import MultiHeadAttention, causal_mask, hardmax, row_softmax


def _x(B=2, n=7, d=12, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, n, d, generator=g, dtype=dtype)


def test_standard_head_dim_and_shapes():
    mha = MultiHeadAttention(12, 3)
    assert mha.head_dim == 4 and mha.is_standard
    y, p = mha(_x(dtype=torch.float32), need_weights=True)
    assert y.shape == (2, 7, 12) and p.shape == (2, 3, 7, 7)
    torch.testing.assert_close(p.sum(-1), torch.ones(2, 3, 7))


def test_fixed_head_dim_decouples_width():
    mha = MultiHeadAttention(10, 3, head_dim=16)  # 3 does not divide 10
    assert mha.in_proj.weight.shape == (3 * 3 * 16, 10)
    assert mha.out_proj.weight.shape == (10, 3 * 16)
    assert not mha.is_standard
    y, _ = mha(_x(d=10, dtype=torch.float32))
    assert y.shape == (2, 7, 10)


@pytest.mark.parametrize("kw, match", [
    (dict(d_model=10, n_heads=3), "divide"),
    (dict(d_model=8, n_heads=2, head_dim=0), "head_dim"),
    (dict(d_model=8, n_heads=0), "n_heads"),
    (dict(d_model=8, n_heads=2, dropout=1.0), "dropout"),
    (dict(d_model=8, n_heads=2, scale=-1.0), "scale"),
])
def test_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        MultiHeadAttention(**kw)


def test_bad_input_shape():
    with pytest.raises(ValueError, match="d_model=12"):
        MultiHeadAttention(12, 3)(torch.zeros(2, 5, 8))


def test_logits_have_rank_at_most_head_dim():
    mha = MultiHeadAttention(32, 2, head_dim=3).double()
    s = mha.logits(_x(n=20, d=32))
    assert torch.linalg.matrix_rank(s).max().item() == 3


def test_logits_scale_and_probs_are_softmax():
    mha = MultiHeadAttention(12, 3, scale=0.7).double()
    x = _x()
    q, k, _ = mha.qkv(x)
    torch.testing.assert_close(mha.logits(x), q @ k.transpose(-2, -1) * 0.7)
    torch.testing.assert_close(mha.probs(x), torch.softmax(mha.logits(x), -1))
    assert math.isclose(MultiHeadAttention(12, 3).scale, 0.5)


@pytest.mark.parametrize("causal", [False, True])
def test_fast_path_matches_reference(causal):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, head_dim=8, causal=causal)
    x = _x(d=16, dtype=torch.float32)
    fast, none = mha(x)
    ref, p = mha(x, need_weights=True)
    assert none is None
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)


def test_fast_path_matches_reference_with_padding_mask():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, causal=True)
    x = _x(d=16, dtype=torch.float32)
    keep = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    keep[1, ..., 5:] = False  # pad the last two keys of the second sequence
    fast, _ = mha(x, attn_mask=keep)
    ref, p = mha(x, attn_mask=keep, need_weights=True)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-5)
    assert p[1, :, :, 5:].abs().max() == 0


@pytest.mark.parametrize("causal", [False, True])
def test_matches_torch_multihead_attention(causal):
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(16, 4, batch_first=True)
    ours = MultiHeadAttention(16, 4, causal=causal).load_torch_mha(ref)
    x = _x(d=16, dtype=torch.float32)
    mask = ~causal_mask(7) if causal else None  # torch: True = masked out
    y_ref, p_ref = ref(x, x, x, attn_mask=mask, average_attn_weights=False)
    y, p = ours(x, need_weights=True)
    y_fast, _ = ours(x)
    torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(y_fast, y_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(p, p_ref, atol=1e-5, rtol=1e-5)


def test_causal_probs_are_lower_triangular():
    p = MultiHeadAttention(12, 3, causal=True).double().probs(_x())
    assert torch.triu(p, diagonal=1).abs().max() == 0
    torch.testing.assert_close(p.sum(-1), torch.ones(2, 3, 7, dtype=torch.float64))


def test_hardmax_rows_are_one_hot_at_argmax():
    s = torch.tensor([[0.1, 2.0, -1.0], [5.0, 5.0, 1.0]])
    h = hardmax(s)
    assert h.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]  # ties go to the lowest index
    mha = MultiHeadAttention(12, 3, hardmax=True).double()
    x = _x()
    p = mha.probs(x)
    assert set(p.unique().tolist()) <= {0.0, 1.0}
    torch.testing.assert_close(p.argmax(-1), mha.logits(x).argmax(-1))
    y, p2 = mha(x, need_weights=True)
    torch.testing.assert_close(p2, p)


def test_row_softmax_fully_masked_row_is_zero_not_nan():
    s = torch.tensor([[float("-inf")] * 3, [0.0, 0.0, float("-inf")]])
    assert row_softmax(s).tolist() == [[0.0, 0.0, 0.0], [0.5, 0.5, 0.0]]


def test_colsoftmax_is_rowsoftmax_transposed():
    # The papers' column convention maps to ours by transposition.
    s = torch.randn(5, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    torch.testing.assert_close(torch.softmax(s, dim=0), row_softmax(s.T).T)


def test_bf16_autocast_runs_on_cpu():
    mha = MultiHeadAttention(16, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y, _ = mha(_x(d=16, dtype=torch.float32))
    assert y.dtype == torch.bfloat16 and torch.isfinite(y).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (checked on the GPU machine)")
def test_cuda_bf16_matches_cpu():
    torch.manual_seed(0)
    mha = MultiHeadAttention(64, 4, head_dim=32)
    x = _x(d=64, dtype=torch.float32)
    y_cpu, _ = mha(x)
    gpu = mha.cuda()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y_gpu, _ = gpu(x.cuda())
    torch.testing.assert_close(y_gpu.float().cpu(), y_cpu, atol=5e-2, rtol=5e-2)
