"""Chapter 06's verdicts: ``headline(tables)`` (every number the chapter glues) and the claims
with their rules, registered in the rules ledger.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..shared.laws import LAWS, POLYLOG
from ..shared.record import Record, value
from ..verdicts import SIMULATION, CONTRADICTED, INCONCLUSIVE, MIN_LI, REPRODUCED, Claim, Judgement, claim_of, is_missing
from .criteria import interval_text
from .grids import main_criterion, trials_per_n
from .increment import increment_criterion, increment_keys

__all__ = ["HEADLINE_KEYS", "headline", "CLAIMS", "rule_saturation", "rule_saturation_increment", "Z_PRED",
           "BIC_STRONG", "MIN_NS", "MIN_RANGE", "LawEvidence", "SaturationEvidence", "IncrementEvidence"]

HEADLINE_KEYS = (
    "ch06_fractions", "ch06_increment", "ch06_ppo", "ch06_n_boot", "ch06_trials", "ch06_min_draws",
    "ch06_nmin", "ch06_nmax", "ch06_n_total", "ch06_dhmax", "ch06_top_list", "ch06_seconds_hardmax",
    "ch06_cpu_seconds_hardmax",
    "ch06_point_se_max_pct", "ch06_not_estimable", "ch06_heur_main_nmax", "ch06_heur_maxdev_pct",
    "ch06_heur_maxdev_upper_pct", "ch06_heur_upper_nmin",
    "ch06_main_criterion", "ch06_n_estimable", "ch06_fit_nmax",
    "ch06_pred_obs", "ch06_pred_obs_se", "ch06_pred_log", "ch06_pred_log_se", "ch06_pred_log_z",
    "ch06_pred_pow", "ch06_pred_pow_z", "ch06_pred_polylog", "ch06_pred_polylog_z",
    "ch06_dbic_log", "ch06_dbic_pow", "ch06_dbic_polylog", "ch06_best_law", "ch06_inflation",
    "ch06_chi2dof_log", "ch06_chi2dof_pow", "ch06_chi2dof_polylog", "ch06_dof",
    "ch06_b_main", "ch06_b_main_lo", "ch06_b_main_hi", "ch06_alpha_main", "ch06_alpha_main_lo",
    "ch06_alpha_main_hi", "ch06_beta_main", "ch06_beta_main_lo", "ch06_beta_main_hi",
    "ch06_best_by_criterion", "ch06_betas", "ch06_local_slopes", "ch06_slope_first", "ch06_slope_last",
    "ch06_main_ratio", "ch06_ln_ratio", "ch06_ln2_ratio", "ch06_verdict", "ch06_verdict_word", "ch06_verdict_evidence",
    "ch06_soft_nmin", "ch06_soft_nmax", "ch06_soft_trials", "ch06_soft_grid_text", "ch06_main_soft",
    "ch06_soft0_tol", "ch06_soft0_plateau", "ch06_soft0_points", "ch06_soft1_tol", "ch06_soft1_plateau",
    "ch06_soft1_points",
    *(f"ch06_inc_{k}" for k in ("criterion", "n_estimable", "fit_nmax", "nmin", "nmax", "pred_obs", "pred_obs_se",
                                "pred_log", "pred_log_se", "pred_log_z", "dbic_log", "best_law", "source", "grid",
                                "draws", "min_draws", "held", "points", "provenance", "command", "scale")),
)


def _law_row(res: Mapping[str, Any], law: str) -> Mapping[str, float]:
    laws = res["laws"]
    if laws.empty:
        return {k: float("nan") for k in ("p1", "p2", "p2_lo", "p2_hi", "chi2", "dof", "chi2_dof", "pred",
                                          "pred_se", "pred_z", "dbic", "inflation")}
    return laws.set_index("law").loc[law].to_dict()


def _criterion_keys(prefix: str, crit: str, laws_by_criterion: Mapping[str, Any], pts: pd.DataFrame) -> dict:
    """The values the saturation rule reads, for one criterion, under ``prefix``."""
    res = laws_by_criterion.get(crit, {"n": [], "laws": pd.DataFrame(), "fit_nmax": float("nan")})
    lg = _law_row(res, LAWS[0])
    mp = pts[(pts.criterion == crit) & (pts.n == max(res["n"]))] if res["n"] else pts.iloc[:0]
    laws = res["laws"]
    return {f"{prefix}criterion": crit, f"{prefix}n_estimable": len(res["n"]), f"{prefix}fit_nmax": res["fit_nmax"],
            f"{prefix}nmin": min(res["n"]) if res["n"] else float("nan"),
            f"{prefix}nmax": max(res["n"]) if res["n"] else float("nan"),
            f"{prefix}pred_obs": float(mp["head_dim"].iloc[0]) if len(mp) else float("nan"),
            f"{prefix}pred_obs_se": float(mp["se"].iloc[0]) if len(mp) else float("nan"),
            f"{prefix}pred_log": lg["pred"], f"{prefix}pred_log_se": lg["pred_se"], f"{prefix}pred_log_z": lg["pred_z"],
            f"{prefix}dbic_log": lg["dbic"],
            f"{prefix}best_law": str(laws.loc[laws["bic"].idxmin(), "law"]) if not laws.empty else "none (too few n)"}


def headline(t: Mapping[str, Any]) -> dict[str, Any]:
    """Every number chapter 06 glues, from the tables of run(P); keys are HEADLINE_KEYS."""
    P, pts, table = t["P"], t["points"], t["table"]
    ns = [int(n) for n in P["ns"]]
    trials = trials_per_n(P)
    H: dict[str, Any] = {}
    H["ch06_fractions"] = ", ".join(f"{f:g}" for f in P["fractions"])
    H["ch06_increment"] = float(P["increment"])
    H["ch06_ppo"] = int(P["points_per_octave"])
    H["ch06_n_boot"] = int(P["n_boot"])
    H["ch06_trials"] = ", ".join(f"{k} (n = {n})" for n, k in zip(ns, trials))
    H["ch06_min_draws"] = int(min(trials))
    H["ch06_nmin"], H["ch06_nmax"], H["ch06_n_total"] = min(ns), max(ns), len(ns)
    grid = t["grid"]
    H["ch06_dhmax"] = int(max(grid))
    top = table[table.head_dim == max(grid)].groupby("n")["rank"].mean()
    H["ch06_top_list"] = ", ".join(f"{top[n] / n:.3f} n (n = {n})" for n in ns)
    H["ch06_seconds_hardmax"] = float(t.get("seconds_hardmax", float("nan")))
    H["ch06_cpu_seconds_hardmax"] = float(t.get("cpu_seconds_hardmax", float("nan")))
    frac_crit = [c for c in dict.fromkeys(pts["criterion"]) if not c.startswith("increment")]
    ok = pts[pts.estimable & pts.criterion.isin(frac_crit)]
    H["ch06_point_se_max_pct"] = float((100 * ok["se"] / ok["head_dim"]).max()) if len(ok) else float("nan")
    dev = (100 * (ok["head_dim"] / ok["heuristic"] - 1)).abs()
    H["ch06_heur_maxdev_pct"] = float(dev.max()) if len(ok) else float("nan")
    upper = ok["n"] >= np.sqrt(min(ns) * max(ns))  # the upper half of the range, in ln n
    H["ch06_heur_maxdev_upper_pct"] = float(dev[upper].max()) if upper.any() else float("nan")
    H["ch06_heur_upper_nmin"] = int(ok.loc[upper, "n"].min()) if upper.any() else max(ns)
    bad = pts[~pts.estimable]
    H["ch06_not_estimable"] = ("every n is estimable on every criterion" if bad.empty else
                               "; ".join(f"{c}: n = {', '.join(str(int(n)) for n in sub['n'])}"
                                         for c, sub in bad.groupby("criterion", sort=False)) + " (not estimable)")
    main = main_criterion(P)
    res = t["laws"].get(main, {"n": [], "laws": pd.DataFrame(), "slopes": pd.DataFrame(), "fit_nmax": float("nan")})
    H["ch06_main_criterion"] = main
    H["ch06_n_estimable"] = len(res["n"])
    H["ch06_fit_nmax"] = res["fit_nmax"]
    lg, pw, pl = (_law_row(res, law) for law in LAWS)
    mp = pts[(pts.criterion == main) & (pts.n == max(res["n"]))] if res["n"] else pts.iloc[:0]
    H["ch06_pred_obs"] = float(mp["head_dim"].iloc[0]) if len(mp) else float("nan")
    H["ch06_pred_obs_se"] = float(mp["se"].iloc[0]) if len(mp) else float("nan")
    H["ch06_heur_main_nmax"] = float(mp["heuristic"].iloc[0]) if len(mp) else float("nan")
    H["ch06_pred_log"], H["ch06_pred_log_se"], H["ch06_pred_log_z"] = lg["pred"], lg["pred_se"], lg["pred_z"]
    H["ch06_pred_pow"], H["ch06_pred_pow_z"] = pw["pred"], pw["pred_z"]
    H["ch06_pred_polylog"], H["ch06_pred_polylog_z"] = pl["pred"], pl["pred_z"]
    H["ch06_dbic_log"], H["ch06_dbic_pow"], H["ch06_dbic_polylog"] = lg["dbic"], pw["dbic"], pl["dbic"]
    laws = res["laws"]
    H["ch06_best_law"] = str(laws.loc[laws["bic"].idxmin(), "law"]) if not laws.empty else "none (too few n)"
    H["ch06_inflation"] = lg["inflation"]
    H["ch06_chi2dof_log"], H["ch06_chi2dof_pow"], H["ch06_chi2dof_polylog"] = lg["chi2_dof"], pw["chi2_dof"], pl["chi2_dof"]
    H["ch06_dof"] = int(lg["dof"]) if np.isfinite(lg["dof"]) else 0
    for key, row in (("b", lg), ("alpha", pw), ("beta", pl)):
        H[f"ch06_{key}_main"], H[f"ch06_{key}_main_lo"], H[f"ch06_{key}_main_hi"] = row["p2"], row["p2_lo"], row["p2_hi"]
    best, betas = [], []
    for c in frac_crit:
        L = t["laws"][c]["laws"]
        best.append(f"{L.loc[L['bic'].idxmin(), 'law']} ({c})" if not L.empty else f"not fitted ({c})")
        if not L.empty:
            r = L.set_index("law").loc[POLYLOG]
            betas.append(f"{r['p2']:.2f} [{r['p2_lo']:.2f}, {r['p2_hi']:.2f}] ({c})")
    H["ch06_best_by_criterion"] = "; ".join(best)
    H["ch06_betas"] = "; ".join(betas) if betas else "none fitted"
    sl = res["slopes"]
    H["ch06_local_slopes"] = (", ".join(f"{r.slope:.2f} [{r.lo:.2f}, {r.hi:.2f}] ({r.n_from}-{r.n_to})"
                                        for r in sl.itertuples()) if len(sl) else "none (too few n)")
    H["ch06_slope_first"] = float(sl["slope"].iloc[0]) if len(sl) else float("nan")
    H["ch06_slope_last"] = float(sl["slope"].iloc[-1]) if len(sl) else float("nan")
    mpts = pts[(pts.criterion == main) & pts.estimable].sort_values("n")
    H["ch06_main_ratio"] = (float(mpts["head_dim"].iloc[-1] / mpts["head_dim"].iloc[0]) if len(mpts) > 1
                            else float("nan"))
    lo_n, hi_n = (mpts["n"].iloc[0], mpts["n"].iloc[-1]) if len(mpts) > 1 else (min(ns), max(ns))
    H["ch06_ln_ratio"] = float(np.log(hi_n) / np.log(lo_n))
    H["ch06_ln2_ratio"] = float((np.log(hi_n) / np.log(lo_n)) ** 2)
    ev = t["inc"]
    H.update(_criterion_keys("ch06_inc_", increment_criterion(P), {increment_criterion(P): ev["laws"]}, ev["points"]))
    H.update(increment_keys(P, ev))
    j = claim_of(CLAIMS, "saturation").judge(H)
    H["ch06_verdict"], H["ch06_verdict_word"], H["ch06_verdict_evidence"] = j.label, j.verdict, j.evidence
    # softmax part
    sp, soft_ns = t["soft_points"], [int(n) for n in P["softmax_ns"]]
    H["ch06_soft_nmin"], H["ch06_soft_nmax"] = min(soft_ns), max(soft_ns)
    H["ch06_soft_trials"] = int(P["softmax_trials"])
    sg = t["soft_grid"]
    H["ch06_soft_grid_text"] = ", ".join(str(d) for d in sg[:12]) + (", ..., " + str(sg[-1]) if len(sg) > 12 else "")
    main_soft = main_criterion(P, "plateau")
    H["ch06_main_soft"] = main_soft
    soft = t["soft"]
    plateau = soft[soft.head_dim == max(sg)].groupby(["tolerance", "n"])["value"].mean()
    for i in range(2):
        tol = t["tols"][i] if i < len(t["tols"]) else None
        if tol is None:
            H[f"ch06_soft{i}_tol"] = H[f"ch06_soft{i}_plateau"] = H[f"ch06_soft{i}_points"] = "not computed"
            continue
        H[f"ch06_soft{i}_tol"] = tol
        H[f"ch06_soft{i}_plateau"] = ", ".join(f"{plateau[(tol, n)] / n:.3f} n (n = {n})" for n in soft_ns)
        q = sp[(sp.tolerance == tol) & (sp.criterion == main_soft)].set_index("n")
        H[f"ch06_soft{i}_points"] = ", ".join(
            (f"{interval_text(r['head_dim'], r['lo'], r['hi'])} (n = {n})" if np.isfinite(r["head_dim"])
             else f"not reached (n = {n})") for n, r in q.iterrows())
    return H

# --- claims and their rules (registered in the rules ledger) ---------------------------------

# Two-sided 95 % prediction interval for the out-of-range check (fit on small n, predict the largest).
Z_PRED = 1.96
# Kass & Raftery (1995): a BIC difference above 10 is "very strong" evidence against a model.
BIC_STRONG = 10.0
# At least three n to fit a two-parameter law on the lower half of the range and three to test
# it against: fewer cannot tell a law from its misfit.
MIN_NS = 6
# Two decades of n: over one decade a pure a + b ln n law is fitted by c n^alpha with
# alpha ~ 0.2 > 0, so a shorter range cannot separate log from power growth.
MIN_RANGE = 100.0


@dataclass(frozen=True)
class LawEvidence(Record):
    """One criterion's saturation points and the log law's prediction at the largest n: what the
    saturation rule reads (NaN where too few n were estimable to fit)."""
    PREFIX: ClassVar[str] = "ch06_"
    criterion: str
    n_estimable: int
    nmin: float
    nmax: float
    fit_nmax: float
    pred_obs: float
    pred_obs_se: float
    pred_log: float
    pred_log_se: float
    pred_log_z: float
    dbic_log: float
    best_law: str
    min_draws: int
    n_boot: int = value("ch06_n_boot")
    n_total: int = value("ch06_n_total")


@dataclass(frozen=True)
class SaturationEvidence(LawEvidence):
    """The main criterion's points, on the chapter's own grid of head sizes."""
    criterion: str = value("ch06_main_criterion")


@dataclass(frozen=True)
class IncrementEvidence(LawEvidence):
    """The paper's increment criterion's points, on the long-scale store (its own draws)."""
    PREFIX: ClassVar[str] = "ch06_inc_"


def _law_verdict(e: LawEvidence) -> Judgement:
    """The saturation decision on one criterion's saturation points (see rule_saturation)."""
    crit, n_est, nmin, nmax, z = e.criterion, e.n_estimable, e.nmin, e.nmax, e.pred_log_z
    if n_est < MIN_NS or is_missing(z):
        evidence = (f"{crit} point, {n_est} of {e.n_total} n estimable (n = {nmin:g} to {nmax:g}, at "
                    f"least {e.min_draws} draws per cell): too few points for a growth law")
    else:
        evidence = (f"{crit} point, {n_est} of {e.n_total} n estimable (n = {nmin:g} to {nmax:g}, at "
                    f"least {e.min_draws} draws per cell, {e.n_boot} bootstrap replicates): at n = {nmax:g} observed "
                    f"{e.pred_obs:.1f} (s.e. {e.pred_obs_se:.1f}), a + b ln n fitted up to n = {e.fit_nmax:g} predicts "
                    f"{e.pred_log:.1f} (s.e. {e.pred_log_se:.1f}, z = {z:+.1f}); BIC of a + b ln n exceeds the best law "
                    f"({e.best_law}) by {e.dbic_log:.1f}")
    if n_est < MIN_NS or is_missing(nmax) or is_missing(nmin) or nmax / nmin < MIN_RANGE or is_missing(z):
        return Judgement(INCONCLUSIVE, evidence, f"needs at least {MIN_NS} estimable n over a range of "
                         f"{MIN_RANGE:g}x", "below that a log and a slow power law are not separable")
    if z > Z_PRED:
        return Judgement(CONTRADICTED, evidence, f"the saturation point grows faster than a + b ln n predicts "
                         f"(best of the three laws: {e.best_law})",
                         "the literal Omega(log n) holds for any such growth and is not testable at finite n")
    if z < -Z_PRED:
        return Judgement(CONTRADICTED, evidence, "the saturation point grows slower than a + b ln n predicts")
    if e.dbic_log > BIC_STRONG:
        return Judgement(INCONCLUSIVE, evidence, f"a departure from a + b ln n smaller than "
                         f"{Z_PRED * e.pred_log_se:.1f} in d_h at n = {nmax} is not detectable, and the BIC "
                         f"strongly favours {e.best_law}")
    return Judgement(REPRODUCED, evidence)


