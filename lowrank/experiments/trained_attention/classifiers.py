"""Chapter 07's trained classifiers: a vision transformer on packaged digit images and a topic
classifier on BBC News, each trained to a validation plateau at every head size of a grid, read
from the committed long-scale store (or trained into the user's own), and the evidence the rules
of :mod:`.classifier_rules` read: saturation points of accuracy and of attention rank as grid
intervals, per block for the layer claim."""
from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...core.files import in_book
from ...measure.stats import MIN_BOOTSTRAP
from ...stores.sweep import ResultStore, sweep
from ...tasks.textclass import TextConfig, text_run
from ...train import run_key
from ...tasks.vision import ViTConfig, vit_run
from ..shared.intervals import t_quantile
from .classifier_rules import PLATEAU_MARGIN, layers_record, saturation_record
from ..shared.equivalence import equivalent_from
from .reduction import LONG_STORE
from .rules import LEVEL

__all__ = ["CLASSIFIER_EXPERIMENT", "LONG_CLASSIFIER_STORE", "PATCH", "classifier_configs",
           "classifier_run", "run_classifiers", "classifier_table", "saturation", "layer_intervals",
           "classifier_headline"]

CLASSIFIER_EXPERIMENT = "ch07_classifiers"
# The classifiers share the retrieval study's committed store (experiment ch07_classifiers).
LONG_CLASSIFIER_STORE = LONG_STORE
# Everything of a run's config but its data set, head size, seed and depth: the recipes the pilots
# settled on (lowrank.tasks.vision and lowrank.tasks.textclass document each field).
# Patches of 4 x 4 pixels on 28 x 28 digits give 49 patches and a class token, n = 50, near the 65
# tokens of a CIFAR ViT with 4 x 4 patches; 8 x 8 digits take 2 x 2 patches (n = 17).
PATCH = {"mnist5k": 4, "digits": 2}


def classifier_configs(*, image_set: str, head_dims: Sequence[int], seeds: int, vit_layers: int, text_layers: int,
                       seed: int = 0) -> list[dict]:
    """One config per (kind, d_h, seed): {"kind": "vit" | "text", **the model's config}, seed-major so
    that a partial store holds complete grids of its first seeds. Everything else is the recipe of
    lowrank.tasks.vision and lowrank.tasks.textclass, which their pilots settled on."""
    out = []
    for s in range(seed, seed + seeds):
        for d in head_dims:
            vit = ViTConfig.from_dict({"dataset": image_set, "patch": PATCH.get(image_set, 4), "head_dim": int(d),
                                       "seed": s, "n_layers": int(vit_layers)})
            text = TextConfig.from_dict({"head_dim": int(d), "seed": s, "n_layers": int(text_layers)})
            out += [{"kind": "vit", **vit.to_dict()}, {"kind": "text", **text.to_dict()}]
    return out


def classifier_run(config: dict, *, run_dir: Path | None = None) -> dict:
    """One run for :func:`lowrank.stores.sweep.sweep`, dispatched on its kind."""
    body = {k: v for k, v in config.items() if k != "kind"}
    return (vit_run if config["kind"] == "vit" else text_run)(body, run_dir=run_dir)


