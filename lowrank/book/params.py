"""Validation of chapter parameters.

Each chapter registers a schema here; the cell after a notebook's ``parameters`` cell calls
``validate(CHAPTER, globals())``, and ``lowrank run`` checks the same schema before a kernel
starts. A bad value raises ``ParameterError`` naming the parameter, the value and what is
allowed, so a papermill run stops at once instead of computing with nonsense.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["ParameterError", "Param", "short_repr", "MAX_LIST", "INT_CEILING", "Constraint",
           "CONSTRAINTS", "PATHS", "MANIFESTS", "check_constraints", "Int", "Float", "Bool", "Choice", "Str", "IntList",
           "FloatList", "ChoiceList", "SCHEMAS", "register", "schema", "validate", "chapter_name"]


class ParameterError(ValueError):
    """A chapter parameter is unknown, of the wrong type, or out of range."""


MAX_LIST = 1024          # longest list a parameter accepts (a sweep over more values is a mistake)
INT_CEILING = 2**32 - 1  # an int parameter without an upper bound (a seed) stays below this:
                         # seeds are offset and passed to torch/NumPy, which overflow past int64


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to at most ``limit`` characters, never expanding more of a nested or
    self-sharing value (a YAML "billion laughs" file) than it prints."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxtuple, r.maxdict, r.maxset = 2, 8, 8, 4, 4
    r.maxstring, r.maxother, r.maxlong = limit, limit, limit
    text = r.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass(frozen=True)
class Param:
    kind: str  # int, float, bool, str, choice, int_list, float_list, choice_list
    lo: float | None = None
    hi: float | None = None
    choices: tuple = ()
    doc: str = ""
    min_len: int = 1
    allow_none: bool = False
    max_len: int = MAX_LIST
    distinct: bool = True  # lists: a value given twice would be run, and counted, twice

    def allowed(self) -> str:
        if self.kind in ("choice", "choice_list"):
            what = "one of " + ", ".join(repr(c) for c in self.choices)
            what = what if self.kind == "choice" else f"a non-empty list of {what}"
        else:
            base = {"int": "an int", "float": "a number", "bool": "True or False", "str": "a string",
                    "int_list": "a list of ints", "float_list": "a list of numbers"}[self.kind]
            rng = _range_text(self.lo, self._hi())
            what = f"{base}{' ' + rng if rng else ''}"
        if self.kind.endswith("_list"):
            what = f"{what} ({self.min_len} to {self.max_len} items{', no value twice' if self.distinct else ''})"
        return what + (" or None" if self.allow_none else "")

    def _hi(self):
        return INT_CEILING if self.hi is None and self.kind in ("int", "int_list") else self.hi

    def check(self, name: str, value: Any) -> Any:
        if value is None and self.allow_none:
            return None
        hi = self._hi()
        n_min, n_max = self.min_len, self.max_len
        ok = {
            "int": lambda v: _is_int(v) and _in_range(v, self.lo, hi),
            "float": lambda v: _is_num(v) and _in_range(v, self.lo, hi),
            "bool": lambda v: isinstance(v, bool),
            "str": lambda v: isinstance(v, str) and v != "" and len(v) <= 4096 and "\x00" not in v,
            "choice": lambda v: _is_scalar(v) and v in self.choices,
            "int_list": lambda v: _is_list(v, n_min, n_max) and all(_is_int(x) and _in_range(x, self.lo, hi) for x in v),
            "float_list": lambda v: _is_list(v, n_min, n_max) and all(_is_num(x) and _in_range(x, self.lo, hi) for x in v),
            "choice_list": lambda v: _is_list(v, n_min, n_max) and all(_is_scalar(x) and x in self.choices for x in v),
        }[self.kind]
        try:
            good = ok(value)
        except TypeError:
            good = False
        if not good:
            raise ParameterError(f"parameter {name!r} = {short_repr(value)} is not allowed: expected {self.allowed()}"
                                 + (f" ({self.doc})" if self.doc else ""))
        if self.kind.endswith("_list") and self.distinct:
            seen: set = set()
            twice = next((x for x in value if x in seen or seen.add(x)), None)
            if len(seen) < len(value):
                raise ParameterError(f"parameter {name!r} = {short_repr(value)} is not allowed: {short_repr(twice)} "
                                     f"is given more than once; expected {self.allowed()}")
        if self.kind == "float":
            return float(value)
        if self.kind == "float_list":
            return [float(x) for x in value]
        if self.kind.endswith("_list"):
            return list(value)
        return value


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def _is_list(v, min_len: int, max_len: int = MAX_LIST) -> bool:
    return isinstance(v, (list, tuple)) and min_len <= len(v) <= max_len


def _is_scalar(v) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _in_range(v, lo, hi) -> bool:
    return (lo is None or v >= lo) and (hi is None or v <= hi)


def _num_text(x) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def _range_text(lo, hi) -> str:
    if lo is not None and hi is not None:
        return f"in [{_num_text(lo)}, {_num_text(hi)}]"
    if lo is not None:
        return f">= {_num_text(lo)}"
    if hi is not None:
        return f"<= {_num_text(hi)}"
    return ""


def Int(lo=None, hi=None, doc="", allow_none=False) -> Param:
    return Param("int", lo, hi, doc=doc, allow_none=allow_none)


def Float(lo=None, hi=None, doc="", allow_none=False) -> Param:
    return Param("float", lo, hi, doc=doc, allow_none=allow_none)


def Bool(doc="") -> Param:
    return Param("bool", doc=doc)


def Str(doc="") -> Param:
    return Param("str", doc=doc)


def Choice(*choices, doc="") -> Param:
    return Param("choice", choices=tuple(choices), doc=doc)


def IntList(lo=None, hi=None, doc="", min_len=1, max_len=MAX_LIST, distinct=True) -> Param:
    return Param("int_list", lo, hi, doc=doc, min_len=min_len, max_len=max_len, distinct=distinct)


def FloatList(lo=None, hi=None, doc="", min_len=1, max_len=MAX_LIST) -> Param:
    return Param("float_list", lo, hi, doc=doc, min_len=min_len, max_len=max_len)


def ChoiceList(*choices, doc="", min_len=1, max_len=MAX_LIST) -> Param:
    return Param("choice_list", choices=tuple(choices), doc=doc, min_len=min_len, max_len=max_len)


SCHEMAS: dict[str, dict[str, Param]] = {}


def register(chapter: str, **params: Param) -> None:
    """Declare a chapter's parameters (name -> Param)."""
    SCHEMAS[chapter] = dict(params)


