"""Chapter 07's trained multi-head latent attention (MLA): small causal language models whose
blocks attend through lowrank.layers.mla's layer (``TransformerConfig(attention="mla")``), trained by
the training engine (lowrank.train) at several latent sizes kv_latent, several seeds each; then,
on held-out windows, every head's logit rank against the layer's bound and its attention's
hardmax rank, which the rules of :mod:`.latent_rules` judge."""
from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...data import corpora as _data
from ...probes.probe import for_each_layer
from ...measure.rank import DEFAULT_TOL, hardmax_rank, numerical_rank
from ...train import TrainConfig, train
from ..shared.intervals import t_quantile
from .latent_rules import bound_record, saturation_record
from .rules import LEVEL

__all__ = ["latent_configs", "latent_run", "run_latent", "head_ranks", "latent_summary", "paired_saturation",
           "latent_headline", "LATENT_KEYS"]


def latent_configs(*, kv_latents: Sequence[int], seeds: int, seed: int = 0, head_dim: int, rope_dim: int,
                   d_model: int, n_heads: int, n_layers: int, seq_len: int, steps: int, batch_size: int,
                   lr: float, corpus: str = "shakespeare", vocab_size: int = 512) -> list[dict]:
    """One lowrank.train config (causal LM, MLA attention) per (seed, kv_latent), seed-major."""
    out = []
    for s in range(seed, seed + seeds):
        for lat in kv_latents:
            cfg = TrainConfig(task="lm", corpus=corpus, vocab_size=vocab_size, seq_len=seq_len, d_model=d_model,
                              n_layers=n_layers, n_heads=n_heads, head_dim=head_dim, attention="mla",
                              kv_latent=int(lat), rope_dim=rope_dim, norm="pre", batch_size=batch_size, steps=steps,
                              lr=lr, warmup_steps=max(1, steps // 10), eval_interval=0, checkpoint_every=0,
                              log_interval=steps, test_tokens=8192, num_threads=1, seed=s, device="cpu")
            out.append(cfg.to_dict())
    return out


def head_ranks(model: torch.nn.Module, ids: torch.Tensor) -> pd.DataFrame:
    """Per (layer, head, window): the numerical rank of the logits S (before the causal mask,
    float64, default tolerance), the layer's bound on it, and the hardmax rank of A (distinct
    argmax columns of the causal softmax), read by lowrank.probes.probe from a float64 copy."""
    import copy

    model64 = copy.deepcopy(model).double()
    bounds = [m.logit_rank_bound(ids.shape[1]) for m in model64.modules() if hasattr(m, "logit_rank_bound")]
    rows = []

    def collect(la) -> None:
        B, h, n, _ = la.logits.shape
        logit = numerical_rank(la.logits.reshape(B * h, n, n)).reshape(B, h)
        hard = hardmax_rank(la.probs.reshape(B * h, n, n)).reshape(B, h)
        for b in range(B):
            for j in range(h):
                rows.append({"layer": la.layer, "head": j, "window": b, "n": n, "logit_rank": int(logit[b, j]),
                             "bound": int(bounds[la.layer]), "hardmax_rank": int(hard[b, j])})

    for_each_layer(model64, ids, collect)
    return pd.DataFrame(rows)


def latent_run(config: Mapping[str, Any], *, rank_windows: int, root=None) -> tuple[dict, pd.DataFrame]:
    """Train one config (a temporary folder for the engine's files) and rank its heads on the first
    ``rank_windows`` non-overlapping windows of the test split. Returns (metrics, head table)."""
    cfg = TrainConfig.from_dict(dict(config))
    box: dict[str, torch.nn.Module] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lowrank-ch07-mla-") as tmp:
        result = train(cfg, out_dir=tmp, progress=False, callbacks=[lambda step, m: box.update(model=m)],
                       data_root=root)
    stream = _data.prepare_lm(cfg.corpus, vocab_size=cfg.vocab_size, split_seed=cfg.split_seed, root=root).test
    n = cfg.seq_len
    count = min(rank_windows, len(stream) // n)
    ids = stream[:count * n].long().reshape(count, n)
    heads = head_ranks(box["model"], ids)
    metrics = {"kv_latent": cfg.kv_latent, "seed": cfg.seed, "val_loss": float(result["val_loss"]),
               "val_acc": float(result["val_acc"]), "test_loss": float(result["test_loss"]),
               "test_acc": float(result["test_acc"]), "n_params": int(result["n_params"]),
               "vocab_size": int(box["model"].cfg.vocab_size), "wall_s": time.perf_counter() - t0}
    return metrics, heads.assign(kv_latent=cfg.kv_latent, seed=cfg.seed)


def run_latent(configs: Sequence[Mapping[str, Any]], *, rank_windows: int, root=None) -> dict[str, Any]:
    """Every config trained and ranked: ``mla_runs`` (one row per run), ``mla_heads`` (one row per
    run, layer, head and window) and the grid."""
    runs, heads = [], []
    for c in configs:
        m, h = latent_run(c, rank_windows=rank_windows, root=root)
        runs.append(m)
        heads.append(h)
    return {"mla_runs": pd.DataFrame(runs), "mla_heads": pd.concat(heads, ignore_index=True) if heads else
            pd.DataFrame(), "mla_grid": pd.DataFrame([dict(c) for c in configs])}


def latent_summary(runs: pd.DataFrame, heads: pd.DataFrame) -> pd.DataFrame:
    """Per kv_latent: the logit bound, the largest logit rank of any head and window, the share of
    heads whose largest logit rank reaches the bound, hardmax rank / n (mean and standard deviation
    over seeds of each run's mean over heads and windows), validation loss and accuracy (seed means)."""
    per_run = heads.groupby(["kv_latent", "seed"]).apply(
        lambda g: pd.Series({"frac": (g.hardmax_rank / g.n).mean()}), include_groups=False).reset_index()
    per_head = heads.groupby(["kv_latent", "seed", "layer", "head"]).agg(top=("logit_rank", "max"),
                                                                         bound=("bound", "first")).reset_index()
    rows = []
    for lat, g in per_run.groupby("kv_latent"):
        ph = per_head[per_head.kv_latent == lat]
        r = runs[runs.kv_latent == lat]
        rows.append({"kv_latent": int(lat), "bound": int(ph.bound.max()), "logit_max": int(ph.top.max()),
                     "at_bound": float((ph.top == ph.bound).mean()), "frac": float(g.frac.mean()),
                     "frac_sd": float(g.frac.std(ddof=1)) if len(g) > 1 else float("nan"),
                     "val_loss": float(r.val_loss.mean()), "val_acc": float(r.val_acc.mean()), "seeds": len(g)})
    return pd.DataFrame(rows)


def paired_saturation(heads: pd.DataFrame) -> dict[str, float]:
    """Hardmax rank / n of each run (mean over heads and windows), paired by seed across kv_latent:
    the rise from the smallest to the largest latent and the relative increment per doubling over
    the grid's last step, (r_last / r_prev - 1) / log2(L_last / L_prev), each as a mean over seeds
    with its 95 % t interval (NaN bounds with one seed). Seeds missing a latent are left out."""
    frac = heads.assign(f=heads.hardmax_rank / heads.n).groupby(["kv_latent", "seed"])["f"].mean().unstack("seed")
    frac = frac.dropna(axis=1)
    lats = [int(v) for v in frac.index]
    k = frac.shape[1]
    out: dict[str, float] = {"seeds": float(k), "latent_first": lats[0], "latent_prev": lats[-2],
                             "latent_last": lats[-1]}
    rise = (frac.iloc[-1] - frac.iloc[0]).to_numpy(float)
    inc = ((frac.iloc[-1] / frac.iloc[-2] - 1) / math.log2(lats[-1] / lats[-2])).to_numpy(float)
    for name, v in (("rise", rise), ("increment", inc)):
        mean = float(v.mean())
        half = (t_quantile(0.5 + LEVEL / 2, k - 1) * float(v.std(ddof=1)) / math.sqrt(k)) if k > 1 else float("nan")
        out.update({name: mean, f"{name}_lo": mean - half, f"{name}_hi": mean + half})
    return out


LATENT_KEYS = ("ch07_mla_latents", "ch07_mla_sizes", "ch07_mla_seeds", "ch07_mla_data", "ch07_mla_windows",
               "ch07_mla_heads", "ch07_mla_bound", "ch07_mla_saturation", "ch07_mla_loss_lo", "ch07_mla_loss_hi",
               "ch07_mla_uniform", "ch07_mla_frac_lo", "ch07_mla_frac_hi", "ch07_mla_cpu_s", "ch07_mla_tol")


def latent_headline(t: Mapping[str, Any]) -> dict[str, Any]:
    """Every number of the MLA study chapter 07 glues, including its rules' evidence."""
    runs, heads, grid = t["mla_runs"], t["mla_heads"], t["mla_grid"]
    c = grid.iloc[0]
    summary = latent_summary(runs, heads)
    sat = paired_saturation(heads)
    per_head = heads.groupby(["kv_latent", "seed", "layer", "head"]).agg(top=("logit_rank", "max"),
                                                                         bound=("bound", "first"))
    n = int(heads.n.iloc[0])
    vocab = int(runs.vocab_size.iloc[0])
    return {
        "ch07_mla_latents": ", ".join(str(int(v)) for v in summary.kv_latent),
        "ch07_mla_sizes": (f"width {int(c.d_model)}, {int(c.n_layers)} block{'s' if c.n_layers > 1 else ''} of "
                           f"{int(c.n_heads)} heads, head size {int(c.head_dim)}, rotary part {int(c.rope_dim)}, "
                           f"n = {int(c.seq_len)}, {int(c.steps)} steps"),
        "ch07_mla_seeds": int(grid.seed.nunique()), "ch07_mla_data": str(c.corpus).capitalize(),
        "ch07_mla_windows": int(heads.window.nunique()),
        "ch07_mla_heads": int(len(per_head)),
        "ch07_mla_bound": bound_record({"heads": len(per_head), "windows": heads.window.nunique(), "n": n,
                                       "excess": int((per_head.top - per_head.bound).max()),
                                       "at": float((per_head.top == per_head.bound).mean())}),
        "ch07_mla_saturation": saturation_record({**sat, "loss": float(summary.val_loss.max()),
                                                 "uniform": math.log(vocab)}),
        "ch07_mla_loss_lo": float(summary.val_loss.min()), "ch07_mla_loss_hi": float(summary.val_loss.max()),
        "ch07_mla_uniform": math.log(vocab),
        "ch07_mla_frac_lo": float(summary.frac.iloc[0]), "ch07_mla_frac_hi": float(summary.frac.iloc[-1]),
        "ch07_mla_cpu_s": float(runs.wall_s.sum()), "ch07_mla_tol": DEFAULT_TOL,
    }
