"""Min & Li's rank barrier near (1 - 1/e) n and its saturation in d_h, computed.

Hardmax attention (zero temperature) is a 0/1 matrix with one 1 per row, so its rank is the
number of distinct columns that hold a row maximum. Under Min & Li's assumptions (orthonormal
X, Gaussian W_q, W_k) Q and K have i.i.d. N(0, 1) entries; given K the rows of Q are i.i.d.,
so the row argmaxes are i.i.d. draws from a column distribution p(K), and

    E[rank | K] = sum_j 1 - (1 - p_j)^n  <=  n (1 - (1 - 1/n)^n)  ->  (1 - 1/e) n,

the inequality by concavity (Jensen), with equality at uniform p. This module holds the
closed forms, the Monte-Carlo tables behind chapters 05 and 06, the saturation-point
extraction and the log n vs power-law fits with bootstrap uncertainty.

Tables are tidy pandas DataFrames, one row per Monte-Carlo draw (or per measurement).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm  # the plain bar: tqdm.auto warns on stderr in kernels without ipywidgets

from ..attention import causal_mask, hardmax, row_softmax
from ..rank import hardmax_rank, numerical_rank, rank_report
from .sampling import sample_qk, temperature_scale

BARRIER_FRACTION = 1.0 - math.exp(-1.0)
MAX_ELEMENTS = 2 ** 24  # per sampled chunk, so a batch of draws fits in a few hundred MB

__all__ = [
    "BARRIER_FRACTION", "expected_distinct_columns", "expected_distinct_columns_given",
    "expected_distinct_columns_causal", "argmax_column_distribution", "key_set_table",
    "hardmax_rank_table", "attention_rank_table", "head_combination_table", "counterexample_qk",
    "saturation_points", "saturation_bootstrap", "fit_saturation", "head_dim_grid",
    "barrier_verdicts", "mean_band",
]


def _positive_ints(n, name: str = "n") -> np.ndarray:
    arr = np.asarray(n)
    if arr.size == 0 or not np.issubdtype(arr.dtype, np.number) or np.any(arr < 1) \
            or np.any(arr != np.floor(arr)):
        raise ValueError(f"{name} must be a positive integer or an array of them, got {n!r}")
    return arr.astype(np.float64)


def _scalar_or_array(values: np.ndarray, like):
    return float(values) if np.ndim(like) == 0 else values


def expected_distinct_columns(n, *, limit: bool = False):
    """n (1 - (1 - 1/n)^n), the expected number of distinct values in n uniform draws from n.

    Vectorised over n (a scalar gives a float). ``limit=True`` gives (1 - 1/e) n instead.
    Computed as -n expm1(n log1p(-1/n)) so it stays exact to rounding for large n.
    """
    nn = _positive_ints(n)
    if limit:
        return _scalar_or_array(BARRIER_FRACTION * nn, n)
    with np.errstate(divide="ignore"):  # n = 1: log1p(-1) = -inf, expm1(-inf) = -1, exact
        return _scalar_or_array(-nn * np.expm1(nn * np.log1p(-1.0 / nn)), n)


def expected_distinct_columns_given(p, *, m: int | None = None):
    """sum_j 1 - (1 - p_j)^m: expected distinct columns when m rows pick columns i.i.d. from p.

    p: (..., n), non-negative, each row summing to 1; m defaults to n (square attention).
    Returns shape (...) (a float for a single distribution). Maximised by uniform p.
    """
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim == 0 or arr.shape[-1] == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("p must be a non-empty array (..., n) of finite non-negative probabilities")
    if not np.allclose(arr.sum(-1), 1.0, atol=1e-9):
        raise ValueError(f"each distribution p must sum to 1, got sums {arr.sum(-1)!r}")
    m = arr.shape[-1] if m is None else m
    if isinstance(m, bool) or int(m) != m or m < 1:
        raise ValueError(f"m must be a positive int, got {m!r}")
    with np.errstate(divide="ignore"):  # p_j = 1 gives log1p(-1) = -inf, which is exact
        out = -np.expm1(m * np.log1p(-np.minimum(arr, 1.0))).sum(-1)
    return float(out) if out.ndim == 0 else out


def expected_distinct_columns_causal(n):
    """(n + 1) / 2: expected distinct columns when row i picks uniformly among columns 1..i.

    Column j is missed with probability prod_{i >= j} (1 - 1/i) = (j - 1) / n, and
    sum_j (1 - (j - 1) / n) = (n + 1) / 2. This is the causal hardmax model. Vectorised over n.
    """
    nn = _positive_ints(n)
    return _scalar_or_array((nn + 1.0) / 2.0, n)


def _cell_seed(*keys: int) -> int:
    return int(np.random.SeedSequence([int(k) for k in keys]).generate_state(1)[0])


def argmax_column_distribution(K: torch.Tensor, *, n_queries: int = 10_000, seed: int = 0,
                               chunk: int = 4096) -> torch.Tensor:
    """Monte-Carlo estimate of p(K): the probability that key j wins argmax_j q . k_j, q ~ N(0, I).

    K: (..., n, d_h). Returns (..., n) frequencies over ``n_queries`` Gaussian queries.
    """
    if K.dim() < 2 or n_queries < 1:
        raise ValueError(f"K must be (..., n, d_h) and n_queries >= 1, got shape {tuple(K.shape)}, "
                         f"n_queries={n_queries}")
    *batch, n, dh = K.shape
    Kf = K.reshape(-1, n, dh)
    g = torch.Generator(device=K.device).manual_seed(int(seed))
    counts = torch.zeros(Kf.shape[0], n, dtype=torch.float64, device=K.device)
    done = 0
    while done < n_queries:
        take = min(chunk, n_queries - done)
        q = torch.randn(Kf.shape[0], take, dh, generator=g, device=K.device, dtype=K.dtype)
        win = (q @ Kf.transpose(-2, -1)).argmax(-1)  # (B, take)
        counts.scatter_add_(1, win, torch.ones_like(win, dtype=torch.float64))
        done += take
    return (counts / n_queries).reshape(*batch, n)


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


def counterexample_qk(X: torch.Tensor, *, shift: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Reviewer counterexamples (R25 Reviewer 2): K = X and Q = X rolled by ``shift`` rows.

    X: (..., n, d) with distinct unit-norm rows. shift=0 gives Q = K = X, whose hardmax is the
    identity (x_i . x_j < 1 = x_i . x_i by Cauchy-Schwarz); shift=1 makes token i attend to
    token i - 1 (cyclically), a permutation. Both are full rank n for any d, far above 0.63 n.
    """
    norms = X.norm(dim=-1)
    if not torch.allclose(norms, torch.ones_like(norms), atol=1e-6):
        raise ValueError("counterexample_qk needs unit-norm rows of X")
    return torch.roll(X, shifts=shift, dims=-2), X