def classifier_table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per stored run: kind, data set, head size, seed, layers, plateau, test accuracy, first-block
    hardmax rank / n, the per-block hardmax rank / n (a list), wall time and provenance."""
    rows = []
    for r in records:
        c, m = r["config"], r["metrics"]
        n = float(m["rank_mean_tokens"])
        rows.append({"kind": c["kind"], "data": c.get("dataset", c.get("corpus")), "head_dim": int(c["head_dim"]),
                     "seed": int(c["seed"]), "layers": int(c["n_layers"]), "plateau": bool(m["plateau"]),
                     "test_acc": float(m["test_acc"]), "test_acc_se": float(m["test_acc_se"]),
                     "rank_frac": float(m["hardmax_rank"]) / n, "tokens": n,
                     "layer_frac": [float(v) / n for v in m.get("layer_hardmax_rank", [m["hardmax_rank"]])],
                     "logit_rank_max": int(m["logit_rank_max"]), "wall_s": float(r.get("wall_s", float("nan"))),
                     **{f"prov_{k}": v for k, v in (r.get("provenance") or {}).items()}})
    return pd.DataFrame(rows)


def run_classifiers(configs: Sequence[dict], *, run: bool, store: str | Path | None = None,
                    read_store: str | Path | None = None, show_progress: bool = False) -> dict[str, Any]:
    """Train the grid into ``store`` (``run=True``; a temporary file when None) or read it from
    ``read_store`` (the committed store, never written). A missing store is an error; a partial
    one gives the runs it holds."""
    want = {run_key(dict(c)) for c in configs}
    if run:
        with tempfile.TemporaryDirectory(prefix="lowrank-ch07-cls-") as tmp:
            where = Path(store) if store is not None else Path(tmp) / f"{CLASSIFIER_EXPERIMENT}.jsonl"
            sweep(list(configs), experiment=CLASSIFIER_EXPERIMENT, store=where, runs_dir=Path(tmp) / "runs",
                  run_fn=classifier_run, progress=show_progress)
            recs = [r for r in ResultStore(where).records() if r["key"] in want]
        source = "run"
    else:
        path = in_book(read_store)
        if not path.is_file():
            raise FileNotFoundError(f"no classifier store at {path}: run `lowrank run 07 --scale long` or check out "
                                    f"the committed {LONG_CLASSIFIER_STORE}")
        recs = [r for r in ResultStore(path).records() if r["key"] in want]
        source = "store"
    latest = {r["key"]: r for r in recs}
    return {"classifiers": classifier_table(list(latest.values())), "classifier_grid": pd.DataFrame(configs),
            "classifier_source": source}


def _interval(d: np.ndarray, V: np.ndarray, rng: np.random.Generator, n_boot: int) -> tuple[float, float, float]:
    """(estimate, lo, hi] of the saturation point on values V (d_h, seeds): :func:`equivalent_from`
    on the seeds and on seed resamples; lo is the grid value below the resamples' 2.5 % point."""
    k = V.shape[1]
    est, _ = equivalent_from(d, V, PLATEAU_MARGIN, LEVEL)
    reps = np.array([equivalent_from(d, V[:, i], PLATEAU_MARGIN, LEVEL)[0] for i in rng.integers(0, k, (n_boot, k))])
    tail = (1 - LEVEL) / 2
    lo = float(np.quantile(reps, tail, method="lower"))
    hi = float(np.quantile(reps, 1 - tail, method="higher"))
    below = [x for x in d if x < lo]
    return est, float(below[-1]) if below else 0.0, (math.inf if hi >= d[-1] else hi)


def _complete(runs: pd.DataFrame, grid: pd.DataFrame, kind: str) -> tuple[pd.DataFrame, list[int], list[int]]:
    """Plateau runs of ``kind`` whose seed has every head size of the grid at its plateau."""
    g = grid[grid.kind == kind]
    dims = sorted(int(v) for v in g.head_dim.unique())
    sub = runs[(runs.kind == kind) & runs.plateau] if len(runs) else runs
    seeds = [s for s in sorted(g.seed.unique()) if len(sub) and set(sub[sub.seed == s].head_dim) >= set(dims)]
    return sub[sub.seed.isin(seeds) & sub.head_dim.isin(dims)] if len(sub) else sub, dims, seeds


