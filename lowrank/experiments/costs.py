"""What a chapter's run costs, from the grid the chapter itself builds.

Every estimate is ``overhead + sum(units[k] * rate[k])``: ``units`` counts the operations the
chapter actually runs at parameters P (the draws, fits and training steps of its own grid
builders: :func:`lowrank.experiments.headsize.training_grids`,
:func:`lowrank.experiments.trained.retrieval_configs`,
:func:`lowrank.experiments.saturation.head_dim_grid`, ...), and ``rate`` is the measured
cost of one unit of that operation on one device. ``tools/measure_costs.py`` measures the CPU
rates by running the same code at a small size and prints them; the numbers below are its
output on the build machine (one core of an AMD EPYC, torch 2.13 CPU, 2026-12-03). GPU rates
are not measured yet: they are the CPU rates divided by an assumed speed-up (``GPU_SPEEDUP``),
and ``tools/gpu_check.sh`` writes the measured ones to ``data/gpu_check/measured.json`` when a
GPU is lent.

Training sweeps run ``workers`` at a time, so their wall time is the device time divided by
the workers (never by more than the runs).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Cost", "CPU_RATES", "GPU_SPEEDUP", "OVERHEAD_S", "UNITS", "units", "rates", "estimate",
           "chapter_device", "run_keys", "training_runs_04", "lm_units"]

# Seconds of one notebook that computes almost nothing: kernel start, imports, figures, glue
# (chapter 08's committed execution record, 9.1 s on the build machine).
OVERHEAD_S = 9.0

# Seconds per unit on one CPU core (tools/measure_costs.py; each unit is defined in UNITS below).
CPU_RATES: dict[str, float] = {
    "svd": 1.3e-09,          # a float64 n x n attention matrix with every rank measure: per n^3
    "hardmax": 1.4e-10,      # one hardmax draw: per n^2 (d_h + 8) (logits, argmax, distinct columns)
    "nested": 3.4e-10,       # one nested hardmax draw: per n^2 (max d_h + 4 grid points)
    "causal_iter": 1.3e-03,  # one iteration of a batched causal fit (small n: the loop's own cost)
    "lbfgs": 4.5e-09,        # an L-BFGS fit: per problem x restart x iteration cap x n^2 (r + 2)
    "heads_fit": 2.0e-08,    # a head fit on inputs X: per head x restart x iteration cap x n (n + d) d_h
    "layer_fit": 2.9e-07,    # a whole-layer fit: per restart x iteration cap x samples x n d (d + n)
    "train": 1.2e-11,        # language-model training: per flop of 6 x parameters x tokens
    "train_attn": 7.1e-09,   # language-model training: per head x n x token x layer
    "train_run": 3.1e-02,        # per training run: data, model, checkpoints, evaluation
    "retrieval": 6.8e-03,    # a retrieval-task optimiser step of 2048 queries
    "retrieval_run": 1.8e-01,    # per retrieval run: testing on fresh sequences, ranks
    "minilm": 1.4e-07,       # a MiniLM window with every head's ranks (144 SVDs of n x n): per window x n^3
    "truncation": 9.3e-04,   # one MiniLM token forward in the truncation probe: per token
    "bootstrap": 2.6e-06,
    "worker_start": 2.5e+00,  # a sweep worker process: start and import lowrank (paid once, in parallel)    # a bootstrap replicate of a saturation curve: per replicate x cell
}

# Assumed speed-up of one GPU over one CPU core, per unit kind, until tools/gpu_check.sh has
# measured it. Small float64 problems gain little; float32 Monte Carlo and bf16 training a lot.
GPU_SPEEDUP: dict[str, float] = {
    "svd": 5.0, "hardmax": 50.0, "nested": 50.0, "causal_iter": 1.0, "lbfgs": 3.0, "heads_fit": 3.0, "layer_fit": 3.0,
    "train": 600.0, "train_attn": 600.0, "train_run": 2.0, "retrieval": 5.0, "retrieval_run": 2.0, "minilm": 20.0,
    "truncation": 20.0, "bootstrap": 1.0, "worker_start": 1.0,
}


@dataclass(frozen=True)
class Cost:
    """Estimated device time of a run: ``device_s`` summed over its work, ``wall_s`` with its
    workers, on ``device`` (``"cpu"``: seconds of one core; ``"cuda"``: of one GPU)."""

    device: str
    device_s: float
    wall_s: float
    workers: int
    bytes: float
    what: str
    units: dict[str, float] = field(default_factory=dict)
    assumed: bool = False  # GPU rates assumed from CPU_RATES / GPU_SPEEDUP, not measured

    def wall_text(self) -> str:
        kind = "one GPU" if self.device == "cuda" else "one CPU core"
        extra = f", {self.workers} workers" if self.workers > 1 else ""
        extra += ", assumed GPU speed-ups" if self.assumed else ""
        return f"{kind}{extra}"

    def hours_text(self) -> str:
        kind = "GPU" if self.device == "cuda" else "CPU"
        return f"{self.device_s / 3600:,.2f} {kind} hours"


def _mib(x: float) -> float:
    return x * 2**20


# --- units per chapter ---------------------------------------------------------------------------

def _units_01(p) -> tuple[dict[str, float], str]:
    n, T, k = p["n"], p["n_trials"], len(p["scales"])
    draws = len(p["head_dims"]) * T * (1 + k)
    return {"svd": draws * n ** 3}, f"{draws:,} float64 {n} x {n} matrices, every rank measure"


def _rank_grid_size(n: int, near: int, coarse: int) -> int:
    from .representation import rank_grid
    return len(rank_grid(n, near=near, coarse=coarse))


# chapter 02 calls run_many_inputs with this iteration cap (it has no parameter for it)
MANY_MAX_ITER = 1500


def _units_02(p) -> tuple[dict[str, float], str]:
    lb = heads = causal = 0.0
    fits = 0

    def batch(b: int, cap: int, n: int, r: int) -> None:
        nonlocal lb, fits
        lb += b * cap * n * n * (r + 2)
        fits += b

    for n in p["threshold_ns"]:
        b = len(p["concentrations"]) * p["n_targets"] * _rank_grid_size(n, p["near"], p["coarse"]) * p["restarts"]
        batch(b, p["max_iter"], n, n)
    for n in p["sparse_ns"]:
        ranks = [r for r in p["sparse_ranks"] if r < n - 1]
        if ranks:
            batch(len(p["sparse_kinds"]) * p["sparse_n_targets"] * len(ranks) * p["restarts"], p["sparse_max_iter"],
                  n, max(ranks))
    n = p["bottleneck_n"]
    ranks = [r for r in p["bottleneck_ranks"] if r < n - 1]
    if ranks:
        batch(p["n_targets"] * len(ranks) * p["restarts"], p["max_iter"], n, max(ranks))
    for n in p["causal_ns"]:
        w = p["causal_width"]
        ranks = {1} | {r for r in range(n // 2 - w, n // 2 + w + 1) if 1 <= r <= n - 1}
        causal += p["causal_max_iter"]
        fits += p["causal_n_targets"] * len(ranks) * p["causal_restarts"]
    for n in p["dn_ns"]:
        heads += p["dn_n_targets"] * p["restarts"] * p["max_iter"] * n * (n + p["dn_d"]) * min(p["dn_d"], n)
        fits += p["dn_n_targets"] * p["restarts"]
    n, d = p["many_n"], p["many_d"]
    for r in p["many_ranks"]:
        for m in p["many_ms"]:
            heads += m * p["many_restarts"] * MANY_MAX_ITER * n * (n + d) * r
            fits += p["many_restarts"]
    return {"lbfgs": lb, "heads_fit": heads, "causal_iter": causal}, f"{fits:,} L-BFGS fits (each restart counted)"


def _units_03(p) -> tuple[dict[str, float], str]:
    d, n = p["d_model"], p["n"]
    heads = 0.0
    for h in p["heads"]:
        for hd in (d // h, n):
            heads += h * p["restarts"] * p["max_iter"] * n * (n + d) * hd
    t2d, t2n, S = p["t2_d"], p["t2_n"], p["t2_samples"]
    per = S * t2n * t2d * (t2d + t2n)
    layer = per * (p["t2_std_restarts"] * p["t2_std_max_iter"] + p["t2_fixed_restarts"] * p["t2_fixed_max_iter"])
    if t2d % p["t2_head_dim"] == 0:
        layer += per * p["t2_fixed_restarts"] * p["t2_fixed_max_iter"]
    fits = len(p["heads"]) * 2
    return ({"heads_fit": heads, "layer_fit": layer},
            f"{fits} head-count fits and the Theorem 2 layer fits")


def _lm_params(cfg: Mapping[str, Any]) -> float:
    d, h, L = cfg["d_model"], cfg["n_heads"], cfg["n_layers"]
    dh = cfg["head_dim"] or d // h
    d_ff = cfg["d_ff"] or 4 * d
    return cfg["vocab_size"] * d * (1 if cfg.get("tie_embeddings") else 2) + L * (4 * d * h * dh + 2 * d * d_ff)


def training_runs_04(p) -> list[dict]:
    """Every distinct training config of chapter 04 at P (run keys, as the sweep dedups them):
    the learning-rate sweep and the main grids at the rate P names."""
    from ..train import run_key
    from .headsize import lr_sweep_grid, training_grids

    configs = [c for _, c in lr_sweep_grid(p)]
    configs += [c for grid in training_grids(p).values() for _, c in grid]
    return list({run_key(c): c for c in configs}.values())


def lm_units(c: Mapping[str, Any]) -> dict[str, float]:
    """Units of one language-model training run (a :class:`lowrank.train.TrainConfig` dict):
    ``train`` 6 x parameters x tokens (training, and evaluation at a third of a step per token),
    ``train_attn`` heads x n x tokens x layers (the per-head score and softmax work, which dominates
    small heads), ``train_run`` 1 (data, model, checkpoints)."""
    tokens = c["steps"] * c["batch_size"] * c["seq_len"]
    evals = (c["steps"] // max(1, c["eval_interval"])) * c["eval_tokens"] / 3 + (c.get("test_tokens") or 0) / 3
    return {"train": 6.0 * _lm_params(c) * (tokens + evals),
            "train_attn": float(c["n_heads"]) * c["seq_len"] * (tokens + evals) * c["n_layers"],
            "train_run": 1.0}


def _units_04(p) -> tuple[dict[str, float], str]:
    runs = training_runs_04(p)
    out: dict[str, float] = {}
    for c in runs:
        for k, v in lm_units(c).items():
            out[k] = out.get(k, 0.0) + v
    return out, f"{len(runs)} training runs"


def _units_05(p) -> tuple[dict[str, float], str]:
    hard = sum(p["n_trials"] * n * n * (dh + 8) for n in p["ns"] for dh in p["head_dims"]) * 2  # plain + causal
    ns, T, dhs = p["n_setting"], p["setting_trials"], p["setting_head_dims"]
    soft_tables = len(p["scales"]) + 1  # temperature sweep, causal softmax
    svd = soft_tables * len(dhs) * T * ns ** 3
    hard += (1 + len(p["inputs"])) * len(dhs) * T * ns * ns * (max(dhs) / 2 + 8)
    hard += len(p["key_head_dims"]) * p["key_sets"] * p["query_sets"] * p["key_set_n"] ** 2 * 8
    hard += sum(p["key_head_dims"]) * p["key_sets"] * p["query_sets"] * p["key_set_n"] ** 2
    heads = len(p["heads"]) * T * (2 + 2 * max(p["heads"]))  # head average and stacked SVDs per draw
    svd += heads * ns ** 3
    draws = 2 * p["n_trials"] * len(p["ns"]) * len(p["head_dims"])
    return {"hardmax": hard, "svd": svd}, f"{draws:,} hardmax draws and the settings sweeps"


def _units_06(p) -> tuple[dict[str, float], str]:
    from .saturation import head_dim_grid, trials_per_n

    grid = head_dim_grid(p["max_head_dim"], p["points_per_octave"])
    trials = trials_per_n(p)
    nested = sum(t * n * n * (max(grid) + 4 * len(grid)) for n, t in zip(p["ns"], trials))
    sgrid = head_dim_grid(p["softmax_max_head_dim"], p["softmax_points_per_octave"])
    svd = sum(p["softmax_trials"] * len(sgrid) * n ** 3 for n in p["softmax_ns"])
    cells = len(p["ns"]) * len(grid) + len(p["softmax_ns"]) * len(sgrid) * len(p["softmax_rtols"])
    boot = p["n_boot"] * cells * 2
    draws = sum(trials)
    return ({"nested": nested, "svd": svd, "bootstrap": boot},
            f"{draws:,} nested hardmax draws (no SVD) over {len(grid)} head sizes, softmax SVDs on {len(sgrid)}")


def _retrieval_configs_07(p) -> list[dict]:
    from .trained import grid_configs

    if not p["retrieval_run"]:
        return []
    return grid_configs(ns=p["retrieval_ns"], pair_ns=p["retrieval_pair_ns"], head_dims=p["retrieval_head_dims"],
                        n_seeds=p["retrieval_seeds"], pair_seeds=p["retrieval_pair_seeds"], seed=p["seed"],
                        max_steps=p["retrieval_max_steps"], min_steps=p["retrieval_min_steps"],
                        d_model=p["retrieval_d_model"], n_values=p["retrieval_values"], lr=p["retrieval_lr"],
                        tokens_per_step=p["retrieval_tokens"], test_sequences=p["retrieval_test_sequences"],
                        rank_sequences=p["retrieval_rank_sequences"], rank_rtol=p["retrieval_rtol"])


def _truncation_configs_07(p) -> list[dict]:
    from .trained import truncation_configs

    if not p["truncation_run"]:
        return []
    return truncation_configs(ns=p["truncation_ns"], ranks=p["truncation_ranks"], per_class=p["truncation_per_class"],
                              folds=p["truncation_folds"], seed=p["seed"], l2=p["truncation_l2"],
                              layer_n=p["truncation_layer_n"], layer_ranks=p["truncation_layer_ranks"])


# A retrieval run stops at its loss plateau, checked from min_steps on; the estimate charges
# min_steps plus this share of the rest, then the cool-down the config adds after the stop. A step
# costs more beyond n = 128 (every query attends over n keys), in proportion to n.
PLATEAU_SHARE = 1 / 3


def _units_07(p) -> tuple[dict[str, float], str]:
    # every window: one forward pass and the SVDs of all 72 heads' logits and probabilities
    windows = len(p["minilm_corpora"]) * sum(k * n ** 3 for n, k in zip(p["minilm_seq_lens"], p["minilm_counts"]))
    out = {"minilm": windows}
    what = ["MiniLM ranks"]
    configs = _retrieval_configs_07(p)
    if configs:
        steps = lambda c: (c["min_steps"] + PLATEAU_SHARE * (c["max_steps"] - c["min_steps"])) * (1 + c["cooldown"])
        out["retrieval"] = sum(steps(c) * c["tokens_per_step"] / 2048 * (c["d_model"] / 64) * max(1.0, c["n"] / 128)
                               for c in configs)
        out["retrieval_run"] = sum(c["test_sequences"] * c["n"] / 160_000 for c in configs)
        what.append(f"{len(configs)} retrieval trainings")
    truncated = _truncation_configs_07(p)
    if truncated:
        docs = 5 * p["truncation_per_class"]
        # every n: the full model and one model per rank; at layer_n also one per (layer, rank)
        out["truncation"] = sum(docs * c["n"] * (1 + len(c["ranks"]) + 6 * len(c["layer_ranks"])) for c in truncated)
        what.append(f"MiniLM truncated at {len(p['truncation_ranks'])} ranks")
    return out, ", ".join(what)


def _units_08(p) -> tuple[dict[str, float], str]:
    return {}, "reads the executed chapters"


UNITS: dict[str, Callable[[Mapping[str, Any]], tuple[dict[str, float], str]]] = {
    "01_attention_and_rank": _units_01,
    "02_representation_theorem": _units_02,
    "03_multihead_bottleneck": _units_03,
    "04_head_size_training": _units_04,
    "05_rank_barrier": _units_05,
    "06_rank_saturation": _units_06,
    "07_trained_attention": _units_07,
    "08_synthesis": _units_08,
}


def units(chapter: str, p: Mapping[str, Any]) -> tuple[dict[str, float], str]:
    """(unit kind -> count, what the run does in a few words) for a full, checked parameter set."""
    return UNITS[chapter](p)


def run_keys(chapter: str, p: Mapping[str, Any]) -> set[str] | None:
    """The run keys of every stored run a chapter's sweep makes at ``p`` (None for a chapter whose
    runs go to no store), so a store can be told complete or partial."""
    from ..train import run_key

    if chapter == "04_head_size_training":
        return {run_key(c) for c in training_runs_04(p)}
    if chapter == "07_trained_attention":
        return {run_key(c) for c in _retrieval_configs_07(p) + _truncation_configs_07(p)}
    return None


def chapter_device(p: Mapping[str, Any], cuda_available: bool = False) -> str:
    """``"cuda"`` when the run's ``device`` parameter puts it on a GPU, else ``"cpu"``."""
    dev = p.get("device", "cpu")
    return "cuda" if dev == "cuda" or (dev == "auto" and cuda_available) else "cpu"


