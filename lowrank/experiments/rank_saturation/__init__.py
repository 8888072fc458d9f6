"""Chapter 06, where the rank saturates in d_h: saturation points of the hardmax rank (and of
the numerical rank of softmax attention) per sequence length, their bootstrap, the fitted laws,
and headline(tables) -> every number the chapter glues.

grids      the head-size grid, the nested hardmax draws, draws per n
criteria   saturation points by each criterion and their bootstraps
store      the long-scale store: the increment criterion's wide grid, one record per n
increment  the increment rule's evidence (the store, or the chapter's own grid) and its glued text
tables     ``run(P)`` (every computation of the chapter) and the tables the page shows
rules      ``headline(tables)``, the claims and their rules

The growth laws and their comparison live in ``lowrank.experiments.shared.laws``, the sampled
softmax rank tables in ``lowrank.experiments.shared.montecarlo``.
"""
from __future__ import annotations

from ...core.params import Choice, Constraint, Float, FloatList, Int, IntList, Param, distinct_at_least
from ..shared.laws import LAWS, LOG, POLYLOG, POWER, fit_saturation, law_comparison, law_value
from .criteria import criteria, curve_bootstrap, point_summary, saturation_bootstrap, saturation_points
from .grids import head_dim_grid, main_criterion, nested_hardmax_table, trials_per_n
from .increment import increment_evidence, increment_keys
from .store import (EXPERIMENT, LONG_COMMAND, LONG_STORE, MAX_ELEMENTS, decode_ranks, fill_store, long_configs,
                   long_units, read_store, run_length)
from .rules import (BIC_STRONG, CLAIMS, HEADLINE_KEYS, MIN_NS, MIN_RANGE, Z_PRED, headline, rule_saturation,
                    rule_saturation_increment)
from .tables import law_curves, laws_table, points_table, run

__all__ = ["SCHEMA", "CONSTRAINTS", "estimate", "memory", "head_dim_grid", "saturation_points", "saturation_bootstrap",
           "fit_saturation", "nested_hardmax_table", "curve_bootstrap", "point_summary", "criteria", "law_comparison",
           "law_value", "law_curves", "LAWS", "LOG", "POWER", "POLYLOG", "points_table", "laws_table", "trials_per_n",
           "main_criterion", "run", "headline", "HEADLINE_KEYS", "CLAIMS", "rule_saturation",
           "rule_saturation_increment", "Z_PRED", "BIC_STRONG", "MIN_NS", "MIN_RANGE", "PATHS", "STORE_EXPERIMENTS", "run_keys",
           "EXPERIMENT", "LONG_STORE", "LONG_COMMAND", "long_configs", "long_units", "fill_store", "read_store",
           "run_length", "decode_ranks", "increment_evidence", "increment_keys"]

