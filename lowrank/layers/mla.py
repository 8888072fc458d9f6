"""Multi-head latent attention (MLA), the attention of DeepSeek-V2 and DeepSeek-V3.

Row convention, as in :mod:`lowrank.layers.attention`: x is (B, n, d_model), tokens are rows, the
softmax runs over keys, attention matrices are (B, h, n, n) and row-stochastic.

Keys and values of every head are read from one latent c_KV = x W_DKV of width kv_latent, the
only thing an inference cache keeps besides the rotary key. Positions enter through a decoupled
rotary part of width rope_dim whose key k_R = RoPE(x W_KR) is shared by all heads. Per head:

    k_C = c_KV W_UK   (head_dim)          v   = c_KV W_UV         (v_head_dim)
    q_C = c_Q W_UQ    (head_dim)          q_R = RoPE(c_Q W_QR)    (rope_dim)
    S   = (q_C k_C^T + q_R k_R^T) * scale,   A = softmax over keys (rows of S)

with c_Q = x W_DQ (width q_latent) or c_Q = x when q_latent is None. The RMSNorm that
DeepSeek's code puts on c_KV and c_Q is left out: it rescales the rows and columns of a latent,
which moves no rank bound below.

RoPE here rotates the pairs (j, j + rope_dim/2) of a row at position i by the angle
i * rope_base^(-2j/rope_dim) (the "rotate half" layout); the pairing is a permutation of the
columns and changes no rank.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from .attention import causal_mask, hardmax, row_softmax

__all__ = ["MultiHeadLatentAttention", "LatentParts", "logit_rank_bound", "rope"]


def _positive_int(name: str, value, *, allow_zero: bool = False, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        kind = "a non-negative int" if allow_zero else "a positive int"
        raise ValueError(f"{name} must be {'None or ' if allow_none else ''}{kind}, got {value!r}")


def _positive_float(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite float, got {value!r}")


def _check_rope_dim(rope_dim) -> None:
    _positive_int("rope_dim", rope_dim, allow_zero=True)
    if rope_dim % 2:
        raise ValueError(f"rope_dim must be even (RoPE rotates pairs of columns), got {rope_dim!r}")


def rope(t: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding of rows: row i of the last two dims (..., n, r) turned by R_i.

    Position i is the row index. R_i rotates column pair (j, j + r/2) by i * base^(-2j/r),
    so ``rope(q) @ rope(k).T`` depends on the positions only through their differences.
    """
    r = t.shape[-1]
    if r == 0:
        return t
    if r % 2:
        raise ValueError(f"rope needs an even number of columns, got {r}")
    n = t.shape[-2]
    # Angles in float64 whatever t's dtype: position times frequency loses digits in float32.
    freq = base ** (-torch.arange(0, r, 2, dtype=torch.float64, device=t.device) / r)
    angle = torch.arange(n, dtype=torch.float64, device=t.device)[:, None] * freq
    cos, sin = angle.cos().to(t.dtype), angle.sin().to(t.dtype)
    a, b = t[..., : r // 2], t[..., r // 2:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def logit_rank_bound(n: int, *, head_dim: int, kv_latent: int, rope_dim: int, q_latent: int | None = None,
                     d_model: int | None = None, bias: bool = False) -> int:
    """Largest possible rank of one MLA head's (unmasked) logit matrix S (n x n).

        min(head_dim, kv_latent, q_latent, d_model, n) + min(rope_dim, n),  capped at n

    (q_latent and d_model only where given). Why: S = Q_C K_C^T + Q_R K_R^T.

    - Content part. K_C = C_KV W_UK is the latent C_KV (n x kv_latent) times a
      kv_latent x head_dim matrix, so its rank is at most min(kv_latent, head_dim); Q_C has
      head_dim columns and, with a query latent, factors through C_Q (n x q_latent); both are
      X (n x d_model) times fixed matrices. So rank(Q_C K_C^T) <= min(head_dim, kv_latent,
      q_latent, d_model, n).
    - Rotary part. Row i of K_R is a_i R_i, with a_i = x_i W_KR and a rotation R_i that changes
      from row to row, so K_R is no fixed matrix times X (nor times a latent) and escapes the
      bounds above; but it is n x rope_dim, as is Q_R. So rank(Q_R K_R^T) <= min(rope_dim, n).
    - rank(A + B) <= rank(A) + rank(B), and an n x n matrix has rank at most n.

    With biases (``bias=True``) each of kv_latent, q_latent and d_model gains one, the constant
    column a bias adds to the matrix it enters. Generic weights reach the bound (the tests check
    it in float64); a causal mask fills S with -inf and is outside this statement.
    """
    for name, value in (("n", n), ("head_dim", head_dim), ("kv_latent", kv_latent)):
        _positive_int(name, value)
    _check_rope_dim(rope_dim)
    for name, value in (("q_latent", q_latent), ("d_model", d_model)):
        _positive_int(name, value, allow_none=True)
    one = 1 if bias else 0
    content = min([head_dim, kv_latent + one, n] + [v + one for v in (q_latent, d_model) if v is not None])
    return min(n, content + min(rope_dim, n))


