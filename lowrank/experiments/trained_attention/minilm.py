"""Chapter 07, part one: the heads of a pretrained encoder (all-MiniLM-L6-v2) ranked on real text.

- :func:`pretrained_ranks`: every head of a Hugging Face encoder on unpadded windows of real text at
  several sequence lengths, through :func:`lowrank.probes.probe.rank_table`.
- :func:`argmax_patterns`: where each head's queries put their largest weight.
- :func:`pretrained_headline`: the numbers the chapter glues about them.

Tolerances follow chapter 01: an ``rtols`` entry of 0 (or None) means the matrix_rank default
max(m, n) eps of float64; the chapter's runs add :data:`lowrank.measure.rank.FLOAT32`, the same rule with
float32's eps, the rounding level of the float32 arithmetic that produced the attention.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...data import corpora as _data
from ...data.pretrained import encode_windows, load_minilm
from ...probes.probe import MEASURES, LayerAttention, for_each_layer, text_ranks, valid_blocks
from ...measure.rank import DEFAULT_TOL, FLOAT32, FLOAT32_TOL, rtol_or_default, tolerance_label
from ...measure.stats import t_interval
from ...theory.barrier import expected_distinct_columns
from ..shared.intervals import wilson_interval
from .rules import LEVEL

__all__ = ["as_rtols", "pretrained_ranks", "argmax_patterns", "with_float32", "tolerance_names", "coarse_tolerance",
           "barrier_fraction", "run_pretrained", "per_head_fractions", "pretrained_headline"]


def as_rtols(rtols: Sequence[float | str | None]) -> tuple[float | str | None, ...]:
    """Chapter convention to rank_report's: 0 (or None) is the default max(m, n) eps; FLOAT32 passes."""
    out = tuple(r if r is None or r == FLOAT32 else float(r) for r in map(rtol_or_default, rtols))
    if any(r is not None and r != FLOAT32 and not 0 < r < 1 for r in out):
        raise ValueError(f"rtols must be in [0, 1), got {list(rtols)!r}")
    return out


