"""Closed forms, exact constructions and samplers from the two papers (float64).

sampling        random attention matrices under named settings (inputs, temperature, mask)
barrier         Min & Li's rank barrier near (1 - 1/e) n: closed forms and the Q = K = X counterexample
embeddings      real token embeddings (MiniLM word pieces) as inputs for the sampler
representation  Theorem 1: exact weights for a target P, the n - 1 threshold, the d < n counterexample
multihead       F subset of G, Theorem 2 witnesses, parameter and FLOP costs
targets         dense (Dirichlet), k-sparse and near-permutation target attention matrices
perturbed       near-orthonormal tokens (X X^T = I + E, |E_ij| = c n^-3/2) for the barrier's 2026 hypothesis
mla             random multi-head latent attention heads (DeepSeek-V2/V3): logit, softmax and hardmax ranks
"""
from .sampling import INPUTS, sample_inputs, sample_qk, sample_attention, temperature_scale
from .barrier import (BARRIER_FRACTION, argmax_column_distribution, counterexample_qk,
                      expected_distinct_columns, expected_distinct_columns_causal,
                      expected_distinct_columns_given, lognormal_share_sigma, saturation_head_dim)
from .embeddings import minilm_word_embeddings

__all__ = ["INPUTS", "sample_inputs", "sample_qk", "sample_attention", "temperature_scale",
           "BARRIER_FRACTION", "argmax_column_distribution", "counterexample_qk",
           "expected_distinct_columns", "expected_distinct_columns_causal",
           "expected_distinct_columns_given", "lognormal_share_sigma", "saturation_head_dim",
           "minilm_word_embeddings"]

# Bhojanapalli et al. (2020): Theorem 1 (representation) and Theorem 2 (fixed head size).
from .representation import (ROW_SUM_TOL, Counterexample, centred_log, construction_check, head_logits,
                             head_size_threshold, min_logit_rank, representation_weights, theorem1_counterexample)
from .multihead import (HeadWeights, Separation, cost_table, embed_standard_in_fixed, head_weights,
                        layer_cost, separating_input, theorem2_layer)

__all__ += ["ROW_SUM_TOL", "Counterexample", "centred_log", "construction_check", "head_logits",
            "head_size_threshold", "min_logit_rank",
            "representation_weights", "theorem1_counterexample", "HeadWeights", "Separation",
            "cost_table", "embed_standard_in_fixed", "head_weights", "layer_cost",
            "separating_input", "theorem2_layer"]
from .targets import dirichlet_targets, permutation_targets, sparse_targets

__all__ += ["dirichlet_targets", "permutation_targets", "sparse_targets"]
from .perturbed import near_orthonormal_gram, near_orthonormal_qk

__all__ += ["near_orthonormal_gram", "near_orthonormal_qk"]
from .mla import (MLA_MATRICES, LatentHeadWeights, mla_head_logits, mla_rank_table, sample_mla_logits,
                  sample_mla_weights)

__all__ += ["MLA_MATRICES", "LatentHeadWeights", "mla_head_logits", "mla_rank_table", "sample_mla_logits",
            "sample_mla_weights"]
