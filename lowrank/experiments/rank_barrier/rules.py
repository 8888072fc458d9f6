"""Chapter 05's verdicts: ``headline(tables)`` (every number the chapter glues) and the claims
with their rules, registered in the rules ledger.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ...theory.barrier import expected_distinct_columns, expected_distinct_columns_causal
from ..shared.montecarlo import as_rtols
from ..shared.record import Record
from .latent import mla_headline
from .near import near_cells
from ..verdicts import (BOOK, PROOF_CHECK, SIMULATION, CONDITIONAL, CONTRADICTED, INCONCLUSIVE, MIN_LI, REPRODUCED, WEAKER, Claim,
                        Judgement, claim_of, is_missing)

__all__ = ["HEADLINE_KEYS", "GROUPS", "headline", "CLAIMS", "rule_barrier", "rule_rank_rises", "rule_near_orthonormal",
           "rule_mla", "rule_mla_bound", "MLA_INCREMENT", "Z95", "FAMILY_LEVEL", "NEAR_MARGIN", "VERDICT_CLAIMS",
           "SweepEvidence", "BarrierEvidence", "RisesEvidence", "NearEvidence", "MlaCellsEvidence", "MlaEvidence",
           "MlaBoundEvidence"]

# The hypotheses of the theorem that the summary's settings drop, one group each.
GROUPS = ("none (the theorem's setting)", "temperature", "tolerance", "input distribution",
          "weight structure", "mask", "heads")

# The headline's verdict keys (ch05_verdict_<name>) and the claim each one judges, by the claim's key.
VERDICT_CLAIMS = {"barrier": "barrier", "rises": "rank-rises", "near": "minli-near-orthonormal", "mla": "minli-mla",
                  "mla_bound": "mla-logit-bound"}

HEADLINE_KEYS = (
    "ch05_bound_frac_nmax", "ch05_nmax", "ch05_query_sets", "ch05_key_n", "ch05_key_max_formula_frac",
    "ch05_key_max_gap", "ch05_key_maxp_d1", "ch05_key_maxp_dmax", "ch05_n_trials", "ch05_cells",
    "ch05_cells_above", "ch05_max_excess_se", "ch05_draws_above", "ch05_draws", "ch05_dhmax",
    "ch05_frac_dhmax_list", "ch05_frac_dhmax_nmax", "ch05_frac_dh1_nmax", "ch05_n_setting",
    "ch05_setting_trials", "ch05_temp_standard", "ch05_temp_coldest", "ch05_temp_coldest_k",
    "ch05_temp_hardmax", "ch05_temp_coldest_d1", "ch05_tol_default", "ch05_tol_coarse",
    "ch05_tol_coarse_rtol", "ch05_tol_energy", "ch05_temp_standard_k", "ch05_d_model",
    "ch05_in_orthonormal", "ch05_in_gaussian", "ch05_in_sphere", "ch05_in_anisotropic", "ch05_in_minilm",
    "ch05_causal_frac_nmax", "ch05_causal_law_nmax", "ch05_causal_soft_min", "ch05_causal_soft_full",
    "ch05_causal_soft_mean", "ch05_counter_min", "ch05_heads_d_model", "ch05_heads_max", "ch05_heads_one",
    "ch05_heads_avg", "ch05_heads_stacked", "ch05_settings_hold", "ch05_settings_total",
    "ch05_inside_cells", "ch05_inside_max_z", "ch05_bonferroni_z", "ch05_inside_gap", "ch05_near_margin",
    "ch05_outside_rows", "ch05_outside_broken_rows", "ch05_outside_near_rows", "ch05_outside_broken",
    "ch05_frac_dh1_nmax_se", "ch05_frac_dhmax_nmax_se", "ch05_verdict_barrier", "ch05_verdict_barrier_evidence",
    "ch05_verdict_rises", "ch05_verdict_rises_evidence",
    "ch05_near_ns", "ch05_near_cs", "ch05_near_dhs", "ch05_near_dh_max", "ch05_near_trials", "ch05_near_cells", "ch05_near_max_z",
    "ch05_near_worst", "ch05_near_broken_cs", "ch05_near_largest_ok_c", "ch05_near_gap", "ch05_near_shift_max",
    "ch05_near_shift_worst", "ch05_verdict_near", "ch05_verdict_near_evidence",
    "ch05_mla_ns", "ch05_mla_latents", "ch05_mla_rope_dims", "ch05_mla_head_dim", "ch05_mla_trials",
    "ch05_mla_cells", "ch05_mla_max_z", "ch05_mla_worst", "ch05_mla_max_increment", "ch05_mla_flat_where",
    "ch05_mla_min_rise_z", "ch05_mla_min_rise", "ch05_mla_top_frac", "ch05_mla_logit_excess", "ch05_mla_logit_at",
    "ch05_mla_v3_bound", "ch05_mla_v3_sizes", "ch05_mla_v3_n", "ch05_mla_criterion", "ch05_verdict_mla", "ch05_verdict_mla_evidence",
    "ch05_verdict_mla_bound", "ch05_verdict_mla_bound_evidence", *(f"ch05_verdict_{k}_word" for k in VERDICT_CLAIMS),
)
_INPUTS = ("orthonormal", "gaussian", "sphere", "anisotropic", "minilm")


def headline(t: Mapping[str, Any]) -> dict[str, Any]:
    """Every number chapter 05 glues, from the tables of run(P); keys are HEADLINE_KEYS."""
    P = t["P"]
    ns, n_s, dhs = list(P["ns"]), P["n_setting"], list(P["setting_head_dims"])
    nmax, dmax = ns[-1], max(dhs)
    keys, sweep, band = t["keys"], t["sweep"], t["band"]
    H: dict[str, Any] = {}
    H["ch05_bound_frac_nmax"] = float(expected_distinct_columns(nmax) / nmax)
    H["ch05_nmax"] = int(nmax)
    H["ch05_query_sets"] = int(P["query_sets"])
    H["ch05_key_n"] = int(P["key_set_n"])
    H["ch05_key_max_formula_frac"] = float((keys["formula"] / keys["bound"]).max())
    H["ch05_key_max_gap"] = float((keys["mean_rank"] - keys["formula"]).abs().max())
    H["ch05_key_maxp_d1"] = float(keys.loc[keys.head_dim == min(P["key_head_dims"]), "max_p"].mean())
    H["ch05_key_maxp_dmax"] = float(keys.loc[keys.head_dim == max(P["key_head_dims"]), "max_p"].mean())
    cells = sweep.groupby(["n", "head_dim"])["rank"].agg(["mean", "sem", "max"]).reset_index()
    cells["bound"] = expected_distinct_columns(cells["n"].to_numpy())
    excess = (cells["mean"] - cells["bound"]) / cells["sem"].where(cells["sem"] > 0)
    top = band[band.head_dim == max(P["head_dims"])].set_index("n")
    H["ch05_n_trials"] = int(P["n_trials"])
    H["ch05_cells"] = len(cells)
    H["ch05_cells_above"] = int((excess > 1.96).sum())
    H["ch05_max_excess_se"] = float(excess.max())
    H["ch05_draws_above"] = int((sweep["rank"] > sweep["bound"]).sum())
    H["ch05_draws"] = len(sweep)
    H["ch05_dhmax"] = int(max(P["head_dims"]))
    H["ch05_frac_dhmax_list"] = ", ".join(f"{top.loc[n, 'mean']:.3f} n at n = {n}" for n in ns)
    H["ch05_frac_dhmax_nmax"] = float(top.loc[nmax, "mean"])
    H["ch05_frac_dh1_nmax"] = float(band[(band.n == nmax) & (band.head_dim == min(P["head_dims"]))]["mean"].iloc[0])
    H["ch05_n_setting"] = int(n_s)
    H["ch05_setting_trials"] = int(P["setting_trials"])
    band_t = t["band_t"]
    last = band_t[band_t.head_dim == dmax].set_index("temperature")["mean"]
    H["ch05_temp_standard"] = float(last[str(P["scales"][0])])
    H["ch05_temp_coldest"] = float(last[str(P["scales"][-1])])
    H["ch05_temp_coldest_k"] = float(P["scales"][-1])
    H["ch05_temp_hardmax"] = float(last["hardmax"])
    H["ch05_temp_coldest_d1"] = float(band_t[(band_t.temperature == str(P["scales"][-1]))
                                             & (band_t.head_dim == min(dhs))]["mean"].iloc[0])
    keep, band_tol = t["tol_labels"], t["band_tol"]
    tol_last = band_tol[band_tol.head_dim == dmax].set_index("label")["mean"]
    H["ch05_tol_default"] = float(tol_last[keep[0]])
    H["ch05_tol_coarse"] = float(tol_last[keep[-2]])
    H["ch05_tol_coarse_rtol"] = float(as_rtols(P["rtols"])[-1] or 0.0)
    H["ch05_tol_energy"] = float(tol_last[keep[-1]])
    H["ch05_temp_standard_k"] = float(P["scales"][0])
    H["ch05_d_model"] = int(P["d_model"])
    band_in = t["band_in"]
    in_last = band_in[band_in.head_dim == dmax].set_index("inputs")["mean"]
    for name in _INPUTS:
        H[f"ch05_in_{name}"] = float(in_last[name]) if name in in_last.index else float("nan")
    band_c, soft_num = t["band_c"], t["soft_num"]
    c_top = band_c[band_c.head_dim == max(P["head_dims"])].set_index("n")["mean"]
    H["ch05_causal_frac_nmax"] = float(c_top[nmax])
    H["ch05_causal_law_nmax"] = float(expected_distinct_columns_causal(nmax) / nmax)
    H["ch05_causal_soft_min"] = int(soft_num["value"].min())
    H["ch05_causal_soft_full"] = float((soft_num["value"] == n_s).mean())
    H["ch05_causal_soft_mean"] = float(soft_num["value"].mean() / n_s)
    H["ch05_counter_min"] = float(t["counter"]["hardmax rank / n"].min())
    hmax = max(h for h, _ in t["pairs"])
    h_last = t["band_h"][t["band_h"].heads == hmax].set_index("combination")["mean"]
    H["ch05_heads_d_model"] = int(P["heads_d_model"])
    H["ch05_heads_max"] = int(hmax)
    H["ch05_heads_one"] = float(h_last["one head"])
    H["ch05_heads_avg"] = float(h_last["head average"])
    H["ch05_heads_stacked"] = float(h_last["heads stacked"])
    summ = t["summary"]
    H["ch05_settings_hold"] = int(summ["respected"].sum())
    H["ch05_settings_total"] = len(summ)
    # the claim's evidence: inside the hypotheses (the main sweep), then the settings that drop one
    H["ch05_inside_cells"] = len(cells)
    H["ch05_inside_max_z"] = float(excess.max()) if excess.notna().any() else float("nan")
    H["ch05_bonferroni_z"] = _bonferroni_z(len(cells))
    bound_n = expected_distinct_columns(top.index.to_numpy()) / top.index.to_numpy()
    H["ch05_inside_gap"] = float((bound_n - top["mean"].to_numpy()).max())
    H["ch05_near_margin"] = NEAR_MARGIN
    out = summ[summ["group"] != GROUPS[0]]
    H["ch05_outside_rows"] = len(out)
    H["ch05_outside_broken_rows"] = int((~out["respected"]).sum())
    H["ch05_outside_near_rows"] = int(out["near"].sum())
    broken = [f"{grp} ({int((~sub.respected).sum())} of {len(sub)} settings)"
              for grp, sub in out.groupby("group", sort=False) if (~sub["respected"]).any()]
    H["ch05_outside_broken"] = "; ".join(broken) if broken else "no dropped hypothesis"
    se_top = band[band.head_dim == max(P["head_dims"])].set_index("n")["se"]
    se_d1 = band[(band.n == nmax) & (band.head_dim == min(P["head_dims"]))]["se"].iloc[0]
    H["ch05_frac_dh1_nmax_se"] = float(se_d1)
    H["ch05_frac_dhmax_nmax_se"] = float(se_top[nmax])
    H.update(_near_headline(t))
    H.update(mla_headline(t))
    H["ch05_mla_criterion"] = MLA_INCREMENT
    for key, claim_key in VERDICT_CLAIMS.items():
        j = claim_of(CLAIMS, claim_key).judge(H)
        H[f"ch05_verdict_{key}"], H[f"ch05_verdict_{key}_evidence"] = j.label, j.evidence
        H[f"ch05_verdict_{key}_word"] = j.verdict
    return H


def _near_headline(t: Mapping[str, Any]) -> dict[str, Any]:
    """The near-orthonormal sweep's numbers (keys ch05_near_*): cells with c > 0 against the bound."""
    P, cells = t["P"], t["near_cells"] if "near_cells" in t else near_cells(t["near"])
    pert = cells[cells.c > 0]
    top = pert[pert.head_dim == pert.head_dim.max()]
    z = pert["z"].fillna(-math.inf)
    crit = _bonferroni_z(len(pert))
    worst = pert.loc[z.idxmax()]
    broken = sorted({float(c) for c, zz in zip(pert.c, z) if zz > crit})
    ok = [c for c in sorted({float(c) for c in pert.c}) if not broken or c < min(broken)]
    shift = pert.loc[pert["shift"].abs().idxmax()]
    return {"ch05_near_ns": ", ".join(str(int(n)) for n in P["near_ns"]),
            "ch05_near_cs": ", ".join(f"{c:g}" for c in P["near_cs"] if c > 0),
            "ch05_near_dhs": ", ".join(str(int(d)) for d in P["near_head_dims"]),
            "ch05_near_dh_max": int(max(P["near_head_dims"])),
            "ch05_near_trials": int(P["near_trials"]), "ch05_near_cells": int(len(pert)),
            "ch05_near_max_z": float(z.max()) if np.isfinite(z.max()) else float("nan"),
            "ch05_near_worst": f"n = {int(worst.n)}, c = {worst.c:g}, d_h = {int(worst.head_dim)}",
            "ch05_near_broken_cs": broken,
            "ch05_near_largest_ok_c": float(max(ok)) if ok else float("nan"),
            "ch05_near_gap": float((top["bound"] / top["n"] - top["frac"]).max()),
            "ch05_near_shift_max": float(shift["shift"]),
            "ch05_near_shift_worst": f"n = {int(shift.n)}, c = {shift.c:g}, d_h = {int(shift.head_dim)}"}


