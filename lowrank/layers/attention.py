"""Multi-head attention whose head size is independent of the model width.

Row convention throughout: x is (B, n, d_model), tokens are rows, the softmax runs
over keys for each query row, attention matrices are (B, h, n, n) and row-stochastic.

``head_dim=None`` is the standard d_model // n_heads of Vaswani et al.; an integer is
the fixed head size d_p of Bhojanapalli et al. (2020), their FixedMultiHead.
"""
from __future__ import annotations

import math

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["MultiHeadAttention", "HeadWeights", "head_weights", "set_head_weights", "hardmax", "row_softmax", "causal_mask", "standard_head_dim",
           "attention_parameter_count"]


def standard_head_dim(d_model: int, n_heads: int) -> int:
    """The d_model // n_heads head size, with an error when it is not an integer."""
    if d_model % n_heads != 0:
        raise ValueError(
            f"standard head size needs n_heads to divide d_model, got d_model={d_model}, "
            f"n_heads={n_heads}; pass head_dim=<int> for a fixed head size instead"
        )
    return d_model // n_heads


def attention_parameter_count(d_model: int, n_heads: int, head_dim: int | None = None, *,
                              bias: bool = False) -> int:
    """Weights of one attention layer: Q, K, V (d_model -> h * head_dim) and O (back to d_model).

    Without biases this is 4 d^2 for the standard head size and 4 d h d_p for a fixed one.
    """
    inner = n_heads * (standard_head_dim(d_model, n_heads) if head_dim is None else head_dim)
    return 4 * d_model * inner + (3 * inner + d_model if bias else 0)


def causal_mask(n: int, device=None) -> torch.Tensor:
    """(n, n) boolean mask, True where query i may attend key j (j <= i)."""
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def hardmax(logits: torch.Tensor) -> torch.Tensor:
    """One-hot rows at the argmax over the last dim (the zero-temperature softmax).

    Ties go to the lowest index, as torch.argmax does; masked (-inf) entries never win
    unless a whole row is masked.
    """
    idx = logits.argmax(dim=-1, keepdim=True)
    return torch.zeros_like(logits).scatter_(-1, idx, 1.0)


def row_softmax(logits: torch.Tensor) -> torch.Tensor:
    """Softmax over keys (the last dim); a row that is entirely masked gives zeros, not NaN."""
    probs = torch.softmax(logits, dim=-1)
    return torch.nan_to_num(probs, nan=0.0)


