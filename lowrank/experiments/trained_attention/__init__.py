"""Chapter 07: attention ranks in trained models, model reduction on retrieval heads, head truncation.

- :mod:`.minilm`: every head of all-MiniLM-L6-v2 ranked on real text.
- :mod:`.reduction`: Min & Li's model-reduction experiment on two retrieval tasks, each run
  trained to its loss plateau (or its step cap), read from the committed long-scale store.
- :mod:`.truncation`: every MiniLM head cut to logit rank r, judged by neighbour overlap,
  similarity correlation, a topic probe, and layer by layer.
- :mod:`.rules`: the four claims' rules and their thresholds (registered in the rules ledger).
- :mod:`.latent`, :mod:`.latent_rules`: small language models on multi-head latent attention at
  several latent sizes, their heads' logit rank against the layer's bound and their attention's
  rank, and the two claims' rules.
- :mod:`.pretrained_models`, :mod:`.model_rules`: SmolLM2-135M-Instruct and all-mpnet-base-v2
  measured like MiniLM (read from their committed long-scale store) and their six per-model claims.
- :mod:`.runs`: :func:`run`, the chapter's parameters mapped onto the three experiments.
- :mod:`.tables`: the page's tables (the model-by-claim table among them) and its check summary;
  :mod:`.plots`: what each of its figures draws (:func:`figure_data`), for
  :mod:`lowrank.book.trained_figures` to draw.

:func:`headline` turns the tables into every number the chapter glues (``HEADLINE_KEYS``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ...measure.rank import DEFAULT_TOL, FLOAT32_TOL
from ..verdicts import Claim, claim_of
from .minilm import (argmax_patterns, as_rtols, barrier_fraction, coarse_tolerance, per_head_fractions,
                     pretrained_headline, pretrained_ranks, run_pretrained, tolerance_names, with_float32)
from ..shared.equivalence import equivalent_from
from .reduction import (LONG_STORE, RETRIEVAL_EXPERIMENT, TASK_NAMES, capped_configs, extended,
                        grid_configs, grid_intervals,
                        law_bands, law_table, plateau_table, read_retrieval_store, retrieval_configs,
                        retrieval_headline, retrieval_run, retrieval_table, run_retrieval)
from .classifier_rules import CLASSIFIER_CLAIMS, rule_layers, rule_text_plateau, rule_vit_plateau
from .classifiers import LONG_CLASSIFIER_STORE, classifier_configs, classifier_headline, run_classifiers
from .rules import (BARRIER_MARGIN, CEILING_SHARE, CLAIMS as _RULE_CLAIMS, COSINE_LEVEL, EXTENDED_CAP, LAWS, LEVEL, LOG_FACTOR, MIN_LAW_NS,
                    MIN_PAIR_NS, MIN_SEEDS, NEIGHBOUR_MARGIN, NEIGHBOURS, PLATEAU_TOL, REDUCTION_MARGIN,
                    SIMILARITY_LEVEL, barrier_class, law_fit, point_records, rule_mechanism, truncation_records,
                    rule_model_reduction, rule_trained_barrier, rule_truncation)
from .truncation import (TRUNCATION_EXPERIMENT, agreement, layer_table, neighbour_overlap, probe_documents,
                         redundant_ranks, run_truncation, similarity_correlation, truncation_configs,
                         truncation_headline, truncation_run, truncation_table)
from .latent import LATENT_KEYS, latent_configs, latent_headline, latent_summary, paired_saturation, run_latent
from .latent_rules import LATENT_CLAIMS, rule_mla_trained_bound, rule_mla_trained_saturation
from .runs import latent_arguments, retrieval_arguments, run, truncation_arguments
from .tables import (CLASSIFIER_NAMES, check_summary, classifier_status_table, latent_table, model_claim_display,
                     model_claim_table, models_cut_display, retrieval_status_table, truncation_display, windows_table)
from . import plots
from .plots import LAW_LABELS, figure_data

from .model_rules import LOSS_MARGIN, MODEL_CLAIMS, verdict_key
from .pretrained_models import LONG_MODELS_STORE, MODELS_KEYS, models_configs, models_headline, run_models

from .estimate import estimate, memory, run_keys

from .schema import CONSTRAINTS, SCHEMA, PATHS, STORE_EXPERIMENTS

__all__ = ["answer_text", "VERDICT_CLAIMS", "verdict_values", "estimate", "memory", "run_keys", "SCHEMA", "CONSTRAINTS", "PATHS", "STORE_EXPERIMENTS", "DEFAULT_TOL", "FLOAT32_TOL", "argmax_patterns", "as_rtols", "barrier_fraction", "coarse_tolerance", "per_head_fractions",
           "pretrained_ranks", "run_pretrained", "tolerance_names", "with_float32", "LONG_STORE",
           "RETRIEVAL_EXPERIMENT", "TASK_NAMES", "capped_configs", "extended", "equivalent_from", "grid_configs", "grid_intervals", "law_table", "law_bands",
           "plateau_table", "read_retrieval_store", "retrieval_configs", "retrieval_run",
           "retrieval_table", "run_retrieval", "BARRIER_MARGIN", "CEILING_SHARE", "CLAIMS", "COSINE_LEVEL", "LAWS",
           "LEVEL", "LOG_FACTOR", "MIN_LAW_NS", "MIN_PAIR_NS", "MIN_SEEDS", "NEIGHBOUR_MARGIN", "NEIGHBOURS",
           "PLATEAU_TOL", "EXTENDED_CAP", "REDUCTION_MARGIN", "SIMILARITY_LEVEL", "barrier_class", "point_records",
           "truncation_records", "law_fit",
           "rule_mechanism", "rule_model_reduction", "rule_trained_barrier", "rule_truncation",
           "TRUNCATION_EXPERIMENT", "agreement", "layer_table", "neighbour_overlap", "probe_documents",
           "redundant_ranks", "run_truncation", "similarity_correlation", "truncation_configs", "truncation_run",
           "truncation_table", "retrieval_arguments", "truncation_arguments", "run", "LAW_LABELS", "check_summary",
           "figure_data", "plots", "retrieval_status_table", "truncation_display", "windows_table", "headline",
           "HEADLINE_KEYS", "CLASSIFIER_CLAIMS", "rule_layers", "rule_text_plateau", "rule_vit_plateau",
           "LONG_CLASSIFIER_STORE", "classifier_configs", "classifier_headline", "run_classifiers",
           "CLASSIFIER_NAMES", "classifier_status_table", "LATENT_KEYS", "LATENT_CLAIMS", "latent_configs",
           "latent_headline", "latent_summary", "paired_saturation", "run_latent", "rule_mla_trained_bound",
           "rule_mla_trained_saturation", "latent_arguments", "latent_table", "LOSS_MARGIN",
           "MODEL_CLAIMS", "LONG_MODELS_STORE", "MODELS_KEYS", "models_configs", "models_headline", "run_models",
           "model_claim_table", "model_claim_display", "models_cut_display"]

_PRETRAINED_KEYS = (
    "ch07_mini_layers", "ch07_mini_heads", "ch07_mini_dh", "ch07_mini_maps",
    "ch07_logit_min", "ch07_logit_max", "ch07_logit_range", "ch07_logit_coarse_min", "ch07_logit_maps",
    "ch07_f32_tol", "ch07_logit_f32_min", "ch07_logit_f32_max", "ch07_full_f32", "ch07_f32_frac_nmax",
    "ch07_f32_head_lo", "ch07_f32_head_hi", "ch07_default_frac_nmax", "ch07_default_head_lo", "ch07_default_head_hi",
    "ch07_f32_frac_nmin", "ch07_f32_rtol_nmax",
    "ch07_head_mean", "ch07_head_mean_lo", "ch07_head_mean_hi", "ch07_heads", "ch07_heads_above",
    "ch07_heads_above_lo", "ch07_heads_above_hi", "ch07_windows_nmax",
    "ch07_logit_eff_nmax", "ch07_logit_eff_nmax_hi", "ch07_coarse_tol", "ch07_full_default",
    "ch07_n_max", "ch07_n_min", "ch07_barrier", "ch07_hard_frac_nmax", "ch07_hard_frac_nmin",
    "ch07_eff_frac_nmax", "ch07_coarse_frac_nmax", "ch07_coarse_frac_nmin", "ch07_above_barrier",
    "ch07_hard_frac_head_max",
    "ch07_high_count", "ch07_pat_count", "ch07_high_neighbour", "ch07_low_count", "ch07_low_first",
    "ch07_first_all",
    "ch07_layer_first", "ch07_layer_last", "ch07_layer_peak", "ch07_layer_peak_value",
)
_RETRIEVAL_KEYS = (
    "ch07_ret_ns", "ch07_ret_dh", "ch07_ret_pair_ns", "ch07_ret_seeds", "ch07_ret_pair_seeds", "ch07_ret_cap",
    "ch07_ret_ext_cap", "ch07_ret_extended",
    "ch07_ret_min_steps", "ch07_ret_check", "ch07_ret_warmup", "ch07_ret_lr", "ch07_ret_cooldown", "ch07_ret_test_seq", "ch07_ret_runs", "ch07_ret_grid_runs", "ch07_ret_plateau",
    "ch07_ret_capped", "ch07_ret_plateau_tol", "ch07_ret_margin", "ch07_ret_acc_se_max", "ch07_ret_acc_min",
    "ch07_ret_acc_max", "ch07_ret_corr", "ch07_ret_pair_corr", "ch07_ret_bounded", "ch07_ret_cases",
    *(f"ch07_red_{t}{s}" for t in ("single", "pair") for s in ("", "_runs", "_grid", "_plateau", "_judged", "_text")),
    "ch07_ret_capped_where", "ch07_red_laws", "ch07_red_pred", "ch07_red_decide",
    "ch07_bar_ret_dh", "ch07_bar_ret_ns", "ch07_bar_ret_runs", "ch07_bar_ret_above", "ch07_bar_ret_mean",
    "ch07_bar_ret_lo", "ch07_bar_ret_hi", "ch07_bar_ret_share_lo", "ch07_bar_ret_share_hi", "ch07_bar_ret_spread",
    "ch07_ret_git", "ch07_ret_code", "ch07_ret_dates", "ch07_ret_machine", "ch07_ret_cpu", "ch07_ret_cpu_min",
    "ch07_ret_source", "ch07_ret_scale",
)
_TRUNCATION_KEYS = (
    "ch07_tr_ns", "ch07_tr_ranks", "ch07_tr_dh", "ch07_tr_docs", "ch07_tr_folds", "ch07_tr_cos_level", "ch07_tr_k",
    "ch07_tr_overlap_level", "ch07_tr_sim_level", "ch07_tr_log_factor", "ch07_tr_full_dev", "ch07_tr_full_acc_lo",
    "ch07_tr_full_acc_hi", "ch07_tr_cos_r1", "ch07_tr_acc_r1_lo", "ch07_tr_acc_r1_hi", "ch07_tr_drop_r1",
    "ch07_tr_acc_first", "ch07_tr_overlap_r1_lo", "ch07_tr_overlap_r1_hi", "ch07_tr_sim_r1_lo", "ch07_tr_sim_r1_hi",
    "ch07_trr_points", "ch07_trr_text", "ch07_trl_n", "ch07_trl_r", "ch07_trl_worst", "ch07_trl_worst_overlap",
    "ch07_trl_best", "ch07_trl_best_overlap", "ch07_tr_cpu_min",
)
_CLASSIFIER_KEYS = ("ch07_cls_scale", "ch07_cls_vit_data", "ch07_cls_vit_stored", "ch07_cls_vit", "ch07_cls_text_data",
                    "ch07_cls_text_stored", "ch07_cls_text", "ch07_cls_layers", "ch07_cls_layers_what")
# The chapter's own verdicts: headline key ch07_verdict_<name> -> the key of the claim it judges.
VERDICT_CLAIMS = {"mechanism": "bhojanapalli-trained-logit-rank", "barrier": "minli-trained-barrier",
                  "reduction": "minli-model-reduction", "truncation": "minli-truncation", "vit": "minli-vit-plateau",
                  "text": "minli-imdb-plateau", "layers": "minli-layers", "mla_bound": "mla-logit-bound-trained",
                  "mla": "minli-mla-trained"}
# What each verdict is about, for the chapter's opening sentence, in the order it names them.
_ABOUT = {"mechanism": "logits of rank at most the head size in trained heads",
          "barrier": "Min & Li's rank barrier as a ceiling on trained heads",
          "reduction": "model reduction on the retrieval tasks",
          "truncation": "MiniLM's heads cut to a logit rank near log n",
          "vit": "accuracy plateauing where rank saturates in vision transformers on digits",
          "text": "rank and accuracy saturating together on BBC News topics",
          "layers": "rank saturating alike at every layer",
          "mla_bound": "the logit bound of trained multi-head latent attention",
          "mla": "rank saturating in the latent of trained multi-head latent attention"}
HEADLINE_KEYS = (*_PRETRAINED_KEYS, *_RETRIEVAL_KEYS, *_TRUNCATION_KEYS, *_CLASSIFIER_KEYS, *LATENT_KEYS,
                 *(f"ch07_verdict_{name}{end}" for name in VERDICT_CLAIMS for end in ("", "_word")), "ch07_answer",
                 *MODELS_KEYS, *(verdict_key(c) + end for c in MODEL_CLAIMS for end in ("", "_word")))


def _join(xs: Sequence[Any]) -> str:
    xs = [str(x) for x in xs]
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


def answer_text(verdicts: Mapping[str, str]) -> str:
    """The chapter's verdicts grouped by their verdict word, one sentence each, in the order of
    :data:`_ABOUT` (``verdicts``: {name of :data:`VERDICT_CLAIMS`: Judgement.verdict})."""
    if set(verdicts) != set(_ABOUT):
        raise ValueError(f"verdicts for {sorted(verdicts)}, expected one for each of {sorted(_ABOUT)}")
    groups: dict[str, list[str]] = {}
    for name, about in _ABOUT.items():
        groups.setdefault(verdicts[name], []).append(about)
    first = ("reproduced", "reproduced in a weaker form", "contradicted", "inconclusive")
    order = [w for w in first if w in groups] + [w for w in groups if w not in first]
    return " ".join(f"{w[0].upper()}{w[1:]}: {'; '.join(groups[w])}." for w in order)


def verdict_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The chapter's verdicts judged on its other headline values: for each verdict its label (as the
    page prints it) and its verdict word (``..._word``), each claim found by its key, and the opening answer."""
    judged = {name: claim_of(CLAIMS, key).judge(values) for name, key in VERDICT_CLAIMS.items()}
    out: dict[str, Any] = {}
    for name, j in judged.items():
        out[f"ch07_verdict_{name}"], out[f"ch07_verdict_{name}_word"] = j.label, j.verdict
    for claim in MODEL_CLAIMS:
        j = claim.judge(values)
        out[verdict_key(claim)], out[verdict_key(claim) + "_word"] = j.label, j.verdict
    out["ch07_answer"] = answer_text({name: j.verdict for name, j in judged.items()})
    return out


