"""What the parameter-matched pair costs per training step, read from the committed benchmark run.

Equal parameters are not equal compute: the fixed-head model spends its parameters on 32 heads,
whose score and softmax work grows with the number of heads. Benchmark item 7 times the engine
training each of the two models (the same steps, batch and thread count, one after the other in one
run), so the page can say how much more one training step of one model costs than of the other,
from the same source as the README's performance table. The loss verdicts never read it.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...core.files import in_book
from .design import BASE, ROWS, model

__all__ = ["BENCHMARKS", "StepCost", "read_step_cost", "step_cost_text"]

BENCHMARKS = "benchmarks/results/latest.json"


@dataclass(frozen=True)
class StepCost:
    """The median time of the benchmark's timed engine run for each model of a row (a and b as the
    row names them), and the run's shape and machine."""
    row: str
    model_a: str
    model_b: str
    seconds_a: float
    seconds_b: float
    steps: int
    batch: int
    n: int
    threads: int
    machine: str

    @property
    def ratio(self) -> float:
        """Time per step of model b over model a."""
        return self.seconds_b / self.seconds_a


def _shape_of(name: str) -> dict[str, int]:
    _, family, heads, size, width = model(name)
    out = {"d_model": width, "heads": heads}
    out["fixed_head_dim" if family == "fixed" else "head_dim"] = size if family == "fixed" else width // heads
    return out


def _timed(results: list[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    """The engine-training benchmark result for model ``name`` at the budget store's shape, or None."""
    want = {**_shape_of(name), "layers": BASE["n_layers"], "n": BASE["seq_len"], "batch": BASE["batch_size"],
            "vocab": BASE["vocab_size"]}
    for r in results:
        cfg = r.get("config", {})
        timed = str(r.get("key", "")).startswith("engine_") and "steps" in cfg
        same_layout = ("fixed_head_dim" in cfg) == ("fixed_head_dim" in want)
        if timed and same_layout and all(cfg.get(k) == v for k, v in want.items()):
            return r
    return None


def read_step_cost(row: str = "match", path: str = BENCHMARKS) -> StepCost | None:
    """The per-step cost of the two models of budget row ``row`` from the benchmark results at
    ``path``; None when the file is missing or holds no timed run of one of the two models."""
    p = in_book(path)
    if not p.exists():
        return None
    data = json.loads(p.read_text(encoding="utf8"))
    _, a, b = next(r for r in ROWS if r[0] == row)
    ra, rb = _timed(data.get("results", []), a), _timed(data.get("results", []), b)
    if ra is None or rb is None or ra["config"]["steps"] != rb["config"]["steps"]:
        return None
    env = data.get("environment", {})
    return StepCost(row=row, model_a=a, model_b=b, seconds_a=float(ra["timings"]["ours"]["median_s"]),
                    seconds_b=float(rb["timings"]["ours"]["median_s"]), steps=int(ra["config"]["steps"]),
                    batch=int(ra["config"]["batch"]), n=int(ra["config"]["n"]),
                    threads=int(ra["config"].get("threads", 1)),
                    machine=str(env.get("cpu") or env.get("machine") or "a CPU"))


def step_cost_text(c: StepCost | None) -> str:
    """What the pair's training steps cost, as a clause that follows a colon; or what is missing."""
    if c is None:
        return ("the benchmark results hold no timed training run of both models of the parameter-matched pair, "
                "so the book states no ratio.")
    cores = "one thread" if c.threads == 1 else f"{c.threads} threads"
    return (f"training the {c.model_b} model for {c.steps} steps took {c.seconds_b:.1f} s against {c.seconds_a:.1f} s "
            f"for {c.model_a} (batch {c.batch} x {c.n} tokens, {cores} on {c.machine}, the median of the "
            f"benchmark's repetitions in one run, benchmark item 7), so a step of {c.model_b} costs {c.ratio:.2f} "
            f"times one of {c.model_a}.")