def saturation(runs: pd.DataFrame, grid: pd.DataFrame, kind: str, *, seed: int = 0,
               n_boot: int = MIN_BOOTSTRAP) -> dict[str, float] | None:
    """d*_acc and d*_rank (first block) of ``kind`` as grid intervals, the seed-mean accuracy at the
    largest d_h and the one-sided lower bound of (best accuracy - accuracy at d*_rank), paired by
    seed; None unless every seed of the grid has every head size at its plateau."""
    sub, dims, seeds = _complete(runs, grid, kind)
    if len(seeds) < grid[grid.kind == kind].seed.nunique() or len(seeds) < 2:
        return None
    d = np.array(dims, float)
    A = sub.pivot_table(index="head_dim", columns="seed", values="test_acc").loc[dims, seeds].to_numpy(float)
    R = sub.pivot_table(index="head_dim", columns="seed", values="rank_frac").loc[dims, seeds].to_numpy(float)
    rng = np.random.default_rng(seed)
    _, a_lo, a_hi = _interval(d, A, rng, n_boot)
    d_rank, r_lo, r_hi = _interval(d, R, rng, n_boot)
    best = int(np.argmax(A.mean(1)))
    diff = A[best] - A[dims.index(int(d_rank))]
    k = len(seeds)
    gap = float(diff.mean() - t_quantile(LEVEL, k - 1) * diff.std(ddof=1) / math.sqrt(k))
    rise = R[-1] - R[-2]
    half = t_quantile(0.5 + LEVEL / 2, k - 1) * rise.std(ddof=1) / math.sqrt(k)
    return {"seeds": k, "acc_top": float(A[-1].mean()), "a_lo": a_lo, "a_hi": a_hi, "r_lo": r_lo, "r_hi": r_hi,
            "gap": gap, "inc": float(rise.mean()), "inc_lo": float(rise.mean() - half),
            "inc_hi": float(rise.mean() + half)}


def layer_intervals(runs: pd.DataFrame, grid: pd.DataFrame, kind: str, *, seed: int = 0,
                    n_boot: int = MIN_BOOTSTRAP) -> tuple[int, list[tuple[float, float]]] | None:
    """(seeds, [d*_rank grid interval of each block]) of ``kind``'s multi-block models; None unless
    complete (as :func:`saturation`) and deeper than one block."""
    sub, dims, seeds = _complete(runs, grid, kind)
    if len(seeds) < grid[grid.kind == kind].seed.nunique() or len(seeds) < 2 or sub["layers"].max() < 2:
        return None
    d = np.array(dims, float)
    rng = np.random.default_rng(seed)
    out = []
    for layer in range(int(sub["layers"].max())):
        V = np.array([[sub[(sub.head_dim == dh) & (sub.seed == s)]["layer_frac"].iloc[0][layer] for s in seeds]
                      for dh in dims])
        _, lo, hi = _interval(d, V, rng, n_boot)
        out.append((lo, hi))
    return len(seeds), out


def classifier_headline(t: Mapping[str, Any]) -> dict[str, Any]:
    """Every number of the classifier study chapter 07 glues, including its rules' evidence."""
    runs, grid = t["classifiers"], t["classifier_grid"]
    out: dict[str, Any] = {"ch07_cls_scale": "long" if t.get("classifier_source") == "store" else "notebook"}
    layers = []
    for key, kind in (("vit", "vit"), ("text", "text")):
        g = grid[grid.kind == kind]
        data = str((g.get("dataset") if kind == "vit" else g.get("corpus")).iloc[0]) if len(g) else "none"
        sub = runs[runs.kind == kind] if len(runs) else runs
        plateau = int(sub.plateau.sum()) if len(sub) else 0
        out[f"ch07_cls_{key}_data"] = data
        out[f"ch07_cls_{key}_stored"] = (f"{len(sub)} of the {len(g)} runs of the grid stored, {plateau} at their "
                                         f"plateau ({g.seed.nunique() if len(g) else 0} seeds, head sizes "
                                         f"{', '.join(str(int(v)) for v in sorted(g.head_dim.unique()))})")
        p = saturation(runs, grid, kind) if len(g) else None
        out[f"ch07_cls_{key}"] = saturation_record(p) if p else None
        li = layer_intervals(runs, grid, kind) if len(g) else None
        if li:
            sub_done, dims, done = _complete(runs, grid, kind)
            top = sub_done[sub_done.head_dim == max(dims)]["test_acc"].mean()
            layers.append(layers_record(data, *li, acc_top=float(top)))
    out["ch07_cls_layers"] = layers
    out["ch07_cls_layers_what"] = ("saturation point d*_rank of each block's hardmax rank / n, grid intervals over "
                                   "seeds, per data set")
    return out
