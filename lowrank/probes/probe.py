"""Read attention out of a model: pre-softmax logits and probabilities per layer and head.

Works on ``lowrank`` models (any module tree holding :class:`lowrank.layers.attention.MultiHeadAttention`
or :class:`lowrank.layers.mla.MultiHeadLatentAttention`)
and on Hugging Face ``transformers`` models whose attention goes through the attention-function
registry (BERT, RoBERTa, DistilBERT, GPT-2, Llama/Mistral/Qwen with rotary embeddings and
grouped-query attention, ViT, ...; :mod:`lowrank.probes.hf`).

How: for a lowrank model, a forward hook on every attention module sees the hidden states
entering it and its mask, and recomputes queries and keys with the module's own projections; for
a Hugging Face model, a function registered in its ``AttentionInterface`` receives the queries
and keys after any rotary embedding, the scale and the mask. From them the probe forms, in float64::

    logits = scale * Q K^T              (B, h, n, n), before any mask
                                        (MLA: scale * (Q_C K_C^T + Q_R K_R^T), rotary part included)
    probs  = softmax(logits + mask)     (B, h, n, n), rows sum to 1

then checks that ``probs`` reproduces the model's own probabilities to ``atol`` (max abs
difference; 1e-5 for float32) and raises :class:`ProbeMismatchError` if not: a probe that silently
read the wrong scale or mask would rank the wrong matrices.

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

from . import hf
from ..layers.attention import MultiHeadAttention, hardmax, row_softmax
from ..layers.mla import MultiHeadLatentAttention
from ..measure.rank import rank_report

__all__ = ["MEASURES", "ProbeMismatchError", "AttentionSite", "LayerAttention", "attention_sites",
           "layer_count", "for_each_layer", "capture", "layer_ranks", "rank_table", "text_ranks", "valid_blocks"]

MEASURES = ("numerical_rank", "effective_rank", "stable_rank", "energy_rank", "hardmax_rank")


class ProbeMismatchError(RuntimeError):
    """The recomputed probabilities do not reproduce the model's own attention probabilities."""


@dataclass(frozen=True)
class AttentionSite:
    """One lowrank attention module: its layer index, dotted name, kind ("lowrank") and the module."""
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
    max_diff: float = float("nan")   # largest |probs - the model's own probabilities|


def attention_sites(model: nn.Module) -> list[AttentionSite]:
    """Every attention module of ``model`` that the probe reads, in forward order (layer 0 first):
    the book's :class:`~lowrank.layers.attention.MultiHeadAttention` and :class:`~lowrank.layers.mla.MultiHeadLatentAttention`.

    Hugging Face models have no sites: their attention is read through the attention-function
    registry (:mod:`lowrank.probes.hf`), call by call.
    """
    sites = [AttentionSite(i, name, "lowrank", m) for i, (name, m) in
             enumerate((name, m) for name, m in model.named_modules() if isinstance(m, _SITE_TYPES))]
    if not sites:
        raise ValueError(
            f"no self-attention module found in {type(model).__name__}: the probe reads "
            "lowrank.layers.attention.MultiHeadAttention, lowrank.layers.mla.MultiHeadLatentAttention and Hugging Face transformers models whose attention "
            "goes through their AttentionInterface")
    return sites


_SITE_TYPES = (MultiHeadAttention, MultiHeadLatentAttention)


def _mismatch(layer: int, name: str, diff: float, atol: float) -> ProbeMismatchError:
    return ProbeMismatchError(
        f"layer {layer} ({name}): recomputed probabilities differ from the model's by {diff:.3g} (max abs), "
        f"more than atol={atol:g}; the probe's scale or mask does not match this attention implementation")


