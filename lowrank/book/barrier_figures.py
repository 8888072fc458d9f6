"""Chapter 05's figures, each drawn from the tables of the chapter's ``run(P)`` (``t``), returned
as a matplotlib figure for the notebook to glue."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from ..measure.rank import rank_label
from ..theory.barrier import expected_distinct_columns, expected_distinct_columns_causal
from .bands import band_lines, bound_line, log2_x
from .plotting import grey_safe_lines, subplots

__all__ = ["coupon", "keysets", "montecarlo", "temperature", "tolerance", "inputs", "causal", "heads", "near", "mla"]

HEAD_SIZE = "head size $d_h$"
LEGEND_BESIDE = dict(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")


def coupon():
    """The bound in units of n against n, with its limit 1 - 1/e."""
    n_grid = np.unique(np.round(np.logspace(0, 4, 200)).astype(int))
    fig, axes = subplots(1, 1, height=3.2)
    ax = axes[0, 0]
    ax.plot(n_grid, expected_distinct_columns(n_grid) / n_grid, label=r"$n(1-(1-1/n)^n)\,/\,n$",
            **grey_safe_lines(1)[0], markevery=20)
    ax.axhline(1 - np.exp(-1), color="0.3", linestyle=":", label=r"$1 - 1/e$")
    ax.set(xscale="log", xlabel="sequence length $n$", ylabel="expected distinct columns / $n$")
    ax.legend(loc="upper right")
    return fig


def keysets(t: Mapping[str, Any]):
    """Per sampled key set: measured conditional mean rank against the plug-in value, and the
    plug-in value against the largest winning share."""
    P, keys = t["P"], t["keys"]
    fig, axes = subplots(1, 2, height=3.4, width=7.5)
    for st, (dh, sub) in zip(grey_safe_lines(len(P["key_head_dims"])), keys.groupby("head_dim")):
        axes[0, 0].plot(sub["formula"], sub["mean_rank"], linestyle="none", marker=st["marker"],
                        color=st["color"], label=f"$d_h$ = {dh}", alpha=0.8)
        axes[0, 1].plot(sub["max_p"], sub["formula"], linestyle="none", marker=st["marker"],
                        color=st["color"], alpha=0.8)
    lim = [0, keys["bound"].iloc[0] * 1.05]
    axes[0, 0].plot(lim, lim, color="0.5", linewidth=0.8)
    for ax in axes[0]:
        ax.axhline(keys["bound"].iloc[0], color="0.3", linestyle=":", label=r"bound $n(1-(1-1/n)^n)$")
    axes[0, 0].set(xlabel=r"$\sum_j 1-(1-\hat p_j)^n$ (given $K$)",
                   ylabel="mean hardmax\nrank given $K$")
    axes[0, 1].set(xscale="log", xlabel=r"largest winning share $\max_j \hat p_j$",
                   ylabel=r"$\sum_j 1-(1-\hat p_j)^n$")
    axes[0, 1].xaxis.set_minor_formatter(plt.NullFormatter())
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize="small")
    fig.suptitle(f"$n$ = {P['key_set_n']}: each point is one sampled key set")
    return fig


def montecarlo(t: Mapping[str, Any]):
    """The theorem's setting: mean hardmax rank / n against d_h per n, each with its bound."""
    fig, axes = subplots(1, 1, height=3.8)
    ax = axes[0, 0]
    band_lines(ax, t["band"], "n", label=lambda n: f"$n$ = {n}", reference=lambda n: expected_distinct_columns(n) / n)
    log2_x(ax, HEAD_SIZE, "hardmax rank of $A$ / $n$ (exact)")
    ax.legend(loc="lower right", title="dotted: $(1-(1-1/n)^n)$")
    return fig


def _settings_figure(t: Mapping[str, Any], band, by: str, groups, label, ylabel: str, legend: Mapping[str, Any]):
    """One settings figure (n = n_setting): a band per group against d_h, and the bound."""
    n_s = t["P"]["n_setting"]
    fig, axes = subplots(1, 1, height=3.8)
    ax = axes[0, 0]
    band_lines(ax, band, by, groups, label=label)
    bound_line(ax, expected_distinct_columns(n_s) / n_s)
    log2_x(ax, HEAD_SIZE, ylabel)
    ax.legend(**legend)
    return fig


def _temperature_label(k: str) -> str:
    return "hardmax" if k == "hardmax" else f"$k$ = {float(k):g}" + (" (standard)" if float(k) == 1 else "")


def temperature(t: Mapping[str, Any]):
    """Numerical rank (default tolerance) / n at each logit multiplier k, and hardmax."""
    order = [str(k) for k in t["P"]["scales"]] + ["hardmax"]
    return _settings_figure(t, t["band_t"], "temperature", order, _temperature_label,
                            f"{rank_label('numerical rank', 'default rtol', 'A')} / $n$", LEGEND_BESIDE)


def tolerance(t: Mapping[str, Any]):
    """The standard-temperature draws under each rank measure and tolerance."""
    return _settings_figure(t, t["band_tol"], "label", t["tol_labels"], lambda lab: lab.replace("_", " "),
                            "rank of $A$ / $n$ (standard temperature)", dict(loc="lower right", fontsize="small"))