# --- claims and their rules (registered in the rules ledger) ---------------------------------

# Two-sided 95 % normal interval for one mean (draws are independent).
Z95 = 1.96
# Family-wise level when many (n, d_h) cells are each tested against the bound: Bonferroni
# over the cells, so that 48 honest cells do not produce a "violation" by chance alone.
FAMILY_LEVEL = 0.05
# "About 0.63 n": a mean counts as near the bound when it lies within 0.05 n of it (8 % of
# the bound), fixed before the data as the precision the word "about" can carry.
NEAR_MARGIN = 0.05


def _bonferroni_z(cells: int) -> float:
    from statistics import NormalDist
    return NormalDist().inv_cdf(1 - FAMILY_LEVEL / 2 / max(int(cells), 1))


@dataclass(frozen=True)
class SweepEvidence(Record):
    """The main sweep's draws per (n, d_h) cell, in the theorem's setting."""
    PREFIX: ClassVar[str] = "ch05_"
    n_trials: int


@dataclass(frozen=True)
class BarrierEvidence(SweepEvidence):
    """The sweep's cells against the bound (largest excess in standard errors, NaN with one draw per
    cell; the gap at the largest d_h) and the settings outside the hypotheses that exceed it."""
    inside_cells: int
    inside_max_z: float
    inside_gap: float
    outside_broken: str
    outside_rows: int
    outside_broken_rows: int