def _recompute(site: AttentionSite, args: tuple, kwargs: dict, atol: float):
    """(logits, probs, max abs difference) in float64 for one lowrank module call, after checking probs
    against the module's own."""
    x = args[0] if args else kwargs.get("hidden_states", kwargs.get("x"))
    m = site.module
    mask_in = kwargs.get("attn_mask")
    mask = m._mask(x.shape[1], mask_in, torch.float64, x.device)  # additive, float64, or None
    own = m.probs(x, attn_mask=mask_in)
    if isinstance(m, MultiHeadLatentAttention):
        # The content and rotary parts summed, as the layer's definition reads (k_R shared by the heads).
        p = m.parts(x)
        logits = (p.q_c.double() @ p.k_c.double().transpose(-2, -1)
                  + p.q_r.double() @ p.k_r.double().transpose(-2, -1)) * m.scale
        use_hardmax = False
    else:
        q, k, _ = m.qkv(x)
        logits = (q.double() @ k.double().transpose(-2, -1)) * m.scale
        use_hardmax = m.hardmax
    masked = logits if mask is None else logits + mask
    probs = hardmax(masked) if use_hardmax else row_softmax(masked)
    diff = (probs - own.double()).abs().max().item()
    if not diff <= atol:
        raise _mismatch(site.layer, site.name, diff, atol)
    return logits, probs, diff


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
    if hf.is_hf_model(model):
        return hf.max_tokens(config)
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


def layer_count(model: nn.Module) -> int:
    """How many attention layers the probe reads in ``model`` (Hugging Face: the config's layer count)."""
    if hf.is_hf_model(model):
        n = getattr(model.config.get_text_config(), "num_hidden_layers", None)
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"{type(model).__name__}: its config states no num_hidden_layers")
        return n
    return len(attention_sites(model))


def _wanted(model: nn.Module, layers: Sequence[int] | None) -> list[int]:
    count = layer_count(model)
    wanted = sorted(set(range(count) if layers is None else layers))
    bad = [i for i in wanted if not (isinstance(i, int) and 0 <= i < count)]
    if bad or not wanted:
        raise ValueError(f"layers must be a non-empty list of indices in [0, {count - 1}], got {layers!r}")
    return wanted


def for_each_layer(model: nn.Module, batch, fn: Callable[[LayerAttention], None], *,
                   layers: Sequence[int] | None = None, atol: float | None = None) -> None:
    """Run ``model`` on ``batch`` and call ``fn(LayerAttention)`` once per requested layer, in order.

    ``batch`` is a (B, n) tensor of token ids or a mapping of keyword inputs (a Hugging Face
    tokenizer's or image processor's output, or ``{"ids": ..., "pad_mask": ...}`` for lowrank
    models). The model runs in eval mode under no_grad (its mode is restored); the matrices live
    only during ``fn``. ``atol`` bounds the max abs difference between the recomputed and the
    model's own probabilities (default: 1e-5 for lowrank models; for Hugging Face models the
    rounding of the dtype they run in, :func:`lowrank.probes.hf.cross_check_atol`).
    """
    wanted = _wanted(model, layers)
    if atol is not None and not atol >= 0:
        raise ValueError(f"atol must be >= 0, got {atol!r}")
    last = wanted[-1]

    def deliver(layer: int, logits, probs, diff: float) -> None:
        B, _, n, _ = probs.shape
        fn(LayerAttention(layer, logits, probs, _valid(batch, B, n, probs.device), diff))
        if layer == last:
            raise _Done

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            if hf.is_hf_model(model):
                _run_hf(model, batch, wanted, atol, deliver)
            else:
                _run_lowrank(model, batch, wanted, 1e-5 if atol is None else atol, deliver)
    except _Done:
        pass
    finally:
        model.train(was_training)


def _run_hf(model, batch, wanted, atol, deliver) -> None:
    def on_call(call: hf.HFCall) -> None:
        tol = hf.cross_check_atol(next(model.parameters()).dtype) if atol is None else atol
        if not call.max_diff <= tol:
            raise _mismatch(call.index, type(call.module).__name__, call.max_diff, tol)
        deliver(call.index, call.logits, call.probs, call.max_diff)

    with hf.reading(model, on_call, want=set(wanted).__contains__):
        _forward(model, batch)


def _run_lowrank(model, batch, wanted, atol, deliver) -> None:
    sites = attention_sites(model)

    def make_hook(site: AttentionSite):
        def hook(module, args, kwargs, output):
            deliver(site.layer, *_recompute(site, args, kwargs, atol))
        return hook

    handles = [sites[i].module.register_forward_hook(make_hook(sites[i]), with_kwargs=True) for i in wanted]
    try:
        _forward(model, batch)
    finally:
        for h in handles:
            h.remove()


