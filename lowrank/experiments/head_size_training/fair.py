"""Fair comparisons in chapter 04's budget store: each model at its own learning rate, every row
at two budgets.

The shared rate of :mod:`.budget` (0.01, chosen on the two h = 32 models alone) could favour some
models over others, and rows compared at one budget escaped the movement clause that rows at
several budgets face. This design, registered before any of its runs, replaces both:

1. :func:`lr_grid`: every model of :data:`LR_GRID_MODELS` at each rate of :data:`LR_GRID_RATES`,
   :data:`LR_GRID_STEPS` steps, the seeds of :data:`design.SEEDS` (the grid's 0.01 runs are the
   budget grid's own runs, shared by run key).
2. :func:`select_rates`: a model's rate is the grid rate with the lowest validation loss, averaged
   over those seeds (ties: the smaller rate; the test split is never read). A model whose best rate
   is an end of the grid gets one more rate, :data:`LR_EDGE_FACTOR` beyond that end
   (:func:`edge_grid`), and its rate is then the best of all its rates; one still at the new end is
   said to be at the edge of its grid.
3. :func:`judged_grid`: every row of :data:`design.ROWS` at both budgets of :data:`JUDGED_STEPS`,
   each of its two models at its own rate, with the seeds :func:`row_seeds` asks at both budgets
   (the power rule of :func:`rules.required_seeds`, read from the spread at each budget, the larger).

:func:`judged_comparisons` pairs the runs by seed at each budget, with the change of every seed's
difference from the first budget to the second, for the rule of :func:`rules.judge_row`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pandas as pd

from . import design as D
from .rules import POWER_SEEDS, required_seeds

__all__ = ["LR_GRID_RATES", "LR_GRID_STEPS", "LR_GRID_MODELS", "LR_EDGE_FACTOR", "JUDGED_STEPS", "JUDGE_ORDER",
           "RateChoice", "lr_grid", "edge_grid", "select_rates", "judged_grid", "row_seeds", "planning_sd",
           "judged_comparisons", "read_fair", "fair_grids", "design", "run"]

# Today's 0.01 and one rate on each side, a factor 2 apart: a 4x span around the shared rate.
LR_GRID_RATES = (0.005, 0.01, 0.02)
# The first of the two judged budgets: a rate is chosen where every row is first compared.
LR_GRID_STEPS = 4000
# A best rate at an end of the grid may lie beyond it: one more rate, the grid's own spacing further.
LR_EDGE_FACTOR = 2.0
# Every row is compared at both budgets and judged at the second, with the change between them.
JUDGED_STEPS = (4000, 8000)
# Every model a row of budget.ROWS compares, plus Table 2(B)'s d_p = 32, cheapest head-size models first
# so that the head-size rows can be decided first; Fig. 4's baselines last.
LR_GRID_MODELS = ("fixed h = 4, d_p = 32", "fixed h = 4, d_p = 64", "standard h = 4", "fixed h = 4, d_p = 128",
                  "standard d = 112", "standard h = 32", "fixed h = 32", *(m[0] for m in D.FIG4_MODELS))
# The order rows are trained in: the head-size rows first, then the h = 32 rows, Fig. 4 last.
JUDGE_ORDER = ("capacity", "pastn", "gap", "match", "stdheads", "fixedheads", "fewheads1", "fewheads2", "fewheads4")


@dataclass(frozen=True)
class RateChoice:
    """A model's learning rate under :func:`select_rates`: ``rate`` is None until every run it
    needs is stored (``stored`` of ``planned``); ``rates`` were tried; ``at_edge`` when the best is
    still an end of them; ``losses``: mean validation loss per rate tried (stored ones only)."""
    model: str
    rate: float | None
    rates: tuple[float, ...]
    stored: int
    planned: int
    at_edge: bool = False
    losses: tuple[tuple[float, float], ...] = ()


def _grid_at(model: str, rates, steps: int = LR_GRID_STEPS) -> list[tuple[dict, dict]]:
    return [(D.labels(model, steps=steps, lr=float(r)), D.config(model, steps=steps, seed=s, lr=float(r)))
            for r in rates for s in D.SEEDS]


def lr_grid() -> list[tuple[dict, dict]]:
    """(labels, config) of the learning-rate grid, model by model in :data:`LR_GRID_MODELS` order."""
    return [x for m in LR_GRID_MODELS for x in _grid_at(m, LR_GRID_RATES)]


def _edge_rate(best: float) -> float | None:
    if best == min(LR_GRID_RATES):
        return best / LR_EDGE_FACTOR
    if best == max(LR_GRID_RATES):
        return best * LR_EDGE_FACTOR
    return None


def _means(runs: pd.DataFrame, model: str, rates) -> dict[float, tuple[int, float]]:
    """{rate: (runs stored, mean validation loss)} of ``model`` at the grid's budget and seeds."""
    out = {}
    for r in rates:
        at = runs[(runs.model == model) & (runs.lr == r) & (runs.steps == LR_GRID_STEPS)
                  & runs.seed.isin(D.SEEDS)] if len(runs) else runs
        out[r] = (len(at), float(at.val_loss.mean()) if len(at) else float("nan"))
    return out


