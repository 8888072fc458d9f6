"""The chapter's parameters: what its notebook's parameters cell sets, checked before any run."""
from __future__ import annotations

from ...layers.attention import standard_head_dim
from ...core.params import Param, Int, Float, Bool, Str, Choice, IntList, FloatList, Constraint, short_repr, shard_problem

SCHEMA = dict(
    seed=Int(0, doc="first training seed; runs use seed, seed + 1, ..."),
    n_seeds=Int(1, 20, doc="seeds per configuration"),
    corpus=Str(doc="corpus name ('shakespeare') or path of a local text corpus"),
    vocab_size=Int(260, 200_000, doc="byte-level BPE vocabulary size"),
    seq_len=Int(4, 8192, doc="tokens per sequence n"),
    d_model=Int(4, 16384, doc="width d of the fixed-width experiments"),
    n_layers=Int(1, 96, doc="Transformer layers"),
    d_ff=Int(1, 65536, allow_none=True, doc="feed-forward width; None: 4 d at every width (wider baselines get wider FFNs)"),
    norm=Choice("post", "pre", doc="LayerNorm placement"),
    tie_embeddings=Bool(doc="share the input embedding with the output layer"),
    init=Choice("bert", "scaled", doc="initialisation: bert (trunc-normal 0.02) or scaled (residual outputs by fan-in and depth)"),
    heads=IntList(1, 4096, doc="head counts h of the fixed-width experiment"),
    head_dim=Int(1, 4096, doc="fixed head size d_p"),
    baseline_widths=IntList(4, 16384, doc="widths d of the standard-head baselines (parameter-matched comparison)"),
    baseline_heads=Int(1, 4096, doc="heads of the standard-head baselines"),
    size_heads=Int(1, 4096, doc="head count h of the head-size sweep"),
    head_dims=IntList(1, 4096, doc="head sizes d_p of the head-size sweep"),
    steps=Int(1, 10_000_000, doc="optimiser steps per run"),
    batch_size=Int(1, 1_000_000, doc="sequences per step (global batch)"),
    lr=Float(1e-6, 10.0, doc="peak learning rate (when lr_sweep is empty)"),
    lr_sweep=FloatList(1e-6, 10.0, min_len=0, doc="peak learning rates swept first (one seed); []: every run at lr"),
    lr_sweep_heads=IntList(1, 4096, doc="head counts of the swept families (standard and fixed head size)"),
    lr_sweep_steps=Int(1, 10_000_000, allow_none=True, doc="optimiser steps of a sweep run; None: steps"),
    recovery_steps=Int(1, 10_000_000, allow_none=True, doc="budget check: optimiser steps of the standard and fixed-head pair at the largest head count where they differ, every seed (None: no such runs)"),
    warmup_steps=Int(0, 10_000_000, doc="linear warm-up steps"),
    schedule=Choice("cosine", "inverse_sqrt", "constant", doc="learning-rate decay after warm-up"),
    dropout=Float(0.0, 0.9, doc="dropout rate"),
    eval_interval=Int(0, 10_000_000, doc="steps between validation evaluations (0: only at the end)"),
    eval_tokens=Int(1, 10**10, allow_none=True, doc="validation / test tokens for the final perplexities; None: all"),
    num_threads=Int(1, 1024, allow_none=True, doc="torch CPU threads per run; None: torch's default"),
    workers=Int(1, 256, doc="training runs in parallel processes"),
    device=Choice("auto", "cpu", "cuda", doc="training device"),
    results_store=Param("str", allow_none=True, doc="JSONL sweep store to reuse and extend; None: a fresh temporary store"),
    shard=Param("str", allow_none=True, doc="'i/N': train only shard i of N of the sweep into results_store; None: all"),
    long_store=Param("str", allow_none=True, doc="long-scale store the chapter reads (never writes); None: this run's own runs"),
)
CONSTRAINTS = (
    Constraint(("baseline_heads", "baseline_widths"), lambda p: (
        None if all(w % p["baseline_heads"] == 0 for w in p["baseline_widths"]) else
        f"baseline_heads = {p['baseline_heads']} must divide every baseline_widths entry; got "
        f"{short_repr(p['baseline_widths'])}")),
    Constraint(("warmup_steps", "steps"), lambda p: None if p["warmup_steps"] <= p["steps"] else (
        f"warmup_steps = {p['warmup_steps']} must not exceed steps = {p['steps']}")),
    Constraint(("warmup_steps", "lr_sweep_steps"), lambda p: None if (
        p["lr_sweep_steps"] is None or p["warmup_steps"] <= p["lr_sweep_steps"]) else (
        f"warmup_steps = {p['warmup_steps']} must not exceed lr_sweep_steps = {p['lr_sweep_steps']}")),
    Constraint(("recovery_steps", "steps"), lambda p: None if (
        p["recovery_steps"] is None or p["recovery_steps"] > p["steps"]) else (
        f"recovery_steps = {p['recovery_steps']} must exceed steps = {p['steps']} (it is a larger budget)")),
    Constraint(("heads", "d_model"), lambda p: None if any(p["d_model"] % h == 0 for h in p["heads"]) else (
        f"heads {short_repr(p['heads'])}: at least one must divide d_model = {p['d_model']} (the standard "
        "family, d_h = d_model / h, would be empty)")),
    Constraint(("recovery_steps", "heads", "d_model", "head_dim"), lambda p: None if (
        p["recovery_steps"] is None or any(
            p["d_model"] % h == 0 and standard_head_dim(p["d_model"], h) != p["head_dim"] for h in p["heads"])) else (
        f"recovery_steps needs a head count in heads {short_repr(p['heads'])} that divides d_model = "
        f"{p['d_model']} with d_model / h != head_dim = {p['head_dim']} (the pair it trains longer)")),
    Constraint(("shard",), lambda p: shard_problem(p["shard"])),
    Constraint(("shard", "results_store"), lambda p: None if (
        p["shard"] is None or p["results_store"] is not None) else (
        f"shard = {short_repr(p['shard'])} needs results_store: the store every shard appends to")),
)
# Parameters that name files or folders (lowrank.book.runner resolves them): a results store
# written, a store only read, a folder read, or a corpus name or path.
PATHS = {"results_store": "store", "long_store": "read_store", "corpus": "corpus"}
# Stores that keep a parameter manifest beside them: a run with other parameters is refused.
MANIFESTS = ("results_store",)
# The experiments whose runs a store of this chapter may hold: the long sweep's and the notebook's grids.
STORE_EXPERIMENTS = ("04_head_size_training", "04_head_size_training_long")
