"""Item 3: MultiHeadAttention forward + backward against torch.nn.MultiheadAttention.

Both layers get the same weights (``load_torch_mha``), the same (B, n, d) input
(``batch_first=True``) and the same output gradient. The fast path (``need_weights=False``)
runs scaled_dot_product_attention in both; with ``need_weights=True`` both return per-head
weights (``average_attn_weights=False``), so both materialise the same (B, h, n, n) tensor.
The fixed head size d_p = n against the standard d / h is timed in our layer alone, and its
cost ratio is set beside the FLOP ratio.
"""
from __future__ import annotations

import contextlib

import torch
from torch import nn

from harness import Result, compare, cuda_sync
from lowrank.layers.attention import MultiHeadAttention


def attention_flops(batch: int, n: int, d_model: int, n_heads: int, head_dim: int) -> int:
    """Forward + backward FLOPs of one self-attention layer (matmuls only; backward = 2 x forward).

    Forward: projections 2 B n d (3 h d_h) + 2 B n (h d_h) d, scores and weighted sum
    2 x 2 B h n^2 d_h, i.e. 4 B n (h d_h) (2 d + n).
    """
    inner = n_heads * head_dim
    return 3 * 4 * batch * n * inner * (2 * d_model + n)


def _autocast(device: torch.device, dtype: torch.dtype | None):
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


def _step(layer: nn.Module, call, x: torch.Tensor, grad: torch.Tensor, device, amp):
    """One forward + backward of call(x) with fresh gradients, as a training step would have."""
    params = list(layer.parameters())

    def run():
        x.grad = None
        for p in params:
            p.grad = None
        with _autocast(device, amp):
            y = call(x)
        y.backward(grad)
    return run


def check_same_output(ours: MultiHeadAttention, ref: nn.MultiheadAttention, x: torch.Tensor) -> None:
    """Raise unless both layers give the same outputs and weights on x (float32 tolerances)."""
    with torch.no_grad():
        y_ref, p_ref = ref(x, x, x, need_weights=True, average_attn_weights=False)
        y_fast, _ = ours(x)
        y, p = ours(x, need_weights=True)
    for a, b in ((y_fast, y_ref), (y, y_ref), (p, p_ref)):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def bench_mha(configs, *, device: torch.device, timing: dict,
              amp: torch.dtype | None = None) -> list[Result]:
    """Rows for each config dict (batch, n, d_model, n_heads): fast path, need_weights, fixed head size.

    ``timing``: keyword arguments of harness.compare (warmup, reps, budget_s).
    """
    sync = cuda_sync(device)
    rows = []
    for cfg in configs:
        B, n, d, h = cfg["batch"], cfg["n"], cfg["d_model"], cfg["n_heads"]
        torch.manual_seed(0)
        ref = nn.MultiheadAttention(d, h, batch_first=True).to(device)
        ours = MultiHeadAttention(d, h).to(device).load_torch_mha(ref)
        g = torch.Generator(device=device).manual_seed(1)
        x = torch.randn(B, n, d, device=device, generator=g).requires_grad_()
        grad = torch.randn(B, n, d, device=device, generator=g)
        check_same_output(ours, ref, x.detach()[:2])
        label = f"B{B}_n{n}_d{d}_h{h}"
        config = {**cfg, "head_dim": d // h, "device": str(device),
                  "dtype": "float32" if amp is None else f"autocast {amp}".replace("torch.", "")}
        rows.append(compare(
            f"mha_fast_{label}", 3, config=config, target=1.0,
            ours=("MultiHeadAttention fwd+bwd", _step(ours, lambda t: ours(t)[0], x, grad, device, amp)),
            baseline=("nn.MultiheadAttention fwd+bwd",
                      _step(ref, lambda t: ref(t, t, t, need_weights=False)[0], x, grad, device, amp)),
            sync=sync, **timing, note="need_weights=False (SDPA in both)"))
        rows.append(compare(
            f"mha_weights_{label}", 3, config=config, target=1.4,
            ours=("MultiHeadAttention fwd+bwd, need_weights",
                  _step(ours, lambda t: ours(t, need_weights=True)[0], x, grad, device, amp)),
            baseline=("nn.MultiheadAttention fwd+bwd, need_weights",
                      _step(ref, lambda t: ref(t, t, t, need_weights=True, average_attn_weights=False)[0],
                            x, grad, device, amp)),
            sync=sync, **timing,
            note="per-head weights (B, h, n, n) returned by both"))
        fixed = MultiHeadAttention(d, h, head_dim=n).to(device)
        flop_ratio = attention_flops(B, n, d, h, n) / attention_flops(B, n, d, h, d // h)
        row = compare(
            f"mha_fixed_vs_standard_{label}", 3, config={**config, "fixed_head_dim": n}, target=None,
            ours=(f"MultiHeadAttention d_p = n = {n} fwd+bwd", _step(fixed, lambda t: fixed(t)[0], x, grad, device, amp)),
            baseline=(f"MultiHeadAttention d_p = d/h = {d // h} fwd+bwd",
                      _step(ours, lambda t: ours(t)[0], x, grad, device, amp)),
            sync=sync, **timing, extra={"flop_ratio": flop_ratio})
        row.note = f"FLOP ratio {flop_ratio:.2f}; cost / FLOP ratio {row.ratio / flop_ratio:.2f}"
        rows.append(row)
    return rows
