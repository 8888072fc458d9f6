import math

import pytest
import torch

from lowrank.theory.sampling import (INPUTS, sample_attention, sample_inputs, sample_qk,
                                     temperature_scale)


@pytest.mark.parametrize("inputs", INPUTS)
def test_sample_inputs_shapes_and_seeding(inputs):
    X = sample_inputs(8, 16, batch=3, inputs=inputs, seed=1)
    assert X.shape == (3, 8, 16) and X.dtype == torch.float64
    assert torch.equal(X, sample_inputs(8, 16, batch=3, inputs=inputs, seed=1))
    assert not torch.equal(X, sample_inputs(8, 16, batch=3, inputs=inputs, seed=2))


def test_orthonormal_rows():
    X = sample_inputs(10, 12, batch=4, inputs="orthonormal", seed=0)
    assert torch.allclose(X @ X.transpose(-2, -1), torch.eye(10, dtype=torch.float64).expand(4, 10, 10),
                          atol=1e-12)


def test_input_geometry():
    assert torch.allclose(sample_inputs(20, 30, inputs="sphere").norm(dim=-1), torch.ones(1, 20,
                          dtype=torch.float64))
    g = sample_inputs(200, 2000, inputs="gaussian", seed=0).norm(dim=-1)
    assert abs(g.mean().item() - 1) < 0.02
    A = sample_inputs(50, 400, inputs="anisotropic", seed=0)[0]
    A = A / A.norm(dim=-1, keepdim=True)
    cos = (A @ A.T)[~torch.eye(50, dtype=torch.bool)].mean().item()
    assert abs(cos - 0.75) < 0.03  # 1 - ANISOTROPY_NOISE


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="inputs must be one of"):
        sample_inputs(4, 4, inputs="uniform")
    with pytest.raises(ValueError, match="d >= n"):
        sample_inputs(8, 4, inputs="orthonormal")
    with pytest.raises(ValueError, match="given inputs must have shape"):
        sample_qk(5, 2, inputs=torch.zeros(4, 3))
    with pytest.raises(ValueError, match="heads"):
        sample_qk(5, 2, heads=0)
    with pytest.raises(ValueError, match="temperature"):
        sample_attention(5, 2, temperature="cold")
    with pytest.raises(ValueError, match="temperature"):
        sample_attention(5, 2, temperature=-1.0)


@pytest.mark.parametrize("independent", [False, True])
def test_q_entries_standard_normal(independent):
    # Orthonormal X times Gaussian W: i.i.d. N(0, 1) entries, both sampling paths.
    Q, K = sample_qk(64, 256, batch=8, inputs="orthonormal", independent_weights=independent, seed=3)
    assert Q.shape == K.shape == (8, 64, 256)
    for M in (Q, K):
        assert abs(M.mean().item()) < 0.02
        assert abs(M.var().item() - 1) < 0.03
    # Q and K are independent: their entrywise correlation is near 0.
    assert abs((Q * K).mean().item()) < 0.02


def test_weights_shared_or_independent():
    X = torch.eye(6, dtype=torch.float64)  # given inputs: Q = W_q exactly
    Q, K = sample_qk(6, 3, batch=4, inputs=X, seed=0)
    assert torch.equal(Q[0], Q[3])  # one W pair for the whole batch
    Qi, _ = sample_qk(6, 3, batch=4, inputs=X, independent_weights=True, seed=0)
    assert not torch.allclose(Qi[0], Qi[3])
    Qh, Kh = sample_qk(6, 3, batch=2, inputs=X, heads=5, seed=0)
    assert Qh.shape == Kh.shape == (2, 5, 6, 3)
    assert torch.equal(Qh[0], Qh[1]) and not torch.allclose(Qh[0, 0], Qh[0, 1])


def test_given_inputs_are_used():
    X = sample_inputs(7, 5, inputs="sphere", seed=9)[0]
    Q, K = sample_qk(7, 4, batch=2, inputs=X, seed=0)
    W = torch.linalg.lstsq(X, Q[0]).solution  # Q lies in the column space of X
    assert torch.allclose(X @ W, Q[0], atol=1e-10)
    with pytest.raises(ValueError, match="disagrees"):
        sample_qk(7, 4, inputs=X, d_model=6)


def test_hardmax_rows_one_hot_at_argmax():
    logits, probs = sample_attention(12, 4, batch=5, temperature="hardmax", seed=0)
    assert probs.shape == logits.shape == (5, 12, 12)
    assert set(probs.unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(probs.sum(-1), torch.ones(5, 12, dtype=torch.float64))
    assert torch.equal(probs.argmax(-1), logits.argmax(-1))


def test_softmax_temperature_and_causal():
    logits, probs = sample_attention(10, 8, batch=2, temperature=2.0, seed=4)
    assert torch.allclose(probs, torch.softmax(2.0 * logits, -1))
    assert temperature_scale(16, "standard") == 0.25 and temperature_scale(16, 3.0) == 0.75
    _, causal = sample_attention(10, 8, batch=2, causal=True, seed=4)
    assert torch.allclose(causal.sum(-1), torch.ones(2, 10, dtype=torch.float64))
    assert causal.triu(1).abs().max().item() == 0.0
    _, hard = sample_attention(10, 8, batch=2, causal=True, temperature="hardmax", seed=4)
    assert hard[:, 0, 0].eq(1).all()  # the first query can only see itself


def test_heads_attention_shape():
    logits, probs = sample_attention(9, 2, batch=3, heads=4, independent_weights=True, seed=0)
    assert logits.shape == probs.shape == (3, 4, 9, 9)
    assert torch.allclose(probs.sum(-1), torch.ones(3, 4, 9, dtype=torch.float64))
    assert math.isclose(logits.std().item(), 1.0, abs_tol=0.35)