@dataclass(frozen=True)
class RisesEvidence(SweepEvidence):
    """At the largest n, the mean rank / n at d_h = 1 and at the largest d_h with their standard errors
    (NaN with one draw), and the bound / n."""
    frac_dh1_nmax: float
    frac_dh1_nmax_se: float
    frac_dhmax_nmax: float
    frac_dhmax_nmax_se: float
    bound_frac_nmax: float
    nmax: int
    dhmax: int


@dataclass(frozen=True)
class NearEvidence(Record):
    """The near-orthonormal sweep's cells with c > 0 against the bound: the grid (as text), the largest
    excess (NaN with one draw), the c whose cells exceed it, the largest c below those (NaN if none)."""
    PREFIX: ClassVar[str] = "ch05_near_"
    cells: int
    max_z: float
    trials: int
    broken_cs: tuple[float, ...]
    largest_ok_c: float
    gap: float
    ns: str
    cs: str
    dhs: str
    dh_max: int
    worst: str
    shift_max: float
    shift_worst: str


@dataclass(frozen=True)
class MlaCellsEvidence(Record):
    """The MLA sweep's (n, rope_dim, kv_latent) cells and the random heads drawn in each."""
    PREFIX: ClassVar[str] = "ch05_mla_"
    cells: int
    trials: int


