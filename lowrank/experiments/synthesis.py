"""The verdict table of chapter 08: one row per claim of the two papers, judged on the numbers
the other chapters glued (see ``lowrank.book.glued``).

Each claim names the chapter that tests it, a sentence of evidence built from glued values,
and a rule that turns those values into one of four verdicts. The rules are written down
here, next to the claims, so that a reader can check how a verdict follows from the numbers
and a changed number changes the verdict.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

__all__ = ["VERDICTS", "Claim", "CLAIMS", "verdict_table", "MissingEvidence"]

REPRODUCED = "reproduced"
CONDITIONAL = "holds only under stated conditions"
NOT_AT_SCALE = "not reproduced at this scale"
CONTRADICTED = "contradicted"
VERDICTS = (REPRODUCED, CONDITIONAL, NOT_AT_SCALE, CONTRADICTED)

# Below this a construction or embedding error is float64 round-off, not an approximation.
EXACT = 1e-10


class MissingEvidence(KeyError):
    """A claim needs a glued value that no executed chapter provides."""


@dataclass(frozen=True)
class Claim:
    paper: str
    claim: str
    chapter: str
    evidence: Callable[[Mapping[str, Any]], str]
    verdict: Callable[[Mapping[str, Any]], str]


def _g(glue: Mapping[str, Any], key: str):
    if key not in glue:
        raise MissingEvidence(f"glued value {key!r} not found: execute chapter {key[2:4]} first")
    return glue[key]


B, M = "Bhojanapalli et al. 2020", "Min & Li (ICLR 2025 subm.)"

CLAIMS: tuple[Claim, ...] = (
    Claim(B, "Theorem 1, sufficiency: with head size n, one head can produce any positive row-stochastic P",
          "02",
          lambda g: f"construction error {_g(g, 'ch02_construction_error'):.1e} for n up to {_g(g, 'ch02_construction_nmax')}",
          lambda g: REPRODUCED if _g(g, "ch02_construction_error") < EXACT else CONTRADICTED),
    Claim(B, "Theorem 1, necessity: below the sequence length some P cannot be represented",
          "02",
          lambda g: (f"the d < n counterexample stays {_g(g, 'ch02_counterexample_tv'):.2f} (TV) from its target; "
                     f"fitted error vanishes first at r = {_g(g, 'ch02_vanish_list')} for n = {_g(g, 'ch02_ns_list')}; "
                     f"one rank below, the worst target stays at {_g(g, 'ch02_below_min'):.1e} or more"),
          lambda g: _threshold_verdict(g)),
    Claim(B, "Multi-head bottleneck: with h > d/n heads of size d/h, a layer loses the ability to represent arbitrary attention",
          "03",
          lambda g: (f"standard heads fit up to h = {_g(g, 'ch03_h_last_fit')} (d/h = {_g(g, 'ch03_dh_last_fit')}) and fail from "
                     f"h = {_g(g, 'ch03_h_first_fail')} (error {_g(g, 'ch03_fail_error'):.2f}); fixed d_p = n fits every h "
                     f"(worst {_g(g, 'ch03_fixed_worst'):.1e})"),
          lambda g: REPRODUCED if (_g(g, "ch03_fail_error") > 1e3 * max(_g(g, "ch03_fixed_worst"), 1e-12))
          else NOT_AT_SCALE),
    Claim(B, "F ⊆ G: a fixed head size d_p ≥ d/h can represent every standard multi-head layer",
          "03",
          lambda g: (f"embedded layer matches to {_g(g, 'ch03_embed_error'):.1e} "
                     f"(without absorbing the softmax scale: {_g(g, 'ch03_embed_naive_error'):.2f})"),
          lambda g: REPRODUCED if _g(g, "ch03_embed_error") < EXACT else CONTRADICTED),
    Claim(B, "Theorem 2: some fixed-head layer is not represented by any standard layer with d/h < d_p",
          "03",
          lambda g: (f"best standard fit stays at {_g(g, 'ch03_t2_floor'):.3f} (rel. error) over all restarts, the fixed-head "
                     f"fit reaches {_g(g, 'ch03_t2_fixed'):.1e}; separating input found (proof case {_g(g, 'ch03_sep_case')})"),
          lambda g: REPRODUCED if _g(g, "ch03_t2_floor") > 100 * _g(g, "ch03_t2_fixed") else NOT_AT_SCALE),
    Claim(B, "Parameter counts of Tables 1-3 (BERT-style models with fixed head size)",
          "04",
          lambda g: f"all {_g(g, 'ch04_table_rows')} rows within {_g(g, 'ch04_table_max_diff'):.2f} M of the reported counts",
          lambda g: REPRODUCED if _g(g, "ch04_table_max_diff") <= 0.5 else CONTRADICTED),
    Claim(B, "Training: at many heads, a fixed head size gives lower perplexity than the standard d/h",
          "04",
          lambda g: (f"at h = {_g(g, 'ch04_gap_h')}: fixed {_g(g, 'ch04_fixed_ppl_last'):.1f} vs standard "
                     f"{_g(g, 'ch04_std_ppl_last'):.1f} validation perplexity, after {_g(g, 'ch04_tokens_seen'):,} training tokens"),
          lambda g: REPRODUCED if _g(g, "ch04_gap_ppl") > 0 else NOT_AT_SCALE),
    Claim(B, "Training, parameter-matched: a fixed head size at a smaller width matches a wider standard model",
          "04",
          lambda g: (f"fixed d = {_g(g, 'ch04_match_fixed_d')} ({_g(g, 'ch04_match_fixed_params_k'):.0f} k params): "
                     f"{_g(g, 'ch04_match_fixed_ppl'):.1f}; standard d = {_g(g, 'ch04_match_base_d')} "
                     f"({_g(g, 'ch04_match_base_params_k'):.0f} k): {_g(g, 'ch04_match_base_ppl'):.1f}"),
          lambda g: REPRODUCED if _g(g, "ch04_match_fixed_ppl") <= _g(g, "ch04_match_base_ppl") else NOT_AT_SCALE),
    Claim(B, "The mechanism: a head's logits have rank at most d_h, also in a trained model",
          "07",
          lambda g: (f"all-MiniLM-L6-v2 (d_h = {_g(g, 'ch07_mini_dh')}): logit rank {_g(g, 'ch07_logit_range')} "
                     f"at every n > {_g(g, 'ch07_mini_dh')} over {_g(g, 'ch07_mini_maps')} maps; our classifier: "
                     f"{_g(g, 'ch07_clf_exact')} of {_g(g, 'ch07_clf_cases')} first-block cases at min(d_h, n)"),
          lambda g: REPRODUCED if (str(_g(g, "ch07_logit_range")) == f"exactly {_g(g, 'ch07_mini_dh')}"
                                   and _g(g, "ch07_clf_exact") == _g(g, "ch07_clf_cases")) else CONTRADICTED),
    Claim(M, "Low-rank barrier: the mean rank of random attention is at most about 0.63 n",
          "05",
          lambda g: (f"hardmax: {_g(g, 'ch05_cells_above')} of {_g(g, 'ch05_cells')} (n, d_h) means above the bound; "
                     f"the barrier holds in {_g(g, 'ch05_settings_hold')} of {_g(g, 'ch05_settings_total')} settings; "
                     f"standard softmax: {_g(g, 'ch05_temp_standard'):.2f} n"),
          lambda g: _barrier_verdict(g)),
    Claim(M, "Rank rises with head size toward the barrier",
          "05",
          lambda g: (f"hardmax rank / n at n = {_g(g, 'ch05_nmax')}: {_g(g, 'ch05_frac_dh1_nmax'):.3f} at d_h = 1, "
                     f"{_g(g, 'ch05_frac_dhmax_nmax'):.3f} at d_h = {_g(g, 'ch05_dhmax')} (bound {_g(g, 'ch05_bound_frac_nmax'):.3f})"),
          lambda g: REPRODUCED if (_g(g, "ch05_frac_dhmax_nmax") > 0.9 * _g(g, "ch05_bound_frac_nmax")
                                   and _g(g, "ch05_frac_dh1_nmax") < 0.5 * _g(g, "ch05_frac_dhmax_nmax")) else CONTRADICTED),
    Claim(M, "Saturation: rank stops growing early, at d_h of order log n",
          "06",
          lambda g: (f"the {_g(g, 'ch06_main_criterion')} point grows {_g(g, 'ch06_main_ratio'):.1f}x while ln n grows "
                     f"{_g(g, 'ch06_ln_ratio'):.1f}x (n = {_g(g, 'ch06_nmin')} to {_g(g, 'ch06_nmax')}); power law "
                     f"alpha = {_g(g, 'ch06_alpha_main'):.2f} [{_g(g, 'ch06_alpha_main_lo'):.2f}, {_g(g, 'ch06_alpha_main_hi'):.2f}] "
                     f"fits better for {_g(g, 'ch06_power_better')} of {_g(g, 'ch06_fitted')} criteria"),
          lambda g: _saturation_verdict(g)),
    Claim(M, "The barrier describes trained attention on real data",
          "07",
          lambda g: (f"MiniLM at n = {_g(g, 'ch07_n_max')}: mean hardmax rank {_g(g, 'ch07_hard_frac_nmax'):.2f} n "
                     f"(barrier {_g(g, 'ch07_barrier'):.2f} n), {_g(g, 'ch07_above_barrier'):.0%} of (head, window) pairs "
                     f"above it; numerically full rank at the default tolerance in {_g(g, 'ch07_full_default'):.0%} of maps"),
          lambda g: _trained_barrier_verdict(g)),
    Claim(M, "Model reduction: accuracy saturates in d_h where attention rank does, near log n",
          "07",
          lambda g: (f"BBC News classifier: accuracy {_g(g, 'ch07_acc_low'):.2f} to {_g(g, 'ch07_acc_high'):.2f}, saturating at "
                     f"d_h = {_g(g, 'ch07_acc_sat')}; hardmax rank at {_g(g, 'ch07_sat_hard')}, rtol-1e-3 rank at "
                     f"{_g(g, 'ch07_sat_coarse')} (grid ends at {_g(g, 'ch07_dh_max')}); ln n = {_g(g, 'ch07_clf_ln_n'):.1f}"),
          lambda g: _reduction_verdict(g)),
)


def _threshold_verdict(g) -> str:
    if _g(g, "ch02_counterexample_tv") <= 0:
        return CONTRADICTED
    # The theorem's threshold is n; what the fits show is sharper (n - 1), still a bottleneck below it.
    ns = [int(x) for x in str(_g(g, "ch02_ns_list")).split(",")]
    vanish = [int(x) for x in str(_g(g, "ch02_vanish_list")).split(",")]
    return REPRODUCED if all(v >= n - 1 for v, n in zip(vanish, ns)) else CONTRADICTED


def _barrier_verdict(g) -> str:
    if _g(g, "ch05_cells_above") > 0:
        return CONTRADICTED
    return REPRODUCED if _g(g, "ch05_settings_hold") == _g(g, "ch05_settings_total") else CONDITIONAL


def _saturation_verdict(g) -> str:
    power_wins = _g(g, "ch06_power_better") == _g(g, "ch06_fitted")
    alpha_positive = _g(g, "ch06_alpha_main_lo") > 0
    # Growth like n^alpha with alpha bounded away from 0 is faster than any log n.
    return CONTRADICTED if (power_wins and alpha_positive) else REPRODUCED


def _trained_barrier_verdict(g) -> str:
    if _g(g, "ch07_hard_frac_nmax") > _g(g, "ch07_barrier"):
        return CONTRADICTED
    # Below the barrier on average in the hardmax count, but full rank numerically: it depends on the measure.
    return CONDITIONAL if _g(g, "ch07_full_default") > 0.5 else REPRODUCED


def _reduction_verdict(g) -> str:
    together = _g(g, "ch07_acc_sat") == _g(g, "ch07_sat_hard")
    near_log = _g(g, "ch07_acc_sat") <= 2 * _g(g, "ch07_clf_ln_n")
    return REPRODUCED if (together and near_log) else NOT_AT_SCALE


def verdict_table(glue: Mapping[str, Any], claims: tuple[Claim, ...] = CLAIMS) -> pd.DataFrame:
    """One row per claim: paper, claim, chapter, evidence, verdict."""
    rows = [dict(paper=c.paper, claim=c.claim, chapter=c.chapter, evidence=c.evidence(glue),
                 verdict=c.verdict(glue)) for c in claims]
    return pd.DataFrame(rows)
