"""Chapter 05, Min & Li's rank barrier: Monte-Carlo tables of hardmax and softmax ranks under
the theorem's hypotheses and with one hypothesis dropped at a time, the summary table, and
headline(tables) -> every number the chapter glues.

tables  the chapter's own tables (key sets, heads combined, the summary) and ``run(P)``
rules   ``headline(tables)``, the claims and their rules

Tables are tidy pandas DataFrames, one row per Monte-Carlo draw (or per measurement). The
closed forms (the coupon-collector bound, the causal law) live in ``lowrank.theory.barrier``;
the sampled rank tables shared with chapter 06 in ``lowrank.experiments.shared.montecarlo``.
"""
from __future__ import annotations

from ...core.params import Choice, ChoiceList, Constraint, Float, FloatList, Int, IntList, ascending, contains, short_repr
from ..shared.montecarlo import MAX_ELEMENTS, attention_rank_table, hardmax_rank_table, mean_band
from .near import near_cells, near_orthonormal_table
from .rules import (CLAIMS, FAMILY_LEVEL, GROUPS, HEADLINE_KEYS, MLA_INCREMENT, NEAR_MARGIN, Z95, headline,
                    rule_barrier, rule_mla, rule_mla_bound, rule_near_orthonormal, rule_rank_rises)
from .tables import (barrier_verdicts, counterexample_table, head_combination_table, inputs_table, key_set_table, mla_table, near_table,
                     montecarlo_table, run, summary_table)

__all__ = ["SCHEMA", "CONSTRAINTS", "estimate", "memory", "MAX_ELEMENTS", "key_set_table", "hardmax_rank_table",
           "attention_rank_table", "head_combination_table", "mean_band", "barrier_verdicts", "run", "headline",
           "summary_table", "montecarlo_table", "inputs_table", "counterexample_table", "GROUPS", "HEADLINE_KEYS",
           "CLAIMS", "rule_barrier", "rule_rank_rises", "rule_near_orthonormal", "Z95", "FAMILY_LEVEL", "NEAR_MARGIN",
           "near_orthonormal_table", "near_cells", "near_table", "mla_table", "rule_mla", "rule_mla_bound", "MLA_INCREMENT"]

# The chapter's parameters: the notebook's parameters cell sets these names, and
# lowrank.core.params.validate checks them (and CONSTRAINTS) before anything runs.
SCHEMA = dict(
    seed=Int(0, doc="random seed"),
    device=Choice("cpu", "cuda", doc="where the Monte Carlo runs"),
    ns=IntList(2, 8192, doc="sequence lengths n for the hardmax sweep"),
    head_dims=IntList(1, 16384, doc="head sizes d_h for the hardmax sweep"),
    n_trials=Int(2, 100_000, doc="independent draws of X, W_q, W_k per (n, d_h)"),
    n_setting=Int(4, 4096, doc="sequence length for the settings figures (temperature, tolerance, inputs, heads)"),
    setting_head_dims=IntList(1, 16384, doc="head sizes for the settings figures"),
    setting_trials=Int(2, 100_000, doc="draws per point in the settings figures"),
    scales=FloatList(1e-3, 1e4, doc="logit multipliers k of the standard Q K^T / sqrt(d_h) (k = 1 is standard)"),
    rtols=FloatList(0.0, 1.0, doc="relative tolerances for the numerical rank (0 means the default max(m,n)*eps)"),
    energy=Float(0.5, 1.0, doc="energy fraction for the energy rank"),
    inputs=ChoiceList("orthonormal", "gaussian", "sphere", "anisotropic", "minilm",
                      doc="input settings ('minilm' = real word embeddings of all-MiniLM-L6-v2)"),
    d_model=Int(2, 65536, doc="token width for the non-orthonormal inputs"),
    key_set_n=Int(2, 4096, doc="n for the upper-bound check on sampled key sets"),
    key_head_dims=IntList(1, 16384, doc="head sizes for the key-set check"),
    key_sets=Int(1, 10_000, doc="sampled key sets per head size"),
    query_sets=Int(2, 100_000, doc="query sets per key set"),
    heads=IntList(1, 256, doc="numbers of heads h, each with d_h = heads_d_model // h"),
    heads_d_model=Int(1, 65536, doc="model width shared by the heads"),
    near_ns=IntList(32, 4096, doc="sequence lengths n for the near-orthonormal inputs (I + E must stay positive definite)"),
    near_cs=FloatList(1e-6, 10.0, doc="off-diagonal sizes c of X X^T = I + E, |E_ij| = c n^-3/2 (0, the orthonormal reference, is added)"),
    near_head_dims=IntList(1, 16384, doc="head sizes for the near-orthonormal inputs"),
    near_trials=Int(2, 100_000, doc="draws of E, W_q, W_k per n for the near-orthonormal inputs"),
    mla_ns=IntList(4, 4096, doc="sequence lengths n for the random multi-head latent attention heads"),
    mla_latents=IntList(1, 16384, min_len=3, doc="latent sizes kv_latent of the MLA heads, ascending"),
    mla_head_dim=Int(1, 4096, doc="content head size of the MLA heads"),
    mla_rope_dims=IntList(0, 4096, doc="sizes of the MLA heads' decoupled rotary part (even; 0: none)"),
    mla_trials=Int(2, 100_000, doc="draws of the MLA weights per cell"),
)
CONSTRAINTS = (
    Constraint(("heads", "heads_d_model"), lambda p: (
        None if max(p["heads"]) <= p["heads_d_model"] else
        f"heads {short_repr([h for h in p['heads'] if h > p['heads_d_model']])} exceed heads_d_model = "
        f"{p['heads_d_model']}: each head needs d_h = heads_d_model // h >= 1")),
    Constraint(("rtols",), contains("rtols", 0.0, "the default tolerance the tables compare against")),
    Constraint(("scales",), contains("scales", 1.0, "the standard temperature")),
    Constraint(("mla_latents",), ascending("mla_latents")),
    Constraint(("mla_rope_dims",), lambda p: None if all(r % 2 == 0 for r in p["mla_rope_dims"]) else
               f"mla_rope_dims {short_repr(p['mla_rope_dims'])} must be even: the rotary part turns pairs of coordinates"),
    *(Constraint((name,), contains(name, 1, "the chapter's sentences compare every head size with d_h = 1"))
      for name in ("head_dims", "setting_head_dims", "key_head_dims")),
)