@dataclass(frozen=True)
class MlaEvidence(MlaCellsEvidence):
    """The MLA heads' hardmax rank against the barrier (NaN with one draw) and its rise and last
    increment in the latent size, with the grid as text."""
    max_z: float
    max_increment: float
    min_rise_z: float
    min_rise: float
    head_dim: int
    rope_dims: str
    latents: str
    ns: str
    worst: str
    flat_where: str


@dataclass(frozen=True)
class MlaBoundEvidence(MlaCellsEvidence):
    """The MLA heads' logit rank against its bound, and the bound of one DeepSeek-V3 head."""
    logit_excess: int
    logit_at: float
    v3_sizes: str
    v3_bound: int
    v3_n: int


def rule_barrier(e: BarrierEvidence) -> Judgement:
    """Inside the theorem's hypotheses (hardmax, orthonormal tokens, Gaussian weights, one head),
    contradicted if any (n, d_h) cell's mean hardmax rank exceeds n(1-(1-1/n)^n) beyond its
    Bonferroni {FAMILY_LEVEL:coverage} interval; reproduced in a weaker form (an upper bound only) if the
    largest d_h stays more than {NEAR_MARGIN} n below it; otherwise holds only under stated conditions when some
    setting that drops a hypothesis exceeds the bound, and reproduced if none does.

    Inconclusive when a cell has fewer than two draws (no standard error).
    """
    cells, max_z, draws, gap = e.inside_cells, e.inside_max_z, e.n_trials, e.inside_gap
    broken, rows, n_broken = e.outside_broken, e.outside_rows, e.outside_broken_rows
    z_crit = _bonferroni_z(cells)
    evidence = (f"{cells} (n, d_h) cells in the theorem's setting, {draws} draws each: largest excess "
                f"over the bound {max_z:+.2f} standard errors (Bonferroni limit {z_crit:.2f}); at the "
                f"largest d_h the mean is at most {gap:.3f} n below the bound; "
                f"{n_broken} of {rows} settings outside the hypotheses exceed it")
    if draws < 2 or is_missing(max_z) or is_missing(gap):
        return Judgement(INCONCLUSIVE, evidence, "one draw per cell gives no standard error",
                         "the smallest detectable excess is undefined")
    if max_z > z_crit:
        return Judgement(CONTRADICTED, evidence)
    if gap > NEAR_MARGIN:
        return Judgement(WEAKER, evidence, f"an upper bound on the mean that the rank stays more than "
                         f"{NEAR_MARGIN:g} n below, not a value it attains")
    if n_broken > 0:
        return Judgement(CONDITIONAL, evidence,
                         "hardmax attention with random Gaussian weights and one head",
                         f"the bound fails when dropping {broken}")
    return Judgement(REPRODUCED, evidence)