def mean_band(table: pd.DataFrame, *, by: Sequence[str], value: str, z: float = 1.96) -> pd.DataFrame:
    """Mean of ``value`` per group with a normal-theory band mean +- z * standard error.

    Columns: the ``by`` columns, mean, se, lo, hi, draws (one row per group, sorted).
    """
    g = table.groupby(list(by))[value]
    out = g.agg(mean="mean", se="sem", draws="count").reset_index()
    out["se"] = out["se"].fillna(0.0)
    out["lo"], out["hi"] = out["mean"] - z * out["se"], out["mean"] + z * out["se"]
    return out


def barrier_verdicts(table: pd.DataFrame, *, value: str = "value", by: str = "setting",
                     z: float = 1.96) -> pd.DataFrame:
    """Does the (1 - 1/e) n barrier hold, per setting? One row per value of ``by``.

    table: one row per draw with columns ``by``, n, ``value`` (a rank). A setting breaks the
    barrier when its mean rank exceeds n (1 - (1-1/n)^n) by more than z standard errors.
    Columns: setting, n, draws, rank_frac (mean rank / n), se_frac, bound_frac, holds.
    """
    rows = []
    for key, sub in table.groupby(by, sort=False):
        if sub["n"].nunique() != 1:
            raise ValueError(f"setting {key!r} mixes sequence lengths {sorted(sub['n'].unique())}")
        n = int(sub["n"].iloc[0])
        v = sub[value].to_numpy(dtype=np.float64)
        se = v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else float("nan")
        bound = expected_distinct_columns(n)
        rows.append({"setting": key, "n": n, "draws": len(v), "rank_frac": v.mean() / n,
                     "se_frac": se / n, "bound_frac": bound / n,
                     "holds": bool(v.mean() - z * (se if np.isfinite(se) else 0.0) <= bound)})
    return pd.DataFrame(rows)


# --- saturation in d_h ------------------------------------------------------------------

