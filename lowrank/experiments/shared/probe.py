"""A linear probe: cross-validated accuracy of a multinomial logistic regression on fixed features."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["stratified_folds", "probe_accuracy"]


def stratified_folds(y: Sequence[int], folds: int, seed: int) -> np.ndarray:
    """A fold number (0 .. folds - 1) per item, classes dealt round-robin after a seeded shuffle."""
    y = np.asarray(y)
    out = np.empty(len(y), dtype=int)
    rng = np.random.default_rng(seed)
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        out[idx] = np.arange(len(idx)) % folds
    return out


def probe_accuracy(X: np.ndarray, y: Sequence[int], *, folds: int = 5, seed: int = 0, l2: float = 1e-2,
                   iters: int = 200) -> np.ndarray:
    """Held-out accuracy of a multinomial logistic regression on each of ``folds`` stratified folds.

    Features standardised with the training folds' mean and sd; weights fitted by L-BFGS on the
    mean cross-entropy plus ``l2`` times the squared weight norm (float64, deterministic).
    """
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=int)
    fold = stratified_folds(y, folds, seed)
    classes = int(y.max()) + 1
    accs = []
    for f in range(folds):
        tr, te = fold != f, fold == f
        mu, sd = X[tr].mean(0), X[tr].std(0) + 1e-8
        Xtr = torch.tensor((X[tr] - mu) / sd)
        Xte = torch.tensor((X[te] - mu) / sd)
        ytr = torch.tensor(y[tr])
        W = torch.zeros(X.shape[1], classes, dtype=torch.float64, requires_grad=True)
        b = torch.zeros(classes, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([W, b], max_iter=iters, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(Xtr @ W + b, ytr) + l2 * (W * W).sum()
            loss.backward()
            return loss

        opt.step(closure)
        with torch.no_grad():
            accs.append(float(((Xte @ W + b).argmax(1).numpy() == y[te]).mean()))
    return np.array(accs)