def rule_rank_rises(e: RisesEvidence) -> Judgement:
    """At the largest n, reproduced if the mean hardmax rank at the largest d_h exceeds that at
    d_h = 1 beyond a 95 % interval and lies within {NEAR_MARGIN} n of the bound; reproduced in a weaker
    form if it rises but stays farther below; contradicted if it falls beyond the interval;
    inconclusive otherwise.
    """
    lo_v, lo_se, hi_v, hi_se = e.frac_dh1_nmax, e.frac_dh1_nmax_se, e.frac_dhmax_nmax, e.frac_dhmax_nmax_se
    bound, n, dh, draws = e.bound_frac_nmax, e.nmax, e.dhmax, e.n_trials
    evidence = (f"n = {n}, {draws} draws per point: hardmax rank {lo_v:.3f} n (s.e. {lo_se:.3f}) at "
                f"d_h = 1, {hi_v:.3f} n (s.e. {hi_se:.3f}) at d_h = {dh}; bound {bound:.3f} n")
    se = math.hypot(lo_se, hi_se) if not (is_missing(lo_se) or is_missing(hi_se)) else float("nan")
    if is_missing(se):
        return Judgement(INCONCLUSIVE, evidence, "one draw per point gives no standard error")
    rise = hi_v - lo_v
    if rise < -Z95 * se:
        return Judgement(CONTRADICTED, evidence)
    if rise <= Z95 * se:
        return Judgement(INCONCLUSIVE, evidence, f"a rise smaller than {Z95 * se:.3f} n is not detectable")
    if bound - hi_v > NEAR_MARGIN:
        return Judgement(WEAKER, evidence, f"the rank rises with d_h but stays more than {NEAR_MARGIN:g} n "
                         f"below the bound up to d_h = {dh}")
    return Judgement(REPRODUCED, evidence)