class LatentParts(NamedTuple):
    """One forward pass taken apart: q_c, k_c (B, h, n, head_dim); q_r (B, h, n, rope_dim) and
    k_r (B, 1, n, rope_dim), both rotated, k_r shared by the heads; v (B, h, n, v_head_dim);
    c_kv (B, n, kv_latent)."""
    q_c: torch.Tensor
    q_r: torch.Tensor
    k_c: torch.Tensor
    k_r: torch.Tensor
    v: torch.Tensor
    c_kv: torch.Tensor


def _additive(attn_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    if attn_mask.dtype == torch.bool:
        return torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device).masked_fill(~attn_mask, float("-inf"))
    return attn_mask.to(dtype)


class MultiHeadLatentAttention(nn.Module):
    """Multi-head latent attention (DeepSeek-V2/V3) with every size a free knob.

    Args:
        d_model: width of the token vectors.
        n_heads: number of heads h.
        kv_latent: width of the shared key-value latent c_KV (DeepSeek-V3: 512).
        head_dim: per-head size of the content queries and keys q_C, k_C (DeepSeek-V3: 128).
        rope_dim: size of the decoupled rotary query and key q_R, k_R, even; 0 leaves the rotary
            part out (DeepSeek-V3: 64).
        q_latent: width of the query latent c_Q; None reads queries straight from x
            (DeepSeek-V3: 1536; DeepSeek-V2-Lite: None).
        v_head_dim: per-head value size; default head_dim.
        causal: mask keys after the query.
        bias: biases on every projection (DeepSeek uses none).
        rope_base: the RoPE base; frequencies are rope_base^(-2j/rope_dim).
        scale: logit scale; default 1 / sqrt(head_dim + rope_dim), a query's full size.

    Parameters (nn.Linear, y = x W^T + b): ``kv_down`` d_model -> kv_latent (W_DKV), ``k_up``
    kv_latent -> h * head_dim (W_UK), ``v_up`` kv_latent -> h * v_head_dim (W_UV), ``k_rope``
    d_model -> rope_dim (W_KR; None when rope_dim is 0), ``q_down`` d_model -> q_latent (W_DQ;
    None without a query latent), ``q_up`` (q_latent or d_model) -> h * (head_dim + rope_dim),
    each head's block being its q_C columns then its q_R columns (W_UQ and W_QR), ``out_proj``
    h * v_head_dim -> d_model. Head j owns rows j*size .. (j+1)*size - 1 of each up-projection.
    """

    def __init__(self, d_model: int, n_heads: int, *, kv_latent: int, head_dim: int, rope_dim: int,
                 q_latent: int | None = None, v_head_dim: int | None = None, causal: bool = False,
                 bias: bool = False, rope_base: float = 10000.0, scale: float | None = None):
        super().__init__()
        for name, value in (("d_model", d_model), ("n_heads", n_heads), ("kv_latent", kv_latent),
                            ("head_dim", head_dim)):
            _positive_int(name, value)
        _check_rope_dim(rope_dim)
        for name, value in (("q_latent", q_latent), ("v_head_dim", v_head_dim)):
            _positive_int(name, value, allow_none=True)
        _positive_float("rope_base", rope_base)
        if scale is not None:
            _positive_float("scale", scale)
        self.d_model, self.n_heads, self.kv_latent = d_model, n_heads, kv_latent
        self.head_dim, self.rope_dim, self.q_latent = head_dim, rope_dim, q_latent
        self.v_head_dim = head_dim if v_head_dim is None else v_head_dim
        self.causal, self.bias, self.rope_base = causal, bias, float(rope_base)
        self.scale = 1.0 / math.sqrt(head_dim + rope_dim) if scale is None else float(scale)
        h = n_heads
        self.kv_down = nn.Linear(d_model, kv_latent, bias=bias)
        self.k_up = nn.Linear(kv_latent, h * head_dim, bias=bias)
        self.v_up = nn.Linear(kv_latent, h * self.v_head_dim, bias=bias)
        self.k_rope = nn.Linear(d_model, rope_dim, bias=bias) if rope_dim else None
        self.q_down = nn.Linear(d_model, q_latent, bias=bias) if q_latent is not None else None
        self.q_up = nn.Linear(q_latent or d_model, h * (head_dim + rope_dim), bias=bias)
        self.out_proj = nn.Linear(h * self.v_head_dim, d_model, bias=bias)

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, n_heads={self.n_heads}, kv_latent={self.kv_latent}, "
                f"head_dim={self.head_dim}, rope_dim={self.rope_dim}, q_latent={self.q_latent}, "
                f"v_head_dim={self.v_head_dim}, causal={self.causal}, scale={self.scale:.4g}")

    def logit_rank_bound(self, n: int) -> int:
        """:func:`logit_rank_bound` for this layer's sizes and n tokens (d_model and bias included)."""
        return logit_rank_bound(n, head_dim=self.head_dim, kv_latent=self.kv_latent, rope_dim=self.rope_dim,
                                q_latent=self.q_latent, d_model=self.d_model, bias=self.bias)

    def parts(self, x: torch.Tensor) -> LatentParts:
        """Content and rotary queries and keys, values and the latent (see :class:`LatentParts`)."""
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must be (B, n, d_model={self.d_model}), got {tuple(x.shape)}")
        B, n, _ = x.shape
        h, dh, dr = self.n_heads, self.head_dim, self.rope_dim
        c_kv = self.kv_down(x)
        k_c = self.k_up(c_kv).view(B, n, h, dh).transpose(1, 2)
        v = self.v_up(c_kv).view(B, n, h, self.v_head_dim).transpose(1, 2)
        c_q = x if self.q_down is None else self.q_down(x)
        q = self.q_up(c_q).view(B, n, h, dh + dr).transpose(1, 2)
        q_c, q_r = q.split([dh, dr], dim=-1)
        if self.k_rope is None:
            k_r = x.new_zeros(B, 1, n, 0)
        else:
            k_r = self.k_rope(x)[:, None]
        return LatentParts(q_c, rope(q_r, self.rope_base), k_c, rope(k_r, self.rope_base), v, c_kv)

    def _mask(self, n: int, attn_mask, dtype, device) -> torch.Tensor | None:
        mask = None if attn_mask is None else _additive(attn_mask, dtype)
        if self.causal:
            causal = _additive(causal_mask(n, device=device), dtype)
            mask = causal if mask is None else mask + causal
        return mask

    def _logits(self, p: LatentParts, attn_mask) -> torch.Tensor:
        # The two parts summed, as the definition reads; the fast path uses the concatenation.
        s = (p.q_c @ p.k_c.transpose(-2, -1) + p.q_r @ p.k_r.transpose(-2, -1)) * self.scale
        mask = self._mask(s.shape[-1], attn_mask, s.dtype, s.device)
        return s if mask is None else s + mask

    def logits(self, x: torch.Tensor, *, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Pre-softmax scores (B, h, n, n), scale and masks included (masked entries -inf).

        attn_mask: boolean (True = may attend) or additive float, broadcastable to (B, h, n, n);
        combined with the causal mask when ``causal=True``.
        """
        return self._logits(self.parts(x), attn_mask)

    def probs(self, x: torch.Tensor, *, attn_mask: torch.Tensor | None = None,
              hardmax: bool = False) -> torch.Tensor:
        """Attention matrices (B, h, n, n); rows sum to 1 (one-hot rows with ``hardmax=True``)."""
        return _normalise(self.logits(x, attn_mask=attn_mask), hardmax, masked=attn_mask is not None)

    def forward(self, x: torch.Tensor, *, need_weights: bool = False,
                attn_mask: torch.Tensor | None = None, hardmax: bool = False):
        """Returns (y, probs): y is (B, n, d_model); probs is (B, h, n, n) or None."""
        p = self.parts(x)
        B, h, n, _ = p.q_c.shape
        if not need_weights and not hardmax:
            # Fast path: one fused kernel on [q_C, q_R] . [k_C, k_R], no n x n matrix kept.
            q = torch.cat([p.q_c, p.q_r], dim=-1)
            k = torch.cat([p.k_c, p.k_r.expand(B, h, n, self.rope_dim)], dim=-1)
            if self.causal and attn_mask is None:
                mask, is_causal = None, True
            else:
                mask, is_causal = self._mask(n, attn_mask, q.dtype, q.device), False
            out = F.scaled_dot_product_attention(q, k, p.v, attn_mask=mask, is_causal=is_causal,
                                                 scale=self.scale)
            probs = None
        else:
            # Reference path: the n x n matrix is materialised and returned.
            probs = _normalise(self._logits(p, attn_mask), hardmax, masked=attn_mask is not None)
            out = probs @ p.v
        y = self.out_proj(out.transpose(1, 2).reshape(B, n, h * self.v_head_dim))
        return y, (probs if need_weights else None)

    def absorbed_qk(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Queries and keys with W_UK absorbed into the query: MLA's inference form.

        q_C k_C^T = q_C (c_KV W_UK)^T = (q_C W_UK^T) c_KV^T, so each head can score the latent
        directly. Returns q (B, h, n, w) and k (B, 1, n, w) with w = kv_latent + rope_dim: one key
        [c_KV, k_R] per token for all heads, which is what the cache holds, and
        ``q @ k^T * scale`` equals :meth:`logits`. With biases the key bias adds q_C . b_UK to a
        query's scores, the same for every key, carried by one more latent column of ones (w + 1).
        W_UV is absorbed into the output the same way: P (c_KV W_UV) = (P c_KV) W_UV.
        """
        p = self.parts(x)
        B, h, n, dh = p.q_c.shape
        W = self.k_up.weight.view(h, dh, self.kv_latent)  # head j's W_UK^T
        q_lat = torch.einsum("bhnd,hdc->bhnc", p.q_c, W)
        keys = p.c_kv[:, None]
        if self.k_up.bias is not None:
            bias_score = torch.einsum("bhnd,hd->bhn", p.q_c, self.k_up.bias.view(h, dh))
            q_lat = torch.cat([q_lat, bias_score[..., None]], dim=-1)
            keys = torch.cat([keys, keys.new_ones(B, 1, n, 1)], dim=-1)
        return torch.cat([q_lat, p.q_r], dim=-1), torch.cat([keys, p.k_r], dim=-1)

    def absorbed_logits(self, x: torch.Tensor, *, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        """:meth:`logits` computed in the absorbed form (:meth:`absorbed_qk`); equal to rounding."""
        q, k = self.absorbed_qk(x)
        s = (q @ k.transpose(-2, -1)) * self.scale
        mask = self._mask(s.shape[-1], attn_mask, s.dtype, s.device)
        return s if mask is None else s + mask


def _normalise(logits: torch.Tensor, use_hardmax: bool, *, masked: bool) -> torch.Tensor:
    if use_hardmax:
        return hardmax(logits)
    # Only a caller's mask can hide a whole row (the causal mask keeps the diagonal).
    return row_softmax(logits) if masked else torch.softmax(logits, dim=-1)
