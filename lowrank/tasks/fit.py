"""Fitting attention to targets by optimisation: the proofs by experiment of chapters 02 and 03.

Everything runs in float64 with a batched L-BFGS: many independent problems (restarts, targets,
ranks, heads) are stacked along a batch dimension and optimised together, each with its own
curvature history, step size and stopping test, so one stiff problem does not slow the others.

Losses are named in every result:
  kl      mean over rows of KL(P_i || softmax(S)_i), for fits to a target attention matrix P;
  rel_mse ||f(X) - Y||_F^2 / ||Y||_F^2 over a set of inputs, for fits of a layer's outputs.
Errors reported next to them: tv_max, the largest total-variation distance 0.5 * sum_j |P_ij - Q_ij|
over the rows, and rel_err = sqrt(rel_mse).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import warnings

import pandas as pd
import torch
from tqdm import TqdmWarning

with warnings.catch_warnings():
    # Without ipywidgets tqdm.auto warns once and falls back to the text bar, which is what we want.
    warnings.simplefilter("ignore", TqdmWarning)
    from tqdm.auto import tqdm

from ..layers.attention import HeadWeights, MultiHeadAttention, set_head_weights

__all__ = ["lbfgs", "LogitFit", "fit_logit_rank", "logit_rank_sweep", "fit_heads", "LayerFit",
           "fit_layer", "row_kl", "row_tv"]


def lbfgs(fun: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], x0: torch.Tensor, *, max_iter: int = 500,
          history: int = 10, gtol: float = 1e-12, ftol: float = 1e-15, max_halvings: int = 40,
          progress: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Minimise b independent smooth functions at once with L-BFGS and backtracking (Armijo).

    fun(x, rows) maps x (k, p), the points of the problems with indices rows (k,), to their k
    objective values; problem j may depend only on its own row. A problem stops when its largest
    gradient entry is below gtol, when one step lowers its value by less than
    ftol * max(|f|, 1) (scipy's L-BFGS-B test), or when its line search finds no decrease;
    finished problems leave the batch, so the cost follows the problems still running.
    Returns (x, f, n_iter): x (b, p), f (b,), n_iter (b,) the iterations each problem ran.
    """
    if x0.dim() != 2:
        raise ValueError(f"x0 must be (batch, params), got shape {tuple(x0.shape)}")
    if max_iter < 1 or history < 1:
        raise ValueError(f"max_iter and history must be >= 1, got {max_iter}, {history}")
    if x0.device.type != "cpu":
        return _lbfgs(fun, x0, max_iter=max_iter, history=history, gtol=gtol, ftol=ftol,
                      max_halvings=max_halvings, progress=progress)
    # The batched problems are small: on a CPU, thread synchronisation costs more than it saves.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _lbfgs(fun, x0, max_iter=max_iter, history=history, gtol=gtol, ftol=ftol,
                      max_halvings=max_halvings, progress=progress)
    finally:
        torch.set_num_threads(threads)


