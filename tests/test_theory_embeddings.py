import pytest
import torch

from lowrank.theory import minilm_word_embeddings


def test_minilm_word_embeddings():
    E = minilm_word_embeddings(50, batch=2, seed=0)
    assert E.shape == (2, 50, 384) and E.dtype == torch.float64
    assert torch.equal(E, minilm_word_embeddings(50, batch=2, seed=0))
    # distinct word pieces: no two rows equal; mean norm near 1 by construction
    dist = torch.cdist(E[0], E[0]) + torch.eye(50, dtype=E.dtype)
    assert dist.min().item() > 1e-3
    assert abs(E.norm(dim=-1).mean().item() - 1) < 0.15
    with pytest.raises(ValueError):
        minilm_word_embeddings(0)