# --- cost estimate: work units the cost model (lowrank.experiments.costs) turns into time ----------

def estimate(p) -> tuple[dict[str, float], str]:
    """(work unit -> count, what the run does in a few words) at a full, checked parameter set."""
    hard = sum(p["n_trials"] * n * n * (dh + 8) for n in p["ns"] for dh in p["head_dims"]) * 2  # plain + causal
    ns, T, dhs = p["n_setting"], p["setting_trials"], p["setting_head_dims"]
    soft_tables = len(p["scales"]) + 1  # temperature sweep, causal softmax
    svd = soft_tables * len(dhs) * T * ns ** 3
    hard += (1 + len(p["inputs"])) * len(dhs) * T * ns * ns * (max(dhs) / 2 + 8)
    hard += len(p["key_head_dims"]) * p["key_sets"] * p["query_sets"] * p["key_set_n"] ** 2 * 8
    hard += sum(p["key_head_dims"]) * p["key_sets"] * p["query_sets"] * p["key_set_n"] ** 2
    # MLA heads: one n x n logit product and one SVD-free hardmax pass per draw, plus the logit rank's SVD
    svd += p["mla_trials"] * len(p["mla_latents"]) * len(p["mla_rope_dims"]) * sum(n ** 3 for n in p["mla_ns"])
    # near-orthonormal inputs: one symmetric eigendecomposition and two n x n products per (trial, c)
    svd += (len(p["near_cs"]) + 1) * p["near_trials"] * sum(n ** 3 for n in p["near_ns"])
    hard += (len(p["near_cs"]) + 1) * p["near_trials"] * sum(n * n * (max(p["near_head_dims"]) + 8) * len(
        p["near_head_dims"]) for n in p["near_ns"])
    heads = len(p["heads"]) * T * (2 + 2 * max(p["heads"]))  # head average and stacked SVDs per draw
    svd += heads * ns ** 3
    draws = 2 * p["n_trials"] * len(p["ns"]) * len(p["head_dims"])
    return {"hardmax": hard, "svd": svd}, f"{draws:,} hardmax draws and the settings sweeps"


def memory(p) -> float:
    """Bytes of the largest arrays: the Monte Carlo runs in blocks of 2^25 float64 entries."""
    return 8.0 * 2 ** 25