def _lbfgs(fun, x0, *, max_iter, history, gtol, ftol, max_halvings, progress):
    def value_and_grad(x, rows):
        x = x.detach().requires_grad_(True)
        f = fun(x, rows)
        (g,) = torch.autograd.grad(f.sum(), x)
        return f.detach(), g

    b = x0.shape[0]
    rows = torch.arange(b, device=x0.device)
    x_out = x0.detach().clone()
    x = x_out.clone()
    f, g = value_and_grad(x, rows)
    f_out = f.clone()
    n_iter = torch.zeros(b, dtype=torch.long, device=x0.device)
    S, Y, rho = [], [], []
    gamma = torch.ones(b, dtype=x.dtype, device=x.device)
    keep = g.abs().amax(-1) > gtol
    for it in tqdm(range(max_iter), disable=not progress, leave=False, desc="L-BFGS"):
        if not keep.all():
            x, f, g, gamma, rows = x[keep], f[keep], g[keep], gamma[keep], rows[keep]
            S, Y, rho = [s[keep] for s in S], [y[keep] for y in Y], [r[keep] for r in rho]
        if rows.numel() == 0:
            break
        q = g.clone()
        alphas = []
        for s, y, r in zip(reversed(S), reversed(Y), reversed(rho)):
            a = r * (s * q).sum(-1)
            q -= a[:, None] * y
            alphas.append(a)
        z = gamma[:, None] * q
        for s, y, r, a in zip(S, Y, rho, reversed(alphas)):
            z += s * (a - r * (y * z).sum(-1))[:, None]
        d = -z
        gd = (g * d).sum(-1)
        # Where the quasi-Newton direction is not a descent direction, fall back to the gradient.
        bad = ~(gd < 0)
        d[bad] = -g[bad]
        gd = torch.where(bad, -(g * g).sum(-1), gd)
        t = torch.ones_like(f)
        if it == 0:
            t = torch.clamp(1.0 / g.abs().amax(-1), max=1.0)
        done = torch.zeros_like(f, dtype=torch.bool)
        x_new, f_new, g_new = x.clone(), f.clone(), g.clone()
        for _ in range(max_halvings):
            xt = x + t[:, None] * d
            ft, gt = value_and_grad(xt, rows)
            ok = ~done & torch.isfinite(ft) & (ft <= f + 1e-4 * t * gd)
            x_new[ok], f_new[ok], g_new[ok] = xt[ok], ft[ok], gt[ok]
            done |= ok
            if done.all():
                break
            t = torch.where(done, t, t / 2)
        s, y = x_new - x, g_new - g
        sy = (s * y).sum(-1)
        curved = sy > 1e-12 * s.norm(dim=-1) * y.norm(dim=-1)
        one = torch.ones_like(sy)
        S.append(s)
        Y.append(y)
        rho.append(torch.where(curved, 1.0 / sy.where(curved, one), torch.zeros_like(sy)))
        gamma = torch.where(curved, sy / (y * y).sum(-1).where(curved, one), gamma)
        if len(S) > history:
            S.pop(0), Y.pop(0), rho.pop(0)
        flat = (f - f_new) <= ftol * torch.maximum(f.abs(), f_new.abs()).clamp_min(1.0)
        x, f, g = x_new, f_new, g_new
        x_out[rows], f_out[rows] = x, f
        n_iter[rows] += 1
        keep = done & ~flat & (g.abs().amax(-1) > gtol)
    return x_out, f_out, n_iter


