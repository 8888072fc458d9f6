"""Chapter 02's headline: every number the chapter glues, and the lines its check cell prints."""
from __future__ import annotations

import math

from ...measure.rank import rank_label

__all__ = ["SPARSE_KINDS", "HEADLINE_KEYS", "headline", "summary"]

SPARSE_KINDS = ("permutation", "sparse", "dense")


def _rank_word(v) -> object:
    return int(v) if v == v else "never"


def _join(xs, fmt="{}") -> str:
    return ", ".join(fmt.format(x) for x in xs)


HEADLINE_KEYS = (
    "ch02_construction_error", "ch02_construction_nmax", "ch02_construction_ns", "ch02_d_extra", "ch02_example_n",
    "ch02_counterexample_tv", "ch02_restarts", "ch02_max_iter", "ch02_concentrations", "ch02_n_targets",
    "ch02_vanish_tol", "ch02_sparse_k", "ch02_sparse_eps", "ch02_sparse_n_targets", "ch02_sparse_ranks",
    "ch02_sparse_tol", "ch02_causal_n_targets", "ch02_causal_restarts",
    "ch02_vanish_list", "ch02_ns_list", "ch02_threshold_verdict", "ch02_threshold_offset", "ch02_below_min",
    "ch02_at_max", "ch02_gap_orders", "ch02_all_generic", "ch02_near_n", "ch02_near_rank", "ch02_near_error",
    "ch02_bound_rows", "ch02_bound_violations", "ch02_bound_min_below", "ch02_bound_max_below",
    "ch02_bound_ratio_max", "ch02_bound_zero_at",
    "ch02_bottleneck_n", "ch02_bottleneck_ranks", "ch02_bottleneck_tv_list", "ch02_bottleneck_logit_list",
    "ch02_bottleneck_trunc_list",
    *(f"ch02_sparse_{kind}_{end}" for kind in SPARSE_KINDS for end in ("nmin", "nmax")),
    "ch02_sparse_nmin", "ch02_sparse_nmax", "ch02_sparse_dense_reached", "ch02_sparse_n_count", "ch02_sparse_rmax",
    "ch02_causal_ns", "ch02_causal_fitted_list", "ch02_causal_fits", "ch02_causal_bound_list", "ch02_causal_n_count",
    "ch02_causal_match_count", "ch02_causal_bound_violations", "ch02_causal_law",
    "ch02_dn_d", "ch02_dn_ns", "ch02_dn_logit_list", "ch02_dn_law_list", "ch02_dn_law_maxdev", "ch02_dn_tv_list",
    "ch02_dn_bound_violations", "ch02_many_n", "ch02_many_d", "ch02_many_ranks", "ch02_many_ms",
    "ch02_many_capacity_list", "ch02_many_counting_list", "ch02_many_law",
)