def chapter_name(chapter: str) -> str:
    """Resolve '01', '01_attention_and_rank' or a path ending in the notebook name."""
    stem = str(chapter).rsplit("/", 1)[-1].removesuffix(".ipynb")
    if stem in SCHEMAS:
        return stem
    hits = [c for c in SCHEMAS if c.split("_", 1)[0] == stem.zfill(2)]
    if len(hits) == 1:
        return hits[0]
    raise ParameterError(f"unknown chapter {short_repr(chapter)}; known chapters: {', '.join(sorted(SCHEMAS))}")


def schema(chapter: str) -> dict[str, Param]:
    return SCHEMAS[chapter_name(chapter)]


def validate(chapter: str, values: Mapping[str, Any] | None = None, *, partial: bool = False,
             **kw: Any) -> dict[str, Any]:
    """Check a chapter's parameters; return them normalised (floats as float, lists as list).

    ``values`` may be a notebook's ``globals()``: only the schema's names are read from it,
    and every one must be present. With ``partial=True`` (used by ``lowrank run`` for
    overrides) only the given names are checked, and unknown names are an error.
    """
    spec = schema(chapter)
    given = dict(kw)
    if values is not None:
        if partial:
            given.update(values)
        else:
            given.update({k: values[k] for k in spec if k in values})
    unknown = sorted((k for k in given if k not in spec), key=str)
    if unknown:
        raise ParameterError(f"unknown parameter(s) {', '.join(short_repr(k, 40) for k in unknown[:5])} for chapter "
                             f"{chapter_name(chapter)}; allowed: {', '.join(spec)}")
    if not partial:
        missing = [k for k in spec if k not in given]
        if missing:
            raise ParameterError(f"missing parameter(s) {', '.join(map(repr, missing))} for chapter "
                                 f"{chapter_name(chapter)}")
    checked = {name: spec[name].check(name, value) for name, value in given.items()}
    if not partial:
        check_constraints(chapter_name(chapter), checked)
    return checked


