"""Tools several chapters use; not a chapter module, imports no chapter module.

montecarlo  sampled attention and its ranks as tidy tables (hardmax and every rank measure),
            and the mean band over draws that the chapters plot
laws        growth laws (a + b ln n, c n^alpha, c (ln n)^beta) fitted to points with bootstrap
            errors, compared by misfit, BIC and out-of-range prediction; ``law_value`` evaluates one
intervals   Wilson intervals for proportions, t and z quantiles and the bounds built from them
probe       a logistic-regression probe scored by k-fold cross-validation
power       the power rule: the seeds a paired comparison needs to resolve a margin
"""
from .laws import LAWS, LOG, POLYLOG, POWER, fit_saturation, law_comparison, law_value
from .montecarlo import (MAX_ELEMENTS, as_rtols, attention_probs, attention_rank_table, cell_seed, hardmax_rank_table,
                         mean_band, seeded)

__all__ = ["LAWS", "LOG", "POWER", "POLYLOG", "law_value", "law_comparison", "fit_saturation", "MAX_ELEMENTS",
           "cell_seed", "as_rtols", "hardmax_rank_table", "attention_rank_table", "attention_probs", "mean_band",
           "seeded"]
