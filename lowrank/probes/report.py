"""The outputs of ``lowrank probe``: tidy table, per-head summary, figures, a one-page report, provenance.

:func:`head_summary` condenses the tidy rank table (:func:`lowrank.probes.probe.rank_table` columns) to
one row per (layer, head, n): the logit rank against d_h, rank(A) / n at the float64 and float32
tolerances, the hardmax rank / n against the expected fraction n (1 - (1 - 1/n)^n) / n of Min &
Li's barrier, and the effective rank of A. :func:`write_outputs` writes everything into a folder.
Matplotlib is imported only to draw the figures.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, is_dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..measure.rank import DEFAULT_TOL, FLOAT32_TOL

__all__ = ["FILES", "barrier_fraction", "causal_fraction", "tidy", "head_summary", "summarise", "write_outputs"]

FILES = ("ranks.csv", "heads.csv", "heads.png", "heads.svg", "ranks_vs_n.png", "ranks_vs_n.svg",
         "report.md", "summary.json", "provenance.json")


def barrier_fraction(n: int) -> float:
    """1 - (1 - 1/n)^n: the expected share of distinct argmax columns of n uniform rows (about 0.63)."""
    return -math.expm1(n * math.log1p(-1.0 / n)) if n > 1 else 1.0


def causal_fraction(n: int) -> float:
    """(n + 1) / (2 n): the expected share of distinct argmax columns when query i picks uniformly
    among keys 1..i, the causal analogue of the barrier (:func:`lowrank.theory.barrier.expected_distinct_columns_causal`)."""
    return (n + 1) / (2 * n)


def tidy(table: pd.DataFrame) -> pd.DataFrame:
    """The probe's table in the file's vocabulary: ``window`` for the sequence, matrix ``S`` (logits) or ``A``."""
    out = table.rename(columns={"seq": "window"})
    out["matrix"] = out["matrix"].map({"logits": "S", "probs": "A"})
    return out[["layer", "head", "window", "n", "matrix", "measure", "tolerance", "value"]]


def _pick(t: pd.DataFrame, matrix: str, measure: str, tolerance: str | None = None) -> pd.Series:
    rows = t[(t.matrix == matrix) & (t.measure == measure)]
    if tolerance is not None:
        rows = rows[rows.tolerance == tolerance]
    return rows.groupby(["layer", "head", "n"])["value"]


def head_summary(table: pd.DataFrame, head_dim: int, *, causal: bool = False, groups: int = 1) -> pd.DataFrame:
    """One row per (layer, head, n) from the tidy table (``matrix`` S/A), values over windows.

    ``key_head`` names the key head a query head reads (``groups`` query heads share one under
    grouped-query attention). A causal model's row compares the hardmax rank with the causal
    analogue (n + 1) / (2 n) (``causal_fraction``); its ``barrier_fraction`` is empty, the barrier
    not applying to a lower-triangular A."""
    S = _pick(table, "S", "numerical_rank", DEFAULT_TOL)
    out = pd.DataFrame({"logit_rank": S.median(), "logit_rank_min": S.min(), "logit_rank_max": S.max()})
    out = out.reset_index()
    out.insert(3, "d_h", head_dim)
    out["bound_trivial"] = out["n"] <= head_dim
    out["logit_rank_at_bound"] = out["logit_rank_min"] == np.minimum(out["n"], head_dim)
    idx = pd.MultiIndex.from_frame(out[["layer", "head", "n"]])
    n = out["n"].to_numpy()
    for name, tol in (("rank_A_over_n", DEFAULT_TOL), ("rank_A_over_n_float32", FLOAT32_TOL)):
        out[name] = _pick(table, "A", "numerical_rank", tol).median().reindex(idx).to_numpy() / n
    out["hardmax_over_n"] = _pick(table, "A", "hardmax_rank").mean().reindex(idx).to_numpy() / n
    out["barrier_fraction"] = [float("nan") if causal else barrier_fraction(int(k)) for k in n]
    out["causal_fraction"] = [causal_fraction(int(k)) if causal else float("nan") for k in n]
    out.insert(2, "key_head", out["head"] // max(1, int(groups)))
    out["erank_A"] = _pick(table, "A", "effective_rank").mean().reindex(idx).to_numpy()
    return out


# Drawn for a phone first: 4.2 in wide with no text under 10 pt reads at 9 px or more in a 350 px
# column, and stays legible on a desktop page.
FIGURE_WIDTH_IN = 4.2
FIGURE_PT = 10


def _figures(summary: pd.DataFrame, folder: Path, title: str) -> None:
    import textwrap

    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from ..core.figure_measures import phone_fonts, save_png

    title = textwrap.fill(title, 44)
    n_max = int(summary["n"].max())
    top = summary[summary["n"] == n_max]
    layers, heads = int(top["layer"].max()) + 1, int(top["head"].max()) + 1
    with plt.rc_context(phone_fonts(FIGURE_PT)):
        panel = min(0.25 * layers + 1.4, 6.0)
        fig, axes = plt.subplots(2, 1, figsize=(FIGURE_WIDTH_IN, 2 * panel + 0.5), constrained_layout=True)
        for ax, (col, label) in zip(axes, (("logit_rank", r"logit rank / $d_h$"),
                                           ("rank_A_over_n_float32", r"rank$(A)$ / $n$ (float32 tol.)"))):
            grid = np.full((layers, heads), np.nan)
            scale = top["d_h"] if col == "logit_rank" else 1
            for (l, h), v in zip(top[["layer", "head"]].to_numpy(), (top[col] / scale).to_numpy()):
                grid[l, h] = v
            im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
            ax.set(xlabel="head", ylabel="layer", title=f"{label}, $n$ = {n_max}")
            fig.colorbar(im, ax=ax, shrink=0.9)
        fig.suptitle(title)
        save_png(fig, folder / "heads.png")
        fig.savefig(folder / "heads.svg", bbox_inches="tight")
        plt.close(fig)

        by_n = summary.groupby("n").median(numeric_only=True).reset_index()
        n = by_n["n"].to_numpy()
        fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 4.8), constrained_layout=True)
        # Markers keep the reference curves visible when only one length was probed.
        ax.plot(n, n, ":_", color="0.5", ms=14, label=r"$n$")
        if by_n["barrier_fraction"].notna().any():
            ax.plot(n, by_n["barrier_fraction"] * n, "--_", color="0.3", ms=14, label=r"$n(1-(1-1/n)^n)$")
        else:
            ax.plot(n, by_n["causal_fraction"] * n, "--_", color="0.3", ms=14, label=r"$(n+1)/2$ (causal)")
        ax.axhline(int(summary["d_h"].iloc[0]), color="C3", lw=1, label=r"$d_h$")
        ax.plot(n, by_n["logit_rank"], "o-", label=r"rank$(S)$")
        ax.plot(n, by_n["rank_A_over_n"] * n, "s-", label=r"rank$(A)$, float64 tol.")
        ax.plot(n, by_n["rank_A_over_n_float32"] * n, "^-", label=r"rank$(A)$, float32 tol.")
        ax.plot(n, by_n["hardmax_over_n"] * n, "D-", label="hardmax rank")
        ax.set(xlabel=r"sequence length $n$", ylabel="rank (median over heads)", title=title)
        # Below the axes: seven entries inside them would cover the curves on a narrow figure.
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
        save_png(fig, folder / "ranks_vs_n.png")
        fig.savefig(folder / "ranks_vs_n.svg", bbox_inches="tight")
        plt.close(fig)


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def summarise(summary: pd.DataFrame, info: dict) -> dict:
    """The probe's findings at the longest n, as plain values (``summary.json``), with a one-sentence conclusion.

    Ranks named with their matrix, measure and tolerance: the logit bound read on numerical rank of
    S at float64's default tolerance (only lengths n > d_h test it); A's rank at float32's; the
    hardmax rank against Min & Li's barrier for a model without a causal mask, against the causal
    analogue (n + 1) / 2 for one with it.
    """
    d_h, causal = int(info["head_dim"]), bool(info.get("causal"))
    n_max = int(summary["n"].max())
    top = summary[summary["n"] == n_max]
    tested = summary[summary["n"] > d_h]
    out = {"model": info.get("name") or Path(info["path"]).name, "architecture": info["architecture"],
           "layers": info["layers"], "heads": info["heads"], "head_dim": d_h, "kv_heads": info["kv_heads"],
           "query_heads_per_key_head": info["gqa_groups"], "causal": causal, "n_max": n_max,
           "logit_rank": {"matrix": "S (logits)", "measure": "numerical rank", "tolerance": DEFAULT_TOL,
                          "lengths_above_d_h": sorted(int(v) for v in tested["n"].unique()),
                          "max": int(tested["logit_rank_max"].max()) if len(tested) else None,
                          "bound_holds": bool((tested["logit_rank_max"] <= d_h).all()) if len(tested) else None},
           "attention_rank": {"matrix": "A (probabilities)", "measure": "numerical rank", "tolerance": FLOAT32_TOL,
                              "n": n_max, "median_over_n": float(top["rank_A_over_n_float32"].median()),
                              "full_rank_share": float((top["rank_A_over_n_float32"] >= 1).mean())},
           "hardmax": {"matrix": "A (probabilities)", "measure": "hardmax rank", "n": n_max,
                       "median_over_n": float(top["hardmax_over_n"].median())}}
    if causal:
        ref = causal_fraction(n_max)
        out["barrier"] = {"applies": False, "why": "a causal mask makes A lower triangular; Min & Li's barrier "
                          "assumes every query may attend to every key", "causal_analogue_over_n": ref,
                          "heads_above_analogue": int((top["hardmax_over_n"] > ref).sum()), "heads": int(len(top))}
        against = f"the causal analogue (n + 1) / (2n) = {ref:.2f} (Min & Li's barrier does not apply to a causal model)"
    else:
        ref = barrier_fraction(n_max)
        out["barrier"] = {"applies": True, "fraction": ref, "heads_above": int((top["hardmax_over_n"] > ref).sum()),
                          "heads": int(len(top))}
        against = f"Min & Li's barrier fraction {ref:.2f}"
    lr = out["logit_rank"]
    bound = (f"every head's logits S have numerical rank ({DEFAULT_TOL}) at most d_h = {d_h} (largest {lr['max']})"
             if lr["bound_holds"] else
             f"some head's logits S exceed d_h = {d_h} in numerical rank ({DEFAULT_TOL}), largest {lr['max']}"
             if lr["bound_holds"] is not None else f"no length above d_h = {d_h} was probed, so the logit bound is untested")
    out["conclusion"] = (f"{out['model']}: {bound}; at n = {n_max} the attention A has median numerical rank "
                         f"({FLOAT32_TOL}) {out['attention_rank']['median_over_n']:.2f} n and median hardmax rank "
                         f"{out['hardmax']['median_over_n']:.2f} n, against {against}.")
    return out


def _report(summary: pd.DataFrame, info: dict, prov: dict, found: dict) -> str:
    d_h = info["head_dim"]
    causal = bool(info.get("causal"))
    ref_col, ref_name = ("causal_fraction", "causal analogue (n+1)/2n") if causal else \
        ("barrier_fraction", "barrier fraction")
    rows = []
    for n, g in summary.groupby("n"):
        at_bound = int(g["logit_rank_at_bound"].sum())
        rows.append(f"| {n} | {'yes' if n <= d_h else 'no'} | {at_bound} of {len(g)} | "
                    f"{_fmt(g['rank_A_over_n'].median())} | {_fmt(g['rank_A_over_n_float32'].median())} | "
                    f"{_fmt(g['hardmax_over_n'].median())} | {_fmt(g[ref_col].iloc[0])} | "
                    f"{_fmt(g['erank_A'].median())} |")
    check = prov["cross_check"]
    diff = "not recorded" if check["max_abs_diff"] is None else f"{check['max_abs_diff']:.2g}"
    inputs = prov["inputs"]
    source = inputs.get("texts") or inputs.get("images")
    gqa = f", {info['kv_heads']} key heads ({info['gqa_groups']} query heads share each; `key_head` in `heads.csv`)" \
        if info["gqa_groups"] > 1 else ""
    note = f" {info['note'][0].upper()}{info['note'][1:]}." if info.get("note") else ""
    mask = " A causal mask is applied." if causal else ""
    checkpoint = (f"The book's model `{info['name']}` ({info['model_type']}; weights hash in `provenance.json`)"
                  if info.get("name") else
                  f"Checkpoint `{Path(info['path']).name}` ({info['model_type']}; full path and weights hash in "
                  f"`provenance.json`)")
    return f"""# Attention ranks of {info['architecture']}

