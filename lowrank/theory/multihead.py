"""Multi-head attention as the paper's classes F (standard) and G (fixed head size).

Row convention: a layer maps X (n, d) to sum_i softmax_row(scale * X W_q^i (X W_k^i)^T) X W_v^i W_o^i,
with W_q^i, W_k^i, W_v^i of size (d, d_h) and W_o^i of size (d_h, d). F has d_h = d / h
("MultiHead"), G has a free d_p ("FixedMultiHead"); no residual, no LayerNorm (Section 3.1).

- embed_standard_in_fixed: F subset of G whenever d_p >= d / h (Sec. 3.1, stated without proof);
  zero-pad every head and absorb the change of softmax scale into the query weights.
- theorem2_layer, separating_input: Theorem 2, that G is strictly larger than F, by its
  construction and the three cases of its proof (Appendix B).
- layer_cost, cost_table: parameters and FLOPs per layer, standard vs fixed head size.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import pandas as pd
import torch

from ..layers.attention import HeadWeights, MultiHeadAttention, head_weights, set_head_weights, standard_head_dim

__all__ = ["HeadWeights", "head_weights", "embed_standard_in_fixed", "theorem2_layer",
           "Separation", "separating_input", "SEPARATION_REL_TOL", "theorem2_in_fewer_heads", "layer_cost",
           "cost_table"]


@torch.no_grad()
def embed_standard_in_fixed(mha_standard: MultiHeadAttention, head_dim: int, *,
                            absorb_scale: bool = True) -> MultiHeadAttention:
    """A layer with head size head_dim computing exactly the function of ``mha_standard``.

    Needs head_dim >= mha_standard.head_dim (= d_model / n_heads for a standard layer). Every
    head's W_q, W_k, W_v is zero-padded to head_dim columns and W_o to head_dim rows; the
    queries (weights and bias) are multiplied by old_scale / new_scale (sqrt(d_p / (d / h)) at
    the default scales) so the logits are unchanged. Same dtype, causal flag and hardmax flag.
    absorb_scale=False leaves that factor out: zero-padding alone, which computes a different
    function whenever the scales differ (shown in chapter 03).
    """
    if not isinstance(mha_standard, MultiHeadAttention):
        raise ValueError(f"mha_standard must be a lowrank MultiHeadAttention, got {type(mha_standard).__name__}")
    dh = mha_standard.head_dim
    if not isinstance(head_dim, int) or isinstance(head_dim, bool) or head_dim < dh:
        raise ValueError(f"head_dim must be an int >= the layer's head size {dh} (d_model / n_heads = "
                         f"{mha_standard.d_model} / {mha_standard.n_heads}), got {head_dim!r}")
    h, d = mha_standard.n_heads, mha_standard.d_model
    has_bias = mha_standard.in_proj.bias is not None
    dtype = mha_standard.in_proj.weight.dtype
    fixed = MultiHeadAttention(d, h, head_dim, causal=mha_standard.causal, bias=has_bias,
                               dropout=mha_standard.dropout, hardmax=mha_standard.hardmax).to(dtype)
    ratio = mha_standard.scale / fixed.scale if absorb_scale else 1.0
    hw = head_weights(mha_standard)
    pad = [torch.zeros(h, d, head_dim, dtype=torch.float64) for _ in range(3)]
    for p, w, mult in zip(pad, hw[:3], (ratio, 1.0, 1.0)):
        p[:, :, :dh] = w * mult
    W_o = torch.zeros(h, head_dim, d, dtype=torch.float64)
    W_o[:, :dh] = hw.W_o
    set_head_weights(fixed, HeadWeights(*pad, W_o, fixed.scale))
    if has_bias:
        b = mha_standard.in_proj.bias.detach().to(torch.float64).reshape(3, h, dh)
        new_b = torch.zeros(3, h, head_dim, dtype=torch.float64)
        new_b[:, :, :dh] = b
        new_b[0] *= ratio
        fixed.in_proj.bias.copy_(new_b.reshape(-1).to(dtype))
        fixed.out_proj.bias.copy_(mha_standard.out_proj.bias)
    return fixed


def _random_orthogonal(k: int, g: torch.Generator) -> torch.Tensor:
    q, r = torch.linalg.qr(torch.randn(k, k, generator=g, dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r))


@torch.no_grad()
def theorem2_layer(d: int, n_heads: int, head_dim: int, *, seed: int = 0) -> MultiHeadAttention:
    """A FixedMultiHead layer g_V meeting the conditions of Theorem 2 (float64, no biases).

    Conditions: d >= d_p and h > d / d_p; every head has V_q^i (V_k^i)^T = U, one shared
    matrix of rank d_p (here V_q^i = Q R_i, V_k^i = K R_i with Gaussian Q, K of size (d, d_p)
    and a random orthogonal R_i per head, so the heads' weights differ but U = Q K^T does not);
    sum_i V_v^i V_o^i = [V_v^1 ... V_v^h] V_o is a full-rank d x d matrix (Gaussian weights;
    checked). Entries are scaled so that inputs with unit-norm rows give logits and outputs of
    order one.
    """
    for name, v in (("d", d), ("n_heads", n_heads), ("head_dim", head_dim)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if head_dim > d:
        raise ValueError(f"Theorem 2 needs d >= d_p, got d={d}, head_dim={head_dim}")
    if n_heads * head_dim <= d:
        raise ValueError(f"Theorem 2 needs h > d / d_p, got h={n_heads}, d / d_p = {d}/{head_dim} = "
                         f"{d / head_dim:.3g}; allowed n_heads >= {d // head_dim + 1}")
    g = torch.Generator().manual_seed(int(seed))
    Q = torch.randn(d, head_dim, generator=g, dtype=torch.float64)
    K = torch.randn(d, head_dim, generator=g, dtype=torch.float64)
    R = torch.stack([_random_orthogonal(head_dim, g) for _ in range(n_heads)])
    W_v = torch.randn(n_heads, d, head_dim, generator=g, dtype=torch.float64)
    W_o = torch.randn(n_heads, head_dim, d, generator=g, dtype=torch.float64) / math.sqrt(n_heads * head_dim)
    layer = MultiHeadAttention(d, n_heads, head_dim, bias=False).double()
    set_head_weights(layer, HeadWeights(Q @ R, K @ R, W_v, W_o, layer.scale))
    total = torch.einsum("hdk,hke->de", W_v, W_o)
    if torch.linalg.matrix_rank(total) < d or torch.linalg.matrix_rank(Q @ K.T) < head_dim:
        raise ValueError(f"seed {seed} drew degenerate weights (probability zero); use another seed")
    return layer


def _forward(hw: HeadWeights, X: torch.Tensor) -> torch.Tensor:
    """Layer output for X (..., n, d) from per-head weights, float64."""
    q = torch.einsum("...nd,hde->...hne", X, hw.W_q)
    k = torch.einsum("...nd,hde->...hne", X, hw.W_k)
    v = torch.einsum("...nd,hde->...hne", X, hw.W_v)
    p = torch.softmax(hw.scale * q @ k.transpose(-2, -1), dim=-1)
    return torch.einsum("...hne,hef->...nf", p @ v, hw.W_o)


class Separation(NamedTuple):
    """An input X (n, d) on which two layers differ, the proof case it came from, and the gap."""
    X: torch.Tensor
    case: int
    gap: float       # max |f(X) - g(X)| over the entries
    rel_gap: float   # ||f(X) - g(X)||_F / ||g(X)||_F
    case_gaps: tuple = ()  # best relative gap of the families 1, 2, 3 (NaN: not evaluated)


def _plain(mha, name: str) -> HeadWeights:
    if not isinstance(mha, MultiHeadAttention):
        raise ValueError(f"{name} must be a lowrank MultiHeadAttention, got {type(mha).__name__}")
    if mha.in_proj.bias is not None or mha.causal or mha.hardmax:
        raise ValueError(f"{name} must have no biases, no causal mask and softmax attention (the classes F "
                         "and G of Theorem 2)")
    return head_weights(mha)


def _case_candidates(case: int, n: int, E_sym, E, D, d: int, g: torch.Generator, n_random: int,
                     norms: torch.Tensor) -> torch.Tensor:
    """Inputs (m, n, d) of one proof case's form, at several norms."""
    rand = torch.randn(n_random, d, generator=g, dtype=torch.float64)
    rand = rand / rand.norm(dim=-1, keepdim=True)
    if case == 1:
        U, _, _ = torch.linalg.svd(D)
        v = torch.cat([U.T, rand])  # rows of D's left singular basis: v^T D largest first
        X = v[:, None, :].expand(-1, n, -1)
    elif case == 2:
        eig = torch.cat([torch.linalg.eigh(S)[1].T for S in E_sym])
        v = torch.cat([eig, rand])
        X = torch.zeros(v.shape[0], n, d, dtype=torch.float64)
        X[:, 0] = v
    else:
        pairs = []
        for M in E:
            U, _, Vh = torch.linalg.svd(M)
            pairs += [(U[:, j], Vh[j]) for j in range(min(3, d))]
        rand2 = torch.randn(n_random, d, generator=g, dtype=torch.float64)
        pairs += list(zip(rand, rand2 / rand2.norm(dim=-1, keepdim=True)))
        X = torch.zeros(len(pairs), n, d, dtype=torch.float64)
        for j, (v1, v2) in enumerate(pairs):
            X[j, 0], X[j, 1] = v1, v2
        # The proof sends the second token to infinity; a grid of relative sizes stands in for it.
        X = torch.cat([X * torch.tensor([1.0, a] + [1.0] * (n - 2), dtype=torch.float64)[:, None]
                       for a in (0.25, 1.0, 4.0)])
    return (X[None] * norms[:, None, None, None]).reshape(-1, n, d)


# A family separates when its relative output gap exceeds this: float64 round-off of the layers'
# outputs is ~1e-15 relative, so 1e-6 leaves nine orders of margin, and a fitted layer whose value
# sums differ from g_V's only at the 1e-9 level no longer counts as "case 1".
SEPARATION_REL_TOL = 1e-6


@torch.no_grad()
def separating_input(f_W: MultiHeadAttention, g_V: MultiHeadAttention, *, n: int = 4,
                     case: int | None = None, rel_tol: float = SEPARATION_REL_TOL, max_norm: float = 2.0,
                     n_random: int = 64, seed: int = 0) -> Separation:
    """An X (n, d) with f_W(X) != g_V(X), built as in the three cases of Theorem 2's proof.

    f_W: a layer with head size d/h < d_p (class F); g_V: a layer meeting theorem2_layer's
    conditions (checked). The three families: 1, all tokens equal (X = 1 v^T; separates when
    sum_i W_v^i W_o^i != sum_i V_v^i V_o^i); 2, one non-zero token (X = e_1 v^T; separates when
    some head's s_g U - s_f W_q^i W_k^i^T has a symmetric part); 3, two non-zero tokens (always,
    by the proof's rank argument). Within a family the directions come from the proof's matrices
    (singular or eigen-vectors) plus n_random random ones, at row norms up to max_norm, and the
    input with the largest max |f(X) - g(X)| is kept. With case=None the case is the first
    family, in the proof's order, whose best relative gap ||f(X) - g(X)||_F / ||g(X)||_F exceeds
    rel_tol: decided by the outputs, so weight differences at round-off level do not pick a case.
    case=1, 2, 3 forces that family. Separation.case_gaps holds every family's best relative gap
    (NaN for families not evaluated).
    """
    fw, gv = _plain(f_W, "f_W"), _plain(g_V, "g_V")
    d = f_W.d_model
    if g_V.d_model != d:
        raise ValueError(f"f_W and g_V must have the same d_model, got {d} and {g_V.d_model}")
    if f_W.head_dim >= g_V.head_dim:
        raise ValueError(f"Theorem 2 compares a head size d/h below d_p: f_W.head_dim = {f_W.head_dim} must be "
                         f"< g_V.head_dim = {g_V.head_dim}")
    if not isinstance(n, int) or n < 2:
        raise ValueError(f"Theorem 2 needs n >= 2 tokens, got n={n!r}")
    if case not in (None, 1, 2, 3):
        raise ValueError(f"case must be None, 1, 2 or 3, got {case!r}")
    U_heads = gv.W_q @ gv.W_k.transpose(1, 2)  # (h, d, d)
    U = U_heads[0]
    if (U_heads - U).abs().max() > 1e-8 * U.abs().max():
        raise ValueError("g_V does not meet Theorem 2: its heads do not share one U = V_q^i V_k^i^T")
    if torch.linalg.matrix_rank(U) != g_V.head_dim:
        raise ValueError(f"g_V does not meet Theorem 2: U has rank {int(torch.linalg.matrix_rank(U))}, "
                         f"not d_p = {g_V.head_dim}")
    sum_g = torch.einsum("hdk,hke->de", gv.W_v, gv.W_o)
    if torch.linalg.matrix_rank(sum_g) < d:
        raise ValueError("g_V does not meet Theorem 2: sum_i V_v^i V_o^i is not full rank")
    D = torch.einsum("hdk,hke->de", fw.W_v, fw.W_o) - sum_g
    E = gv.scale * U - fw.scale * fw.W_q @ fw.W_k.transpose(1, 2)  # (h_f, d, d)
    E_sym = (E + E.transpose(1, 2)) / 2
    norms = torch.tensor([0.25, 0.5, 1.0, 2.0, 4.0], dtype=torch.float64)
    norms = norms[norms <= max_norm] if (norms <= max_norm).any() else torch.tensor([max_norm])

    def best_of(c):
        g = torch.Generator().manual_seed(int(seed))
        X = _case_candidates(c, n, E_sym, E, D, d, g, n_random, norms)
        diff = _forward(fw, X) - _forward(gv, X)
        k = int(diff.flatten(1).abs().amax(1).argmax())
        gX = _forward(gv, X[k])
        return Separation(X[k], c, float(diff[k].abs().max()), float(diff[k].norm() / gX.norm()))

    gaps = [float("nan")] * 3
    if case is not None:
        sep = best_of(case)
        gaps[case - 1] = sep.rel_gap
        return sep._replace(case_gaps=tuple(gaps))
    for c in (1, 2, 3):
        sep = best_of(c)
        gaps[c - 1] = sep.rel_gap
        if sep.rel_gap > rel_tol or c == 3:
            return sep._replace(case_gaps=tuple(gaps))


@torch.no_grad()
def theorem2_in_fewer_heads(g_V: MultiHeadAttention) -> MultiHeadAttention:
    """A standard layer (class F) with h' = d / d_p heads of size d_p computing g_V exactly.

    Theorem 2's g_V shares one bilinear form U across its heads, so every head has the same
    attention A(X) and g_V(X) = A(X) X T with T = sum_i V_v^i V_o^i. Split T by its SVD into
    h' pieces of rank d_p (W_v^j W_o^j, j = 1..h') and give every head the query/key weights of
    g_V's first head: the same function, with the standard layer's 4 d^2 parameters. Needs d_p
    to divide d.
    """
    gv = _plain(g_V, "g_V")
    d, dp = g_V.d_model, g_V.head_dim
    if d % dp:
        raise ValueError(f"d_p = {dp} must divide d = {d} for a standard layer with heads of size d_p")
    hp = d // dp
    U_heads = gv.W_q @ gv.W_k.transpose(1, 2)
    if (U_heads - U_heads[0]).abs().max() > 1e-8 * U_heads[0].abs().max():
        raise ValueError("g_V's heads do not share one U = V_q^i V_k^i^T (Theorem 2's condition)")
    T = torch.einsum("hdk,hke->de", gv.W_v, gv.W_o)
    Us, S, Vh = torch.linalg.svd(T)
    W_v = torch.stack([Us[:, j * dp:(j + 1) * dp] * S[j * dp:(j + 1) * dp] for j in range(hp)])
    W_o = torch.stack([Vh[j * dp:(j + 1) * dp] for j in range(hp)])
    layer = MultiHeadAttention(d, hp, bias=False).double()
    if layer.head_dim != dp:
        raise ValueError(f"a standard layer with {hp} heads has head size {layer.head_dim}, not d_p = {dp}")
    ratio = gv.scale / layer.scale
    set_head_weights(layer, HeadWeights((gv.W_q[0] * ratio).expand(hp, d, dp), gv.W_k[0].expand(hp, d, dp),
                                        W_v, W_o, layer.scale))
    return layer


def layer_cost(d_model: int, n_heads: int, head_dim: int | None, n: int, *, bias: bool = False) -> dict:
    """Parameters and FLOPs of one attention layer (Q, K, V, O projections and both n x n products).

    FLOPs count a multiply-add as 2 and leave out the softmax: projections 2 n d (3 h d_h) +
    2 n (h d_h) d, logits and weighted values 2 * 2 h n^2 d_h. Parameters 4 d h d_h, plus
    3 h d_h + d biases with bias=True (the counts of MultiHeadAttention).
    """
    for name, v in (("d_model", d_model), ("n_heads", n_heads), ("n", n)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    dh = standard_head_dim(d_model, n_heads) if head_dim is None else head_dim
    if not isinstance(dh, int) or dh < 1:
        raise ValueError(f"head_dim must be None or a positive int, got {head_dim!r}")
    inner = n_heads * dh
    params = 4 * d_model * inner + (3 * inner + d_model if bias else 0)
    flops = 2 * n * d_model * 3 * inner + 2 * n * inner * d_model + 4 * n_heads * n * n * dh
    return dict(d_model=d_model, n_heads=n_heads, head_dim=dh, n=n,
                kind="standard" if inner == d_model else "fixed", params=params, flops=flops)


def cost_table(d_models, n_heads, seq_lens, *, head_dims=None, bias: bool = False) -> pd.DataFrame:
    """Standard (d_h = d / h) vs fixed head size, one row per (d, h, n, kind, d_h).

    head_dims: the fixed head sizes d_p to list; None means d_p = n, the paper's proposal.
    Combinations where h does not divide d have no standard row. Columns: d_model, n_heads,
    head_dim, n, kind, params, flops, params_vs_standard, flops_vs_standard (ratios to the
    standard layer with the same d, h, n; NaN where there is none).
    """
    rows = []
    for d in d_models:
        for h in n_heads:
            for n in seq_lens:
                std = layer_cost(d, h, None, n, bias=bias) if d % h == 0 else None
                group = [std] if std is not None else []
                for dp in (head_dims if head_dims is not None else [n]):
                    group.append({**layer_cost(d, h, dp, n, bias=bias), "kind": "fixed"})
                for row in group:
                    row["params_vs_standard"] = row["params"] / std["params"] if std else float("nan")
                    row["flops_vs_standard"] = row["flops"] / std["flops"] if std else float("nan")
                rows += group
    return pd.DataFrame(rows)