def capture(model: nn.Module, batch, *, layers: Sequence[int] | None = None,
            atol: float | None = None) -> list[LayerAttention]:
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


def _check_measures(measures: Sequence[str]) -> None:
    unknown = sorted(set(measures) - set(MEASURES))
    if unknown or not measures:
        raise ValueError(f"unknown measures {unknown or list(measures)}; allowed: {', '.join(MEASURES)}")


def layer_ranks(la: LayerAttention, *, measures: Sequence[str] = MEASURES,
                rtols: Sequence[float | str | None] = (None, 1e-6, 1e-3),
                energies: Sequence[float] = (0.99,)) -> pd.DataFrame:
    """Rank of every head's logits and probs in one layer, in the columns of :func:`rank_table`."""
    _check_measures(measures)
    frames: list[pd.DataFrame] = []
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
    return pd.concat(frames, ignore_index=True)


def rank_table(model: nn.Module, batch, *, measures: Sequence[str] = MEASURES,
               rtols: Sequence[float | str | None] = (None, 1e-6, 1e-3), energies: Sequence[float] = (0.99,),
               layers: Sequence[int] | None = None, atol: float | None = None) -> pd.DataFrame:
    """Rank of every head's logits and probs, one layer at a time, as a tidy table.

    Columns: layer, head, seq (index in the batch), n (valid length), matrix ("logits" or
    "probs"), measure, tolerance, value. Measures and tolerances are those of
    :func:`lowrank.measure.rank.rank_report` (numerical rank at each ``rtols`` entry, None meaning
    max(m, n) eps; energy rank at each of ``energies``). One batched float64 SVD per layer,
    matrix and valid length, on the model's device.
    """
    _check_measures(measures)
    frames: list[pd.DataFrame] = []
    for_each_layer(model, batch, lambda la: frames.append(
        layer_ranks(la, measures=measures, rtols=rtols, energies=energies)), layers=layers, atol=atol)
    return pd.concat(frames, ignore_index=True)


def text_ranks(model: nn.Module, tokenizer, texts: Sequence[str], *, lengths: Sequence[int],
               windows: int | Sequence[int], batch_size: int = 4, seed: int = 0,
               measures: Sequence[str] = MEASURES, rtols: Sequence[float | str | None] = (None, 1e-6, 1e-3),
               energies: Sequence[float] = (0.99,), layers: Sequence[int] | None = None,
               atol: float | None = None, cross_checks: list | None = None) -> pd.DataFrame:
    """Rank of every head of a Hugging Face text model on unpadded windows of ``texts``.

    For each length n in ``lengths``, ``windows`` windows (one count, or one per length) of
    exactly n tokens (:func:`lowrank.probes.hf.text_windows`, seeded with ``seed + n``) run through
    the model ``batch_size`` at a time, so memory holds one layer of one batch. Returns the
    columns of :func:`rank_table`; ``seq`` numbers the windows of one n. When ``cross_checks`` is
    a list, one ``(n, layer, max_diff)`` per layer and batch is appended to it: the largest
    difference between the recomputed probabilities and the model's own. This is the code path of
    chapter 07 and of ``lowrank probe``.
    """
    from ..core.progress import progress

    counts = [windows] * len(lengths) if isinstance(windows, int) else list(windows)
    if len(counts) != len(lengths):
        raise ValueError(f"windows must be one count or one per length, got {len(counts)} for {len(lengths)} lengths")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    _check_measures(measures)
    device = next(model.parameters()).device
    frames: list[pd.DataFrame] = []
    for n, count in progress(list(zip(lengths, counts)), desc="probe lengths"):
        ids = hf.text_windows(tokenizer, texts, n=n, count=count, seed=seed + n)
        for start in range(0, count, batch_size):
            def rank_layer(la: LayerAttention, start=start) -> None:
                t = layer_ranks(la, measures=measures, rtols=rtols, energies=energies)
                t["seq"] += start
                frames.append(t)
                if cross_checks is not None:
                    cross_checks.append((n, la.layer, la.max_diff))
            for_each_layer(model, ids[start:start + batch_size].to(device), rank_layer, layers=layers, atol=atol)
    return pd.concat(frames, ignore_index=True)