# --- chapter schemas -------------------------------------------------------------------
# One register() call per chapter, next to nothing else, so the schema reads as a table.

register(
    "01_attention_and_rank",
    seed=Int(0, doc="random seed"),
    n=Int(4, 4096, doc="sequence length"),
    head_dims=IntList(1, 4096, doc="head sizes d_h to sweep"),
    n_trials=Int(1, 10_000, doc="random draws per setting"),
    scales=FloatList(1e-3, 1e4, doc="logit multipliers (inverse temperatures) to sweep"),
    rtols=FloatList(0.0, 1.0, doc="relative tolerances for the numerical rank (0 means the default max(m,n)*eps)"),
    d_model=Int(1, 65536, doc="model width for the parameter-cost table"),
    seq_lens=IntList(2, 65536, doc="sequence lengths for the parameter-cost table"),
)

register(
    "05_rank_barrier",
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
)

register(
    "06_rank_saturation",
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
)

register(
    "02_representation_theorem",
    seed=Int(0, doc="random seed"),
    construction_ns=IntList(2, 4096, doc="sequence lengths n for the exact construction"),
    d_extra=Int(0, 4096, doc="inputs X have d = n + d_extra columns"),
    threshold_ns=IntList(2, 1024, doc="sequence lengths n for the rank-threshold fits"),
    concentrations=FloatList(1e-3, 1e4, doc="Dirichlet concentrations of the dense target rows"),
    n_targets=Int(1, 1000, doc="targets (seeds) per n and concentration"),
    near=Int(0, 1024, doc="fit every rank from n - near to n"),
    coarse=Int(0, 64, doc="number of geometrically spaced lower ranks to fit"),
    restarts=Int(1, 256, doc="L-BFGS restarts per fit"),
    max_iter=Int(1, 100_000, doc="L-BFGS iteration cap, threshold fits"),
    vanish_tol=Float(1e-14, 0.5, doc="max row total variation below which the error counts as vanished"),
    sparse_ns=IntList(3, 1024, doc="sequence lengths n for sparse vs dense targets"),
    sparse_kinds=ChoiceList("permutation", "sparse", "dense", doc="target families"),
    sparse_k=Int(1, 1024, doc="keys per row of the k-sparse targets"),
    sparse_eps=Float(1e-12, 0.5, doc="mass off the support of sparse targets"),
    sparse_n_targets=Int(1, 1000, doc="targets per n and family for sparse vs dense"),
    sparse_ranks=IntList(1, 1024, doc="logit ranks to fit for sparse vs dense targets (those below n - 1 are used)"),
    sparse_tol=Float(1e-12, 0.5, doc="max row total variation a rank must reach"),
    sparse_max_iter=Int(1, 100_000, doc="L-BFGS iteration cap, sparse fits"),
    bottleneck_n=Int(4, 1024, doc="sequence length n for the error well below the threshold"),
    bottleneck_ranks=IntList(1, 1024, doc="head sizes r << n fitted at bottleneck_n"),
    causal_ns=IntList(3, 256, doc="sequence lengths n for the causal threshold"),
    causal_n_targets=Int(1, 100, doc="lower-triangular targets per n"),
    causal_width=Int(0, 64, doc="fit ranks floor(n/2) - width .. floor(n/2) + width (and 1)"),
    causal_restarts=Int(1, 256, doc="L-BFGS restarts per causal fit"),
    causal_max_iter=Int(1, 100_000, doc="L-BFGS iteration cap, causal fits"),
    dn_d=Int(1, 1024, doc="input rank d for the d < n sweep"),
    dn_ns=IntList(2, 4096, doc="sequence lengths n for the d < n sweep"),
    dn_n_targets=Int(1, 100, doc="targets per n in the d < n sweep"),
    many_n=Int(2, 256, doc="tokens per input for the many-inputs capacity"),
    many_d=Int(1, 1024, doc="input width d for the many-inputs capacity"),
    many_ranks=IntList(1, 1024, doc="head sizes r for the many-inputs capacity"),
    many_ms=IntList(1, 10_000, doc="numbers of inputs fitted by one head"),
    many_restarts=Int(1, 256, doc="L-BFGS restarts per many-inputs fit"),
)

