"""What a chapter's run costs, from the grid the chapter itself builds.

Every estimate is ``overhead + sum(units[k] * rate[k])``: ``units`` counts the operations the
chapter actually runs at parameters P (the draws, fits and training steps of its own grid
builders: :func:`lowrank.experiments.head_size_training.training_grids`,
:func:`lowrank.experiments.trained_attention.retrieval_configs`,
:func:`lowrank.experiments.rank_saturation.head_dim_grid`, ...), and ``rate`` is the measured
cost of one unit of that operation on one device. ``tools/measure_costs.py`` measures the CPU
rates by running the same code at a small size and prints them; the numbers below are its
output on the build machine (one core of an AMD EPYC, torch 2.13 CPU, 2026-12-03), except
``heads_fit`` and ``layer_fit``, measured net of ``fit_iter`` on one core of an Intel Xeon
(2026-12-04) as CPU time, since that machine was shared with training runs. A batched L-BFGS
fit costs its iterations times (``fit_iter`` + the work of its batch): at the book's small
sizes the loop's own cost dominates, at paper scale the work does. GPU rates
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
from typing import Any

from . import registry

__all__ = ["Cost", "CPU_RATES", "GPU_SPEEDUP", "OVERHEAD_S", "units", "rates", "estimate",
           "chapter_device", "run_keys", "training_runs_04", "lm_units"]

# Seconds of one notebook that computes almost nothing: kernel start, imports, figures, glue
# (chapter 08's committed execution record, 9.1 s on the build machine).
OVERHEAD_S = 9.0

# Seconds per unit on one CPU core (tools/measure_costs.py; each chapter module's estimate counts its units).
CPU_RATES: dict[str, float] = {
    "svd": 1.3e-09,          # a float64 n x n attention matrix with every rank measure: per n^3
    "hardmax": 1.4e-10,      # one hardmax draw: per n^2 (d_h + 8) (logits, argmax, distinct columns)
    # one nested hardmax draw: per n^2 (max d_h + 4 grid points); chapter 06's default executions
    # (25 s on idle cores, 30 s beside two training jobs) put it between 1.2e-10 and 1.5e-10
    "nested": 1.5e-10,
    # a long-grid nested draw (d_h to 8 n): per n^2 (max d_h + 300 grid points); set between its pilot's
    # 1.4e-11 of CPU time and 3.9e-11 of wall time on cores shared with two training jobs
    "nested_long": 2.3e-11,
    "fit_iter": 1.3e-03,     # one iteration of a batched L-BFGS fit: the loop's own cost (autograd, line search)
    "lbfgs": 4.5e-09,        # an L-BFGS fit: per problem x restart x iteration cap x n^2 (r + 2)
    "heads_fit": 8.3e-09,    # a head fit on inputs X, beyond fit_iter: per head x restart x iteration x n (n + d) d_h
    "layer_fit": 2.3e-08,    # a whole-layer fit, beyond fit_iter: per restart x iteration x samples x n d (d + n)
    # Language-model training: the median of three solves of tools/measure_costs.py on the 2-core AMD
    # EPYC build machine. One solve splits the time between flops and per-head work unevenly (the
    # three differed by up to 1.5x per rate, much less in their sum), so one solve is not enough.
    "train": 3.0e-11,        # per flop of 6 x parameters x tokens
    "train_attn": 1.0e-08,   # per head x n x token x layer
    "train_run": 1.6e-01,    # per training run: data, model, checkpoints, evaluation
    "retrieval": 6.8e-03,    # a retrieval-task optimiser step of 2048 queries
    "retrieval_run": 1.8e-01,    # per retrieval run: testing on fresh sequences, ranks
    "minilm": 1.4e-07,       # a MiniLM window with every head's ranks (144 SVDs of n x n): per window x n^3
    "truncation": 9.3e-04,   # one MiniLM token forward in the truncation probe: per token
    # chapter 07's two more pretrained models. Ranks from MiniLM's rates above: per head x n^3 of a
    # window ("minilm" over MiniLM's 72 heads) and per token x 1e8 parameters of a forward pass
    # ("truncation" over MiniLM's 22.7 M parameters). Cuts from a pilot at n = 72 on a core shared with
    # two training jobs, per token x 1e8 parameters of every forward under a cut: MPNet's (the weights
    # copied and cut per rank, 27 s for 2,160 tokens) and SmolLM2's (logits cut while it runs, QR and
    # SVD per head and layer, 15 s for 432 tokens). SmolLM2's GGUF file dequantised: 15-28 s.
    "pretrained_svd": 1.9e-09,
    "pretrained_token": 4.1e-03,
    "encoder_cut_token": 1.16e-02,
    "decoder_cut_token": 2.5e-02,
    "gguf_load": 2.5e+01,
    # a classifier trained to its plateau: per second its pilot took on one core (chapter 07 counts them)
    "classifier": 1.0,
    # a training step of chapter 07's small MLA language model (batch 16 of n = 32, width 32), its share
    # of the run's evaluation and head ranks included; pilot on a core shared with two training jobs
    "mla_step": 1.2e-02,
    "bootstrap": 2.6e-06,
    "worker_start": 2.5e+00,  # a sweep worker process: start and import lowrank (paid once, in parallel)    # a bootstrap replicate of a saturation curve: per replicate x cell
}

# Assumed speed-up of one GPU over one CPU core, per unit kind, until tools/gpu_check.sh has
# measured it. Small float64 problems gain little; float32 Monte Carlo and bf16 training a lot.
GPU_SPEEDUP: dict[str, float] = {
    "svd": 5.0, "hardmax": 50.0, "nested": 50.0, "nested_long": 50.0, "fit_iter": 1.0, "lbfgs": 3.0,
    "heads_fit": 3.0, "layer_fit": 3.0,
    "train": 600.0, "train_attn": 600.0, "train_run": 2.0, "retrieval": 5.0, "retrieval_run": 2.0, "minilm": 20.0,
    "truncation": 20.0, "pretrained_svd": 5.0, "pretrained_token": 20.0, "encoder_cut_token": 20.0,
    "decoder_cut_token": 5.0, "gguf_load": 1.0, "classifier": 5.0, "mla_step": 2.0, "bootstrap": 1.0, "worker_start": 1.0,
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


def units(chapter: str, p: Mapping[str, Any]) -> tuple[dict[str, float], str]:
    """(unit kind -> count, what the run does in a few words) for a full, checked parameter set:
    the chapter module's ``estimate``."""
    if chapter not in registry.MODULES:
        raise KeyError(chapter)
    return registry.module(chapter).estimate(p)


def run_keys(chapter: str, p: Mapping[str, Any]) -> set[str] | None:
    """The run keys of every stored run a chapter's sweep makes at ``p`` (None for a chapter whose
    runs go to no store), so a store can be told complete or partial."""
    keys = getattr(registry.module(chapter), "run_keys", None)
    return None if keys is None else keys(p)


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
    """Peak bytes: a Python process with torch, plus the chapter's largest arrays (its ``memory``)."""
    extra = getattr(registry.module(chapter), "memory", None)
    return _mib(400) + (extra(p) if extra else 0.0)


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
    workers = int(p.get("workers") or 1)
    runs = u.get("train_run", 1.0)
    parallel = max(1, min(workers, int(runs)))
    start = r["worker_start"] if parallel > 1 else 0.0
    device_s = OVERHEAD_S + work + start * parallel
    wall_s = OVERHEAD_S + work / parallel + start
    assumed = device == "cuda" and any(kind not in (measured or {}) for kind in u)
    return Cost(device=device, device_s=device_s, wall_s=wall_s, workers=parallel,
                bytes=_memory(chapter, p), what=what, units=u, assumed=assumed)
