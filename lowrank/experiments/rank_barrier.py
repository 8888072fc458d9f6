"""Chapter 05, Min & Li's rank barrier: Monte-Carlo tables of hardmax and softmax ranks under
the theorem's hypotheses and with one hypothesis dropped at a time, the summary table, and
headline(tables) -> every number the chapter glues.

Tables are tidy pandas DataFrames, one row per Monte-Carlo draw (or per measurement). The
closed forms (the coupon-collector bound, the causal law) live in ``lowrank.theory.barrier``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..attention import causal_mask, hardmax, row_softmax
from ..progress import tqdm
from ..rank import hardmax_rank, numerical_rank, rank_label, rank_report
from ..theory.barrier import (counterexample_qk, expected_distinct_columns,
                              expected_distinct_columns_causal, expected_distinct_columns_given)
from ..theory.embeddings import minilm_word_embeddings
from ..theory.sampling import sample_inputs, sample_qk, temperature_scale
from .verdicts import (SIMULATION, CONDITIONAL, CONTRADICTED, INCONCLUSIVE, MIN_LI, REPRODUCED, WEAKER, Claim,
                       Judgement, is_missing, need)
from ..params import Int, Float, Choice, IntList, FloatList, ChoiceList, Constraint, short_repr, contains

MAX_ELEMENTS = 2 ** 24  # per sampled chunk, so a batch of draws fits in a few hundred MB

__all__ = ["estimate", "memory", "MAX_ELEMENTS", "key_set_table", "hardmax_rank_table", "attention_rank_table",
           "head_combination_table", "mean_band", "barrier_verdicts", "run_barrier", "headline",
           "HEADLINE_KEYS", "CLAIMS", "rule_barrier", "rule_rank_rises", "Z95", "FAMILY_LEVEL",
           "NEAR_MARGIN"]


# The chapter's parameters: the notebook's parameters cell sets these names, and
# lowrank.params.validate checks them (and CONSTRAINTS) before anything runs.
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
)
CONSTRAINTS = (
    Constraint(("heads", "heads_d_model"), lambda p: (
        None if max(p["heads"]) <= p["heads_d_model"] else
        f"heads {short_repr([h for h in p['heads'] if h > p['heads_d_model']])} exceed heads_d_model = "
        f"{p['heads_d_model']}: each head needs d_h = heads_d_model // h >= 1")),
    Constraint(("rtols",), contains("rtols", 0.0, "the default tolerance the tables compare against")),
    Constraint(("scales",), contains("scales", 1.0, "the standard temperature")),
    *(Constraint((name,), contains(name, 1, "the chapter's sentences compare every head size with d_h = 1"))
      for name in ("head_dims", "setting_head_dims", "key_head_dims")),
)


def _cell_seed(*keys: int) -> int:
    return int(np.random.SeedSequence([int(k) for k in keys]).generate_state(1)[0])


def key_set_table(n: int, head_dims: Sequence[int], *, n_key_sets: int = 20,
                  n_query_sets: int = 100, seed: int = 0, device="cpu") -> pd.DataFrame:
    """The upper-bound argument checked on sampled key sets, one row per (d_h, key set).

    For each key set K (n x d_h, i.i.d. N(0, 1)) draws ``n_query_sets`` independent query
    sets Q and records: ``mean_rank`` (mean hardmax rank over the query sets, an unbiased
    estimate of E[rank | K]), ``formula`` (sum_j 1 - (1 - p_j)^n with p(K) estimated from the
    same queries), ``max_p`` (the most popular key's share), and ``bound`` = n (1 - (1-1/n)^n).
    """
    rows = []
    for dh in head_dims:
        g = torch.Generator(device=device).manual_seed(_cell_seed(seed, n, dh))
        for k in range(n_key_sets):  # one key set at a time keeps memory at S n (n + d_h)
            K = torch.randn(n, dh, generator=g, device=device, dtype=torch.float32)
            Q = torch.randn(n_query_sets, n, dh, generator=g, device=device, dtype=torch.float32)
            logits = Q @ K.T  # (query sets, n, n)
            win = logits.argmax(-1).reshape(-1)
            p = torch.bincount(win, minlength=n).double().cpu().numpy() / win.numel()
            rows.append({"n": n, "head_dim": int(dh), "key_set": k,
                         "mean_rank": float(hardmax_rank(logits).double().mean()),
                         "formula": expected_distinct_columns_given(p, m=n), "max_p": float(p.max()),
                         "bound": expected_distinct_columns(n)})
    return pd.DataFrame(rows)


def _chunks(n_trials: int, per_draw: int, max_elements: int):
    size = max(1, min(n_trials, max_elements // max(per_draw, 1)))
    start = 0
    while start < n_trials:
        yield start, min(size, n_trials - start)
        start += size


def hardmax_rank_table(ns: Sequence[int], head_dims: Sequence[int], *, n_trials: int | Sequence[int],
                       inputs: str = "orthonormal", causal: bool = False,
                       d_model: int | None = None, seed: int = 0, device="cpu",
                       dtype=torch.float32, max_elements: int = MAX_ELEMENTS,
                       progress: bool = False) -> pd.DataFrame:
    """Exact hardmax rank of sampled attention, one row per (n, d_h, trial).

    Every trial draws its own X, W_q, W_k (independent weights). ``n_trials`` is one int or one
    per n. Hardmax needs only argmaxes, so float32 logits suffice (ties have probability 0).
    Columns: n, head_dim, trial, rank, rank_frac (= rank / n), bound (n (1 - (1-1/n)^n)).
    """
    trials = [n_trials] * len(ns) if isinstance(n_trials, int) else list(n_trials)
    if len(trials) != len(ns) or min(trials) < 1:
        raise ValueError(f"n_trials must be a positive int or one per n, got {n_trials!r} for ns={ns!r}")
    frames = []
    cells = [(n, t, dh) for n, t in zip(ns, trials) for dh in head_dims]
    for n, t, dh in tqdm(cells, disable=not progress, leave=False, desc="hardmax ranks"):
        d = max(d_model or n, n) if inputs == "orthonormal" else (d_model or n)
        ranks = []
        for c, (start, size) in enumerate(_chunks(t, 2 * d * dh + n * n + n * d, max_elements)):
            Q, K = sample_qk(n, dh, batch=size, inputs=inputs, d_model=d_model,
                             independent_weights=True, seed=_cell_seed(seed, n, dh, c),
                             device=device, dtype=dtype)
            logits = Q @ K.transpose(-2, -1)
            if causal:
                # The lowest finite value, not -inf: hardmax_rank rejects non-finite matrices.
                logits = logits.masked_fill(~causal_mask(n, device=logits.device),
                                            torch.finfo(logits.dtype).min)
            ranks.append(hardmax_rank(logits).cpu())
        r = torch.cat(ranks).numpy()
        frames.append(pd.DataFrame({"n": n, "head_dim": int(dh), "trial": np.arange(t), "rank": r,
                                    "rank_frac": r / n, "bound": expected_distinct_columns(n)}))
    return pd.concat(frames, ignore_index=True)


def attention_rank_table(n: int, head_dims: Sequence[int], *, n_trials: int,
                         inputs: str | torch.Tensor = "orthonormal",
                         temperature: str | float = "standard", causal: bool = False,
                         d_model: int | None = None, rtols: Sequence[float | None] = (None, 1e-6, 1e-3),
                         energies: Sequence[float] = (0.99,), seed: int = 0, device="cpu",
                         max_elements: int = MAX_ELEMENTS, progress: bool = False) -> pd.DataFrame:
    """Every rank measure of sampled attention probabilities (float64), long form.

    One row per (d_h, trial, measure, tolerance): columns head_dim, trial, measure, tolerance,
    value, plus the setting (n, inputs, temperature, causal). ``inputs`` may be a tensor of
    given token vectors, (n, d) or (n_trials, n, d), reported as inputs="given".
    """
    given = isinstance(inputs, torch.Tensor)
    if given and inputs.dim() == 3 and inputs.shape[0] != n_trials:
        raise ValueError(f"given inputs have batch {inputs.shape[0]}, expected n_trials={n_trials}")
    frames = []
    for dh in tqdm(list(head_dims), disable=not progress, leave=False, desc="attention ranks"):
        if given:
            d = inputs.shape[-1]
        else:
            d = max(d_model or n, n) if inputs == "orthonormal" else (d_model or n)
        for c, (start, size) in enumerate(_chunks(n_trials, 2 * d * dh + 2 * n * n + n * d,
                                                  max_elements)):
            X = inputs[start:start + size] if given and inputs.dim() == 3 else inputs
            Q, K = sample_qk(n, dh, batch=size, inputs=X, d_model=None if given else d_model,
                             independent_weights=True, seed=_cell_seed(seed, n, dh, c),
                             device=device, dtype=torch.float64)
            probs = _probs(Q @ K.transpose(-2, -1), dh, temperature, causal)
            rep = rank_report(probs, rtols=rtols, energies=energies, long=True)
            rep["trial"] = rep.pop("index") + start
            frames.append(rep.assign(head_dim=int(dh)))
    out = pd.concat(frames, ignore_index=True)
    return out.assign(inputs="given" if given else inputs, temperature=str(temperature),
                      causal=causal)[["n", "head_dim", "trial", "inputs", "temperature", "causal",
                                      "measure", "tolerance", "value"]]


def _probs(raw: torch.Tensor, head_dim: int, temperature, causal: bool) -> torch.Tensor:
    """Attention probabilities from raw Q K^T under a temperature and an optional causal mask."""
    scaled = raw if temperature == "hardmax" else raw * temperature_scale(head_dim, temperature)
    if causal:
        scaled = scaled.masked_fill(~causal_mask(raw.shape[-1], device=raw.device), float("-inf"))
    return hardmax(scaled) if temperature == "hardmax" else row_softmax(scaled)


def head_combination_table(n: int, pairs: Sequence[tuple[int, int]], *, n_trials: int,
                           inputs: str = "orthonormal", d_model: int | None = None,
                           temperature: str | float = "hardmax", seed: int = 0,
                           device="cpu") -> pd.DataFrame:
    """Ranks of h hardmax heads that read the same X, combined two ways, one row per draw.

    pairs: (heads, head_dim) combinations. Per draw it records the mean single-head hardmax
    rank, the numerical rank (default rtol) of the head average (1/h) sum_i A_i, and of the
    stacked [A_1 | ... | A_h] (n x h n), whose column space holds every head's output.
    Columns: heads, head_dim, trial, combination, value.
    """
    rows = []
    for h, dh in pairs:
        Q, K = sample_qk(n, dh, batch=n_trials, inputs=inputs, d_model=d_model, heads=h,
                         independent_weights=True, seed=_cell_seed(seed, n, h, dh), device=device,
                         dtype=torch.float64)
        A = _probs(Q @ K.transpose(-2, -1), dh, temperature, False)  # (trials, h, n, n)
        single = (hardmax_rank(A).double().mean(-1) if temperature == "hardmax"
                  else numerical_rank(A).double().mean(-1))
        mean = numerical_rank(A.mean(1))
        stacked = numerical_rank(A.transpose(1, 2).reshape(n_trials, n, h * n))
        for name, v in (("one head", single), ("head average", mean), ("heads stacked", stacked)):
            rows += [{"heads": h, "head_dim": dh, "trial": t, "combination": name,
                      "value": float(v[t])} for t in range(n_trials)]
    return pd.DataFrame(rows)


def mean_band(table: pd.DataFrame, *, by: Sequence[str], value: str, z: float = 1.96) -> pd.DataFrame:
    """Mean of ``value`` per group with a normal-theory band mean +- z * standard error.

    Columns: the ``by`` columns, mean, se, lo, hi, draws (one row per group, sorted).
    """
    g = table.groupby(list(by))[value]
    out = g.agg(mean="mean", se="sem", draws="count").reset_index()
    # one draw gives no standard error: se (and the band) stay NaN, never 0
    out["lo"], out["hi"] = out["mean"] - z * out["se"], out["mean"] + z * out["se"]
    return out


def barrier_verdicts(table: pd.DataFrame, *, value: str = "value", by: str = "setting",
                     z: float = 1.96, margin: float | None = None) -> pd.DataFrame:
    """Is the bound n (1 - (1-1/n)^n) respected, and is it nearly attained, per setting?

    table: one row per draw with columns ``by``, n, ``value`` (a rank), and optionally
    ``group`` (the hypothesis the setting drops), carried through. Columns: group (if given),
    setting, n, draws, rank_frac (mean rank / n), se_frac (NaN for one draw), lo_frac, hi_frac
    (mean +- z se), bound_frac, respected (the mean is <= the bound within its interval:
    mean - z se <= bound) and near (|mean - bound| <= margin n, margin = NEAR_MARGIN by default).
    """
    margin = NEAR_MARGIN if margin is None else margin
    rows = []
    for key, sub in table.groupby(by, sort=False):
        if sub["n"].nunique() != 1:
            raise ValueError(f"setting {key!r} mixes sequence lengths {sorted(sub['n'].unique())}")
        n = int(sub["n"].iloc[0])
        v = sub[value].to_numpy(dtype=np.float64)
        se = v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else float("nan")
        half = z * se if np.isfinite(se) else 0.0
        bound = expected_distinct_columns(n)
        row = {"group": sub["group"].iloc[0]} if "group" in sub else {}
        row.update({"setting": key, "n": n, "draws": len(v), "rank_frac": v.mean() / n, "se_frac": se / n,
                    "lo_frac": (v.mean() - half) / n, "hi_frac": (v.mean() + half) / n, "bound_frac": bound / n,
                    "respected": bool(v.mean() - half <= bound),
                    "near": bool(abs(v.mean() - bound) <= margin * n)})
        rows.append(row)
    return pd.DataFrame(rows)


# --- chapter 05 ----------------------------------------------------------------------------

DEFAULT_TOL = "rtol=max(m,n)eps"  # the label rank_report gives torch's default tolerance


def _rtols(rtols: Sequence[float]) -> list[float | None]:
    """Parameter tolerances (0 = torch's default) as rank_report takes them (None = default)."""
    return [None if r == 0 else r for r in rtols]


def _tol_key(rtol: float | None) -> str:
    return f"numerical_rank[{DEFAULT_TOL if rtol is None else f'rtol={rtol:g}'}]"


def run_barrier(P: Mapping[str, Any], *, progress: bool = False) -> dict[str, Any]:
    """Every computation of chapter 05 at parameters P; returns its tables by name.

    coupon (bound per n), keys (key-set check), sweep/band (hardmax in the theorem's setting),
    temps/num/band_t (temperature), std/band_tol (tolerance), by_input/band_in (inputs),
    causal/band_c/soft_num/band_cs (causal mask), counter (Q = K = X), multi/band_h (heads),
    summary (one row per setting), and P itself.
    """
    dev, seed = P["device"], P["seed"]
    ns = list(P["ns"])
    rtols = _rtols(P["rtols"])
    n_s, T_s, dhs = P["n_setting"], P["setting_trials"], list(P["setting_head_dims"])
    out: dict[str, Any] = {"P": dict(P)}
    out["coupon"] = pd.DataFrame({"n": ns, "n(1-(1-1/n)^n)": expected_distinct_columns(np.array(ns)),
                                  "(1-1/e) n": expected_distinct_columns(np.array(ns), limit=True)})
    out["keys"] = key_set_table(P["key_set_n"], P["key_head_dims"], n_key_sets=P["key_sets"],
                                n_query_sets=P["query_sets"], seed=seed, device=dev)
    sweep = hardmax_rank_table(ns, P["head_dims"], n_trials=P["n_trials"], seed=seed, device=dev,
                               progress=progress)
    out["sweep"], out["band"] = sweep, mean_band(sweep, by=["n", "head_dim"], value="rank_frac")
    # temperature: softmax of k Q K^T / sqrt(d_h) at every k, and hardmax
    temps = [attention_rank_table(n_s, dhs, n_trials=T_s, temperature=k, rtols=rtols,
                                  energies=(P["energy"],), seed=seed, device=dev) for k in P["scales"]]
    temps.append(attention_rank_table(n_s, dhs, n_trials=T_s, temperature="hardmax", rtols=(None,),
                                      energies=(), seed=seed, device=dev))
    temps = pd.concat(temps, ignore_index=True)
    num = temps[(temps.measure == "numerical_rank") & (temps.tolerance == DEFAULT_TOL)]
    out["temps"], out["num"] = temps, num
    out["band_t"] = mean_band(num.assign(frac=num["value"] / n_s), by=["temperature", "head_dim"], value="frac")
    # tolerance: the same draws at the standard temperature, several measures
    std = temps[temps.temperature == str(P["scales"][0])].copy()
    std["label"] = [f"{m}[{t}]" if t else m for m, t in zip(std["measure"], std["tolerance"])]
    keep = [_tol_key(r) for r in rtols] + [f"energy_rank[energy={P['energy']:g}]"]
    std = std[std["label"].isin(keep)]
    out["std"], out["tol_labels"] = std, keep
    out["band_tol"] = mean_band(std.assign(frac=std["value"] / n_s), by=["label", "head_dim"], value="frac")
    # input distribution (hardmax)
    frames = []
    for name in P["inputs"]:
        given = minilm_word_embeddings(n_s, batch=T_s, seed=seed) if name == "minilm" else name
        t = attention_rank_table(n_s, dhs, n_trials=T_s, inputs=given, temperature="hardmax", rtols=(None,),
                                 energies=(), d_model=None if name == "minilm" else P["d_model"], seed=seed,
                                 device=dev)
        frames.append(t[t.measure == "hardmax_rank"].assign(inputs=name))
    by_input = pd.concat(frames, ignore_index=True)
    out["by_input"] = by_input
    out["band_in"] = mean_band(by_input.assign(frac=by_input["value"] / n_s), by=["inputs", "head_dim"],
                               value="frac")
    # causal mask
    causal = hardmax_rank_table(ns, P["head_dims"], n_trials=P["n_trials"], causal=True, seed=seed, device=dev)
    soft_c = attention_rank_table(n_s, dhs, n_trials=T_s, causal=True, rtols=rtols, energies=(), seed=seed,
                                  device=dev)
    soft_num = soft_c[(soft_c.measure == "numerical_rank") & (soft_c.tolerance == DEFAULT_TOL)]
    out["causal"], out["soft_num"] = causal, soft_num
    out["band_c"] = mean_band(causal, by=["n", "head_dim"], value="rank_frac")
    out["band_cs"] = mean_band(soft_num.assign(frac=soft_num["value"] / n_s), by=["head_dim"], value="frac")
    # the reviewers' counterexample
    rows = []
    for d in (2, 8, 64):
        X = sample_inputs(n_s, d, batch=T_s, inputs="sphere", seed=seed + d)
        for shift, name in ((0, "Q = K = X"), (1, "Q = X shifted by one token")):
            Q, K = counterexample_qk(X, shift=shift)
            r = hardmax_rank(Q @ K.transpose(-2, -1)).double()
            rows.append({"construction": name, "d": d, "hardmax rank / n": float(r.mean() / n_s)})
    out["counter"] = pd.DataFrame(rows)
    # heads
    pairs = [(h, P["heads_d_model"] // h) for h in P["heads"] if P["heads_d_model"] // h >= 1]
    multi = head_combination_table(n_s, pairs, n_trials=T_s, seed=seed, device=dev)
    out["multi"], out["pairs"] = multi, pairs
    out["band_h"] = mean_band(multi.assign(frac=multi["value"] / n_s), by=["combination", "heads"], value="frac")
    out["summary"] = _summary(out)
    return out


GROUPS = ("none (the theorem's setting)", "temperature", "tolerance", "input distribution",
          "weight structure", "mask", "heads")


def _summary(t: Mapping[str, Any]) -> pd.DataFrame:
    """One row per setting at the largest settings d_h (n = n_setting), grouped by the hypothesis
    of the theorem that the setting drops: is the bound respected, is it nearly attained?"""
    P = t["P"]
    n_s, T_s = P["n_setting"], P["setting_trials"]
    dmax = max(P["setting_head_dims"])
    hmax = max(h for h, _ in t["pairs"])

    def pick(tab, **kw):
        mask = tab.head_dim == dmax
        for k, v in kw.items():
            mask &= tab[k] == v
        return tab[mask]

    by_input, num, std, causal, soft_num, multi, counter = (t[k] for k in (
        "by_input", "num", "std", "causal", "soft_num", "multi", "counter"))
    keep = t["tol_labels"]
    g = dict(enumerate(GROUPS))
    rows = [
        (g[0], "hardmax, orthonormal tokens, Gaussian weights", pick(by_input, inputs="orthonormal")["value"]),
        *[(g[1], f"softmax k = {k:g}, numerical rank (default rtol)", pick(num, temperature=str(k))["value"]) for k in P["scales"]],
        *[(g[2], f"softmax k = {P['scales'][0]:g}, {lab.replace('_', ' ').replace('[', ' (').replace(']', ')')}",
           pick(std, label=lab)["value"]) for lab in keep[1:]],
        *[(g[3], f"hardmax, {name} tokens", pick(by_input, inputs=name)["value"]) for name in P["inputs"] if name != "orthonormal"],
        *[(g[4], f"hardmax, {c} (unit tokens, d = 64)", pd.Series([n_s] * T_s, dtype=float)
           * counter[(counter.construction == c) & (counter.d == counter.d.max())]["hardmax rank / n"].iloc[0])
          for c in ("Q = K = X", "Q = X shifted by one token")],
        (g[5], "causal hardmax", pick(causal[causal.n == n_s].rename(columns={"rank": "value"}))["value"]),
        (g[5], "causal softmax k = 1, numerical rank (default rtol)", pick(soft_num)["value"]),
        (g[6], f"{hmax} hardmax heads stacked, numerical rank (default rtol)", multi[(multi.heads == hmax) & (multi.combination == "heads stacked")]["value"]),
        (g[6], f"{hmax} hardmax heads averaged, numerical rank (default rtol)", multi[(multi.heads == hmax) & (multi.combination == "head average")]["value"]),
    ]
    return barrier_verdicts(pd.concat([pd.DataFrame({"group": grp, "setting": s, "n": n_s, "value": v.to_numpy()})
                                       for grp, s, v in rows]))


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary as the page shows it: readable columns, intervals as text, no NaN."""
    out = pd.DataFrame({
        "hypothesis dropped": summary["group"].where(summary["group"] != summary["group"].shift(), ""),
        "setting": summary["setting"],
        "rank / n [95% interval]": [f"{m:.3f} [{lo:.3f}, {hi:.3f}]" if np.isfinite(se) and se > 0 else
                                    f"{m:.3f} (one draw)" if not np.isfinite(se) else f"{m:.3f} (every draw)"
                                    for m, lo, hi, se in zip(summary["rank_frac"], summary["lo_frac"], summary["hi_frac"],
                                                             summary["se_frac"])],
        "draws": summary["draws"],
        "bound / n": summary["bound_frac"].map(lambda v: f"{v:.3f}"),
        "bound respected": summary["respected"].map({True: "yes", False: "no"}),
        f"near the bound (within {NEAR_MARGIN:g} n)": summary["near"].map({True: "yes", False: "no"}),
    })
    return out


HEADLINE_KEYS = (
    "ch05_bound_frac_nmax", "ch05_nmax", "ch05_query_sets", "ch05_key_n", "ch05_key_max_formula_frac",
    "ch05_key_max_gap", "ch05_key_maxp_d1", "ch05_key_maxp_dmax", "ch05_n_trials", "ch05_cells",
    "ch05_cells_above", "ch05_max_excess_se", "ch05_draws_above", "ch05_draws", "ch05_dhmax",
    "ch05_frac_dhmax_list", "ch05_frac_dhmax_nmax", "ch05_frac_dh1_nmax", "ch05_n_setting",
    "ch05_setting_trials", "ch05_temp_standard", "ch05_temp_coldest", "ch05_temp_coldest_k",
    "ch05_temp_hardmax", "ch05_temp_coldest_d1", "ch05_tol_default", "ch05_tol_coarse",
    "ch05_tol_coarse_rtol", "ch05_tol_energy", "ch05_temp_standard_k", "ch05_d_model",
    "ch05_in_orthonormal", "ch05_in_gaussian", "ch05_in_sphere", "ch05_in_anisotropic", "ch05_in_minilm",
    "ch05_causal_frac_nmax", "ch05_causal_law_nmax", "ch05_causal_soft_min", "ch05_causal_soft_full",
    "ch05_causal_soft_mean", "ch05_counter_min", "ch05_heads_d_model", "ch05_heads_max", "ch05_heads_one",
    "ch05_heads_avg", "ch05_heads_stacked", "ch05_settings_hold", "ch05_settings_total",
    "ch05_inside_cells", "ch05_inside_max_z", "ch05_bonferroni_z", "ch05_inside_gap", "ch05_near_margin",
    "ch05_outside_rows", "ch05_outside_broken_rows", "ch05_outside_near_rows", "ch05_outside_broken",
    "ch05_frac_dh1_nmax_se", "ch05_frac_dhmax_nmax_se", "ch05_verdict_barrier", "ch05_verdict_barrier_evidence",
    "ch05_verdict_rises", "ch05_verdict_rises_evidence",
)
_INPUTS = ("orthonormal", "gaussian", "sphere", "anisotropic", "minilm")


def headline(t: Mapping[str, Any]) -> dict[str, Any]:
    """Every number chapter 05 glues, from the tables of run_barrier; keys are HEADLINE_KEYS."""
    P = t["P"]
    ns, n_s, dhs = list(P["ns"]), P["n_setting"], list(P["setting_head_dims"])
    nmax, dmax = ns[-1], max(dhs)
    keys, sweep, band = t["keys"], t["sweep"], t["band"]
    H: dict[str, Any] = {}
    H["ch05_bound_frac_nmax"] = float(expected_distinct_columns(nmax) / nmax)
    H["ch05_nmax"] = int(nmax)
    H["ch05_query_sets"] = int(P["query_sets"])
    H["ch05_key_n"] = int(P["key_set_n"])
    H["ch05_key_max_formula_frac"] = float((keys["formula"] / keys["bound"]).max())
    H["ch05_key_max_gap"] = float((keys["mean_rank"] - keys["formula"]).abs().max())
    H["ch05_key_maxp_d1"] = float(keys.loc[keys.head_dim == min(P["key_head_dims"]), "max_p"].mean())
    H["ch05_key_maxp_dmax"] = float(keys.loc[keys.head_dim == max(P["key_head_dims"]), "max_p"].mean())
    cells = sweep.groupby(["n", "head_dim"])["rank"].agg(["mean", "sem", "max"]).reset_index()
    cells["bound"] = expected_distinct_columns(cells["n"].to_numpy())
    excess = (cells["mean"] - cells["bound"]) / cells["sem"].where(cells["sem"] > 0)
    top = band[band.head_dim == max(P["head_dims"])].set_index("n")
    H["ch05_n_trials"] = int(P["n_trials"])
    H["ch05_cells"] = len(cells)
    H["ch05_cells_above"] = int((excess > 1.96).sum())
    H["ch05_max_excess_se"] = float(excess.max())
    H["ch05_draws_above"] = int((sweep["rank"] > sweep["bound"]).sum())
    H["ch05_draws"] = len(sweep)
    H["ch05_dhmax"] = int(max(P["head_dims"]))
    H["ch05_frac_dhmax_list"] = ", ".join(f"{top.loc[n, 'mean']:.3f} n at n = {n}" for n in ns)
    H["ch05_frac_dhmax_nmax"] = float(top.loc[nmax, "mean"])
    H["ch05_frac_dh1_nmax"] = float(band[(band.n == nmax) & (band.head_dim == min(P["head_dims"]))]["mean"].iloc[0])
    H["ch05_n_setting"] = int(n_s)
    H["ch05_setting_trials"] = int(P["setting_trials"])
    band_t = t["band_t"]
    last = band_t[band_t.head_dim == dmax].set_index("temperature")["mean"]
    H["ch05_temp_standard"] = float(last[str(P["scales"][0])])
    H["ch05_temp_coldest"] = float(last[str(P["scales"][-1])])
    H["ch05_temp_coldest_k"] = float(P["scales"][-1])
    H["ch05_temp_hardmax"] = float(last["hardmax"])
    H["ch05_temp_coldest_d1"] = float(band_t[(band_t.temperature == str(P["scales"][-1]))
                                             & (band_t.head_dim == min(dhs))]["mean"].iloc[0])
    keep, band_tol = t["tol_labels"], t["band_tol"]
    tol_last = band_tol[band_tol.head_dim == dmax].set_index("label")["mean"]
    H["ch05_tol_default"] = float(tol_last[keep[0]])
    H["ch05_tol_coarse"] = float(tol_last[keep[-2]])
    H["ch05_tol_coarse_rtol"] = float(_rtols(P["rtols"])[-1] or 0.0)
    H["ch05_tol_energy"] = float(tol_last[keep[-1]])
    H["ch05_temp_standard_k"] = float(P["scales"][0])
    H["ch05_d_model"] = int(P["d_model"])
    band_in = t["band_in"]
    in_last = band_in[band_in.head_dim == dmax].set_index("inputs")["mean"]
    for name in _INPUTS:
        H[f"ch05_in_{name}"] = float(in_last[name]) if name in in_last.index else float("nan")
    band_c, soft_num = t["band_c"], t["soft_num"]
    c_top = band_c[band_c.head_dim == max(P["head_dims"])].set_index("n")["mean"]
    H["ch05_causal_frac_nmax"] = float(c_top[nmax])
    H["ch05_causal_law_nmax"] = float(expected_distinct_columns_causal(nmax) / nmax)
    H["ch05_causal_soft_min"] = int(soft_num["value"].min())
    H["ch05_causal_soft_full"] = float((soft_num["value"] == n_s).mean())
    H["ch05_causal_soft_mean"] = float(soft_num["value"].mean() / n_s)
    H["ch05_counter_min"] = float(t["counter"]["hardmax rank / n"].min())
    hmax = max(h for h, _ in t["pairs"])
    h_last = t["band_h"][t["band_h"].heads == hmax].set_index("combination")["mean"]
    H["ch05_heads_d_model"] = int(P["heads_d_model"])
    H["ch05_heads_max"] = int(hmax)
    H["ch05_heads_one"] = float(h_last["one head"])
    H["ch05_heads_avg"] = float(h_last["head average"])
    H["ch05_heads_stacked"] = float(h_last["heads stacked"])
    summ = t["summary"]
    H["ch05_settings_hold"] = int(summ["respected"].sum())
    H["ch05_settings_total"] = len(summ)
    # the claim's evidence: inside the hypotheses (the main sweep), then the settings that drop one
    H["ch05_inside_cells"] = len(cells)
    H["ch05_inside_max_z"] = float(excess.max()) if excess.notna().any() else float("nan")
    H["ch05_bonferroni_z"] = _bonferroni_z(len(cells))
    bound_n = expected_distinct_columns(top.index.to_numpy()) / top.index.to_numpy()
    H["ch05_inside_gap"] = float((bound_n - top["mean"].to_numpy()).max())
    H["ch05_near_margin"] = NEAR_MARGIN
    out = summ[summ["group"] != GROUPS[0]]
    H["ch05_outside_rows"] = len(out)
    H["ch05_outside_broken_rows"] = int((~out["respected"]).sum())
    H["ch05_outside_near_rows"] = int(out["near"].sum())
    broken = [f"{grp} ({int((~sub.respected).sum())} of {len(sub)} settings)"
              for grp, sub in out.groupby("group", sort=False) if (~sub["respected"]).any()]
    H["ch05_outside_broken"] = "; ".join(broken) if broken else "no dropped hypothesis"
    se_top = band[band.head_dim == max(P["head_dims"])].set_index("n")["se"]
    se_d1 = band[(band.n == nmax) & (band.head_dim == min(P["head_dims"]))]["se"].iloc[0]
    H["ch05_frac_dh1_nmax_se"] = float(se_d1)
    H["ch05_frac_dhmax_nmax_se"] = float(se_top[nmax])
    for key, claim in (("barrier", CLAIMS[0]), ("rises", CLAIMS[1])):
        j = claim.judge(H)
        H[f"ch05_verdict_{key}"], H[f"ch05_verdict_{key}_evidence"] = j.label, j.evidence
    return H


# --- claims and their rules (registered in the rules ledger) ---------------------------------

# Two-sided 95 % normal interval for one mean (draws are independent).
Z95 = 1.96
# Family-wise level when many (n, d_h) cells are each tested against the bound: Bonferroni
# over the cells, so that 48 honest cells do not produce a "violation" by chance alone.
FAMILY_LEVEL = 0.05
# "About 0.63 n": a mean counts as near the bound when it lies within 0.05 n of it (8 % of
# the bound), fixed before the data as the precision the word "about" can carry.
NEAR_MARGIN = 0.05


def _bonferroni_z(cells: int) -> float:
    from statistics import NormalDist
    return NormalDist().inv_cdf(1 - FAMILY_LEVEL / 2 / max(int(cells), 1))


def rule_barrier(h: Mapping[str, Any]) -> Judgement:
    """Inside the theorem's hypotheses (hardmax, orthonormal tokens, Gaussian weights, one head),
    contradicted if any (n, d_h) cell's mean hardmax rank exceeds n(1-(1-1/n)^n) beyond its
    Bonferroni 95 % interval; reproduced in a weaker form (an upper bound only) if the largest
    d_h stays more than 0.05 n below it; otherwise holds only under stated conditions when some
    setting that drops a hypothesis exceeds the bound, and reproduced if none does.

    Inconclusive when a cell has fewer than two draws (no standard error).
    """
    cells, max_z = need(h, "ch05_inside_cells"), need(h, "ch05_inside_max_z")
    draws, gap = need(h, "ch05_n_trials"), need(h, "ch05_inside_gap")
    broken = need(h, "ch05_outside_broken")
    rows, n_broken = need(h, "ch05_outside_rows"), need(h, "ch05_outside_broken_rows")
    z_crit = _bonferroni_z(cells)
    evidence = (f"{cells} (n, d_h) cells in the theorem's setting, {draws} draws each: largest excess "
                f"over the bound {max_z:+.2f} standard errors (Bonferroni limit {z_crit:.2f}); at the "
                f"largest d_h the mean is at most {gap:.3f} n below the bound; "
                f"{n_broken} of {rows} settings outside the hypotheses exceed it")
    if draws < 2 or is_missing(max_z) or is_missing(gap):
        return Judgement(INCONCLUSIVE, evidence, "one draw per cell gives no standard error; "
                         "the smallest detectable excess is undefined")
    if max_z > z_crit:
        return Judgement(CONTRADICTED, evidence)
    if gap > NEAR_MARGIN:
        return Judgement(WEAKER, evidence, f"an upper bound on the mean that the rank stays more than "
                         f"{NEAR_MARGIN:g} n below, not a value it attains")
    if n_broken > 0:
        return Judgement(CONDITIONAL, evidence,
                         f"hardmax attention with random Gaussian weights and one head; the bound fails "
                         f"when dropping {broken}")
    return Judgement(REPRODUCED, evidence)


def rule_rank_rises(h: Mapping[str, Any]) -> Judgement:
    """At the largest n, reproduced if the mean hardmax rank at the largest d_h exceeds that at
    d_h = 1 beyond a 95 % interval and lies within 0.05 n of the bound; reproduced in a weaker
    form if it rises but stays farther below; contradicted if it falls beyond the interval;
    inconclusive otherwise.
    """
    lo_v, lo_se = need(h, "ch05_frac_dh1_nmax"), need(h, "ch05_frac_dh1_nmax_se")
    hi_v, hi_se = need(h, "ch05_frac_dhmax_nmax"), need(h, "ch05_frac_dhmax_nmax_se")
    bound, n, dh = need(h, "ch05_bound_frac_nmax"), need(h, "ch05_nmax"), need(h, "ch05_dhmax")
    draws = need(h, "ch05_n_trials")
    evidence = (f"n = {n}, {draws} draws per point: hardmax rank {lo_v:.3f} n (s.e. {lo_se:.3f}) at "
                f"d_h = 1, {hi_v:.3f} n (s.e. {hi_se:.3f}) at d_h = {dh}; bound {bound:.3f} n")
    se = math.hypot(lo_se, hi_se) if not (is_missing(lo_se) or is_missing(hi_se)) else float("nan")
    if is_missing(se):
        return Judgement(INCONCLUSIVE, evidence, "one draw per point gives no standard error")
    rise = hi_v - lo_v
    if rise < -Z95 * se:
        return Judgement(CONTRADICTED, evidence)
    if rise <= Z95 * se:
        return Judgement(INCONCLUSIVE, evidence, f"a rise smaller than {Z95 * se:.3f} n is not detectable")
    if bound - hi_v > NEAR_MARGIN:
        return Judgement(WEAKER, evidence, f"the rank rises with d_h but stays more than {NEAR_MARGIN:g} n "
                         f"below the bound up to d_h = {dh}")
    return Judgement(REPRODUCED, evidence)


CLAIMS: tuple[Claim, ...] = (
    Claim("barrier", MIN_LI, "05", "sec-ch05-summary",
          "Low-rank barrier: the mean rank of random (hardmax) attention is at most about "
          "n(1-(1-1/n)^n) -> 0.63 n, whatever d_h", rule_barrier,
          kind=SIMULATION, where="Theorem 1 (as the reviewers describe it)"),
    Claim("rank-rises", MIN_LI, "05", "sec-ch05-monte-carlo",
          "The rank rises with the head size toward the barrier", rule_rank_rises,
          kind=SIMULATION, where="abstract; Fig. 2"),
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
    heads = len(p["heads"]) * T * (2 + 2 * max(p["heads"]))  # head average and stacked SVDs per draw
    svd += heads * ns ** 3
    draws = 2 * p["n_trials"] * len(p["ns"]) * len(p["head_dims"])
    return {"hardmax": hard, "svd": svd}, f"{draws:,} hardmax draws and the settings sweeps"


def memory(p) -> float:
    """Bytes of the largest arrays: the Monte Carlo runs in blocks of 2^25 float64 entries."""
    return 8.0 * 2 ** 25