register(
    "03_multihead_bottleneck",
    seed=Int(0, doc="random seed"),
    d_model=Int(2, 8192, doc="model width d for the head-count sweep"),
    n=Int(2, 1024, doc="sequence length n for the head-count sweep"),
    heads=IntList(1, 8192, doc="head counts h (each must divide d_model)"),
    concentration=Float(1e-3, 1e4, doc="Dirichlet concentration of the dense target rows"),
    restarts=Int(1, 256, doc="L-BFGS restarts per head fit"),
    max_iter=Int(1, 100_000, doc="L-BFGS iteration cap, head fits"),
    vanish_tol=Float(1e-14, 0.5, doc="max row total variation below which a head fits"),
    embed_d_model=Int(1, 8192, doc="width of the standard layer embedded in a fixed one"),
    embed_heads=Int(1, 1024, doc="heads of that layer (must divide embed_d_model)"),
    embed_head_dim=Int(1, 8192, doc="head size d_p of the fixed layer (>= embed_d_model / embed_heads)"),
    embed_n=Int(1, 4096, doc="tokens per random input for the embedding check"),
    embed_batch=Int(1, 4096, doc="random inputs for the embedding check"),
    t2_d=Int(2, 1024, doc="Theorem 2: width d"),
    t2_heads=Int(1, 1024, doc="Theorem 2: heads h (h > d / d_p, h divides d)"),
    t2_head_dim=Int(1, 1024, doc="Theorem 2: fixed head size d_p (d / h < d_p <= d)"),
    t2_n=Int(2, 1024, doc="Theorem 2: tokens per input"),
    t2_samples=Int(1, 100_000, doc="Theorem 2: inputs the layers are fitted on"),
    t2_std_restarts=Int(1, 256, doc="Theorem 2: restarts of the standard-layer fit"),
    t2_fixed_restarts=Int(1, 256, doc="Theorem 2: restarts of the fixed-layer fit"),
    t2_std_max_iter=Int(1, 100_000, doc="Theorem 2: L-BFGS cap, standard layer"),
    t2_fixed_max_iter=Int(1, 100_000, doc="Theorem 2: L-BFGS cap, fixed layer"),
    cost_d_models=IntList(1, 65536, doc="widths d for the cost table"),
    cost_heads=IntList(1, 4096, doc="head counts h for the cost table"),
    cost_seq_lens=IntList(1, 65536, doc="sequence lengths n for the cost table (fixed d_p = n)"),
    paper_d=Int(1, 65536, doc="width d of the paper's worked numbers (Table 1: BERT-large)"),
    paper_heads=IntList(1, 4096, doc="head counts of the worked numbers (Table 1)"),
    paper_ns=IntList(2, 65536, doc="sequence lengths of the worked numbers (the two pre-training stages)"),
)