def row_kl(P: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """Mean over rows of KL(P_i || softmax(logits)_i), shape (...); zero entries of P add 0."""
    logq = torch.log_softmax(logits, dim=-1)
    terms = torch.where(P > 0, P * (P.clamp_min(1e-300).log() - logq), torch.zeros_like(P))
    return terms.sum(-1).mean(-1)


def row_tv(P: torch.Tensor, Q: torch.Tensor) -> torch.Tensor:
    """Largest total-variation distance 0.5 * sum_j |P_ij - Q_ij| over the rows, shape (...)."""
    return 0.5 * (P - Q).abs().sum(-1).amax(-1)


def _check_targets(P) -> torch.Tensor:
    P = torch.as_tensor(P).to(torch.float64)
    if P.dim() not in (2, 3) or P.shape[-1] != P.shape[-2]:
        raise ValueError(f"P must be (n, n) or (batch, n, n), got shape {tuple(P.shape)}")
    if not torch.isfinite(P).all() or (P < 0).any():
        raise ValueError("P must have finite, non-negative entries")
    dev = (P.sum(-1) - 1).abs().max().item()
    if dev > 1e-8:
        raise ValueError(f"the rows of P must sum to 1; the largest deviation is {dev:.3g}")
    return P


def _check_loss(loss: str) -> None:
    if loss != "kl":
        raise ValueError(f"loss must be 'kl' (mean row-wise KL(P || softmax(S))), got {loss!r}")


class LogitFit(NamedTuple):
    """Best of several restarts of fitting softmax_row(A B^T) to P with A, B of size (n, r)."""
    tv_max: float           # largest row total-variation distance of the best restart
    kl: float               # its loss: mean row KL(P || softmax(A B^T))
    logits: torch.Tensor    # (n, n) = A B^T, rank <= r
    A: torch.Tensor         # (n, r)
    B: torch.Tensor         # (n, r)
    restart_tv: torch.Tensor  # (restarts,) tv_max of every restart
    loss: str


def _fit_factored(P: torch.Tensor, ranks: torch.Tensor, *, restarts: int, max_iter: int, seed: int,
                  progress: bool = False):
    """Fit softmax_row(A B^T) to every P[j] at rank ranks[j], restarts each; all in one batch.

    Ranks are padded to the largest one with a fixed zero mask, so masked columns get zero
    gradient and never move. Returns A, B (b, restarts, n, r_max), kl and tv (b, restarts).
    """
    b, n, _ = P.shape
    r_max = int(ranks.max())
    g = torch.Generator().manual_seed(int(seed))
    mask = (torch.arange(r_max)[None, :] < ranks[:, None]).to(torch.float64)  # (b, r_max)
    mask = mask[:, None, None, :].expand(b, restarts, 1, r_max).reshape(b * restarts, 1, r_max)
    # Entries of A B^T of order one at the start: each factor entry ~ N(0, 1 / sqrt(r)).
    std = ranks.to(torch.float64).pow(-0.25).repeat_interleave(restarts)[:, None, None]
    x0 = torch.randn(b * restarts, 2, n, r_max, generator=g, dtype=torch.float64) * std[:, None] * mask[:, None]
    Pr = P.repeat_interleave(restarts, dim=0)

    def fun(x, rows):
        x = x.view(-1, 2, n, r_max)
        A, B = x[:, 0] * mask[rows], x[:, 1] * mask[rows]
        return row_kl(Pr[rows], A @ B.transpose(-2, -1))

    x, kl, _ = lbfgs(fun, x0.reshape(b * restarts, -1), max_iter=max_iter, progress=progress)
    x = x.view(b, restarts, 2, n, r_max) * mask.view(b, restarts, 1, 1, r_max)
    A, B = x[:, :, 0], x[:, :, 1]
    tv = row_tv(P[:, None], torch.softmax(A @ B.transpose(-2, -1), dim=-1))
    return A, B, kl.view(b, restarts), tv


def fit_logit_rank(P, rank: int, *, loss: str = "kl", restarts: int = 4, max_iter: int = 1000,
                   seed: int = 0) -> LogitFit:
    """Best rank-`rank` logits for a target P (n, n): minimise the loss over S = A B^T.

    With inputs X of full row rank these are exactly the logits one head of size `rank` can
    produce (W_q = X+ A, W_k = sqrt(rank) X+ B), so tv_max is the best error such a head reaches
    on P, as far as `restarts` random starts of L-BFGS find it.
    """
    _check_loss(loss)
    P = _check_targets(P)
    if P.dim() != 2:
        raise ValueError(f"P must be one (n, n) matrix, got shape {tuple(P.shape)}; use logit_rank_sweep")
    if not (isinstance(rank, int) and rank >= 1) or not (isinstance(restarts, int) and restarts >= 1):
        raise ValueError(f"rank and restarts must be positive ints, got rank={rank!r}, restarts={restarts!r}")
    A, B, kl, tv = _fit_factored(P[None], torch.tensor([rank]), restarts=restarts, max_iter=max_iter, seed=seed)
    j = int(tv[0].argmin())
    A, B = A[0, j, :, :rank], B[0, j, :, :rank]
    return LogitFit(float(tv[0, j]), float(kl[0, j]), A @ B.T, A, B, tv[0], loss)


def logit_rank_sweep(P, ranks, *, loss: str = "kl", restarts: int = 4, max_iter: int = 1000, seed: int = 0,
                     progress: bool = False) -> pd.DataFrame:
    """fit_logit_rank for every target in P (batch, n, n) and every rank, as one batched fit.

    Returns one row per (target, rank, restart): target, n, rank, restart, tv_max, kl, loss.
    """
    _check_loss(loss)
    P = _check_targets(P)
    P = P[None] if P.dim() == 2 else P
    ranks = [int(r) for r in ranks]
    if not ranks or min(ranks) < 1:
        raise ValueError(f"ranks must be a non-empty list of positive ints, got {ranks!r}")
    b, n, _ = P.shape
    Pb = P.repeat_interleave(len(ranks), dim=0)
    rb = torch.tensor(ranks).repeat(b)
    _, _, kl, tv = _fit_factored(Pb, rb, restarts=restarts, max_iter=max_iter, seed=seed, progress=progress)
    rows = [dict(target=i // len(ranks), n=n, rank=int(rb[i]), restart=j, tv_max=float(tv[i, j]),
                 kl=float(kl[i, j]), loss=loss)
            for i in range(len(rb)) for j in range(restarts)]
    return pd.DataFrame(rows)


def fit_heads(X, P, *, head_dim: int, restarts: int = 4, max_iter: int = 1000, seed: int = 0,
              loss: str = "kl") -> pd.DataFrame:
    """Fit h heads of size head_dim on one input X (n, d), head i to its own target P[i] (n, n).

    Head i computes softmax_row(X W_q^i (X W_k^i)^T / sqrt(head_dim)) with W_q^i, W_k^i of size
    (d, head_dim), the attention of a layer with h heads. All heads and restarts are fitted in
    one batch. Returns one row per (head, restart): head, head_dim, restart, tv_max, kl, loss.
    """
    _check_loss(loss)
    X = torch.as_tensor(X).to(torch.float64)
    P = _check_targets(P)
    P = P[None] if P.dim() == 2 else P
    if X.dim() != 2 or X.shape[0] != P.shape[-1]:
        raise ValueError(f"X must be (n, d) with n = {P.shape[-1]} (the size of P), got {tuple(X.shape)}")
    if not (isinstance(head_dim, int) and head_dim >= 1):
        raise ValueError(f"head_dim must be a positive int, got {head_dim!r}")
    h, n, _ = P.shape
    d = X.shape[1]
    g = torch.Generator().manual_seed(int(seed))
    # Queries and keys of order one for unit-norm tokens: W entries ~ N(0, 1) / sqrt(||x||^2).
    std = 1.0 / X.norm(dim=1).mean()
    x0 = torch.randn(h * restarts, 2 * d * head_dim, generator=g, dtype=torch.float64) * std
    Pr = P.repeat_interleave(restarts, dim=0)
    scale = 1.0 / math.sqrt(head_dim)

    def fun(x, rows):
        W = x.view(-1, 2, d, head_dim)
        return row_kl(Pr[rows], scale * (X @ W[:, 0]) @ (X @ W[:, 1]).transpose(-2, -1))

    x, kl, _ = lbfgs(fun, x0, max_iter=max_iter)
    W = x.view(-1, 2, d, head_dim)
    Q = torch.softmax(scale * (X @ W[:, 0]) @ (X @ W[:, 1]).transpose(-2, -1), dim=-1)
    tv = row_tv(Pr, Q)
    return pd.DataFrame([dict(head=i // restarts, head_dim=head_dim, restart=i % restarts,
                              tv_max=float(tv[i]), kl=float(kl[i]), loss=loss) for i in range(h * restarts)])


class LayerFit(NamedTuple):
    """Best of several restarts of fitting a layer's outputs to targets Y on inputs X."""
    rel_err: float                # sqrt(rel_mse) of the best restart
    layer: MultiHeadAttention     # the best fitted layer, float64, no biases
    restart_rel_err: torch.Tensor  # (restarts,)
    loss: str


def fit_layer(X, Y, *, n_heads: int, head_dim: int | None = None, restarts: int = 8, max_iter: int = 2000,
              seed: int = 0, progress: bool = False) -> LayerFit:
    """Fit a multi-head layer (no biases) to targets: minimise ||f(X) - Y||_F^2 / ||Y||_F^2.

    X: inputs (m, n, d); Y: target outputs (m, n, d), e.g. another layer's outputs on X.
    head_dim None is the standard d / h (class F); an int is a fixed head size (class G).
    Loss rel_mse; the reported error is its square root, the relative Frobenius error.
    """
    X = torch.as_tensor(X).to(torch.float64)
    Y = torch.as_tensor(Y).to(torch.float64)
    if X.dim() != 3 or X.shape != Y.shape:
        raise ValueError(f"X and Y must both be (m, n, d), got {tuple(X.shape)} and {tuple(Y.shape)}")
    d = X.shape[-1]
    layer = MultiHeadAttention(d, n_heads, head_dim, bias=False).double()
    h, dh, scale = layer.n_heads, layer.head_dim, layer.scale
    if not (isinstance(restarts, int) and restarts >= 1):
        raise ValueError(f"restarts must be a positive int, got {restarts!r}")
    g = torch.Generator().manual_seed(int(seed))
    sizes = [h * d * dh] * 4
    # Logits and outputs of order one at the start for inputs with rows of norm about one.
    x0 = torch.randn(restarts, sum(sizes), generator=g, dtype=torch.float64)
    x0[:, 3 * h * d * dh:] /= math.sqrt(h * dh)
    y_norm = Y.pow(2).sum()

    def unpack(x):
        q, k, v, o = x.split(sizes, dim=-1)
        shape = (-1, h, d, dh)
        return q.reshape(shape), k.reshape(shape), v.reshape(shape), o.reshape(-1, h, dh, d)

    def fun(x, rows):
        q, k, v, o = unpack(x)  # (R, h, d, dh) each, o (R, h, dh, d)
        Q, K, V = (torch.einsum("mnd,rhde->rmhne", X, w) for w in (q, k, v))
        A = torch.softmax(scale * Q @ K.transpose(-2, -1), dim=-1)
        out = torch.einsum("rmhne,rhef->rmnf", A @ V, o)
        return (out - Y).pow(2).sum((1, 2, 3)) / y_norm

    x, rel_mse, _ = lbfgs(fun, x0, max_iter=max_iter, progress=progress)
    errs = rel_mse.clamp_min(0).sqrt()
    best = int(errs.argmin())
    q, k, v, o = unpack(x[best:best + 1])
    set_head_weights(layer, HeadWeights(q[0], k[0], v[0], o[0], scale))
    return LayerFit(float(errs[best]), layer, errs, "rel_mse")