def headline(tables: dict) -> dict:
    """Every number chapter 02 glues, from the tables of its run functions. Values that can be
    missing come as whole phrases."""
    construction, vanish, sweep, best = (tables[k] for k in ("construction", "vanish", "sweep", "best"))
    out = {"ch02_construction_error": float(construction["max_abs_error"].max()),
           "ch02_construction_nmax": int(construction["n"].max()),
           "ch02_counterexample_tv": float(tables["counterexample"]["row2_min_tv"].iloc[0])}
    cp, tp, sp = tables["construction_params"], tables["threshold_params"], tables["sparse_params"]
    out["ch02_construction_ns"] = _join(cp["ns"])
    out["ch02_d_extra"] = int(cp["d_extra"])
    out["ch02_example_n"] = int(tables["example_P"].shape[0])
    out["ch02_restarts"], out["ch02_max_iter"] = int(tp["restarts"]), int(tp["max_iter"])
    out["ch02_concentrations"] = _join(tp["concentrations"], "{:g}")
    out["ch02_n_targets"] = int(tp["n_targets"])
    out["ch02_vanish_tol"] = f"{tables['vanish_tol']:g}"
    out["ch02_sparse_k"], out["ch02_sparse_eps"] = int(sp["k"]), f"{sp['eps']:g}"
    out["ch02_sparse_n_targets"] = int(sp["n_targets"])
    out["ch02_sparse_ranks"] = _join(sorted(tables["sparse"]["rank"].unique()))
    out["ch02_sparse_tol"] = f"{tables['sparse_tol']:g}"
    out["ch02_causal_n_targets"] = int(tables["causal_params"]["n_targets"])
    out["ch02_causal_restarts"] = int(tables["causal_params"]["restarts"])
    v_ranks = [_rank_word(r) for r in vanish["vanishing_rank"]]
    out["ch02_vanish_list"] = _join(v_ranks)
    out["ch02_ns_list"] = _join(vanish["n"])
    offsets = {r - n for r, n in zip(v_ranks, vanish["n"]) if r != "never"}
    out["ch02_threshold_offset"] = (float(offsets.pop()) if len(offsets) == 1 and "never" not in v_ranks
                                    else float("nan"))
    at_n_minus_1 = all(r == n - 1 for r, n in zip(v_ranks, vanish["n"]))
    out["ch02_threshold_verdict"] = ("at n - 1 for every n tested, one below the paper's n" if at_n_minus_1
                                     else "not at n - 1 for every n tested (see the table)")
    top = sweep[sweep["rank"] >= sweep["n"] - 1].groupby(["n", "target", "rank"])["tv_max"].min().max()
    out["ch02_below_min"] = float(vanish["error_below"].min())
    out["ch02_at_max"] = float(best[best["rank"] >= best["n"] - 1]["tv_max"].max())
    out["ch02_gap_orders"] = float(math.log10(vanish["error_below"].min() / top))
    exact = sweep.groupby(["n", "target"])["min_logit_rank"].first()
    out["ch02_all_generic"] = "all" if bool((exact == exact.index.get_level_values("n") - 1).all()) else "not all"
    n_big = int(best["n"].max())
    below = best[(best["n"] == n_big) & (best["rank"] < n_big - 1)]
    r_near = int(below["rank"].max())
    out["ch02_near_n"], out["ch02_near_rank"] = n_big, r_near
    out["ch02_near_error"] = float(below[below["rank"] == r_near]["tv_max"].max())
    # certified bounds next to the fits
    bd = tables["bounds"]
    under = bd[bd["rank"] < bd["n"] - 1]
    out["ch02_bound_rows"] = int(len(bd))
    out["ch02_bound_violations"] = int((bd["tv_bound"] > bd["fitted_tv"]).sum())
    out["ch02_bound_min_below"] = float(under["tv_bound"].min())
    out["ch02_bound_max_below"] = float(under["tv_bound"].max())
    out["ch02_bound_ratio_max"] = float((under["tv_bound"] / under["fitted_tv"]).max())
    out["ch02_bound_zero_at"] = ("n - 1 for every target" if bool((bd[bd["rank"] >= bd["n"] - 1]["tv_bound"] == 0).all())
                                 else "not always n - 1")
    # the real bottleneck, r << n
    bn = tables["bottleneck"]
    worst = bn.groupby("rank").agg(fitted_tv=("fitted_tv", "max"), logit=("logit_bound_rel", "min"),
                                   trunc=("truncation_tv", "max"))
    out["ch02_bottleneck_n"] = int(bn["n"].iloc[0])
    out["ch02_bottleneck_ranks"] = _join(worst.index)
    out["ch02_bottleneck_tv_list"] = _join(worst["fitted_tv"], "{:.2f}")
    out["ch02_bottleneck_logit_list"] = _join(100 * worst["logit"], "{:.0f} %")
    out["ch02_bottleneck_trunc_list"] = _join(worst["trunc"], "{:.2f}")
    # sparse vs dense
    reach = tables["reach"]
    r_max = int(tables["sparse"]["rank"].max())
    piv = reach.pivot(index="n", columns="kind", values="vanishing_rank")
    n_min, n_max = int(piv.index.min()), int(piv.index.max())
    for kind in SPARSE_KINDS:
        for end, n in (("nmin", n_min), ("nmax", n_max)):
            v = piv.loc[n, kind] if kind in piv else float("nan")
            out[f"ch02_sparse_{kind}_{end}"] = (f"rank {int(v)}" if v == v else
                                                f"more than rank {r_max} (not reached within the ranks fitted)")
    out["ch02_sparse_nmin"], out["ch02_sparse_nmax"], out["ch02_sparse_rmax"] = n_min, n_max, r_max
    out["ch02_sparse_dense_reached"] = int(piv["dense"].notna().sum()) if "dense" in piv else 0
    out["ch02_sparse_n_count"] = int(len(piv.index))
    # causal heads
    ct, cz = tables["causal_threshold"], tables["causal"]
    fitted = [_rank_word(r) for r in ct["fitted_threshold"]]
    out["ch02_causal_ns"] = _join(ct["n"])
    out["ch02_causal_fitted_list"] = _join(fitted)
    out["ch02_causal_fits"] = [{"n": int(n), "fitted": int(v) if v == v else None}
                               for n, v in zip(ct["n"], ct["fitted_threshold"])]
    out["ch02_causal_bound_list"] = _join(ct["bound_threshold"])
    out["ch02_causal_n_count"] = int(len(ct))
    match = [f == b == h for f, b, h in zip(fitted, ct["bound_threshold"], ct["half"])]
    out["ch02_causal_match_count"] = int(sum(match))
    out["ch02_causal_bound_violations"] = int((cz["tv_bound"] > cz["fitted_tv"]).sum())
    out["ch02_causal_law"] = ("floor(n/2) at every n tested" if all(match)
                              else f"floor(n/2) at {sum(match)} of the {len(match)} lengths tested")
    # inputs of rank d < n
    dn = tables["d_below_n"].groupby("n").agg(logit=("logit_error_rel", "mean"), law=("law", "first"),
                                              tv=("fitted_tv", "max"))
    dn = dn[dn.index > tables["d_below_n"]["d"].iloc[0]]
    out["ch02_dn_d"] = int(tables["d_below_n"]["d"].iloc[0])
    out["ch02_dn_ns"] = _join(dn.index)
    out["ch02_dn_logit_list"] = _join(dn["logit"], "{:.2f}")
    out["ch02_dn_law_list"] = _join(dn["law"], "{:.2f}")
    out["ch02_dn_law_maxdev"] = float((dn["logit"] - dn["law"]).abs().max())
    out["ch02_dn_tv_list"] = _join(dn["tv"], "{:.2f}")
    d_all = tables["d_below_n"]
    out["ch02_dn_bound_violations"] = int((d_all["tv_bound"] > d_all["fitted_tv"]).sum())
    mi, cap = tables["many_inputs"], tables["capacity"]
    out["ch02_many_n"], out["ch02_many_d"] = int(mi["n"].iloc[0]), int(mi["d"].iloc[0])
    out["ch02_many_ranks"] = _join(cap["rank"])
    out["ch02_many_ms"] = f"{int(mi['inputs'].min())} to {int(mi['inputs'].max())}"
    out["ch02_many_capacity_list"] = _join(cap["fitted_capacity"])
    out["ch02_many_counting_list"] = _join(cap["counting"])
    agree = int((cap["fitted_capacity"] == cap["counting"]).sum())
    out["ch02_many_law"] = ("equal to the count at every head size tested" if agree == len(cap)
                            else f"equal to the count at {agree} of the {len(cap)} head sizes tested")
    return out