def rule_saturation(e: SaturationEvidence) -> Judgement:
    """On the main criterion of the hardmax saturation point, fit a + b ln n on the lower half
    of the n range (in ln n), inflate its errors by sqrt(chi^2/dof) and predict the largest n:
    reproduced (order log n) if the observed point lies within {Z_PRED} prediction errors and the
    BIC of a + b ln n is within {BIC_STRONG:g} of the best of a + b ln n, c n^alpha and c (ln n)^beta;
    contradicted if it lies outside them, above (faster than log n) or below (slower);
    inconclusive if within the prediction while the BIC strongly favours another law, or with
    fewer than {MIN_NS} estimable n or a range under {MIN_RANGE:g}x.

    The claim is read as "d_h* grows like log n". A literal lower bound Omega(log n) holds for
    every law that grows at least that fast and cannot be refuted at finite n; the evidence says
    so beside a verdict of faster growth.
    """
    return _law_verdict(e)


def rule_saturation_increment(e: IncrementEvidence) -> Judgement:
    """The saturation rule of chapter 06 applied to the paper's own criterion, the first d_h at
    which the relative increment of the mean hardmax rank of A (exact) per doubling of d_h drops
    below 0.01 (Table 2's caption), judged on the long-scale store
    {store.LONG_STORE}: at each n from 32 to 4096, the chapter's nested
    draws on its grid of head sizes (4 per octave) up to max(1024, 8 n), i.e. 32768 at n = 4096,
    with max(4, 524288 // n) draws (16384 at n = 32, 128 at n = 4096); reproduced if the point
    grows like a + b ln n predicts (within {Z_PRED} prediction errors, BIC within {BIC_STRONG:g} of the best law),
    contradicted if outside, inconclusive with too few n (a length the store does not hold counts
    as not estimable) or a strongly preferred other law.

    The evidence names the store's own draws (ch06_inc_min_draws), not those of the chapter's grid.
    """
    return _law_verdict(e)


# Both rules read values headline computes (the increment criterion's through _criterion_keys and
# increment_keys, which no narrower function calls together): headline is their measure.
CLAIMS: tuple[Claim, ...] = (
    Claim("saturation", MIN_LI, "06", "sec-ch06-law",
          "Saturation: the rank stops growing at a critical head size d_h of order log n", rule_saturation,
          kind=SIMULATION, where="abstract; Table 2", measure=headline,
          evidence=SaturationEvidence),
    Claim("saturation-increment", MIN_LI, "06", "sec-ch06-law",
          "Saturation by the paper's own criterion: the rank increment falls below about 0.01 at a head size "
          "of order log n", rule_saturation_increment, scale_key="ch06_inc_scale", kind=SIMULATION,
          where="Table 2 (as R25 Reviewer 2 quotes it)", measure=headline, evidence=IncrementEvidence),
)