def _additive_mask(attn_mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    if attn_mask is None:
        return None
    if attn_mask.dtype == torch.bool:
        zeros = torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device)
        return zeros.masked_fill(~attn_mask, float("-inf"))
    return attn_mask.to(dtype)


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention with an independent head size.

    Args:
        d_model: width of the token vectors.
        n_heads: number of heads h.
        head_dim: per-head size of queries, keys and values. ``None`` gives the standard
            d_model // n_heads (n_heads must divide d_model); an int gives a fixed head size
            d_p, and then n_heads need not divide d_model.
        causal: mask keys after the query.
        bias: biases on the projections.
        dropout: dropout on the attention probabilities (training only).
        scale: logit scale; default 1 / sqrt(head_dim). A larger scale is a lower temperature.
        hardmax: use one-hot rows at the argmax instead of the softmax (theory chapters).

    Parameters: ``in_proj`` maps d_model -> 3 * n_heads * head_dim (queries, keys, values
    stacked), ``out_proj`` maps n_heads * head_dim -> d_model.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        head_dim: int | None = None,
        *,
        causal: bool = False,
        bias: bool = True,
        dropout: float = 0.0,
        scale: float | None = None,
        hardmax: bool = False,
    ):
        super().__init__()
        for name, value in (("d_model", d_model), ("n_heads", n_heads)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if head_dim is None:
            head_dim = standard_head_dim(d_model, n_heads)
        elif not isinstance(head_dim, int) or head_dim < 1:
            raise ValueError(f"head_dim must be None or a positive int, got {head_dim!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        if scale is not None and not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be a positive finite float, got {scale!r}")
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, head_dim
        self.causal, self.dropout, self.hardmax = causal, dropout, hardmax
        self.scale = 1.0 / math.sqrt(head_dim) if scale is None else float(scale)
        inner = n_heads * head_dim
        self.in_proj = nn.Linear(d_model, 3 * inner, bias=bias)
        self.out_proj = nn.Linear(inner, d_model, bias=bias)

    @property
    def is_standard(self) -> bool:
        return self.n_heads * self.head_dim == self.d_model

    def extra_repr(self) -> str:
        kind = "standard" if self.is_standard else "fixed"
        return (f"d_model={self.d_model}, n_heads={self.n_heads}, head_dim={self.head_dim} ({kind}), "
                f"causal={self.causal}, scale={self.scale:.4g}, hardmax={self.hardmax}")

    def qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys, values, each (B, h, n, head_dim)."""
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must be (B, n, d_model={self.d_model}), got {tuple(x.shape)}")
        B, n, _ = x.shape
        q, k, v = self.in_proj(x).split(self.n_heads * self.head_dim, dim=-1)
        return tuple(t.view(B, n, self.n_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))

    def _mask(self, n: int, attn_mask: torch.Tensor | None, dtype, device) -> torch.Tensor | None:
        mask = _additive_mask(attn_mask, dtype)
        if self.causal:
            causal = _additive_mask(causal_mask(n, device=device), dtype)
            mask = causal if mask is None else mask + causal
        return mask

    def _logits(self, q: torch.Tensor, k: torch.Tensor, attn_mask) -> torch.Tensor:
        # Scaling q (n x d_h) rather than the scores (n x n) saves a pass over the largest tensor.
        s = (q * self.scale) @ k.transpose(-2, -1)  # (B, h, n, n)
        mask = self._mask(s.shape[-1], attn_mask, s.dtype, s.device)
        return s if mask is None else s + mask

    def logits(self, x: torch.Tensor, *, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Pre-softmax scores (B, h, n, n), scale and masks included (masked entries -inf)."""
        q, k, _ = self.qkv(x)
        return self._logits(q, k, attn_mask)

    def probs(self, x: torch.Tensor, *, attn_mask: torch.Tensor | None = None,
              hardmax: bool | None = None) -> torch.Tensor:
        """Attention matrices (B, h, n, n); rows sum to 1."""
        s = self.logits(x, attn_mask=attn_mask)
        return _normalise(s, self.hardmax if hardmax is None else hardmax, masked=attn_mask is not None)

    def forward(self, x: torch.Tensor, *, need_weights: bool = False,
                attn_mask: torch.Tensor | None = None, hardmax: bool | None = None):
        """Returns (y, probs): y is (B, n, d_model); probs is (B, h, n, n) or None.

        attn_mask: boolean (True = may attend) or additive float, broadcastable to
        (B, h, n, n); combined with the causal mask when ``causal=True``.
        """
        use_hardmax = self.hardmax if hardmax is None else hardmax
        q, k, v = self.qkv(x)
        B, h, n, _ = q.shape
        p_drop = self.dropout if self.training else 0.0
        if not need_weights and not use_hardmax:
            # Fast path: fused kernel (flash / memory-efficient on CUDA), no n x n matrix kept.
            if self.causal and attn_mask is None:
                mask, is_causal = None, True
            else:
                mask, is_causal = self._mask(n, attn_mask, q.dtype, q.device), False
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=p_drop, is_causal=is_causal, scale=self.scale
            )
            probs = None
        else:
            # Reference path: the n x n matrix is materialised and returned.
            probs = _normalise(self._logits(q, k, attn_mask), use_hardmax, masked=attn_mask is not None)
            out = F.dropout(probs, p_drop) @ v
        y = self.out_proj(out.transpose(1, 2).reshape(B, n, h * self.head_dim))
        return y, (probs if need_weights else None)

    @torch.no_grad()
    def load_torch_mha(self, mha: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy the weights of a ``torch.nn.MultiheadAttention`` with the same shape."""
        if not (mha.embed_dim == self.d_model and mha.num_heads == self.n_heads and self.is_standard):
            raise ValueError("load_torch_mha needs a standard layer with the same d_model and n_heads")
        if not mha._qkv_same_embed_dim:
            raise ValueError("only nn.MultiheadAttention with kdim = vdim = embed_dim is supported")
        self.in_proj.weight.copy_(mha.in_proj_weight)
        self.out_proj.weight.copy_(mha.out_proj.weight)
        if self.in_proj.bias is not None:
            self.in_proj.bias.copy_(mha.in_proj_bias)
            self.out_proj.bias.copy_(mha.out_proj.bias)
        return self


def _normalise(logits: torch.Tensor, use_hardmax: bool, *, masked: bool) -> torch.Tensor:
    if use_hardmax:
        return hardmax(logits)
    # Only a caller's mask can hide a whole row (the causal mask keeps the diagonal), so the
    # NaN clean-up, a full extra pass over (B, h, n, n), is needed only then.
    return row_softmax(logits) if masked else torch.softmax(logits, dim=-1)


# --- per-head view of a layer's weights (theory and fitting write heads directly) ----------

class HeadWeights(NamedTuple):
    """Per-head weights in row convention: W_q, W_k, W_v (h, d, d_h); W_o (h, d_h, d)."""
    W_q: torch.Tensor
    W_k: torch.Tensor
    W_v: torch.Tensor
    W_o: torch.Tensor
    scale: float


def head_weights(mha: MultiHeadAttention) -> HeadWeights:
    """The weights of a layer split per head, float64 (biases are not part of this view)."""
    h, dh, d = mha.n_heads, mha.head_dim, mha.d_model
    W = mha.in_proj.weight.detach().to(torch.float64)  # (3 h dh, d); y = x W^T
    q, k, v = (W[j * h * dh:(j + 1) * h * dh].reshape(h, dh, d).transpose(1, 2) for j in range(3))
    o = mha.out_proj.weight.detach().to(torch.float64).T.reshape(h, dh, d)
    return HeadWeights(q, k, v, o, float(mha.scale))


@torch.no_grad()
def set_head_weights(mha: MultiHeadAttention, hw: HeadWeights) -> None:
    """Write per-head weights (``head_weights``' layout) into a layer, in its dtype."""
    h, dh, d = mha.n_heads, mha.head_dim, mha.d_model
    dtype = mha.in_proj.weight.dtype
    blocks = [w.transpose(1, 2).reshape(h * dh, d) for w in (hw.W_q, hw.W_k, hw.W_v)]
    mha.in_proj.weight.copy_(torch.cat(blocks).to(dtype))
    mha.out_proj.weight.copy_(hw.W_o.reshape(h * dh, d).T.to(dtype))