def summary(tables: dict) -> list[str]:
    """The rounded, stable lines the chapter's NBVAL_CHECK_OUTPUT cell prints."""
    h = headline(tables)
    tol = tables["vanish_tol"]
    lines = [f"construction (head size n and n-1) exact to 1e-12: {h['ch02_construction_error'] < 1e-12}",
             f"counterexample: row 2 stays at TV {round(h['ch02_counterexample_tv'], 3)} from the target"]
    for n, row in tables["vanish"].set_index("n").iterrows():
        r = row["vanishing_rank"]
        lines.append(f"n = {n}: error < {tol:g} from logit rank r = {int(r) if r == r else 'never'} (n - 1 = {n - 1}); "
                     f"one rank below it, error >= 1e-4: {row['error_below'] >= 1e-4}")
    lines.append(f"{rank_label('exact rank', 'rtol=n*eps', 'row-centred log P')} = n - 1 for every dense target: "
                 f"{h['ch02_all_generic'] == 'all'}")
    if "bounds" in tables:
        lines.append(f"certified TV bound <= fitted error in every fit: {h['ch02_bound_violations'] == 0}; "
                     f"> 0 below n - 1: {h['ch02_bound_min_below'] > 0}")
    if "causal_threshold" in tables:
        lines.append(f"causal threshold at n = {h['ch02_causal_ns']}: fitted {h['ch02_causal_fitted_list']}, "
                     f"certified {h['ch02_causal_bound_list']}")
    if "capacity" in tables:
        lines.append(f"many inputs: fitted capacity {h['ch02_many_capacity_list']}, counting {h['ch02_many_counting_list']}")
    if "d_below_n" in tables:
        lines.append(f"d < n: exact unreachable share within 0.1 of sqrt(1 - d^2/(n(n-1))): {h['ch02_dn_law_maxdev'] < 0.1}")
    return lines
