"""How the rank of random attention depends on head size, temperature and tolerance.

The logits S = Q K^T / sqrt(d_h) have rank <= d_h, but the row softmax is an entrywise
exponential followed by a row scaling, and exp destroys low rank: the attention matrix is
generically full rank. Whether that shows in a *numerical* rank depends on how small the
trailing singular values are (temperature) and where the cut-off sits (tolerance).
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch
from ..progress import progress

from ..attention import row_softmax
from ..rank import effective_rank_of_singular_values, numerical_rank_of_singular_values, default_rtol
from .sampling import sample_qk


def _tol_label(rtol: float, n: int) -> str:
    return f"rtol={rtol:g}" if rtol > 0 else f"rtol=n*eps={default_rtol(n, n):.1e}"


def rank_vs_head_dim(n: int, head_dims: Sequence[int], *, n_trials: int = 20, scales: Sequence[float] = (1.0,),
                     rtols: Sequence[float] = (0.0,), inputs: str = "orthonormal", seed: int = 0,
                     device="cpu", show_progress: bool | None = None) -> pd.DataFrame:
    """Ranks of logits and softmax attention for random heads, one row per measurement.

    For each head size d_h and trial, Q and K are sampled (see ``sample_qk``), the logits are
    S = Q K^T / sqrt(d_h) and, for each multiplier k in ``scales``, P = softmax(k S). An rtol of
    0 means the default max(n, n) * eps of matrix_rank.

    Columns: head_dim, scale, trial, matrix ("logits" or "probs"), measure ("numerical_rank" or
    "effective_rank"), tolerance, value.
    """
    if n < 2 or not head_dims or n_trials < 1:
        raise ValueError(f"need n >= 2, at least one head_dim and n_trials >= 1; got n={n}, "
                         f"head_dims={list(head_dims)}, n_trials={n_trials}")
    rows = []
    for i, dh in enumerate(progress(head_dims, desc="head sizes", disable=None if show_progress is None else not show_progress)):
        Q, K = sample_qk(n, dh, batch=n_trials, inputs=inputs, seed=seed + 7919 * i, device=device)
        S = Q @ K.transpose(-2, -1) / dh ** 0.5
        mats = [("logits", 1.0, S)] + [("probs", float(k), row_softmax(k * S)) for k in scales]
        for matrix, k, A in mats:
            sigma = torch.linalg.svdvals(A)
            for rtol in rtols:
                r = numerical_rank_of_singular_values(sigma, n, n, None, rtol if rtol > 0 else None)
                rows += _rows(dh, k, matrix, "numerical_rank", _tol_label(rtol, n), r)
            rows += _rows(dh, k, matrix, "effective_rank", "", effective_rank_of_singular_values(sigma))
    return pd.DataFrame(rows)


def _rows(dh, k, matrix, measure, tol, values):
    return [dict(head_dim=dh, scale=k, trial=t, matrix=matrix, measure=measure, tolerance=tol,
                 value=float(v)) for t, v in enumerate(values.cpu().tolist())]
