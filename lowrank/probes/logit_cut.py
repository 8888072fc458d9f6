"""Every head's logits cut to rank r while the model runs, for models with rotary positions; next-token loss.

A weight-level cut (:func:`lowrank.data.pretrained.truncate_logit_rank`) needs one bilinear form per
head. Rotary position embeddings rotate queries and keys by their positions, so a Llama head's
logits ``s_ij = (R_i W_q x_i) . (R_j W_k x_j)`` have no single form to cut. :func:`logit_rank_cut`
cuts the logit matrix itself: inside a ``with`` block, every attention call of a model built on
transformers' ``AttentionInterface`` replaces each head's ``S = scale Q K^T`` (after rotary, keys
shared by grouped-query heads) with its best rank-r approximation in the Frobenius norm, per
sequence, before the mask and the softmax.

The best rank-r approximation comes from the thin factors: with Q = Q1 R1 and K = Q2 R2 (QR), S =
scale Q1 (R1 R2^T) Q2^T, and the SVD of the d_h x d_h core gives S_r = scale (Q1 U_r S_r)(Q2 V_r)^T:
no n x n SVD, in float64. At r = d_h the model computes what it computed before, up to round-off.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["CUT_IMPLEMENTATION", "low_rank_logits", "logit_rank_cut", "next_token_loss"]

CUT_IMPLEMENTATION = "lowrank_logit_cut"
_RANK: list[int] = []


def low_rank_logits(q: torch.Tensor, k: torch.Tensor, scale: float, rank: int) -> torch.Tensor:
    """scale Q K^T cut to its best rank-``rank`` approximation, float64; q, k (..., n, d_h)."""
    q64, k64 = q.double(), k.double()
    if rank >= q.shape[-1]:
        return (q64 @ k64.transpose(-2, -1)) * scale
    q1, r1 = torch.linalg.qr(q64)
    q2, r2 = torch.linalg.qr(k64)
    u, s, vh = torch.linalg.svd(r1 @ r2.transpose(-2, -1))
    left = q1 @ (u[..., :rank] * s[..., None, :rank])
    right = q2 @ vh[..., :rank, :].transpose(-2, -1)
    return (left @ right.transpose(-2, -1)) * scale


def _cut_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    h, g = query.shape[1], key.shape[1]
    key = key.repeat_interleave(h // g, dim=1)
    value = value.repeat_interleave(h // g, dim=1)
    scale = query.shape[-1] ** -0.5 if scaling is None else float(scaling)
    logits = low_rank_logits(query, key, scale, _RANK[-1])
    if attention_mask is not None:
        logits = logits + attention_mask[..., :key.shape[-2]].double()
    probs = torch.softmax(logits, dim=-1).to(value.dtype)
    out = (probs @ value).transpose(1, 2).contiguous()
    return out, probs


@contextlib.contextmanager
def logit_rank_cut(model, rank: int) -> Iterator[None]:
    """Within the block, every head of ``model`` attends through its logits cut to rank ``rank``.

    ``model`` is a transformers model whose attention goes through its ``AttentionInterface``
    (Llama, Mistral, Qwen2, GPT-2, BERT, ...). Its own implementation is restored on exit.
    """
    if not isinstance(rank, int) or rank < 1:
        raise ValueError(f"rank must be a positive int, got {rank!r}")
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    AttentionInterface.register(CUT_IMPLEMENTATION, _cut_attention)
    # The eager path's additive float mask, which the cut logits take like the model's own.
    AttentionMaskInterface.register(CUT_IMPLEMENTATION, ALL_MASK_ATTENTION_FUNCTIONS["eager"])
    before = model.config._attn_implementation
    model.set_attn_implementation(CUT_IMPLEMENTATION)
    _RANK.append(rank)
    try:
        yield
    finally:
        _RANK.pop()
        model.set_attn_implementation(before)


@torch.no_grad()
def next_token_loss(model, ids: torch.Tensor, *, batch_size: int = 4) -> torch.Tensor:
    """Mean next-token cross-entropy (nats per token) of each window of ``ids`` (count, n), float64 (count,)."""
    out = []
    device = next(model.parameters()).device
    for start in range(0, len(ids), batch_size):
        b = ids[start:start + batch_size].to(device)
        logits = model(input_ids=b).logits[:, :-1].double()
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), b[:, 1:].reshape(-1),
                                                 reduction="none")
        out.append(loss.view(len(b), -1).mean(1).cpu())
    return torch.cat(out)

