import pytest
import torch

from lowrank.theory import dirichlet_targets, permutation_targets, sparse_targets


def test_dirichlet_targets():
    P = dirichlet_targets(6, concentration=0.5, batch=3, seed=1)
    assert P.shape == (3, 6, 6) and P.dtype == torch.float64
    assert (P > 0).all() and torch.allclose(P.sum(-1), torch.ones(3, 6, dtype=torch.float64), atol=1e-14)
    assert torch.equal(P, dirichlet_targets(6, concentration=0.5, batch=3, seed=1))
    # Higher concentration: rows closer to uniform.
    flat = dirichlet_targets(6, concentration=100.0, batch=3, seed=1)
    assert (flat - 1 / 6).abs().max() < (P - 1 / 6).abs().max()


def test_sparse_targets():
    P = sparse_targets(10, 3, eps=0.01, batch=2, seed=0)
    assert torch.allclose(P.sum(-1), torch.ones(2, 10, dtype=torch.float64), atol=1e-14)
    big = P > 0.1
    assert big.sum(-1).eq(3).all()
    assert torch.allclose(P[big], torch.full((60,), 0.99 / 3, dtype=torch.float64))
    assert torch.allclose(sparse_targets(4, 4)[0], torch.full((4, 4), 0.25, dtype=torch.float64))


def test_permutation_targets():
    P = permutation_targets(7, eps=0.07, batch=2, seed=3)
    assert torch.allclose(P.sum(-1), torch.ones(2, 7, dtype=torch.float64), atol=1e-14)
    top = P.argmax(-1)
    assert all(sorted(t.tolist()) == list(range(7)) for t in top)  # a permutation per matrix
    assert torch.allclose(P.amax(-1), torch.full((2, 7), 0.93, dtype=torch.float64))


@pytest.mark.parametrize("call", [lambda: dirichlet_targets(1), lambda: dirichlet_targets(4, concentration=0),
                                  lambda: sparse_targets(4, 5), lambda: permutation_targets(4, eps=1.0)])
def test_bad_arguments(call):
    with pytest.raises(ValueError):
        call()