def _best(means: Mapping[float, tuple[int, float]]) -> float:
    return min(means, key=lambda r: (means[r][1], r))


def select_rates(runs: pd.DataFrame) -> dict[str, RateChoice]:
    """Every model's :class:`RateChoice` from the stored grid and edge runs ``runs`` (labels
    ``model``, ``lr``, ``steps``, ``seed``, ``val_loss``)."""
    out = {}
    seeds = len(D.SEEDS)
    for m in LR_GRID_MODELS:
        rates = tuple(LR_GRID_RATES)
        means = _means(runs, m, rates)
        stored = sum(n for n, _ in means.values())
        planned = seeds * len(rates)
        if stored < planned:
            out[m] = RateChoice(m, None, rates, stored, planned, losses=_losses(means))
            continue
        edge = _edge_rate(_best(means))
        if edge is not None:
            rates = tuple(sorted(rates + (edge,)))
            means = _means(runs, m, rates)
            stored, planned = sum(n for n, _ in means.values()), seeds * len(rates)
            if stored < planned:
                out[m] = RateChoice(m, None, rates, stored, planned, losses=_losses(means))
                continue
        best = _best(means)
        out[m] = RateChoice(m, best, rates, stored, planned, at_edge=edge is not None and best == edge,
                            losses=_losses(means))
    return out


def _losses(means) -> tuple[tuple[float, float], ...]:
    return tuple((r, v) for r, (n, v) in sorted(means.items()) if n)


def edge_grid(rates: Mapping[str, RateChoice]) -> list[tuple[dict, dict]]:
    """(labels, config) of the one rate beyond the grid's end for every model whose best grid rate
    is an end (read off ``rates``, which holds the rates tried)."""
    out = []
    for m in LR_GRID_MODELS:
        extra = [r for r in rates[m].rates if r not in LR_GRID_RATES] if m in rates else []
        out += _grid_at(m, extra)
    return out


def _row(row: str) -> tuple[str, str]:
    return D.rows_of(row)


def _arm(runs: pd.DataFrame, model: str, rate: float, steps: int) -> pd.DataFrame:
    if not len(runs):
        return runs
    return runs[(runs.model == model) & (runs.lr == rate) & (runs.steps == steps)]


def planning_sd(runs: pd.DataFrame, rates: Mapping[str, RateChoice], row: str, steps: int) -> float:
    """The larger (over the two splits) standard deviation of ``row``'s paired difference at ``steps``
    over its first POWER_SEEDS seeds, each model at its rate; NaN until all of them are stored."""
    a, b = _row(row)
    ra, rb = rates[a].rate, rates[b].rate
    if ra is None or rb is None:
        return float("nan")
    seeds = list(range(POWER_SEEDS))
    ea, eb = (_arm(runs, m, r, steps) for m, r in ((a, ra), (b, rb)))
    ea, eb = (e[e.seed.isin(seeds)] if len(e) else e for e in (ea, eb))
    sds = []
    for value in ("val_loss", "test_loss"):
        j = ea[["seed", value]].merge(eb[["seed", value]], on="seed", suffixes=("_a", "_b")) if len(ea) and len(eb) \
            else pd.DataFrame()
        if len(j) < len(seeds):
            return float("nan")
        sds.append(float((j[f"{value}_a"] - j[f"{value}_b"]).std(ddof=1)))
    return max(sds)


def row_seeds(runs: pd.DataFrame, rates: Mapping[str, RateChoice], row: str) -> int:
    """Seeds ``row`` needs at both budgets: the larger of :func:`rules.required_seeds` of its planning
    spread at each budget (POWER_SEEDS until the first POWER_SEEDS seeds are stored). One count for
    both budgets, so that the change between them rests on as many seeds as the gap."""
    return max(required_seeds(planning_sd(runs, rates, row, s)) for s in JUDGED_STEPS)


def judged_grid(rates: Mapping[str, RateChoice], runs: pd.DataFrame | None = None) -> list[tuple[dict, dict]]:
    """(labels, config) of every row whose two models have a rate: both budgets, each model at its rate,
    the seeds :func:`row_seeds` asks (POWER_SEEDS while ``runs`` is None or holds too few), rows in
    :data:`JUDGE_ORDER`, each configuration once."""
    runs = pd.DataFrame() if runs is None else runs
    seen, out = set(), []
    for row in JUDGE_ORDER:
        a, b = _row(row)
        if rates[a].rate is None or rates[b].rate is None:
            continue
        n = row_seeds(runs, rates, row)
        for steps in JUDGED_STEPS:
            for seed in range(n):
                for m in (a, b):
                    cfg = D.config(m, steps=steps, seed=seed, lr=rates[m].rate)
                    k = D.run_key(cfg)
                    if k not in seen:
                        seen.add(k)
                        out.append((D.labels(m, steps=steps, lr=rates[m].rate), cfg))
    return out


