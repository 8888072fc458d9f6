"""Read attention out of a model: pre-softmax logits and probabilities per layer and head.

Works on ``lowrank`` models (any module tree holding :class:`lowrank.attention.MultiHeadAttention`)
and on Hugging Face ``transformers`` models of the BERT family (``query``/``key`` projections:
BERT, RoBERTa, MiniLM, ...; encoders, and decoders built with ``is_decoder=True``) and the GPT-2
family (``c_attn``), loaded with ``attn_implementation="eager"``.

How: a forward hook on every self-attention module sees the hidden states entering it and its
mask. From them the probe recomputes queries and keys with the module's own projections and
forms, in float64,

    logits = scale * Q K^T              (B, h, n, n), before any mask
    probs  = softmax(logits + mask)     (B, h, n, n), rows sum to 1

then checks that ``probs`` reproduces the model's own probabilities to ``atol`` (default 1e-5,
max abs difference) and raises :class:`ProbeMismatchError` if not: a probe that silently read
the wrong scale or mask would rank the wrong matrices.

Logits are taken before the mask because masked scores are -inf, which has no rank; the bilinear
form ``Q K^T`` is the matrix whose rank the head size bounds. The mask enters the probabilities.
Both are recomputed in float64 from the model's Q and K: a float32 product of rank-d_h factors
carries rounding noise near 1e-7 sigma_1, which a float64 tolerance would count as rank.

Memory: hooks hand one layer's matrices to a callback and drop them, so at most one layer's
n x n maps are alive at a time (:func:`for_each_layer`, :func:`rank_table`); the forward pass stops
after the last requested layer. :func:`capture` keeps every requested layer, for small inputs.

Padding: only the valid block of each sequence (rows and columns at real tokens, given by the
batch's ``attention_mask`` or ``pad_mask``) is ranked; sequences with the same number of real
tokens share one batched SVD.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import torch
from torch import nn

from .attention import MultiHeadAttention, hardmax, row_softmax
from .rank import rank_report

__all__ = ["MEASURES", "ProbeMismatchError", "AttentionSite", "LayerAttention", "attention_sites",
           "for_each_layer", "capture", "rank_table", "valid_blocks"]

MEASURES = ("numerical_rank", "effective_rank", "stable_rank", "energy_rank", "hardmax_rank")


class ProbeMismatchError(RuntimeError):
    """The recomputed probabilities do not reproduce the model's own attention probabilities."""


@dataclass(frozen=True)
class AttentionSite:
    """One self-attention module: its layer index, dotted name and kind (lowrank, bert, gpt2)."""
    layer: int
    name: str
    kind: str
    module: nn.Module


@dataclass
class LayerAttention:
    """One layer's attention: logits and probs (B, h, n, n) float64, valid (B, n) bool."""
    layer: int
    logits: torch.Tensor
    probs: torch.Tensor
    valid: torch.Tensor


def _kind(module: nn.Module) -> str | None:
    if isinstance(module, MultiHeadAttention):
        return "lowrank"
    if "Cross" in type(module).__name__ or getattr(module, "is_cross_attention", False):
        return None
    if all(hasattr(module, a) for a in ("query", "key", "attention_head_size", "scaling")):
        return "bert"
    if all(hasattr(module, a) for a in ("c_attn", "split_size", "head_dim", "scaling")):
        return "gpt2"
    return None


def attention_sites(model: nn.Module) -> list[AttentionSite]:
    """The self-attention modules of ``model`` in forward order (layer 0 first)."""
    found = [(name, m, _kind(m)) for name, m in model.named_modules()]
    sites = [AttentionSite(i, name, kind, m) for i, (name, m, kind) in
             enumerate((x for x in found if x[2] is not None))]
    if not sites:
        raise ValueError(
            f"no self-attention module found in {type(model).__name__}: the probe reads "
            "lowrank.attention.MultiHeadAttention and Hugging Face BERT-family (query/key) or "
            "GPT-2-family (c_attn) attention")
    return sites


def _heads(t: torch.Tensor, head_dim: int) -> torch.Tensor:
    B, n, _ = t.shape
    return t.view(B, n, -1, head_dim).transpose(1, 2)


def _hf_qk(site: AttentionSite, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float]:
    m = site.module
    if site.kind == "bert":
        return _heads(m.query(x), m.attention_head_size), _heads(m.key(x), m.attention_head_size), m.scaling
    q, k, _ = m.c_attn(x).split(m.split_size, dim=2)
    return _heads(q, m.head_dim), _heads(k, m.head_dim), m.scaling