def pretrained_ranks(model, tokenizer, corpora: Mapping[str, Sequence[str]], *, seq_lens: Sequence[int],
                     counts: Sequence[int], batch_size: int = 4, seed: int = 0,
                     measures: Sequence[str] = MEASURES, rtols: Sequence[float | None] = (0.0, 1e-6, 1e-3),
                     energies: Sequence[float] = (0.99,)) -> pd.DataFrame:
    """Rank of every head of ``model`` on ``counts[i]`` windows of ``seq_lens[i]`` tokens per corpus.

    Windows come from :func:`lowrank.data.pretrained.encode_windows` ([CLS] ... [SEP], unpadded); a
    length's windows run through the model ``batch_size`` at a time, so memory holds one layer of
    one batch. Returns the columns of :func:`lowrank.probes.probe.rank_table` plus ``corpus``; ``seq``
    numbers the windows of one (corpus, n).
    """
    if len(seq_lens) != len(counts):
        raise ValueError(f"seq_lens and counts must have the same length, got {len(seq_lens)} and {len(counts)}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    # the code path of `lowrank probe`, one corpus at a time
    frames = [text_ranks(model, tokenizer, corpora[c], lengths=seq_lens, windows=list(counts), batch_size=batch_size,
                         seed=seed, measures=measures, rtols=as_rtols(rtols), energies=energies).assign(corpus=c)
              for c in corpora]
    return pd.concat(frames, ignore_index=True)


def argmax_patterns(model, batch, *, layers: Sequence[int] | None = None) -> pd.DataFrame:
    """Where each head's queries put their largest attention weight, one row per (layer, head, seq).

    Columns: layer, head, seq, n, hardmax_rank (distinct argmax keys), and the shares of the n
    queries whose argmax key is the first token (``to_first``), the last (``to_last``), the
    query itself (``to_self``), the previous token (``to_prev``) or the next one (``to_next``).
    Positions count real tokens only (padding removed).
    """
    rows: list[pd.DataFrame] = []

    def collect(la: LayerAttention) -> None:
        for seqs, A in valid_blocks(la.probs, la.valid):
            G, h, L, _ = A.shape
            j = A.argmax(-1)  # (G, h, L): key chosen by each query
            i = torch.arange(L, device=j.device)
            hit = torch.zeros(G, h, L, dtype=torch.bool, device=j.device).scatter_(-1, j, True)
            share = {name: (cond.double().mean(-1)).flatten().cpu().numpy() for name, cond in (
                ("to_first", j == 0), ("to_last", j == L - 1), ("to_self", j == i),
                ("to_prev", j == i - 1), ("to_next", j == i + 1))}
            rows.append(pd.DataFrame({
                "layer": la.layer, "head": np.tile(np.arange(h), G), "seq": np.repeat(seqs.numpy(), h),
                "n": L, "hardmax_rank": hit.sum(-1).flatten().cpu().numpy(), **share}))

    for_each_layer(model, batch, collect, layers=layers)
    return pd.concat(rows, ignore_index=True)


def with_float32(rtols: Sequence[float | str | None]) -> list[float | str | None]:
    """``rtols`` with the float32 tolerance added (once): the chapter reports both precisions."""
    return [*rtols] + ([] if FLOAT32 in rtols else [FLOAT32])


def tolerance_names(rtols: Sequence[float | str | None]) -> list[str]:
    """The labels of the tolerances the chapter ranks at: the float64 default, the float32 one,
    then the chapter's ``rtols`` in ascending order."""
    fixed = sorted(r for r in as_rtols(rtols) if r is not None and r != FLOAT32)
    return [DEFAULT_TOL, FLOAT32_TOL] + [tolerance_label(r) for r in fixed]


def coarse_tolerance(rtols: Sequence[float | str | None]) -> str:
    """The label of the coarsest fixed tolerance in ``rtols`` (the float64 default when there is none)."""
    fixed = sorted(r for r in as_rtols(rtols) if r is not None and r != FLOAT32)
    return tolerance_label(fixed[-1]) if fixed else DEFAULT_TOL


def barrier_fraction(n: int) -> float:
    """Min & Li's barrier divided by n: 1 - (1 - 1/n)^n."""
    return float(expected_distinct_columns(int(n))) / int(n)


def run_pretrained(*, corpora: Sequence[str], seq_lens: Sequence[int], counts: Sequence[int], batch_size: int,
                   seed: int, rtols: Sequence[float | None], energy: float, device: str | None = None,
                   root: str | None = None) -> dict[str, Any]:
    """Rank every head of all-MiniLM-L6-v2 on real text, and where its queries look at the longest n.

    Returns ``{"model": {layers, heads, head_dim}, "mini": rank table of :func:`pretrained_ranks`
    with a ``frac`` column (value / n), "patterns": :func:`argmax_patterns` of the first
    ``batch_size`` windows per corpus at the longest n (with ``rank_frac`` and ``neighbour``, the
    share of queries whose argmax key is i - 1, i or i + 1), "rtols": rtols}``.
    """
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model, tok = load_minilm(device=device)
    cfg = model.config
    texts = {name: _data.load_corpus(name, root=root).texts for name in corpora}
    mini = pretrained_ranks(model, tok, texts, seq_lens=seq_lens, counts=counts, batch_size=batch_size,
                            seed=seed, rtols=with_float32(rtols), energies=[energy])
    mini = mini.assign(frac=mini.value / mini.n)
    n_max = int(max(seq_lens))
    count = int(counts[list(seq_lens).index(n_max)])
    windows = {c: encode_windows(tok, texts[c], n=n_max, count=count, seed=seed + n_max)[:batch_size]
               for c in texts}  # the first windows ranked at n = n_max
    pat = pd.concat([argmax_patterns(model, w.to(device)).assign(corpus=c) for c, w in windows.items()],
                    ignore_index=True)
    pat = pat.assign(rank_frac=pat.hardmax_rank / pat.n, neighbour=pat.to_prev + pat.to_self + pat.to_next)
    info = {"layers": int(cfg.num_hidden_layers), "heads": int(cfg.num_attention_heads),
            "head_dim": int(cfg.hidden_size // cfg.num_attention_heads)}
    return {"model": info, "mini": mini, "patterns": pat, "rtols": list(rtols)}


def per_head_fractions(mini: pd.DataFrame, n: int) -> pd.DataFrame:
    """Rank / n of every (measure, tolerance, layer, head) at sequence length n, mean over windows."""
    return mini[mini.n == n].groupby(["measure", "tolerance", "layer", "head"]).frac.mean().reset_index()




def _mean_or_nan(x: pd.Series) -> float:
    return float(x.mean()) if len(x) else float("nan")


def pretrained_headline(t: Mapping[str, Any], coarse: str) -> dict[str, Any]:
    mini, info, pat = t["mini"], t["model"], t["patterns"]
    dh = info["head_dim"]
    ns = np.array(sorted(mini.n.unique()))
    n_max, n_min = int(ns.max()), int(ns.min())
    big = mini[mini.n > dh]
    logit_num = big[(big.matrix == "logits") & (big.measure == "numerical_rank")]
    logit_default = logit_num[logit_num.tolerance == DEFAULT_TOL].value
    logit_coarse = logit_num[logit_num.tolerance == coarse].value
    logit_f32 = logit_num[logit_num.tolerance == FLOAT32_TOL].value
    probs = mini[mini.matrix == "probs"]
    full_default = (probs[(probs.measure == "numerical_rank") & (probs.tolerance == DEFAULT_TOL)].frac == 1).mean()
    barrier = barrier_fraction(n_max)
    at_max, at_min = probs[probs.n == n_max], probs[probs.n == n_min]
    hard_max = at_max[at_max.measure == "hardmax_rank"]

    def frac(d, meas, tol=""):
        return float(d[(d.measure == meas) & (d.tolerance == tol)].frac.mean())

    out: dict[str, Any] = {"ch07_mini_layers": info["layers"], "ch07_mini_heads": info["heads"], "ch07_mini_dh": dh}
    out["ch07_mini_maps"] = int(len(mini[(mini.matrix == "probs") & (mini.measure == "stable_rank")]))
    if len(logit_default):
        lo, hi = int(logit_default.min()), int(logit_default.max())
        out["ch07_logit_min"], out["ch07_logit_max"] = lo, hi
        out["ch07_logit_range"] = f"exactly {lo}" if lo == hi else f"between {lo} and {hi}"
        out["ch07_logit_coarse_min"] = int(logit_coarse.min())
        out["ch07_logit_f32_min"], out["ch07_logit_f32_max"] = int(logit_f32.min()), int(logit_f32.max())
    else:  # no sequence longer than d_h
        for k in ("min", "max", "coarse_min", "f32_min", "f32_max"):
            out[f"ch07_logit_{k}"] = float("nan")
        out["ch07_logit_range"] = f"not measured (no n above d_h = {dh})"
    logit_eff = mini[(mini.matrix == "logits") & (mini.measure == "effective_rank") & (mini.n == n_max)].value
    out["ch07_logit_eff_nmax"], out["ch07_logit_eff_nmax_hi"] = float(logit_eff.mean()), float(logit_eff.max())
    out["ch07_logit_maps"] = int(len(logit_default))
    out["ch07_coarse_tol"] = coarse
    # Precision: the numerical rank of A at float64's and at float32's default tolerance, with the
    # range over heads (each head's mean over windows) at the longest n.
    out["ch07_f32_tol"] = FLOAT32_TOL
    out["ch07_f32_rtol_nmax"] = float(n_max * np.finfo(np.float32).eps)
    num = probs[probs.measure == "numerical_rank"]
    out["ch07_full_f32"] = float((num[num.tolerance == FLOAT32_TOL].frac == 1).mean())
    per_head_all = per_head_fractions(probs, n_max)
    for name, tol in (("f32", FLOAT32_TOL), ("default", DEFAULT_TOL)):
        d = per_head_all[(per_head_all.measure == "numerical_rank") & (per_head_all.tolerance == tol)].frac
        out[f"ch07_{name}_frac_nmax"] = frac(at_max, "numerical_rank", tol)
        out[f"ch07_{name}_head_lo"], out[f"ch07_{name}_head_hi"] = float(d.min()), float(d.max())
    out["ch07_f32_frac_nmin"] = frac(at_min, "numerical_rank", FLOAT32_TOL)
    out["ch07_full_default"] = float(full_default)
    out["ch07_n_max"], out["ch07_n_min"] = n_max, n_min
    out["ch07_barrier"] = barrier
    out["ch07_hard_frac_nmax"], out["ch07_hard_frac_nmin"] = frac(at_max, "hardmax_rank"), frac(at_min, "hardmax_rank")
    out["ch07_eff_frac_nmax"] = frac(at_max, "effective_rank")
    out["ch07_coarse_frac_nmax"] = frac(at_max, "numerical_rank", coarse)
    out["ch07_coarse_frac_nmin"] = frac(at_min, "numerical_rank", coarse)
    out["ch07_above_barrier"] = float((hard_max.frac > barrier).mean())
    out["ch07_hard_frac_head_max"] = float(hard_max.frac.max())
    # The barrier judged over heads: each head's hardmax rank / n at the longest n, mean over windows.
    head = per_head_all[per_head_all.measure == "hardmax_rank"].frac
    est = t_interval(head.to_numpy(), LEVEL)
    out["ch07_heads"] = int(len(head))
    out["ch07_windows_nmax"] = int(hard_max.groupby(["layer", "head"]).size().min())
    out["ch07_head_mean"], out["ch07_head_mean_lo"], out["ch07_head_mean_hi"] = est.mean, est.lo, est.hi
    above = int((head > barrier).sum())
    out["ch07_heads_above"] = above
    out["ch07_heads_above_lo"], out["ch07_heads_above_hi"] = wilson_interval(above, int(len(head)))
    high, low = pat[pat.rank_frac > barrier], pat[pat.rank_frac < 0.1]
    out["ch07_high_count"], out["ch07_pat_count"] = int(len(high)), int(len(pat))
    out["ch07_high_neighbour"] = _mean_or_nan(high.neighbour)
    out["ch07_low_count"] = int(len(low))
    out["ch07_low_first"] = _mean_or_nan(low.to_first)
    out["ch07_first_all"] = float(pat.to_first.mean())
    per_head = per_head_fractions(mini[mini.matrix == "probs"], n_max)
    layer_hard = per_head[per_head.measure == "hardmax_rank"].groupby("layer").frac.mean()
    out["ch07_layer_first"], out["ch07_layer_last"] = float(layer_hard.iloc[0]), float(layer_hard.iloc[-1])
    out["ch07_layer_peak"], out["ch07_layer_peak_value"] = int(layer_hard.idxmax()), float(layer_hard.max())
    return out