def rule_near_orthonormal(e: NearEvidence) -> Judgement:
    """Hardmax attention of one Gaussian head on tokens with X X^T = I + E, |E_ij| = c n^-3/2 for each c of the grid (0.1 to 10), every (n, c, d_h) cell tested against n(1-(1-1/n)^n) with a Bonferroni {FAMILY_LEVEL:coverage} interval over the cells: contradicted when a cell exceeds it at the smallest c of the grid; holds only under stated conditions (|E_ij| below the smallest c with a cell above it, times n^-3/2) when cells exceed it only from a larger c on; otherwise reproduced in a weaker form (an upper bound only, at head sizes up to the grid's largest) if at the largest d_h the rank stays more than {NEAR_MARGIN} n below it somewhere, and reproduced if not.

    Inconclusive when a cell has fewer than two draws. The same Bonferroni family and the same
    0.05 n margin as the orthonormal rule (:func:`rule_barrier`), so the two rows compare.
    """
    cells, max_z, draws = e.cells, e.max_z, e.trials
    broken, ok_c, gap = e.broken_cs, e.largest_ok_c, e.gap
    z_crit = _bonferroni_z(cells)
    evidence = (f"n = {e.ns}, c = {e.cs}, d_h = {e.dhs}: "
                f"{cells} cells, {draws} draws each; largest excess over the bound {max_z:+.2f} standard errors "
                f"({e.worst}; Bonferroni limit {z_crit:.2f}); largest change of the mean rank from "
                f"orthonormal tokens, paired by draw, {e.shift_max:+.4f} n "
                f"({e.shift_worst}); at the largest d_h the mean is up to {gap:.3f} n below the bound")
    if draws < 2 or is_missing(max_z):
        return Judgement(INCONCLUSIVE, evidence, "one draw per cell gives no standard error",
                         "the smallest detectable excess is undefined")
    if broken:
        if is_missing(ok_c):
            return Judgement(CONTRADICTED, evidence)
        return Judgement(CONDITIONAL, evidence, f"|E_ij| at most {ok_c:g} n^-3/2 at these n",
                         f"cells exceed the bound from c = {min(broken):g} on")
    if gap > NEAR_MARGIN:
        # Where the grid of head sizes stops is not where the rank stops: the qualifier names the grid.
        return Judgement(WEAKER, evidence, "an upper bound on the mean",
                         f"at d_h <= {e.dh_max} (the grid's largest) the rank stays more than "
                         f"{NEAR_MARGIN:g} n below it somewhere")
    return Judgement(REPRODUCED, evidence)


# Min & Li's own saturation criterion (Table 2, as R25 Reviewer 2 quotes it): the rank has saturated
# when its relative increment per doubling falls below about 0.01; chapter 06's increment criterion.
MLA_INCREMENT = 0.01