**{found['conclusion']}**

{checkpoint}: {info['layers']} layers, {info['heads']} heads of
head size d_h = {d_h}{gqa}.{mask}{note} Run in {prov['dtype']} on {prov['device']}, inputs: {source},
{inputs['windows']} windows (seed {inputs['seed']}). Probabilities recomputed in float64 matched the
model's own to {diff} (max abs; tolerance {check['atol']:g}). lowrank {prov['lowrank_version']},
revision {prov['git_revision']}.

## Summary (medians over heads)

| n | n <= d_h | heads with rank(S) = min(n, d_h) | rank(A)/n, float64 tol. | rank(A)/n, float32 tol. | hardmax rank / n | {ref_name} | erank(A) |
|---:|:---:|---:|---:|---:|---:|---:|---:|
{chr(10).join(rows)}

![Per-head ranks at the longest n](heads.png)

![Ranks against n](ranks_vs_n.png)

## How to read it

- **rank(S)**, the numerical rank of the logits S = Q K^T / sqrt(d_h) at float64's default tolerance,
  can never exceed d_h: a head at its bound has `logit_rank_at_bound` true in `heads.csv`. This is the
  low-rank bottleneck of Bhojanapalli et al.; it constrains a head only when n > d_h.
- **rank(A)/n**, the rank of the row-stochastic probabilities A = softmax(S + mask), is near 1 when the
  softmax has lifted the rank back to n. The float32 tolerance counts only what the model's own float32
  arithmetic can resolve; the float64 one counts rounding-level directions too.