register(
    "04_head_size_training",
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

register(
    "08_synthesis",
    chapters_dir=Str(doc="folder holding the executed chapter notebooks 01 to 07"),
)

register(
    "07_trained_attention",
    seed=Int(0, doc="random seed (text windows, initialisations, training)"),
    threads=Int(0, 1024, doc="torch CPU threads; 0 leaves torch's default"),
    minilm_corpora=ChoiceList("shakespeare", "bbcnews", doc="real text fed to MiniLM"),
    minilm_seq_lens=IntList(3, 512, doc="sequence lengths n for MiniLM, [CLS] and [SEP] included (512 positions)"),
    minilm_counts=IntList(1, 1_000_000, distinct=False,
                          doc="windows per corpus at each n, one entry per minilm_seq_lens entry"),
    minilm_batch=Int(1, 4096, doc="windows per forward pass (memory: one layer of one batch)"),
    rtols=FloatList(0.0, 0.5, doc="relative tolerances for the numerical rank (0 means the default max(m,n)*eps)"),
    energy=Float(0.5, 1.0, doc="fraction of sum sigma^2 for the energy rank"),
    retrieval_ns=IntList(2, 4096, doc="sequence lengths n of the retrieval task (context pairs = queries)"),
    retrieval_head_dims=IntList(1, 4096, doc="query/key sizes d_h of the retrieval head, ascending"),
    retrieval_seeds=Int(1, 1000, doc="seeds per (n, d_h) of the one-key retrieval task"),
    retrieval_pair_ns=IntList(2, 4096, doc="sequence lengths n of the two-key retrieval task"),
    retrieval_pair_seeds=Int(0, 1000, doc="seeds per (n, d_h) of the two-key retrieval task (0: not run)"),
    retrieval_max_steps=Int(1, 10_000_000, doc="step cap of a retrieval run (it stops earlier at its loss plateau)"),
    retrieval_min_steps=Int(1, 10_000_000, doc="steps before a retrieval run's first plateau check"),
    retrieval_d_model=Int(1, 65536, doc="width of the retrieval model"),
    retrieval_values=Int(2, 65536, doc="number of distinct values (classes) in the retrieval task"),
    retrieval_lr=Float(1e-6, 1.0, doc="learning rate of the retrieval runs (Adam: warm-up, constant to the plateau, linear decay)"),
    retrieval_tokens=Int(1, 10_000_000, doc="queries per optimiser step (batch = this // n sequences)"),
    retrieval_test_sequences=Int(1, 10_000_000, doc="fresh test sequences per retrieval run"),
    retrieval_rank_sequences=Int(1, 100_000, doc="held-out sequences whose attention is ranked per run"),
    retrieval_rtol=Float(0.0, 0.5, doc="relative tolerance of the numerical rank of the retrieval head's attention"),
    retrieval_run=Bool(doc="True trains the retrieval grid (into retrieval_store); False reads retrieval_long_store"),
    retrieval_store=Param("str", allow_none=True,
                          doc="your results store for retrieval runs (appended, resumable); None: a temporary file"),
    retrieval_long_store=Str(doc="the committed long-scale retrieval store, read only (never written)"),
    truncation_run=Bool(doc="True measures MiniLM's head truncation here (into retrieval_store); False reads retrieval_long_store"),
    truncation_ns=IntList(3, 512, doc="sequence lengths n (tokens, [CLS] and [SEP] included) of the truncated MiniLM"),
    truncation_ranks=IntList(1, 32, doc="logit ranks r each head is cut to, ascending (32 = the full head)"),
    truncation_per_class=Int(2, 10_000, doc="BBC News documents per topic for the probe"),
    truncation_folds=Int(2, 100, doc="cross-validation folds of the linear probe (stratified)"),
    truncation_l2=Float(0.0, 100.0, doc="L2 penalty of the probe's logistic regression"),
    truncation_layer_n=Int(3, 512, doc="the length n at which MiniLM is cut one layer at a time (one of truncation_ns)"),
    truncation_layer_ranks=IntList(1, 32, doc="logit ranks r of the one-layer-at-a-time cut"),
)


# --- beyond single values ------------------------------------------------------------------
# Kept apart from SCHEMAS (one table per chapter above): constraints between parameters,
# values that pass their own range but break a later cell, and path parameters.
# ``validate(chapter, globals())`` (the notebook's cell) and ``lowrank run`` (before any kernel
# starts) both apply CONSTRAINTS; ``lowrank run`` also checks the run's memory and time estimate
# (lowrank.book.costs).

@dataclass(frozen=True)
class Constraint:
    """A rule over several parameters: ``rule(p)`` returns what is wrong (one line) or None."""

    names: tuple[str, ...]
    rule: Callable[[Mapping[str, Any]], str | None]


def _divides(names_h: str, name_d: str):
    def rule(p):
        bad = [h for h in _as_list(p[names_h]) if p[name_d] % h]
        return (f"{names_h} {short_repr(bad)} must divide {name_d} = {p[name_d]}" if bad else None)
    return rule


def _shard_problem(value) -> str | None:
    """What is wrong with a ``shard`` value ('i/N', 0 <= i < N), or None (also for None: no shard)."""
    if value is None:
        return None
    parts = str(value).strip().split("/")
    if len(parts) == 2 and all(x.strip().isdigit() for x in parts):
        i, n = (int(x) for x in parts)
        if 0 <= i < n <= 1_000_000:
            return None
    return f"shard = {short_repr(value)} must look like 'i/N' with integers 0 <= i < N, e.g. '0/2'"


def _as_list(v) -> list:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _contains(name: str, value, why: str):
    return lambda p: None if value in p[name] else f"{name} must include {value!r} ({why}); got {short_repr(p[name])}"


def _distinct_at_least(name: str, k: int, why: str):
    return lambda p: (None if len(set(p[name])) >= k
                      else f"{name} needs at least {k} different values ({why}); got {short_repr(p[name])}")


def _ascending(name: str):
    return lambda p: (None if list(p[name]) == sorted(set(p[name]))
                      else f"{name} must be strictly ascending; got {short_repr(p[name])}")


def _same_length(a: str, b: str):
    return lambda p: (None if len(p[a]) == len(p[b]) else
                      f"{b} needs one entry per {a} entry: {len(p[b])} given for {len(p[a])}")


CONSTRAINTS: dict[str, tuple[Constraint, ...]] = {
    "01_attention_and_rank": (
        Constraint(("rtols",), _contains("rtols", 0.0, "the default tolerance every figure compares against")),
        Constraint(("scales",), _contains("scales", 1.0, "the standard temperature the figures show")),
    ),
    "02_representation_theorem": (
        Constraint(("sparse_ranks", "sparse_ns"), lambda p: None if any(
            r < min(p["sparse_ns"]) - 1 for r in p["sparse_ranks"]) else (
            f"sparse_ranks {short_repr(p['sparse_ranks'])}: at least one must be below n - 1 = "
            f"{min(p['sparse_ns']) - 1} for the smallest sparse_ns (only those ranks are fitted)")),
        Constraint(("sparse_k", "sparse_ns"), lambda p: None if p["sparse_k"] < min(p["sparse_ns"]) else (
            f"sparse_k = {p['sparse_k']} must be below the smallest sparse_ns ({min(p['sparse_ns'])})")),
    ),
    "03_multihead_bottleneck": (
        Constraint(("heads", "d_model"), _divides("heads", "d_model")),
        Constraint(("embed_heads", "embed_d_model"), _divides("embed_heads", "embed_d_model")),
        Constraint(("embed_head_dim", "embed_d_model", "embed_heads"), lambda p: None if (
            p["embed_head_dim"] * p["embed_heads"] >= p["embed_d_model"]) else (
            f"embed_head_dim = {p['embed_head_dim']} must be at least embed_d_model / embed_heads = "
            f"{p['embed_d_model'] / p['embed_heads']:g}")),
        Constraint(("t2_heads", "t2_d"), _divides("t2_heads", "t2_d")),
        Constraint(("t2_head_dim", "t2_d", "t2_heads"), lambda p: None if (
            p["t2_d"] / p["t2_heads"] < p["t2_head_dim"] <= p["t2_d"]) else (
            f"t2_head_dim = {p['t2_head_dim']} must satisfy t2_d / t2_heads = {p['t2_d'] / p['t2_heads']:g} "
            f"< t2_head_dim <= t2_d = {p['t2_d']} (Theorem 2)")),
    ),
    "04_head_size_training": (
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
            p["recovery_steps"] is None or any(p["d_model"] % h == 0 and p["d_model"] // h != p["head_dim"]
                                               for h in p["heads"])) else (
            f"recovery_steps needs a head count in heads {short_repr(p['heads'])} that divides d_model = "
            f"{p['d_model']} with d_model / h != head_dim = {p['head_dim']} (the pair it trains longer)")),
        Constraint(("shard",), lambda p: _shard_problem(p["shard"])),
        Constraint(("shard", "results_store"), lambda p: None if (
            p["shard"] is None or p["results_store"] is not None) else (
            f"shard = {short_repr(p['shard'])} needs results_store: the store every shard appends to")),
    ),
    "05_rank_barrier": (
        Constraint(("heads", "heads_d_model"), lambda p: (
            None if max(p["heads"]) <= p["heads_d_model"] else
            f"heads {short_repr([h for h in p['heads'] if h > p['heads_d_model']])} exceed heads_d_model = "
            f"{p['heads_d_model']}: each head needs d_h = heads_d_model // h >= 1")),
        Constraint(("rtols",), _contains("rtols", 0.0, "the default tolerance the tables compare against")),
        Constraint(("scales",), _contains("scales", 1.0, "the standard temperature")),
        *(Constraint((name,), _contains(name, 1, "the chapter's sentences compare every head size with d_h = 1"))
          for name in ("head_dims", "setting_head_dims", "key_head_dims")),
    ),
    "06_rank_saturation": (
        Constraint(("ns",), _distinct_at_least("ns", 3, "the saturation law is fitted across three or more n")),
        Constraint(("max_head_dim",), lambda p: None if p["max_head_dim"] >= 4 else (
            f"max_head_dim = {p['max_head_dim']} must be at least 4: the saturation criteria need head sizes "
            "over two octaves or more, or no n has a saturation point to plot")),
    ),
    "07_trained_attention": (
        Constraint(("minilm_seq_lens", "minilm_counts"), _same_length("minilm_seq_lens", "minilm_counts")),
        Constraint(("truncation_ranks",), _ascending("truncation_ranks")),
        Constraint(("retrieval_head_dims",), _ascending("retrieval_head_dims")),
        Constraint(("retrieval_ns",), _ascending("retrieval_ns")),
        Constraint(("retrieval_min_steps", "retrieval_max_steps"), lambda p: None if p["retrieval_min_steps"] <= p[
            "retrieval_max_steps"] else f"retrieval_min_steps = {p['retrieval_min_steps']} exceeds retrieval_max_steps = "
                                        f"{p['retrieval_max_steps']}"),
        Constraint(("truncation_layer_n", "truncation_ns"), lambda p: None if p["truncation_layer_n"] in p[
            "truncation_ns"] else f"truncation_layer_n = {p['truncation_layer_n']} must be one of truncation_ns"),
        Constraint(("truncation_folds", "truncation_per_class"), lambda p: None if (
            p["truncation_folds"] <= p["truncation_per_class"]) else (
            f"truncation_folds = {p['truncation_folds']} must not exceed truncation_per_class = "
            f"{p['truncation_per_class']} (every fold of the stratified probe needs a document of each topic)")),
    ),
}


