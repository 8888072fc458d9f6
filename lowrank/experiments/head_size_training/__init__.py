"""Chapter 04: the head-size experiments of Bhojanapalli et al. (2020), Section 4, as sweeps.

:func:`run` computes every table the chapter shows from its validated parameters and
:func:`headline` turns them into every number it glues (keys :data:`HEADLINE_KEYS`). The
package's modules, one job each:

- :mod:`.schema` and :mod:`.estimate`: the parameters, their constraints and the run's cost;
- :mod:`.paper`: the paper's parameter table (Tables 1-3) against our parameter count;
- :mod:`.grids`: the training grids (Fig. 3a, Fig. 1, Table 2(B), the budget check, the
  learning-rate sweep) as (labels, :class:`lowrank.train.TrainConfig` dict) pairs;
- :mod:`.training`: the corpus, the sweep that trains the grids, the learning-rate choice and
  the committed stores (the long-scale sweep, the budget store) read back;
- :mod:`.summaries`: seed means, curves and paired differences with their intervals;
- :mod:`.headlines`: the glued numbers; :mod:`.leads`: the chapter's answer in words;
  :mod:`.row_record`: what one training row measured, as a typed record; :mod:`.rules`: the
  claims and their rules;
- :mod:`.design` and :mod:`.budget`: the budget store's models and rows, and its first design
  (learning-rate check, budget extension, factorial);
- :mod:`.fair`: the budget store's fair design (each model at its own learning rate, every row at
  two budgets);
- :mod:`.step_cost`: what one training step of the parameter-matched pair costs (the benchmark run);
- :mod:`.tables`: the page's tables; :mod:`.plots`: what each of its figures draws
  (:func:`figure_data`), for :mod:`lowrank.book.training_figures` to draw.
"""
from __future__ import annotations

from collections.abc import Mapping

from . import budget, fair, plots, rules
from .estimate import estimate, lm_units, memory, run_keys, training_runs
from .grids import (base_config, head_size_at_fixed_heads, heads_at_fixed_width, lr_sweep_grid, parameter_matched,
                    recovery_grid, training_grids)
from .headlines import HEADLINE_KEYS, LONG_COMMAND, headline
from .paper import PAPER_TABLES, PARAMETER_TOLERANCE_M, paper_parameter_table, run_parameter_table
from .plots import figure_data
from .rules import (CLAIMS, LIVE_RULES, MATCH_TOLERANCE, rule_fixed_heads, rule_head_size, rule_head_size_past_n,
                    rule_more_heads_fixed, rule_more_heads_standard, rule_parameter_counts, rule_parameter_matched,
                    rule_too_few_heads)
from .schema import CONSTRAINTS, MANIFESTS, PATHS, SCHEMA, STORE_EXPERIMENTS
from .step_cost import StepCost, read_step_cost, step_cost_text
from .summaries import (LEVEL, configuration_table, curve_gap, curves, diff_text, half_width, interval_points,
                        mean_curves, paired, summarise)
from .tables import (COMPARISONS, budget_display, claim_details, comparison_display, comparison_table,
                     configuration_display, factorial_display, interval_text, judged_display, lr_check_display,
                     lr_display, lr_grid_display, parameter_display)
from .training import (BUDGET_STORE, choose_lr, default_runs_dir, manifest_path, run_budget,
                       run_corpus, run_grids, run_long, run_training, store_provenance)

__all__ = ["StepCost", "read_step_cost", "step_cost_text", "SCHEMA", "CONSTRAINTS", "PATHS", "MANIFESTS", "STORE_EXPERIMENTS", "estimate", "memory", "lm_units", "run_keys",
           "training_runs", "run", "headline", "HEADLINE_KEYS", "CLAIMS", "LIVE_RULES",
           "PAPER_TABLES", "PARAMETER_TOLERANCE_M", "paper_parameter_table", "run_parameter_table",
           "heads_at_fixed_width", "parameter_matched", "head_size_at_fixed_heads", "base_config", "recovery_grid",
           "lr_sweep_grid", "training_grids",
           "run_corpus", "run_grids", "default_runs_dir", "choose_lr", "manifest_path", "store_provenance",
           "run_training", "BUDGET_STORE", "run_budget", "run_long", "LONG_COMMAND",
           "summarise", "interval_points", "curves", "mean_curves", "curve_gap", "configuration_table", "LEVEL", "paired", "diff_text",
           "half_width",
           "MATCH_TOLERANCE", "rule_parameter_counts", "rule_fixed_heads", "rule_parameter_matched",
           "rule_head_size", "rule_more_heads_standard", "rule_more_heads_fixed", "rule_head_size_past_n",
           "rule_too_few_heads",
           "parameter_display", "configuration_display", "COMPARISONS", "comparison_table", "comparison_display",
           "lr_display", "claim_details", "interval_text", "budget_display", "factorial_display", "lr_check_display",
           "lr_grid_display", "judged_display", "figure_data", "budget", "fair", "plots", "rules"]


def run(P: Mapping) -> dict:
    """Every table of chapter 04 from its validated parameters ``P``: the paper's parameter table
    (``parameters``), the corpus (``corpus``), this execution's training grids (:func:`run_training`:
    ``heads``, ``matched``, ``sizes``, ``recovery``, ``lr_sweep``, ``lr_table``, ``configs``,
    ``setup``), the long-scale sweep (``long``), the budget store (``budget``) and the matched pair's
    time per training step (``step_cost``, :func:`read_step_cost`). Seeds and torch
    threads come from ``P`` through each run's :class:`lowrank.train.TrainConfig`."""
    tables = run_parameter_table()
    tables.update(run_corpus(P["corpus"], vocab_size=P["vocab_size"]))
    tables.update(run_training(P))
    tables.update(run_long(P, tables))
    tables["step_cost"] = read_step_cost()
    return tables