- **hardmax rank / n** is the share of keys that are some query's argmax; Min & Li's barrier compares
  it with n (1 - (1 - 1/n)^n) / n, about 0.63, for a model without a causal mask; a causal model is
  compared with (n + 1) / (2n) instead. A head far below it attends to few keys.
- **erank(A)** is the effective rank (exp of the entropy of the normalised singular values).

## Caveats

- Causal (decoder) models: A is lower triangular with a positive diagonal, so it has full rank
  whatever the head does; rank(A)/n near 1 says nothing there, and the hardmax rank is bounded by the
  causal model's (n + 1) / 2 rather than the barrier.
- Windows are unpadded; with padding only the valid block would be ranked.
- When n <= d_h the logit bound is trivial (rank(S) <= n anyway): read rank(S) only at n > d_h.
- Random or untrained weights put every head at its bound; the numbers describe this checkpoint, these
  inputs and these lengths only.

Files: `ranks.csv` (one row per layer, head, window, n, matrix S or A, measure, tolerance), `heads.csv`
(this summary per head), `heads.png|svg`, `ranks_vs_n.png|svg`, `summary.json` (the findings above as
plain values), `provenance.json`.
"""


def write_outputs(folder: Path, table: pd.DataFrame, info, provenance: dict) -> None:
    """Write :data:`FILES` into ``folder`` from the probe's rank table (rank_table columns)."""
    folder = Path(folder)
    info = asdict(info) if is_dataclass(info) else dict(info)
    t = tidy(table)
    t.to_csv(folder / "ranks.csv", index=False)
    summary = head_summary(t, info["head_dim"], causal=bool(info.get("causal")), groups=int(info.get("gqa_groups", 1)))
    summary.to_csv(folder / "heads.csv", index=False)
    found = summarise(summary, info)
    _figures(summary, folder, f"{info['architecture']} ({info['layers']} layers, {info['heads']} heads, "
                              f"$d_h$ = {info['head_dim']})")
    (folder / "report.md").write_text(_report(summary, info, provenance, found), encoding="utf-8")
    (folder / "summary.json").write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    (folder / "provenance.json").write_text(json.dumps(provenance, indent=2, default=str) + "\n", encoding="utf-8")