# The chapter's parameters: the notebook's parameters cell sets these names, and
# lowrank.core.params.validate checks them (and CONSTRAINTS) before anything runs.
SCHEMA = dict(
    seed=Int(0, doc="random seed"),
    device=Choice("cpu", "cuda", doc="where the Monte Carlo runs"),
    ns=IntList(2, 16384, doc="sequence lengths n"),
    max_head_dim=Int(2, 65536, doc="largest head size on the grid"),
    points_per_octave=Int(1, 16, doc="grid density: head sizes round(2^(k / points_per_octave))"),
    rows_per_cell=Int(1, 10_000_000, doc="trials per (n, d_h) = max(min_trials, rows_per_cell // n)"),
    min_trials=Int(2, 100_000, doc="fewest trials per (n, d_h)"),
    fractions=FloatList(0.01, 0.999, doc="saturation criteria: fractions of the bound (or plateau)"),
    increment=Float(1e-6, 1.0, doc="saturation criterion: relative rank increment per doubling of d_h"),
    n_boot=Int(2000, 100_000, doc="bootstrap replicates over Monte-Carlo draws (>= 2000 for 95% percentile intervals)"),
    softmax_ns=IntList(2, 16384, doc="sequence lengths for the softmax (standard temperature) part"),
    softmax_max_head_dim=Int(2, 65536, doc="largest head size for the softmax part"),
    softmax_points_per_octave=Int(1, 64, doc="softmax grid density: head sizes round(2^(k / m)); 8 gives every integer to 6"),
    softmax_trials=Int(2, 100_000, doc="draws per (n, d_h) for the softmax part"),
    softmax_rtols=FloatList(0.0, 1.0, min_len=2, doc="two or more tolerances for the softmax numerical rank (0 means the default max(m,n)*eps)"),
    increment_store=Param("str", allow_none=True,
                          doc="the committed long-scale store the increment criterion is judged on (read only); "
                              "None: this run's own grid"),
    increment_run_store=Param("str", allow_none=True,
                              doc="your store: the long grid's missing lengths are computed into it (resumable) and "
                                  "the increment criterion is judged on it; None: nothing computed"),
    increment_top_min=Int(2, 1 << 20, doc="long grid: the largest head size at n is max(this, increment_top_factor n)"),
    increment_top_factor=Int(1, 1024, doc="long grid: the largest head size at n is max(increment_top_min, this n)"),
    increment_rows_per_cell=Int(1, 1 << 30, doc="long grid: draws per n are max(min_trials, this // n)"),
)
# Parameters that name results stores (lowrank.book.runner resolves and checks them): one read,
# one written.
PATHS = {"increment_store": "read_store", "increment_run_store": "store"}
# The experiment whose runs those stores hold.
STORE_EXPERIMENTS = (EXPERIMENT,)
CONSTRAINTS = (
    Constraint(("ns",), distinct_at_least("ns", 3, "the saturation law is fitted across three or more n")),
    Constraint(("max_head_dim",), lambda p: None if p["max_head_dim"] >= 4 else (
        f"max_head_dim = {p['max_head_dim']} must be at least 4: the saturation criteria need head sizes "
        "over two octaves or more, or no n has a saturation point to plot")),
)


# --- cost estimate: work units the cost model (lowrank.experiments.costs) turns into time ----------

def estimate(p) -> tuple[dict[str, float], str]:
    """(work unit -> count, what the run does in a few words) at a full, checked parameter set."""
    grid = head_dim_grid(p["max_head_dim"], p["points_per_octave"])
    trials = trials_per_n(p)
    nested = sum(t * n * n * (max(grid) + 4 * len(grid)) for n, t in zip(p["ns"], trials))
    sgrid = head_dim_grid(p["softmax_max_head_dim"], p["softmax_points_per_octave"])
    svd = sum(p["softmax_trials"] * len(sgrid) * n ** 3 for n in p["softmax_ns"])
    cells = len(p["ns"]) * len(grid) + len(p["softmax_ns"]) * len(sgrid) * len(p["softmax_rtols"])
    boot = p["n_boot"] * cells * 2
    draws = sum(trials)
    units = {"nested": nested, "svd": svd, "bootstrap": boot}
    what = f"{draws:,} nested hardmax draws (no SVD) over {len(grid)} head sizes, softmax SVDs on {len(sgrid)}"
    if _stored(p):
        configs = long_configs(p)
        units["bootstrap"] += p["n_boot"] * sum(len(c["head_dims"]) for c in configs) * 2
        if p.get("increment_run_store") is not None:
            units["nested_long"] = long_units(p)
            what += (f"; the long grid: {sum(c['trials'] for c in configs):,} nested draws to head size "
                     f"{max(c['head_dims'][-1] for c in configs)}")
    return units, what


def _stored(p) -> bool:
    return p.get("increment_store") is not None or p.get("increment_run_store") is not None


def memory(p) -> float:
    """Bytes of the largest arrays: the Monte Carlo runs in blocks of 2^25 float64 entries; the long
    grid draws Q and K (float32) at its largest n and head size, and its bootstrap holds one index
    per draw and replicate."""
    out = 8.0 * 2 ** 25
    if _stored(p):
        configs = long_configs(p)
        out = max(out, 8.0 * p["n_boot"] * max(c["trials"] for c in configs) + 8.0 * 2 ** 24)
        if p.get("increment_run_store") is not None:
            out = max(out, max(4.0 * (2 * c["n"] * c["head_dims"][-1] + c["n"] ** 2) for c in configs))
    return out


def run_keys(p) -> set[str]:
    """The run keys of the long grid's records (one per n), so a store can be told complete or partial."""
    from ...train import run_key

    return {run_key(c) for c in long_configs(p)} if _stored(p) else set()
