"""Closed forms, exact constructions and samplers from the two papers (float64).

sampling        random attention matrices under named settings (inputs, temperature, mask)
softmax_rank    rank of random attention vs head size, temperature and tolerance
barrier         Min & Li's rank barrier near (1 - 1/e) n and its saturation in d_h (chapters 05, 06)
embeddings      real token embeddings (MiniLM word pieces) as inputs for the sampler
"""
from .sampling import INPUTS, sample_inputs, sample_qk, sample_attention, temperature_scale
from .softmax_rank import rank_vs_head_dim
from .barrier import (BARRIER_FRACTION, argmax_column_distribution, attention_rank_table,
                      counterexample_qk, expected_distinct_columns, expected_distinct_columns_causal,
                      expected_distinct_columns_given, fit_saturation, hardmax_rank_table,
                      head_combination_table, key_set_table, saturation_bootstrap, saturation_points,
                      head_dim_grid, barrier_verdicts, mean_band)
from .embeddings import minilm_word_embeddings

__all__ = ["INPUTS", "sample_inputs", "sample_qk", "sample_attention", "temperature_scale",
           "rank_vs_head_dim",
           "BARRIER_FRACTION", "argmax_column_distribution", "attention_rank_table",
           "counterexample_qk", "expected_distinct_columns", "expected_distinct_columns_causal",
           "expected_distinct_columns_given", "fit_saturation", "hardmax_rank_table",
           "head_combination_table", "key_set_table", "saturation_bootstrap", "saturation_points",
           "head_dim_grid", "barrier_verdicts", "mean_band",
           "minilm_word_embeddings"]