def _pair(ea: pd.DataFrame, eb: pd.DataFrame, value: str) -> pd.DataFrame:
    if not len(ea) or not len(eb):
        return pd.DataFrame(columns=["seed", "diff"])
    j = ea[["seed", value]].merge(eb[["seed", value]], on="seed", suffixes=("_a", "_b"))
    return j.assign(diff=j[f"{value}_a"] - j[f"{value}_b"])[["seed", "diff"]]


def judged_comparisons(runs: pd.DataFrame, rates: Mapping[str, RateChoice]) -> pd.DataFrame:
    """One row per (row of ROWS, budget of JUDGED_STEPS, split): model a minus model b, each at its
    own rate, paired by seed (``diff``, ``lo``, ``hi``, ``n``), ``runs`` of the two stored and
    ``planned`` at that budget, the change per seed from the previous budget (``change_*``), the
    rates (``lr_a``, ``lr_b``: NaN until chosen), and the parameter counts (``params_a``,
    ``params_b``: NaN until a run of the model is stored)."""
    nan = float("nan")
    rows = []
    for row, a, b in D.ROWS:
        ra, rb = rates[a].rate, rates[b].rate
        n = row_seeds(runs, rates, row)
        prev = {}
        for s in JUDGED_STEPS:
            ea = _arm(runs, a, ra, s) if ra is not None else pd.DataFrame()
            eb = _arm(runs, b, rb, s) if rb is not None else pd.DataFrame()
            ea, eb = (e[e.seed < n] if len(e) else e for e in (ea, eb))
            params = [float(e.n_params.iloc[0]) if len(e) else nan for e in (ea, eb)]
            for split, value in (("validation", "val_loss"), ("test", "test_loss")):
                d = _pair(ea, eb, value)
                e = D.estimate(d["diff"])
                c = D.estimate(pd.Series(dtype=float))
                if split in prev and len(d) and len(prev[split]):
                    j = d.merge(prev[split], on="seed", suffixes=("", "_prev"))
                    c = D.estimate(j["diff"] - j["diff_prev"])
                rows.append({"row": row, "a": a, "b": b, "steps": s,
                             "tokens": s * D.BASE["batch_size"] * D.BASE["seq_len"], "split": split,
                             "diff": e.mean, "lo": e.lo, "hi": e.hi, "n": e.n, "runs": len(ea) + len(eb),
                             "planned": 2 * n, "change_diff": c.mean, "change_lo": c.lo, "change_hi": c.hi,
                             "change_n": c.n, "lr_a": nan if ra is None else ra, "lr_b": nan if rb is None else rb,
                             "params_a": params[0], "params_b": params[1]})
                prev[split] = d
    return pd.DataFrame(rows)


def fair_grids(latest: Mapping[str, dict]) -> tuple[dict[str, RateChoice], list, list]:
    """(rates, grid runs, judged runs) as (labels, config) lists, from a store's records ``latest``."""
    grid = lr_grid()
    rates = select_rates(D.frame(grid, latest))
    grid = grid + edge_grid(rates)
    rates = select_rates(D.frame(grid, latest))
    first = judged_grid(rates)
    judged = judged_grid(rates, D.frame(first, latest))
    return rates, grid, judged


def read_fair(latest: Mapping[str, dict]) -> dict:
    """``rates`` (:class:`RateChoice` per model), ``lr_grid`` (the stored grid and edge runs),
    ``judged`` (the stored runs of the judged grid), ``judged_comparisons``, the planned counts
    (``lr_grid_planned``; ``judged_planned``, of the rows whose rates are chosen) and the two
    designs as (labels, config) lists (``grid_configs``, ``judged_configs``)."""
    rates, grid, judged = fair_grids(latest)
    runs = D.frame(judged, latest)
    return {"rates": rates, "lr_grid": D.frame(grid, latest), "judged": runs,
            "judged_comparisons": judged_comparisons(runs, rates), "lr_grid_planned": len(grid),
            "judged_planned": len(judged), "grid_configs": grid, "judged_configs": judged}


def run(go: Callable[[list], None], latest: Callable[[], Mapping[str, dict]]) -> None:
    """Train the fair design through ``go`` (a sweep of (labels, config) pairs) in its order: the
    rate grid, the runs beyond a grid end it asks for, the judged rows at POWER_SEEDS seeds, then
    the seeds the rows' own spreads ask for; ``latest`` reads the store's records after each step."""
    go(lr_grid())
    go(fair_grids(latest())[1])  # the edge runs the stored grid asks for
    go(fair_grids(latest())[2])  # the judged rows at POWER_SEEDS seeds, each model at its rate
    go(fair_grids(latest())[2])  # the seeds the rows' own spreads ask for


def design() -> dict:
    """The fair design as plain data, for the store's manifest."""
    return {"lr_grid_rates": list(LR_GRID_RATES), "lr_grid_steps": LR_GRID_STEPS, "lr_grid_models": list(LR_GRID_MODELS),
            "lr_edge_factor": LR_EDGE_FACTOR, "judged_steps": list(JUDGED_STEPS), "judge_order": list(JUDGE_ORDER)}