def rates(device: str, measured: Mapping[str, float] | None = None) -> dict[str, float]:
    """Seconds per unit on ``device``: CPU_RATES, or for ``"cuda"`` the rates ``measured`` on a GPU
    (tools/gpu_check.sh) where given and CPU_RATES / GPU_SPEEDUP elsewhere."""
    if device != "cuda":
        return dict(CPU_RATES)
    out = {k: v / GPU_SPEEDUP.get(k, 1.0) for k, v in CPU_RATES.items()}
    out.update({k: float(v) for k, v in (measured or {}).items() if k in out})
    return out


def _memory(chapter: str, p: Mapping[str, Any]) -> float:
    base = _mib(400)
    if chapter == "01_attention_and_rank":
        return base + 8.0 * p["n_trials"] * (3 + len(p["scales"])) * p["n"] ** 2
    if chapter in ("05_rank_barrier", "06_rank_saturation"):
        return base + 8.0 * 2 ** 25
    if chapter == "07_trained_attention":
        return base + 4.0 * p["minilm_batch"] * 12 * max(p["minilm_seq_lens"]) ** 2 * 4
    if chapter == "04_head_size_training":
        d, L, n, B = p["d_model"], p["n_layers"], p["seq_len"], p["batch_size"]
        h = max(p["heads"])
        acts = B * L * (n * 14 * max([d, *p["baseline_widths"]]) + 3 * h * n * n) * 4.0
        return base + max(1, p["workers"]) * (acts + 16.0 * p["vocab_size"] * d * 2)
    return base


def estimate(chapter: str, p: Mapping[str, Any], *, device: str | None = None,
             measured: Mapping[str, float] | None = None) -> Cost:
    """The estimated cost of chapter ``chapter`` at full, checked parameters ``p``.

    ``device`` defaults to the one ``p`` asks for (``chapter_device``); ``measured`` overrides
    GPU rates with measured ones. Raises KeyError for a chapter without a cost model.
    """
    device = device or chapter_device(p)
    u, what = units(chapter, p)
    r = rates(device, measured)
    work = sum(count * r[kind] for kind, count in u.items())
    workers = int(p.get("workers") or 1) if chapter == "04_head_size_training" else 1
    runs = u.get("train_run", 1.0)
    parallel = max(1, min(workers, int(runs)))
    start = r["worker_start"] if parallel > 1 else 0.0
    device_s = OVERHEAD_S + work + start * parallel
    wall_s = OVERHEAD_S + work / parallel + start
    assumed = device == "cuda" and any(kind not in (measured or {}) for kind in u)
    return Cost(device=device, device_s=device_s, wall_s=wall_s, workers=parallel,
                bytes=_memory(chapter, p), what=what, units=u, assumed=assumed)