def head_dim_grid(max_head_dim: int, points_per_octave: int = 4) -> list[int]:
    """Distinct head sizes round(2^(k / points_per_octave)) from 1 to max_head_dim (inclusive)."""
    if max_head_dim < 1 or points_per_octave < 1:
        raise ValueError(f"need max_head_dim >= 1 and points_per_octave >= 1, got {max_head_dim}, "
                         f"{points_per_octave}")
    top = int(math.floor(points_per_octave * math.log2(max_head_dim) + 1e-9))
    return sorted({int(round(2 ** (k / points_per_octave))) for k in range(top + 1)})


def _log_crossing(d: np.ndarray, y: np.ndarray, level: float, *, rising: bool = True) -> float:
    """First d where y crosses ``level`` (upward if rising), interpolated linearly in log d."""
    hit = y >= level if rising else y < level
    if not hit.any():
        return float("nan")
    i = int(np.argmax(hit))
    if i == 0:
        return float(d[0])
    y0, y1 = y[i - 1], y[i]
    t = (level - y0) / (y1 - y0) if y1 != y0 else 1.0
    return float(np.exp(np.log(d[i - 1]) + t * (np.log(d[i]) - np.log(d[i - 1]))))


def _curve_points(d: np.ndarray, r: np.ndarray, ref: float, fractions, increment: float) -> list:
    """Crossings of fractions of ``ref`` and the relative-increment-per-doubling criterion."""
    out = [_log_crossing(d, r, f * ref) for f in fractions]
    # Relative increment per doubling of d_h, (r(2d) - r(d)) / r(d), at grid points whose
    # double lies inside the grid (r interpolated linearly in log d_h).
    inside = d * 2 <= d[-1] * (1 + 1e-9)
    if inside.sum() >= 1:
        r2 = np.interp(np.log(d[inside] * 2), np.log(d), r)
        inc = (r2 - r[inside]) / np.maximum(r[inside], 1e-12)
        out.append(_log_crossing(d[inside], inc, increment, rising=False))
    else:
        out.append(float("nan"))
    return out


def _criteria(fractions, increment: float, reference: str) -> list[str]:
    what = "bound" if reference == "bound" else "plateau"
    return [f"{round(100 * f):d}% of {what}" for f in fractions] + [f"increment < {increment:g}"]


def _reference(n: int, r: np.ndarray, reference: str) -> float:
    if reference == "bound":
        return expected_distinct_columns(n)
    if reference == "plateau":
        return float(r[-1])
    raise ValueError(f"reference must be 'bound' or 'plateau', got {reference!r}")


