"""Chapter 05's multi-head latent attention (MLA) heads: random heads of lowrank.layers.mla's layer on
orthonormal tokens (lowrank.theory.mla), their logit rank against the layer's bound, and their
hardmax rank against Min & Li's barrier as the latent kv_latent grows."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...layers.mla import logit_rank_bound
from ...theory.mla import mla_rank_table

__all__ = ["mla_tables", "mla_cells", "relative_increment", "mla_headline", "DEEPSEEK_V3", "deepseek_bound"]

# One attention head of DeepSeek-V3 (its config.json: kv_lora_rank, qk_nope_head_dim,
# qk_rope_head_dim, q_lora_rank, hidden_size): the sizes the paper's MLA sentence refers to.
DEEPSEEK_V3 = {"kv_latent": 512, "head_dim": 128, "rope_dim": 64, "q_latent": 1536, "d_model": 7168}
# The context length DeepSeek-V3 was pre-trained at (before its context extension).
DEEPSEEK_V3_N = 4096


def deepseek_bound(n: int) -> int:
    """The logit-rank bound of one DeepSeek-V3 head at sequence length n."""
    return int(logit_rank_bound(n, **DEEPSEEK_V3))


def mla_tables(ns: Sequence[int], kv_latents: Sequence[int], *, head_dim: int, rope_dims: Sequence[int],
               n_trials: int, seed: int = 0) -> pd.DataFrame:
    """One row per draw and measure (lowrank.theory.mla.mla_rank_table, summary=False): the logits'
    numerical rank at the float64 default tolerance and the hardmax attention's hardmax rank."""
    t = mla_rank_table(ns, kv_latents, head_dims=[head_dim], rope_dims=rope_dims, n_trials=n_trials,
                       rtols=(None,), seed=seed, summary=False)
    return t[t.matrix.isin(["logits", "hardmax attention"])].reset_index(drop=True)


def mla_cells(draws: pd.DataFrame) -> pd.DataFrame:
    """Per (n, rope_dim, kv_latent): hardmax rank mean, standard error, draws, rank / n, the barrier,
    the excess in standard errors; the logit rank's largest excess over the bound and the share of
    draws at the bound."""
    key = ["n", "rope_dim", "kv_latent"]
    hard = draws[draws.matrix == "hardmax attention"]
    cells = hard.groupby(key)["value"].agg(["mean", "sem", "count"]).reset_index()
    barrier = hard.groupby(key)["barrier"].first().to_numpy()
    cells["barrier"] = barrier
    cells["frac"], cells["se_frac"] = cells["mean"] / cells["n"], cells["sem"] / cells["n"]
    cells["z"] = (cells["mean"] - cells["barrier"]) / cells["sem"].where(cells["sem"] > 0)
    logit = draws[draws.matrix == "logits"].assign(excess=lambda d: d["value"] - d["logit_bound"],
                                                   at=lambda d: d["value"] == d["logit_bound"])
    lg = logit.groupby(key).agg(bound=("logit_bound", "first"), excess=("excess", "max"), at=("at", "mean"))
    return cells.join(lg, on=key)


def relative_increment(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (n, rope_dim): the relative increment of the mean hardmax rank per doubling of kv_latent
    over the grid's last step, (r_last / r_prev - 1) / log2(latent_last / latent_prev), the paper's
    saturation criterion; and the rise from the smallest latent with its standard error."""
    rows = []
    for (n, rope), g in cells.sort_values("kv_latent").groupby(["n", "rope_dim"]):
        a, b = g.iloc[-2], g.iloc[-1]
        first = g.iloc[0]
        rows.append({"n": int(n), "rope_dim": int(rope), "latent_prev": int(a.kv_latent),
                     "latent_last": int(b.kv_latent),
                     "increment": float((b["mean"] / a["mean"] - 1) / np.log2(b.kv_latent / a.kv_latent)),
                     "rise": float(b.frac - first.frac), "rise_se": float(np.hypot(b.se_frac, first.se_frac))})
    return pd.DataFrame(rows)


def mla_headline(t: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers chapter 05's MLA rows read (keys ch05_mla_*)."""
    P, cells = t["P"], t["mla_cells"]
    inc = relative_increment(cells)
    z = cells["z"].fillna(-np.inf)
    worst = cells.loc[z.idxmax()]
    flat = inc.loc[inc["increment"].idxmax()]
    low = inc.loc[(inc["rise"] / inc["rise_se"].where(inc["rise_se"] > 0)).fillna(np.inf).idxmin()]
    nmax = max(P["mla_ns"])
    return {
        "ch05_mla_ns": ", ".join(str(n) for n in P["mla_ns"]),
        "ch05_mla_latents": ", ".join(str(n) for n in P["mla_latents"]),
        "ch05_mla_rope_dims": ", ".join(str(r) for r in P["mla_rope_dims"]),
        "ch05_mla_head_dim": int(P["mla_head_dim"]), "ch05_mla_trials": int(P["mla_trials"]),
        "ch05_mla_cells": int(len(cells)),
        "ch05_mla_max_z": float(z.max()) if np.isfinite(z.max()) else float("nan"),
        "ch05_mla_worst": f"n = {int(worst.n)}, rope_dim = {int(worst.rope_dim)}, kv_latent = {int(worst.kv_latent)}",
        "ch05_mla_max_increment": float(flat["increment"]),
        "ch05_mla_flat_where": (f"n = {int(flat.n)}, rope_dim = {int(flat.rope_dim)}, kv_latent {int(flat.latent_prev)} "
                                f"to {int(flat.latent_last)}"),
        "ch05_mla_min_rise_z": float(low["rise"] / low["rise_se"]) if low["rise_se"] > 0 else float("inf"),
        "ch05_mla_min_rise": float(low["rise"]),
        "ch05_mla_top_frac": float(cells[(cells.n == nmax) & (cells.kv_latent == cells.kv_latent.max())]["frac"].max()),
        "ch05_mla_logit_excess": int(cells["excess"].max()),
        "ch05_mla_logit_at": float(cells["at"].min()),
        "ch05_mla_v3_bound": deepseek_bound(DEEPSEEK_V3_N), "ch05_mla_v3_n": DEEPSEEK_V3_N,
        "ch05_mla_v3_sizes": (f"kv_latent = {DEEPSEEK_V3['kv_latent']}, head size {DEEPSEEK_V3['head_dim']} + "
                              f"rotary {DEEPSEEK_V3['rope_dim']}"),
    }
