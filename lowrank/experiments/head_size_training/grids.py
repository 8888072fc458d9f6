"""The chapter's training grids, each a list of (labels, :class:`lowrank.train.TrainConfig` dict)
pairs, from the chapter's parameters:

- :func:`heads_at_fixed_width` (Fig. 3a): width d fixed; standard heads d_h = d / h against a
  fixed head size d_p, for a list of head counts h;
- :func:`parameter_matched` (Fig. 1): fixed head size at the small width against standard
  heads at larger widths, compared at their parameter counts;
- :func:`head_size_at_fixed_heads` (Table 2(B)): h fixed, head size d_p varied;
- :func:`recovery_grid` (the budget check) and :func:`lr_sweep_grid` (the learning-rate sweep).
"""
from __future__ import annotations

from collections.abc import Mapping

from ...layers.attention import standard_head_dim
from ...train import TrainConfig

__all__ = ["heads_at_fixed_width", "parameter_matched", "head_size_at_fixed_heads", "base_config", "recovery_grid",
           "lr_sweep_grid", "training_grids"]


def _config(base: dict, seed: int, **kw) -> dict:
    cfg = dict(base, seed=seed, **kw)
    if cfg.get("head_dim") is not None and cfg["head_dim"] * cfg["n_heads"] == cfg["d_model"]:
        cfg["head_dim"] = None  # d_p = d/h is the standard model: one key, one run
    return TrainConfig.from_dict(cfg).to_dict()


def heads_at_fixed_width(base: dict, *, heads: list[int], head_dim: int,
                         seeds: list[int]) -> list[tuple[dict, dict]]:
    """Fig. 3a grid: at width ``base['d_model']``, standard heads (d_h = d / h) and fixed head
    size ``head_dim`` for every h in ``heads``; family 'standard' or 'fixed'. The standard
    family skips any h that does not divide d (as h = 70 at d = 256 in the paper)."""
    d = base["d_model"]
    if not any(d % h == 0 for h in heads):
        raise ValueError(f"no head count in {heads} divides d_model={d}: the standard family would be empty")
    labelled = []
    for seed in seeds:
        for h in heads:
            if d % h == 0:
                labelled.append(({"family": "standard"}, _config(base, seed, n_heads=h, head_dim=None)))
            labelled.append(({"family": "fixed"}, _config(base, seed, n_heads=h, head_dim=head_dim)))
    return labelled


def parameter_matched(base: dict, *, heads: list[int], head_dim: int, baseline_widths: list[int],
                      baseline_heads: int, seeds: list[int]) -> list[tuple[dict, dict]]:
    """Fig. 1 grid: fixed head size at width ``base['d_model']`` for each h in ``heads``
    (family 'fixed') against standard models of ``baseline_heads`` heads at each width in
    ``baseline_widths`` (family 'standard'); compare them at equal ``n_params``."""
    bad = [d for d in baseline_widths if d % baseline_heads]
    if bad:
        raise ValueError(f"baseline widths must be multiples of baseline_heads={baseline_heads}: {bad}")
    labelled = []
    for seed in seeds:
        for h in heads:
            labelled.append(({"family": "fixed"}, _config(base, seed, n_heads=h, head_dim=head_dim)))
        for d in baseline_widths:
            labelled.append(({"family": "standard"},
                             _config(base, seed, d_model=d, n_heads=baseline_heads, head_dim=None)))
    return labelled


def head_size_at_fixed_heads(base: dict, *, n_heads: int, head_dims: list[int],
                             seeds: list[int]) -> list[tuple[dict, dict]]:
    """Table 2(B) grid: ``n_heads`` heads at width ``base['d_model']``, head size d_p from ``head_dims``."""
    return [({"family": "fixed"}, _config(base, seed, n_heads=n_heads, head_dim=dp))
            for seed in seeds for dp in head_dims]