def _cells(table: pd.DataFrame, value: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """n -> (sorted head dims, values array (head dims, trials))."""
    missing = {"n", "head_dim", "trial", value} - set(table.columns)
    if missing:
        raise ValueError(f"table lacks column(s) {sorted(missing)}")
    out = {}
    for n, sub in table.groupby("n"):
        wide = sub.pivot_table(index="head_dim", columns="trial", values=value).sort_index()
        if len(wide) < 2:
            raise ValueError(f"need at least two head dims per n, got {len(wide)} for n={n}")
        out[int(n)] = (wide.index.to_numpy(dtype=np.float64), wide.to_numpy(dtype=np.float64))
    return out


def saturation_points(table: pd.DataFrame, *, value: str = "rank",
                      fractions: Sequence[float] = (0.5, 0.75, 0.9), increment: float = 0.01,
                      reference: str = "bound") -> pd.DataFrame:
    """Saturation d_h per n from a per-trial table (columns n, head_dim, trial, ``value``).

    Criteria: the first d_h where the mean curve reaches each fraction of the reference
    (``"bound"`` = n (1 - (1-1/n)^n), or ``"plateau"`` = the mean at the largest d_h), and the
    first d_h where the relative increment per doubling of d_h drops below ``increment`` (the
    paper's Table 2 reads "less than or around 0.01"; its step in d_h is not stated). Crossings
    are interpolated linearly in log d_h; NaN when not reached inside the grid.
    Columns: n, criterion, head_dim.
    """
    names = _criteria(fractions, increment, reference)
    rows = []
    for n, (d, R) in _cells(table, value).items():
        r = np.nanmean(R, axis=1)
        pts = _curve_points(d, r, _reference(n, r, reference), fractions, increment)
        rows += [{"n": n, "criterion": c, "head_dim": p} for c, p in zip(names, pts)]
    return pd.DataFrame(rows)


def saturation_bootstrap(table: pd.DataFrame, *, value: str = "rank", n_boot: int = 200,
                         fractions: Sequence[float] = (0.5, 0.75, 0.9), increment: float = 0.01,
                         reference: str = "bound", seed: int = 0) -> pd.DataFrame:
    """Bootstrap replicates of saturation_points: trials resampled within each (n, d_h) cell.

    Columns: boot, n, criterion, head_dim (one row per replicate, n and criterion).
    """
    if n_boot < 2:
        raise ValueError(f"n_boot must be >= 2, got {n_boot}")
    names = _criteria(fractions, increment, reference)
    rng = np.random.default_rng(seed)
    rows = []
    for n, (d, R) in _cells(table, value).items():
        T = R.shape[1]
        idx = rng.integers(0, T, size=(n_boot, R.shape[0], T))
        means = np.take_along_axis(np.broadcast_to(R, (n_boot, *R.shape)), idx, axis=2).mean(2)
        for b in range(n_boot):
            r = means[b]
            pts = _curve_points(d, r, _reference(n, r, reference), fractions, increment)
            rows += [{"boot": b, "n": n, "criterion": c, "head_dim": p} for c, p in zip(names, pts)]
    return pd.DataFrame(rows)


_ALPHAS = np.linspace(-1.0, 3.0, 4_001)


def _fit_log(n: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """Weighted least squares y = a + b ln n; returns (a, b, chi2)."""
    A = np.stack([np.ones_like(n), np.log(n)], 1)
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)
    return float(coef[0]), float(coef[1]), float((w * (y - A @ coef) ** 2).sum())


def _fit_power(n: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """Weighted least squares y = c n^alpha (c profiled out, alpha on a 1e-3 grid); (c, alpha, chi2)."""
    P = n[None, :] ** _ALPHAS[:, None]  # (alphas, points)
    c = (P * (w * y)).sum(1) / (P * P * w).sum(1)
    chi2 = (w * (y - c[:, None] * P) ** 2).sum(1)
    k = int(np.argmin(chi2))
    return float(c[k]), float(_ALPHAS[k]), float(chi2[k])


def fit_saturation(points: pd.DataFrame, boot: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """Fit each criterion's saturation d_h against a + b ln n and against c n^alpha.

    Weighted least squares with weights 1 / se^2, se = bootstrap standard deviation of each
    point; parameter intervals are bootstrap percentiles (each replicate refitted with the
    same weights). Criteria with fewer than 3 usable n are skipped.
    Long form: criterion, model ("a + b ln n" or "c n^alpha"), quantity, estimate, lo, hi,
    where quantity is a, b / c, alpha, and chi2 (weighted residual, dof = points - 2).
    """
    rows = []
    for crit, sub in points.groupby("criterion", sort=False):
        bsub = boot[boot["criterion"] == crit].pivot_table(index="boot", columns="n",
                                                           values="head_dim", dropna=False)
        sub = sub.set_index("n")["head_dim"]
        ok = [n for n in sub.index if np.isfinite(sub[n]) and n in bsub.columns
              and np.isfinite(bsub[n]).all()]
        if len(ok) < 3:
            continue
        n_arr = np.asarray(ok, dtype=np.float64)
        y = sub[ok].to_numpy(dtype=np.float64)
        B = bsub[ok].to_numpy(dtype=np.float64)
        se = np.maximum(B.std(0, ddof=1), 1e-3 * np.maximum(y, 1e-12))
        w = 1.0 / se ** 2
        tail = (1 - level) / 2
        for model, fit, names in (("a + b ln n", _fit_log, ("a", "b")),
                                  ("c n^alpha", _fit_power, ("c", "alpha"))):
            est = fit(n_arr, y, w)
            reps = np.array([fit(n_arr, yb, w) for yb in B])
            for j, q in enumerate(names):
                lo, hi = np.quantile(reps[:, j], [tail, 1 - tail])
                rows.append({"criterion": crit, "model": model, "quantity": q, "estimate": est[j],
                             "lo": float(lo), "hi": float(hi), "points": len(ok)})
            rows.append({"criterion": crit, "model": model, "quantity": "chi2", "estimate": est[2],
                         "lo": float("nan"), "hi": float("nan"), "points": len(ok)})
    return pd.DataFrame(rows)