def _additive(mask: torch.Tensor | None) -> torch.Tensor | None:
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=torch.float64, device=mask.device).masked_fill(~mask, float("-inf"))
    return mask.to(torch.float64)


def _recompute(site: AttentionSite, args: tuple, kwargs: dict, output, atol: float):
    """(logits, probs) in float64 for one module call, after checking probs against the model's."""
    x = args[0] if args else kwargs.get("hidden_states", kwargs.get("x"))
    m = site.module
    if site.kind == "lowrank":
        q, k, _ = m.qkv(x)
        scale, mask_in = m.scale, kwargs.get("attn_mask")
        mask = _additive(m._mask(x.shape[1], mask_in, torch.float64, x.device))
        own = m.probs(x, attn_mask=mask_in)
        use_hardmax = m.hardmax
    else:
        own = output[1] if isinstance(output, tuple) and len(output) > 1 else None
        if own is None:
            raise ValueError(
                f"{site.name} ({type(m).__name__}) returned no attention probabilities: load the model "
                "with attn_implementation=\"eager\" (sdpa and flash attention do not return them)")
        q, k, scale = _hf_qk(site, x)
        mask, use_hardmax = _additive(kwargs.get("attention_mask")), False
    if k.shape[-2] != q.shape[-2]:
        raise ValueError(f"{site.name}: {q.shape[-2]} queries but {k.shape[-2]} keys; the probe reads "
                         "self-attention over one full sequence (no key/value cache)")
    logits = (q.double() @ k.double().transpose(-2, -1)) * scale
    masked = logits if mask is None else logits + mask
    probs = hardmax(masked) if use_hardmax else row_softmax(masked)
    diff = (probs - own.double()).abs().max().item()
    if not diff <= atol:
        raise ProbeMismatchError(
            f"layer {site.layer} ({site.name}): recomputed probabilities differ from the model's by "
            f"{diff:.3g} (max abs), more than atol={atol:g}; the probe's scale or mask does not "
            "match this attention implementation")
    return logits, probs


def _valid(batch, B: int, n: int, device) -> torch.Tensor:
    mask = None
    if isinstance(batch, Mapping):
        mask = batch.get("attention_mask", batch.get("pad_mask"))
    if mask is None:
        return torch.ones(B, n, dtype=torch.bool, device=device)
    mask = torch.as_tensor(mask, device=device).bool()
    if mask.shape != (B, n):
        raise ValueError(f"padding mask has shape {tuple(mask.shape)}, expected (B, n) = {(B, n)} to match "
                         "the attention maps")
    return mask


def _max_positions(model: nn.Module) -> int | None:
    """How many positions the model embeds (Hugging Face ``max_position_embeddings`` or a lowrank
    model's ``cfg.max_len``), or None when it does not say."""
    config = getattr(model, "config", None)
    if isinstance(getattr(config, "max_position_embeddings", None), int):
        return config.max_position_embeddings
    for module in model.modules():
        cfg = getattr(module, "cfg", None)
        if isinstance(getattr(cfg, "max_len", None), int):
            return cfg.max_len
    return None


def _forward(model: nn.Module, batch) -> None:
    ids = batch.get("input_ids", batch.get("ids")) if isinstance(batch, Mapping) else batch
    limit = _max_positions(model)
    if isinstance(ids, torch.Tensor) and ids.dim() == 2 and limit is not None and ids.shape[1] > limit:
        raise ValueError(f"sequences of {ids.shape[1]} tokens are longer than the {limit} positions "
                         f"{type(model).__name__} embeds; use at most {limit} tokens")
    if isinstance(batch, Mapping):
        model(**batch)
    elif isinstance(batch, torch.Tensor):
        model(batch)
    else:
        raise ValueError(f"batch must be a tensor of token ids (B, n) or a mapping of model inputs, "
                         f"got {type(batch).__name__}")


class _Done(Exception):
    """Raised inside the last needed hook to skip the rest of the forward pass."""