def base_config(P: Mapping) -> dict:
    """The :class:`lowrank.train.TrainConfig` fields every run of the chapter shares, from the
    chapter's validated parameters (validation on a quarter of ``eval_tokens``, test on all)."""
    return dict(task="lm", corpus=P["corpus"], vocab_size=P["vocab_size"], seq_len=P["seq_len"],
                d_model=P["d_model"], n_layers=P["n_layers"], d_ff=P["d_ff"], norm=P["norm"],
                tie_embeddings=P["tie_embeddings"], init=P["init"], batch_size=P["batch_size"], steps=P["steps"],
                lr=P["lr"], warmup_steps=P["warmup_steps"], schedule=P["schedule"], dropout=P["dropout"],
                eval_interval=P["eval_interval"],
                eval_tokens=max(P["seq_len"], (P["eval_tokens"] or 65536) // 4),
                test_tokens=P["eval_tokens"], checkpoint_every=max(P["steps"] // 4, 1),
                num_threads=P["num_threads"], device=P["device"])


def _with_steps(base: dict, steps: int) -> dict:
    """``base`` with another step budget (and its four checkpoints, as :func:`base_config` sets them)."""
    return dict(base, steps=int(steps), checkpoint_every=max(int(steps) // 4, 1))


def recovery_grid(P: Mapping, lr: float | None = None) -> list[tuple[dict, dict]]:
    """The budget check: the standard and the fixed-head model at the largest head
    count of ``heads`` where they differ (h divides d and d / h != d_p), every seed, trained for
    ``recovery_steps`` steps instead of ``steps`` (labels ``family``; same rate ``lr`` as the main
    grids, default ``P["lr"]``). Empty when ``recovery_steps`` is None or absent."""
    steps = P.get("recovery_steps")
    if steps is None:
        return []
    d, dp = P["d_model"], P["head_dim"]
    distinct = [h for h in P["heads"] if d % h == 0 and standard_head_dim(d, h) != dp]
    if not distinct:
        raise ValueError(f"recovery_steps needs a head count in {P['heads']} where d / h != d_p = {dp}")
    h = max(distinct)
    base = _with_steps(base_config(P), steps)
    if lr is not None:
        base["lr"] = float(lr)
    seeds = range(P["seed"], P["seed"] + P["n_seeds"])
    return [(lab, _config(base, seed, n_heads=h, head_dim=hd)) for seed in seeds
            for lab, hd in (({"family": "standard"}, None), ({"family": "fixed"}, dp))]


def lr_sweep_grid(P: Mapping) -> list[tuple[dict, dict]]:
    """The learning-rate sweep of the chapter's parameters: one seed (``seed``), ``lr_sweep_steps``
    steps (``steps`` when None), each rate of ``lr_sweep`` for every family of ``lr_sweep_heads``:
    standard heads at each h that divides d, and the fixed head size at each h where d / h differs
    from d_p (labels ``family``, ``h``, ``lr``). Empty when ``lr_sweep`` is empty."""
    base = _with_steps(base_config(P), P["lr_sweep_steps"] or P["steps"])
    d, dp = P["d_model"], P["head_dim"]
    labelled = []
    for lr in P["lr_sweep"]:
        for h in P["lr_sweep_heads"]:
            if d % h == 0:
                labelled.append(({"family": "standard", "lr": float(lr)},
                                 _config(base, P["seed"], n_heads=h, head_dim=None, lr=float(lr))))
            if d % h or standard_head_dim(d, h) != dp:
                labelled.append(({"family": "fixed", "lr": float(lr)},
                                 _config(base, P["seed"], n_heads=h, head_dim=dp, lr=float(lr))))
    return labelled


def training_grids(P: Mapping, lr: float | None = None) -> dict[str, list[tuple[dict, dict]]]:
    """The chapter's three grids (``heads``, ``matched``, ``sizes``) from its parameters, every
    run at learning rate ``lr`` (default ``P["lr"]``; the rate :func:`choose_lr` picked when the
    parameters ask for a sweep), plus ``recovery`` (:func:`recovery_grid`) when the parameters
    set ``recovery_steps``."""
    base = base_config(P)
    if lr is not None:
        base["lr"] = float(lr)
    seeds = list(range(P["seed"], P["seed"] + P["n_seeds"]))
    return {
        "heads": heads_at_fixed_width(base, heads=P["heads"], head_dim=P["head_dim"], seeds=seeds),
        "matched": parameter_matched(base, heads=P["heads"], head_dim=P["head_dim"], seeds=seeds,
                                     baseline_widths=P["baseline_widths"], baseline_heads=P["baseline_heads"]),
        "sizes": head_size_at_fixed_heads(base, n_heads=P["size_heads"], head_dims=P["head_dims"], seeds=seeds),
        **({"recovery": recovery_grid(P, lr)} if P.get("recovery_steps") is not None else {}),
    }