def check_constraints(chapter: str, params: Mapping[str, Any]) -> None:
    """Apply the chapter's CONSTRAINTS to a full parameter set; raise ParameterError on the first
    broken one (naming the parameters and what is allowed). Rules whose names are not all in
    ``params`` are skipped (a partial check)."""
    for c in CONSTRAINTS.get(chapter, ()):
        if all(n in params for n in c.names):
            try:
                problem = c.rule(params)
            except (TypeError, ValueError, ZeroDivisionError):
                problem = None  # single-value checks report a value of the wrong type
            if problem:
                err = ParameterError(f"{chapter}: {problem}")
                err.names = c.names
                raise err


# Parameters that name files or folders: "store" a JSONL results file (created or appended; never
# a committed one, lowrank.book.guards), "read_store" an existing results file only read,
# "folder" a folder the run keeps results in (created), "input_folder" an existing folder read,
# "corpus" a corpus name or an existing local path. ``lowrank run`` resolves them against the
# caller's working directory (values from the book's own parameter sets: the book's folder).
PATHS: dict[str, dict[str, str]] = {
    "04_head_size_training": {"results_store": "store", "long_store": "read_store", "corpus": "corpus"},
    "07_trained_attention": {"retrieval_store": "store", "retrieval_long_store": "read_store"},
    "08_synthesis": {"chapters_dir": "input_folder"},
}
# Store parameters whose chapter writes a parameter manifest beside the store
# (lowrank.sweep.write_manifest): a run with other parameters is refused before it starts.
MANIFESTS: dict[str, tuple[str, ...]] = {"04_head_size_training": ("results_store",)}
CORPUS_NAMES = ("shakespeare", "bbcnews")