def for_each_layer(model: nn.Module, batch, fn: Callable[[LayerAttention], None], *,
                   layers: Sequence[int] | None = None, atol: float = 1e-5) -> None:
    """Run ``model`` on ``batch`` and call ``fn(LayerAttention)`` once per requested layer, in order.

    ``batch`` is a (B, n) tensor of token ids or a mapping of keyword inputs (a Hugging Face
    tokenizer's output, or ``{"ids": ..., "pad_mask": ...}`` for lowrank models). The model runs
    in eval mode under no_grad (its mode is restored); the matrices live only during ``fn``.
    """
    sites = attention_sites(model)
    wanted = sorted(set(range(len(sites)) if layers is None else layers))
    bad = [i for i in wanted if not (isinstance(i, int) and 0 <= i < len(sites))]
    if bad or not wanted:
        raise ValueError(f"layers must be a non-empty list of indices in [0, {len(sites) - 1}], got {layers!r}")
    if not atol >= 0:
        raise ValueError(f"atol must be >= 0, got {atol!r}")
    last = wanted[-1]

    def make_hook(site: AttentionSite):
        def hook(module, args, kwargs, output):
            logits, probs = _recompute(site, args, kwargs, output, atol)
            B, _, n, _ = probs.shape
            fn(LayerAttention(site.layer, logits, probs, _valid(batch, B, n, probs.device)))
            if site.layer == last:
                raise _Done
        return hook

    handles = [sites[i].module.register_forward_hook(make_hook(sites[i]), with_kwargs=True) for i in wanted]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            _forward(model, batch)
    except _Done:
        pass
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)


def capture(model: nn.Module, batch, *, layers: Sequence[int] | None = None,
            atol: float = 1e-5) -> list[LayerAttention]:
    """Every requested layer's logits and probs at once (memory grows with layers x B x h x n^2)."""
    out: list[LayerAttention] = []
    for_each_layer(model, batch, out.append, layers=layers, atol=atol)
    return out


def valid_blocks(A: torch.Tensor, valid: torch.Tensor):
    """Yield (seq_indices, blocks) per valid length L: blocks (G, h, L, L) at real tokens only.

    A is (B, h, n, n), valid (B, n) bool. Without padding this is one group, A itself.
    """
    if bool(valid.all()):
        yield torch.arange(A.shape[0]), A
        return
    lengths = valid.sum(-1)
    for L in sorted(set(lengths.tolist())):
        if L == 0:
            continue
        seqs = torch.nonzero(lengths == L).flatten()
        pos = torch.stack([torch.nonzero(valid[s]).flatten() for s in seqs])  # (G, L)
        sub = A[seqs]
        rows = pos[:, None, :, None].expand(-1, sub.shape[1], -1, sub.shape[-1])
        sub = sub.gather(2, rows)
        cols = pos[:, None, None, :].expand(-1, sub.shape[1], L, -1)
        yield seqs.cpu(), sub.gather(3, cols)


def rank_table(model: nn.Module, batch, *, measures: Sequence[str] = MEASURES,
               rtols: Sequence[float | None] = (None, 1e-6, 1e-3), energies: Sequence[float] = (0.99,),
               layers: Sequence[int] | None = None, atol: float = 1e-5) -> pd.DataFrame:
    """Rank of every head's logits and probs, one layer at a time, as a tidy table.

    Columns: layer, head, seq (index in the batch), n (valid length), matrix ("logits" or
    "probs"), measure, tolerance, value. Measures and tolerances are those of
    :func:`lowrank.rank.rank_report` (numerical rank at each ``rtols`` entry, None meaning
    max(m, n) eps; energy rank at each of ``energies``). One batched float64 SVD per layer,
    matrix and valid length, on the model's device.
    """
    unknown = sorted(set(measures) - set(MEASURES))
    if unknown or not measures:
        raise ValueError(f"unknown measures {unknown or list(measures)}; allowed: {', '.join(MEASURES)}")
    frames: list[pd.DataFrame] = []

    def rank_layer(la: LayerAttention) -> None:
        for matrix, A in (("logits", la.logits), ("probs", la.probs)):
            for seqs, blocks in valid_blocks(A, la.valid):
                G, h, L, _ = blocks.shape
                rep = rank_report(blocks.reshape(G * h, L, L), rtols=rtols,
                                  energies=energies if "energy_rank" in measures else (),
                                  hardmax="hardmax_rank" in measures, long=True)
                rep = rep[rep["measure"].isin(measures)]
                idx = rep["index"].to_numpy()
                frames.append(pd.DataFrame({
                    "layer": la.layer, "head": idx % h, "seq": seqs.numpy()[idx // h], "n": L,
                    "matrix": matrix, "measure": rep["measure"].to_numpy(),
                    "tolerance": rep["tolerance"].to_numpy(), "value": rep["value"].to_numpy()}))

    for_each_layer(model, batch, rank_layer, layers=layers, atol=atol)
    return pd.concat(frames, ignore_index=True)