def headline(tables: Mapping[str, Any]) -> dict[str, Any]:
    """Every number chapter 07 glues, from the tables of :func:`run`."""
    coarse = coarse_tolerance(tables["rtols"])
    out = {**pretrained_headline(tables, coarse), **retrieval_headline(tables, _join),
           **truncation_headline(tables, _join), **classifier_headline(tables), **latent_headline(tables),
           **models_headline(tables)}
    out.update(verdict_values(out))
    assert set(out) == set(HEADLINE_KEYS), sorted(set(out) ^ set(HEADLINE_KEYS))
    return out


def _measured(claims: tuple[Claim, ...], measure) -> tuple[Claim, ...]:
    return tuple(replace(c, measure=measure) for c in claims)


# What each claim's values come from (Claim.measure), which the rules ledger fingerprints with its
# rule. Set here, where both are imported: the measuring modules read the rule modules' constants,
# so a rule module cannot import the function that measures for it. The first four claims read
# values from several of the chapter's measurements, hence the whole headline.
CLAIMS: tuple[Claim, ...] = (_measured(_RULE_CLAIMS, headline) + _measured(CLASSIFIER_CLAIMS, classifier_headline)
                             + _measured(LATENT_CLAIMS, latent_headline) + _measured(MODEL_CLAIMS, models_headline))