def inputs(t: Mapping[str, Any]):
    """Hardmax rank / n for each token distribution."""
    return _settings_figure(t, t["band_in"], "inputs", t["P"]["inputs"], str, "hardmax rank of $A$ / $n$ (exact)",
                            LEGEND_BESIDE)


def causal(t: Mapping[str, Any]):
    """Left: causal hardmax rank / n per n with the uniform-prefix law; right: causal softmax."""
    n_s = t["P"]["n_setting"]
    fig, axes = subplots(1, 2, height=3.4, width=7.5)
    ax = axes[0, 0]
    band_lines(ax, t["band_c"], "n", label=lambda n: f"$n$ = {n}",
               reference=lambda n: expected_distinct_columns_causal(n) / n)
    log2_x(ax, HEAD_SIZE, "hardmax rank / $n$ (exact)", title="causal hardmax")
    ax.legend(loc="lower right", fontsize="small")
    ax = axes[0, 1]
    sb = t["band_cs"]
    ax.plot(sb["head_dim"], sb["mean"], **grey_safe_lines(1)[0])
    log2_x(ax, HEAD_SIZE, "numerical rank of $A$ / $n$ (default rtol)", title=f"causal softmax, k = 1, n = {n_s}",
           ylim=(0, 1.05))
    return fig


def heads(t: Mapping[str, Any]):
    """Ranks / n against the number of heads at a fixed width: one head, the heads' average, stacked."""
    P = t["P"]
    n_s = P["n_setting"]
    fig, axes = subplots(1, 1, height=3.6)
    ax = axes[0, 0]
    band_lines(ax, t["band_h"], "combination", ["one head", "head average", "heads stacked"], x="heads")
    bound_line(ax, expected_distinct_columns(n_s) / n_s)
    log2_x(ax, f"heads $h$ ($d_h$ = {P['heads_d_model']} / $h$)", "rank / $n$")
    ax.legend(**LEGEND_BESIDE)
    return fig


def near(t: Mapping[str, Any]):
    """Near-orthonormal tokens (X X^T = I + E, |E_ij| = c n^-3/2): left, hardmax rank / n at the
    largest d_h against n for every c with the bound; right, the change from orthonormal tokens,
    paired by draw, with its 95 % band."""
    cells = t["near_cells"]
    top = cells[cells.head_dim == cells.head_dim.max()]
    fig, axes = subplots(1, 2, height=3.4, width=7.5)
    cs = sorted(top.c.unique())
    for st, c in zip(grey_safe_lines(len(cs)), cs):
        sub = top[top.c == c].sort_values("n")
        name = "orthonormal ($c$ = 0)" if c == 0 else f"$c$ = {c:g}"
        axes[0, 0].plot(sub.n, sub.frac, label=name, **st)
        if c > 0:
            half = 1.96 * sub.shift_se.fillna(0)
            axes[0, 1].errorbar(sub.n, sub["shift"], yerr=half, color=st["color"], marker=st["marker"],
                                linestyle=st.get("linestyle", "-"), capsize=3, label=name)
    ns = np.array(sorted(top.n.unique()))
    axes[0, 0].plot(ns, expected_distinct_columns(ns) / ns, color="0.3", linestyle=":", label="bound")
    axes[0, 1].axhline(0, color="0.5", linewidth=0.8)
    for ax in axes[0]:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length $n$")
    axes[0, 0].set_title(f"hardmax rank of $A$, $d_h$ = {int(top.head_dim.max())}", fontsize="small")
    axes[0, 0].set_ylabel("rank / $n$")
    axes[0, 1].set_title("change from orthonormal tokens", fontsize="small")
    axes[0, 1].set_ylabel("change / $n$")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize="small")
    return fig


def mla(t: Mapping[str, Any]):
    """Random MLA heads: hardmax rank / n against the latent size kv_latent, one panel per rotary
    size, one line per n with its 95 % band, and each n's barrier dotted."""
    cells = t["mla_cells"]
    ropes = sorted(cells.rope_dim.unique())
    fig, axes = subplots(1, len(ropes), height=3.4, width=7.5, sharey=True)
    ns = sorted(cells.n.unique())
    for ax, rope in zip(axes[0], ropes):
        for st, n in zip(grey_safe_lines(len(ns)), ns):
            sub = cells[(cells.rope_dim == rope) & (cells.n == n)].sort_values("kv_latent")
            ax.plot(sub.kv_latent, sub.frac, label=f"$n$ = {n}", **st)
            ax.fill_between(sub.kv_latent, sub.frac - 1.96 * sub.se_frac, sub.frac + 1.96 * sub.se_frac,
                            color=st["color"], alpha=0.2)
            ax.axhline(expected_distinct_columns(n) / n, color=st["color"], linestyle=":", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("latent size kv_latent")
        ax.set_title(f"rotary part {rope}" if rope else "no rotary part", fontsize="small")
    axes[0, 0].set_ylabel("hardmax rank of $A$ / $n$ (exact)")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncol=len(ns), fontsize="small")
    return fig
