"""Chapter 05's own tables: the upper-bound check on sampled key sets, heads combined, the
verdict on the bound per setting, ``run(P)`` (every computation of the chapter) and the tables the
page shows.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...measure.rank import DEFAULT_TOL, hardmax_rank, numerical_rank
from ...theory.barrier import counterexample_qk, expected_distinct_columns, expected_distinct_columns_given
from ...theory.embeddings import minilm_word_embeddings
from ...theory.sampling import sample_inputs, sample_qk
from ..shared.montecarlo import (as_rtols, attention_probs, attention_rank_table, cell_seed, hardmax_rank_table,
                                 mean_band, seeded)
from .latent import mla_cells, mla_tables
from .near import near_cells, near_orthonormal_table
from .rules import GROUPS, NEAR_MARGIN

__all__ = ["key_set_table", "head_combination_table", "barrier_verdicts", "run", "summary_table", "montecarlo_table",
           "inputs_table", "counterexample_table", "near_table", "mla_table"]


def key_set_table(n: int, head_dims: Sequence[int], *, n_key_sets: int = 20,
                  n_query_sets: int = 100, seed: int = 0, device="cpu") -> pd.DataFrame:
    """The upper-bound argument checked on sampled key sets, one row per (d_h, key set).

    For each key set K (n x d_h, i.i.d. N(0, 1)) draws ``n_query_sets`` independent query
    sets Q and records: ``mean_rank`` (mean hardmax rank over the query sets, an unbiased
    estimate of E[rank | K]), ``formula`` (sum_j 1 - (1 - p_j)^n with p(K) estimated from the
    same queries), ``max_p`` (the most popular key's share), and ``bound`` = n (1 - (1-1/n)^n).
    """
    rows = []
    for dh in head_dims:
        g = torch.Generator(device=device).manual_seed(cell_seed(seed, n, dh))
        for k in range(n_key_sets):  # one key set at a time keeps memory at S n (n + d_h)
            K = torch.randn(n, dh, generator=g, device=device, dtype=torch.float32)
            Q = torch.randn(n_query_sets, n, dh, generator=g, device=device, dtype=torch.float32)
            logits = Q @ K.T  # (query sets, n, n)
            win = logits.argmax(-1).reshape(-1)
            p = torch.bincount(win, minlength=n).double().cpu().numpy() / win.numel()
            rows.append({"n": n, "head_dim": int(dh), "key_set": k,
                         "mean_rank": float(hardmax_rank(logits).double().mean()),
                         "formula": expected_distinct_columns_given(p, m=n), "max_p": float(p.max()),
                         "bound": expected_distinct_columns(n)})
    return pd.DataFrame(rows)


def head_combination_table(n: int, pairs: Sequence[tuple[int, int]], *, n_trials: int,
                           inputs: str = "orthonormal", d_model: int | None = None,
                           temperature: str | float = "hardmax", seed: int = 0,
                           device="cpu") -> pd.DataFrame:
    """Ranks of h hardmax heads that read the same X, combined two ways, one row per draw.

    pairs: (heads, head_dim) combinations. Per draw it records the mean single-head hardmax
    rank, the numerical rank (default rtol) of the head average (1/h) sum_i A_i, and of the
    stacked [A_1 | ... | A_h] (n x h n), whose column space holds every head's output.
    Columns: heads, head_dim, trial, combination, value.
    """
    rows = []
    for h, dh in pairs:
        Q, K = sample_qk(n, dh, batch=n_trials, inputs=inputs, d_model=d_model, heads=h,
                         independent_weights=True, seed=cell_seed(seed, n, h, dh), device=device,
                         dtype=torch.float64)
        A = attention_probs(Q @ K.transpose(-2, -1), dh, temperature, False)  # (trials, h, n, n)
        single = (hardmax_rank(A).double().mean(-1) if temperature == "hardmax"
                  else numerical_rank(A).double().mean(-1))
        mean = numerical_rank(A.mean(1))
        stacked = numerical_rank(A.transpose(1, 2).reshape(n_trials, n, h * n))
        for name, v in (("one head", single), ("head average", mean), ("heads stacked", stacked)):
            rows += [{"heads": h, "head_dim": dh, "trial": t, "combination": name,
                      "value": float(v[t])} for t in range(n_trials)]
    return pd.DataFrame(rows)


def barrier_verdicts(table: pd.DataFrame, *, value: str = "value", by: str = "setting",
                     z: float = 1.96, margin: float | None = None) -> pd.DataFrame:
    """Is the bound n (1 - (1-1/n)^n) respected, and is it nearly attained, per setting?

    table: one row per draw with columns ``by``, n, ``value`` (a rank), and optionally
    ``group`` (the hypothesis the setting drops), carried through. Columns: group (if given),
    setting, n, draws, rank_frac (mean rank / n), se_frac (NaN for one draw), lo_frac, hi_frac
    (mean +- z se), bound_frac, respected (the mean is <= the bound within its interval:
    mean - z se <= bound) and near (|mean - bound| <= margin n, margin = NEAR_MARGIN by default).
    """
    margin = NEAR_MARGIN if margin is None else margin
    rows = []
    for key, sub in table.groupby(by, sort=False):
        if sub["n"].nunique() != 1:
            raise ValueError(f"setting {key!r} mixes sequence lengths {sorted(sub['n'].unique())}")
        n = int(sub["n"].iloc[0])
        v = sub[value].to_numpy(dtype=np.float64)
        se = v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else float("nan")
        half = z * se if np.isfinite(se) else 0.0
        bound = expected_distinct_columns(n)
        row = {"group": sub["group"].iloc[0]} if "group" in sub else {}
        row.update({"setting": key, "n": n, "draws": len(v), "rank_frac": v.mean() / n, "se_frac": se / n,
                    "lo_frac": (v.mean() - half) / n, "hi_frac": (v.mean() + half) / n, "bound_frac": bound / n,
                    "respected": bool(v.mean() - half <= bound),
                    "near": bool(abs(v.mean() - bound) <= margin * n)})
        rows.append(row)
    return pd.DataFrame(rows)


def _tol_key(rtol: float | None) -> str:
    return f"numerical_rank[{DEFAULT_TOL if rtol is None else f'rtol={rtol:g}'}]"


def run(P: Mapping[str, Any], *, progress: bool = False) -> dict[str, Any]:
    """Every computation of chapter 05 at parameters P (seeded, one torch thread); its tables by name.

    coupon (bound per n), keys (key-set check), sweep/band (hardmax in the theorem's setting),
    temps/num/band_t (temperature), std/band_tol (tolerance), by_input/band_in (inputs),
    causal/band_c/soft_num/band_cs (causal mask), counter (Q = K = X), multi/band_h (heads),
    summary (one row per setting), and P itself.
    """
    with seeded(P["seed"]):
        return _tables(P, progress)


def _tables(P: Mapping[str, Any], progress: bool) -> dict[str, Any]:
    dev, seed = P["device"], P["seed"]
    ns = list(P["ns"])
    rtols = as_rtols(P["rtols"])
    n_s, T_s, dhs = P["n_setting"], P["setting_trials"], list(P["setting_head_dims"])
    out: dict[str, Any] = {"P": dict(P)}
    out["coupon"] = pd.DataFrame({"n": ns, "n(1-(1-1/n)^n)": expected_distinct_columns(np.array(ns)),
                                  "(1-1/e) n": expected_distinct_columns(np.array(ns), limit=True)})
    out["keys"] = key_set_table(P["key_set_n"], P["key_head_dims"], n_key_sets=P["key_sets"],
                                n_query_sets=P["query_sets"], seed=seed, device=dev)
    sweep = hardmax_rank_table(ns, P["head_dims"], n_trials=P["n_trials"], seed=seed, device=dev,
                               progress=progress)
    out["sweep"], out["band"] = sweep, mean_band(sweep, by=["n", "head_dim"], value="rank_frac")
    # temperature: softmax of k Q K^T / sqrt(d_h) at every k, and hardmax
    temps = [attention_rank_table(n_s, dhs, n_trials=T_s, temperature=k, rtols=rtols,
                                  energies=(P["energy"],), seed=seed, device=dev) for k in P["scales"]]
    temps.append(attention_rank_table(n_s, dhs, n_trials=T_s, temperature="hardmax", rtols=(None,),
                                      energies=(), seed=seed, device=dev))
    temps = pd.concat(temps, ignore_index=True)
    num = temps[(temps.measure == "numerical_rank") & (temps.tolerance == DEFAULT_TOL)]
    out["temps"], out["num"] = temps, num
    out["band_t"] = mean_band(num.assign(frac=num["value"] / n_s), by=["temperature", "head_dim"], value="frac")
    # tolerance: the same draws at the standard temperature, several measures
    std = temps[temps.temperature == str(P["scales"][0])].copy()
    std["label"] = [f"{m}[{t}]" if t else m for m, t in zip(std["measure"], std["tolerance"])]
    keep = [_tol_key(r) for r in rtols] + [f"energy_rank[energy={P['energy']:g}]"]
    std = std[std["label"].isin(keep)]
    out["std"], out["tol_labels"] = std, keep
    out["band_tol"] = mean_band(std.assign(frac=std["value"] / n_s), by=["label", "head_dim"], value="frac")
    # input distribution (hardmax)
    frames = []
    for name in P["inputs"]:
        given = minilm_word_embeddings(n_s, batch=T_s, seed=seed) if name == "minilm" else name
        t = attention_rank_table(n_s, dhs, n_trials=T_s, inputs=given, temperature="hardmax", rtols=(None,),
                                 energies=(), d_model=None if name == "minilm" else P["d_model"], seed=seed,
                                 device=dev)
        frames.append(t[t.measure == "hardmax_rank"].assign(inputs=name))
    by_input = pd.concat(frames, ignore_index=True)
    out["by_input"] = by_input
    out["band_in"] = mean_band(by_input.assign(frac=by_input["value"] / n_s), by=["inputs", "head_dim"],
                               value="frac")
    # causal mask
    causal = hardmax_rank_table(ns, P["head_dims"], n_trials=P["n_trials"], causal=True, seed=seed, device=dev)
    soft_c = attention_rank_table(n_s, dhs, n_trials=T_s, causal=True, rtols=rtols, energies=(), seed=seed,
                                  device=dev)
    soft_num = soft_c[(soft_c.measure == "numerical_rank") & (soft_c.tolerance == DEFAULT_TOL)]
    out["causal"], out["soft_num"] = causal, soft_num
    out["band_c"] = mean_band(causal, by=["n", "head_dim"], value="rank_frac")
    out["band_cs"] = mean_band(soft_num.assign(frac=soft_num["value"] / n_s), by=["head_dim"], value="frac")
    # the reviewers' counterexample
    rows = []
    for d in (2, 8, 64):
        X = sample_inputs(n_s, d, batch=T_s, inputs="sphere", seed=seed + d)
        for shift, name in ((0, "Q = K = X"), (1, "Q = X shifted by one token")):
            Q, K = counterexample_qk(X, shift=shift)
            r = hardmax_rank(Q @ K.transpose(-2, -1)).double()
            rows.append({"construction": name, "d": d, "hardmax rank / n": float(r.mean() / n_s)})
    out["counter"] = pd.DataFrame(rows)
    # heads
    pairs = [(h, P["heads_d_model"] // h) for h in P["heads"] if P["heads_d_model"] // h >= 1]
    multi = head_combination_table(n_s, pairs, n_trials=T_s, seed=seed, device=dev)
    out["multi"], out["pairs"] = multi, pairs
    out["band_h"] = mean_band(multi.assign(frac=multi["value"] / n_s), by=["combination", "heads"], value="frac")
    out["summary"] = _summary(out)
    out["near"] = near_orthonormal_table(P["near_ns"], [0.0, *P["near_cs"]], P["near_head_dims"],
                                         n_trials=P["near_trials"], seed=seed)
    out["near_cells"] = near_cells(out["near"])
    out["mla"] = mla_tables(P["mla_ns"], P["mla_latents"], head_dim=P["mla_head_dim"], rope_dims=P["mla_rope_dims"],
                            n_trials=P["mla_trials"], seed=seed)
    out["mla_cells"] = mla_cells(out["mla"])
    return out


def _summary(t: Mapping[str, Any]) -> pd.DataFrame:
    """One row per setting at the largest settings d_h (n = n_setting), grouped by the hypothesis
    of the theorem that the setting drops: is the bound respected, is it nearly attained?"""
    P = t["P"]
    n_s, T_s = P["n_setting"], P["setting_trials"]
    dmax = max(P["setting_head_dims"])
    hmax = max(h for h, _ in t["pairs"])

    def pick(tab, **kw):
        mask = tab.head_dim == dmax
        for k, v in kw.items():
            mask &= tab[k] == v
        return tab[mask]

    by_input, num, std, causal, soft_num, multi, counter = (t[k] for k in (
        "by_input", "num", "std", "causal", "soft_num", "multi", "counter"))
    keep = t["tol_labels"]
    g = dict(enumerate(GROUPS))
    rows = [
        (g[0], "hardmax, orthonormal tokens, Gaussian weights", pick(by_input, inputs="orthonormal")["value"]),
        *[(g[1], f"softmax k = {k:g}, numerical rank (default rtol)", pick(num, temperature=str(k))["value"]) for k in P["scales"]],
        *[(g[2], f"softmax k = {P['scales'][0]:g}, {lab.replace('_', ' ').replace('[', ' (').replace(']', ')')}",
           pick(std, label=lab)["value"]) for lab in keep[1:]],
        *[(g[3], f"hardmax, {name} tokens", pick(by_input, inputs=name)["value"]) for name in P["inputs"] if name != "orthonormal"],
        *[(g[4], f"hardmax, {c} (unit tokens, d = 64)", pd.Series([n_s] * T_s, dtype=float)
           * counter[(counter.construction == c) & (counter.d == counter.d.max())]["hardmax rank / n"].iloc[0])
          for c in ("Q = K = X", "Q = X shifted by one token")],
        (g[5], "causal hardmax", pick(causal[causal.n == n_s].rename(columns={"rank": "value"}))["value"]),
        (g[5], "causal softmax k = 1, numerical rank (default rtol)", pick(soft_num)["value"]),
        (g[6], f"{hmax} hardmax heads stacked, numerical rank (default rtol)", multi[(multi.heads == hmax) & (multi.combination == "heads stacked")]["value"]),
        (g[6], f"{hmax} hardmax heads averaged, numerical rank (default rtol)", multi[(multi.heads == hmax) & (multi.combination == "head average")]["value"]),
    ]
    return barrier_verdicts(pd.concat([pd.DataFrame({"group": grp, "setting": s, "n": n_s, "value": v.to_numpy()})
                                       for grp, s, v in rows]))


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary as the page shows it: readable columns, intervals as text, no NaN."""
    out = pd.DataFrame({
        "hypothesis dropped": summary["group"].where(summary["group"] != summary["group"].shift(), ""),
        "setting": summary["setting"],
        "rank / n [95% interval]": [f"{m:.3f} [{lo:.3f}, {hi:.3f}]" if np.isfinite(se) and se > 0 else
                                    f"{m:.3f} (one draw)" if not np.isfinite(se) else f"{m:.3f} (every draw)"
                                    for m, lo, hi, se in zip(summary["rank_frac"], summary["lo_frac"], summary["hi_frac"],
                                                             summary["se_frac"])],
        "draws": summary["draws"],
        "bound / n": summary["bound_frac"].map(lambda v: f"{v:.3f}"),
        "bound respected": summary["respected"].map({True: "yes", False: "no"}),
        f"near the bound (within {NEAR_MARGIN:g} n)": summary["near"].map({True: "yes", False: "no"}),
    })
    return out


def montecarlo_table(t: Mapping[str, Any]) -> pd.DataFrame:
    """The theorem's setting at the largest d_h: mean hardmax rank / n per n with its band and the bound."""
    P, band = t["P"], t["band"]
    top = band[band.head_dim == max(P["head_dims"])].set_index("n")
    return top.assign(bound=expected_distinct_columns(top.index.to_numpy()) / top.index.to_numpy()).reset_index()[
        ["n", "mean", "lo", "hi", "draws", "bound"]].rename(
        columns={"mean": f"hardmax rank / n at d_h = {max(P['head_dims'])}", "lo": "95% lower", "hi": "95% upper",
                 "bound": "bound / n"})


def inputs_table(t: Mapping[str, Any]) -> pd.DataFrame:
    """Mean hardmax rank / n at the largest settings d_h, one row per token distribution."""
    band_in = t["band_in"]
    in_last = band_in[band_in.head_dim == max(t["P"]["setting_head_dims"])].set_index("inputs")["mean"]
    return in_last.rename("hardmax rank / n at the largest d_h").rename_axis("tokens").reset_index()


def counterexample_table(t: Mapping[str, Any]) -> pd.DataFrame:
    """Hardmax rank / n of the reviewers' constructions, one row per construction, one column per width d."""
    return t["counter"].pivot(index="construction", columns="d", values="hardmax rank / n").add_prefix(
        "hardmax rank / n at d = ").reset_index()


def near_table(t: Mapping[str, Any]) -> pd.DataFrame:
    """Near-orthonormal tokens at the largest d_h: per n and c, hardmax rank / n and its change
    from orthonormal tokens (paired by draw, 95 % interval), against the bound."""
    cells = t["near_cells"]
    top = cells[(cells.head_dim == cells.head_dim.max()) & (cells.c > 0)]
    return pd.DataFrame({
        "n": top["n"].to_numpy(), "c": top["c"].map(lambda c: f"{c:g}").to_numpy(),
        f"hardmax rank / n at d_h = {int(cells.head_dim.max())}": top["frac"].map(lambda v: f"{v:.3f}").to_numpy(),
        "change from orthonormal / n [95% interval]": [
            f"{s:+.4f} [{s - 1.96 * e:+.4f}, {s + 1.96 * e:+.4f}]" if np.isfinite(e) else f"{s:+.4f}"
            for s, e in zip(top["shift"], top["shift_se"])],
        "bound / n": (top["bound"] / top["n"]).map(lambda v: f"{v:.3f}").to_numpy(),
        "excess over the bound (s.e.)": top["z"].map(lambda z: f"{z:+.1f}").to_numpy()})


def mla_table(t: Mapping[str, Any]) -> pd.DataFrame:
    """MLA heads at the largest n: hardmax rank / n per (rotary size, kv_latent) with its 95 %
    interval, the logit-rank bound and the share of heads at it."""
    cells = t["mla_cells"]
    top = cells[cells.n == cells.n.max()].sort_values(["rope_dim", "kv_latent"])
    return pd.DataFrame({
        "rotary part": top["rope_dim"].to_numpy(), "kv_latent": top["kv_latent"].to_numpy(),
        f"hardmax rank / n at n = {int(cells.n.max())} [95% interval]": [
            f"{f:.3f} [{f - 1.96 * e:.3f}, {f + 1.96 * e:.3f}]" for f, e in zip(top["frac"], top["se_frac"])],
        "barrier / n": (top["barrier"] / top["n"]).map(lambda v: f"{v:.3f}").to_numpy(),
        "logit-rank bound": top["bound"].astype(int).to_numpy(),
        "heads at the bound": top["at"].map(lambda v: f"{v:.0%}").to_numpy()})