def rule_mla(e: MlaEvidence) -> Judgement:
    """Random MLA heads (lowrank.layers.mla: keys and values from a shared latent of size kv_latent, a decoupled rotary part) on orthonormal tokens: contradicted when some (n, rope_dim, kv_latent) cell's mean hardmax rank exceeds n(1-(1-1/n)^n) beyond its Bonferroni {FAMILY_LEVEL:coverage} interval, or when at some (n, rope_dim) the rank at the largest kv_latent lies below that at the smallest beyond a 95 % interval; reproduced when, with the barrier respected, the rank rises with kv_latent beyond a 95 % interval at every (n, rope_dim) and its relative increment per doubling of kv_latent over the grid's last step is below {MLA_INCREMENT} there (the paper's saturation criterion); reproduced in a weaker form (the barrier holds, the rank does not saturate inside the grid) when the increment is {MLA_INCREMENT} or more somewhere; inconclusive with fewer than two draws or a rise inside its interval.

    The paper does not say what it verified in MLA; the row states what the book measured: the
    barrier and saturation in the latent size, on random heads, at the head size chapter 05 uses.
    """
    cells, max_z, draws = e.cells, e.max_z, e.trials
    inc, rise_z = e.max_increment, e.min_rise_z
    z_crit = _bonferroni_z(cells)
    evidence = (f"head size {e.head_dim}, rope_dim {e.rope_dims}, kv_latent "
                f"{e.latents}, n = {e.ns}: {cells} cells, {draws} draws each; "
                f"largest excess of the mean hardmax rank over the barrier {max_z:+.2f} standard errors "
                f"({e.worst}; Bonferroni limit {z_crit:.2f}); smallest rise from the smallest to "
                f"the largest kv_latent {e.min_rise:+.3f} n ({rise_z:.1f} standard errors); largest "
                f"relative increment per doubling over the last step {inc:.4f} ({e.flat_where})")
    if draws < 2 or is_missing(max_z):
        return Judgement(INCONCLUSIVE, evidence, "one draw per cell gives no standard error")
    if max_z > z_crit or rise_z < -Z95:
        return Judgement(CONTRADICTED, evidence)
    if rise_z <= Z95:
        return Judgement(INCONCLUSIVE, evidence, "a rise of the rank with the latent smaller than 1.96 standard "
                                                 "errors is not detectable")
    if inc >= MLA_INCREMENT:
        return Judgement(WEAKER, evidence, f"the barrier holds in MLA, but the rank still grows by {inc:.3f} per "
                                           f"doubling of the latent at the grid's end",
                         "no saturation inside the grid")
    return Judgement(REPRODUCED, evidence)


def rule_mla_bound(e: MlaBoundEvidence) -> Judgement:
    """Reproduced when no sampled MLA head's logit matrix has numerical rank (float64 default tolerance) above min(head_dim, kv_latent, n) + min(rope_dim, n), capped at n; contradicted when one does.

    The evidence also gives the share of heads that reach the bound and the bound of one
    DeepSeek-V3 head, whose latent does not bind.
    """
    excess, at = e.logit_excess, e.logit_at
    evidence = (f"{e.cells} cells of {e.trials} random heads: largest logit rank "
                f"minus the bound {excess:+d}; in every cell at least {at:.0%} of the heads reach it; one DeepSeek-V3 "
                f"head ({e.v3_sizes}) is bounded by {e.v3_bound} at n = "
                f"{e.v3_n:,}, "
                f"its head size and rotary part, not its latent")
    if excess > 0:
        return Judgement(CONTRADICTED, evidence)
    return Judgement(REPRODUCED, evidence)


# Measures: the near-orthonormal and MLA rules read only the keys of _near_headline and
# latent.mla_headline, the narrower functions; the barrier rules read headline's own.
CLAIMS: tuple[Claim, ...] = (
    Claim("barrier", MIN_LI, "05", "sec-ch05-summary",
          "Low-rank barrier: the mean rank of random (hardmax) attention is at most about "
          "n(1-(1-1/n)^n) -> 0.63 n, whatever d_h", rule_barrier,
          kind=SIMULATION, where="Theorem 1 (as the reviewers describe it)", measure=headline,
          evidence=BarrierEvidence),
    Claim("rank-rises", MIN_LI, "05", "sec-ch05-monte-carlo",
          "The rank rises with the head size toward the barrier", rule_rank_rises,
          kind=SIMULATION, where="abstract; Fig. 2", measure=headline, evidence=RisesEvidence),
    Claim("minli-near-orthonormal", MIN_LI, "05", "sec-ch05-near",
          "The barrier also holds for near-orthonormal inputs, XX^T = I + E with |E_ij| = o(n^-3/2)",
          rule_near_orthonormal, kind=SIMULATION, where="ICLR 2026 version (R26 Reviewer 4)",
          measure=_near_headline, evidence=NearEvidence),
    Claim("minli-mla", MIN_LI, "05", "sec-ch05-mla",
          "The results are verified in multi-head latent attention (MLA) as used in DeepSeek-V3", rule_mla,
          kind=SIMULATION, where="ICLR 2026 abstract", measure=mla_headline, evidence=MlaEvidence),
    Claim("mla-logit-bound", BOOK, "05", "sec-ch05-mla",
          "In MLA one head's logits have rank at most min(d_h, kv_latent) + rope_dim: the latent bounds the "
          "content part, the rotary part adds its own dimensions", rule_mla_bound, kind=PROOF_CHECK,
          where="this book (lowrank.layers.mla)", measure=mla_headline, evidence=MlaBoundEvidence),
)
