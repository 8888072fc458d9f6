"""Chapter 03, the multi-head bottleneck: heads of size d/h against a fixed head size, F in G,
Theorem 2. Tidy tables, one row per fit."""
from __future__ import annotations

import pandas as pd
import torch

from ..progress import tqdm
from ..fit import fit_heads

__all__ = ["head_count_sweep"]


def head_count_sweep(X, heads, *, concentration: float = 1.0, fixed_head_dim: int | None = None,
                     restarts: int = 2, max_iter: int = 1000, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    """Heads of a standard layer (size d / h) and of a fixed one (size d_p) fitted to dense targets.

    X: one input (n, d). For each h in heads: h targets with Dirichlet(concentration) rows, one
    per head; each head is fitted on X with fit_heads, at d / h (standard) and at fixed_head_dim
    (default n). One row per (h, layer, head, restart): n_heads, layer, head_dim, head, restart,
    tv_max, kl, loss.
    """
    from ..theory.targets import dirichlet_targets

    X = torch.as_tensor(X).to(torch.float64)
    n, d = X.shape
    dp = n if fixed_head_dim is None else fixed_head_dim
    frames = []
    for h in tqdm(list(heads), disable=not progress, leave=False, desc="heads"):
        if d % h:
            raise ValueError(f"every h must divide d = {d} for a standard layer, got h = {h}")
        P = dirichlet_targets(n, concentration=concentration, batch=h, seed=seed + h)
        for layer, hd in (("standard", d // h), ("fixed", dp)):
            df = fit_heads(X, P, head_dim=hd, restarts=restarts, max_iter=max_iter, seed=seed + h)
            df.insert(0, "layer", layer)
            df.insert(0, "n_heads", h)
            frames.append(df)
    return pd.concat(frames, ignore_index=True)
