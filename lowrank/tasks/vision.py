"""A small vision transformer with an independent head size, its trainer and its attention ranks.

The model (:class:`VisionTransformer`, after Dosovitskiy et al. 2021). An image (B, C, H, W) is
cut into non-overlapping p x p patches; a linear map of each flattened patch (a stride-p
convolution) gives P = (H / p)(W / p) tokens of width d. A learned class token is put first and
learned position embeddings are added: n = P + 1 tokens. Then ``n_layers`` pre-LN encoder blocks
(:class:`lowrank.layers.models.Block`: LayerNorm, :class:`lowrank.layers.attention.MultiHeadAttention` without
a mask, residual; LayerNorm, GELU MLP, residual), a final LayerNorm and a linear classifier on the
class token. ``head_dim`` (d_h) is independent of the width: at d = 64 it can range from 1 to 64
and beyond, and the first block's logits S = Q K^T have rank at most d_h.

Readable by :mod:`lowrank.probes.probe` as every lowrank model is: its attention modules are
``MultiHeadAttention`` and ``model(images)`` runs it, so ``probe.rank_table(model, images)``
gives per-layer, per-head logits and probabilities (B, h, n, n).

:func:`train_vit` trains one :class:`ViTConfig` to a plateau of its validation loss
(:mod:`lowrank.tasks.plateau` says why not a fixed epoch count) and reports test accuracy with its
standard error and the first block's attention ranks on held-out images. Training batches draw
with replacement from the training split, from a generator seeded by (seed, step); a random
translation by up to ``shift`` pixels (blank pixels shifted in) is the only augmentation.

Patch sizes: ``digits`` (8 x 8) with p = 2 gives n = 17 tokens; ``mnist5k`` (28 x 28) with p = 4
gives n = 50, near the 65 of a ViT with 4 x 4 patches on CIFAR's 32 x 32 images. The default p = 2
is for ``digits``; on ``mnist5k`` it would give n = 197.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from ..data.images import IMAGE_SETS, SHAPES, ImageSplits, load_images
from ..layers.models import Block, TransformerConfig
from ..core.params import Choice, Float, Int, Param, ParameterError
from .plateau import PlateauConfig, accuracy_record, block_hardmax_ranks, first_block_ranks, train_to_plateau
from ..train.tasks import seed_of

__all__ = ["ViTConfig", "VisionTransformer", "shift_images", "parameter_count", "train_vit", "vit_run"]


@dataclass(frozen=True, kw_only=True)
class ViTConfig(PlateauConfig):
    """One vision-transformer run. ``to_dict()`` is the content of its run key."""
    head_dim: int                  # d_h: query/key/value size of every head
    dataset: str = "digits"        # an image set of lowrank.data.images
    patch: int = 2                 # p: patches p x p; must divide the image side
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 128
    dropout: float = 0.0
    shift: int = 1                 # augmentation: random translation by up to this many pixels
    split_seed: int = 0
    val_fraction: float = 0.15
    test_fraction: float = 0.15
    rank_images: int = 64          # held-out (test) images whose first-block attention is ranked
    # The schedule's defaults for these sets: at a constant rate the validation loss of a few
    # hundred images jumps by +-0.05 nats between evaluations, so the plateau check compares
    # windows of 10 evaluations (500 steps), and not before step 1000.
    min_steps: int = 1000
    max_steps: int = 6000
    patience: int = 10

    SCHEMA: ClassVar[dict[str, Param]] = {
        **PlateauConfig.SCHEMA, "head_dim": Int(1, 4096), "dataset": Choice(*IMAGE_SETS), "patch": Int(1, 64),
        "d_model": Int(1, 4096), "n_layers": Int(1, 64), "n_heads": Int(1, 256), "d_ff": Int(1, 65536),
        "dropout": Float(0.0, 0.9), "shift": Int(0, 8), "split_seed": Int(0),
        "val_fraction": Float(0.01, 0.5), "test_fraction": Float(0.01, 0.5), "rank_images": Int(1, 100_000),
    }

    def check(self) -> None:
        side = SHAPES[self.dataset][1]
        if side % self.patch:
            raise ParameterError(f"patch = {self.patch} must divide the image side {side} of {self.dataset!r}")
        if self.val_fraction + self.test_fraction >= 0.9:
            raise ParameterError(f"val_fraction + test_fraction = {self.val_fraction + self.test_fraction:g} "
                                 "must be below 0.9, to leave images to train on")

    @property
    def fractions(self) -> tuple[float, float, float]:
        return (1.0 - self.val_fraction - self.test_fraction, self.val_fraction, self.test_fraction)

    @property
    def n_tokens(self) -> int:
        _, h, w = SHAPES[self.dataset]
        return (h // self.patch) * (w // self.patch) + 1


class VisionTransformer(nn.Module):
    """Patch embedding, class token, position embeddings, pre-LN blocks, classifier (module doc).

    forward(images (B, C, H, W), labels (B,) or None) -> (logits (B, n_classes), loss or None).
    """

    def __init__(self, cfg: ViTConfig, *, n_classes: int):
        super().__init__()
        channels, height, width = SHAPES[cfg.dataset]
        self.cfg = cfg
        self.patch = nn.Conv2d(channels, cfg.d_model, kernel_size=cfg.patch, stride=cfg.patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, cfg.d_model))
        self.pos = nn.Parameter(torch.zeros(1, cfg.n_tokens, cfg.d_model))
        body = TransformerConfig(vocab_size=1, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                                 head_dim=cfg.head_dim, d_ff=cfg.d_ff, max_len=cfg.n_tokens,
                                 dropout=cfg.dropout, causal=False, norm="pre")
        self.blocks = nn.ModuleList(Block(body) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, n_classes)
        self.image_shape = (channels, height, width)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                nn.init.trunc_normal_(m.weight, std=0.02, a=-0.04, b=0.04)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        for p in (self.cls, self.pos):
            nn.init.trunc_normal_(p, std=0.02, a=-0.04, b=0.04)

    def tokens(self, images: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> the first block's input (B, n, d): class token, then patches row by row."""
        if images.dim() != 4 or tuple(images.shape[1:]) != self.image_shape:
            raise ValueError(f"images must be (B, {', '.join(map(str, self.image_shape))}), "
                             f"got {tuple(images.shape)}")
        x = self.patch(images).flatten(2).transpose(1, 2)            # (B, P, d)
        x = torch.cat([self.cls.expand(len(x), -1, -1), x], dim=1)   # (B, n, d)
        return x + self.pos

    def forward(self, images: torch.Tensor, labels: torch.Tensor | None = None):
        x = self.tokens(images)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x[:, 0]))
        loss = None if labels is None else F.cross_entropy(logits.float(), labels)
        return logits, loss


def shift_images(images: torch.Tensor, shift: int, background: float, generator: torch.Generator) -> torch.Tensor:
    """Each image translated by (dy, dx), both uniform in [-shift, shift], blank pixels shifted in."""
    if shift == 0:
        return images
    B, C, H, W = images.shape
    padded = F.pad(images, (shift, shift, shift, shift), value=background)
    side = 2 * shift + 1
    offsets = torch.randint(0, side * side, (B,), generator=generator)
    out = torch.empty_like(images)
    for k in offsets.unique().tolist():  # one slice per offset in use, not one per image
        dy, dx = divmod(k, side)
        rows = offsets == k
        out[rows] = padded[rows, :, dy:dy + H, dx:dx + W]
    return out


@torch.no_grad()
def _logits(model: nn.Module, x: torch.Tensor, chunk: int = 512) -> torch.Tensor:
    was = model.training
    model.eval()
    out = torch.cat([model(x[i:i + chunk])[0] for i in range(0, len(x), chunk)])
    model.train(was)
    return out


def train_vit(config: dict | ViTConfig, *, threads: int | None = None, data: ImageSplits | None = None) -> dict:
    """Train one run to its validation plateau; return its record, test accuracy and ranks.

    Record: the plateau fields of :func:`lowrank.tasks.plateau.train_to_plateau`; ``test_acc``,
    ``test_acc_se`` (over images), ``test_loss``, ``test_n``; ``val_acc`` at the end; the ranks of
    :func:`lowrank.tasks.plateau.first_block_ranks` on the first ``rank_images`` test images (hardmax
    rank of A, numerical rank of A at ``rank_rtol`` and at the float64 default max(n, n) eps,
    numerical rank of the logits at the float64 default, each a mean over heads and images; A and
    S recomputed in float64 from the trained weights); ``n_tokens``, ``n_params``, ``rank_s``.

    Initialisation from torch's seed seed_of(seed, 0, 0); the batch and shifts of step s from a
    generator seeded seed_of(seed, s, 1): a run is a function of its config (same machine).
    ``data`` replaces the loaded split (tests); ``threads`` sets torch's CPU threads.
    """
    cfg = config if isinstance(config, ViTConfig) else ViTConfig.from_dict(dict(config))
    if threads:
        torch.set_num_threads(threads)
    data = data or load_images(cfg.dataset, fractions=cfg.fractions, split_seed=cfg.split_seed)
    x_train, y_train = data.split("train")
    x_val, y_val = data.split("validation")
    torch.manual_seed(seed_of(cfg.seed, 0, 0))
    model = VisionTransformer(cfg, n_classes=data.n_classes)

    def train_loss(step: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(seed_of(cfg.seed, step, 1))
        idx = torch.randint(len(x_train), (cfg.batch_size,), generator=g)
        torch.manual_seed(seed_of(cfg.seed, step, 4))  # dropout stream of this step
        return model(shift_images(x_train[idx], cfg.shift, data.background, g), y_train[idx])[1]

    def val_loss() -> float:
        return float(F.cross_entropy(_logits(model, x_val), y_val))

    out = train_to_plateau(model, cfg, train_loss=train_loss, val_loss=val_loss)
    out.update(accuracy_record(_logits(model, x_val), y_val, "val"))
    x_test, y_test = data.split("test")
    out.update(accuracy_record(_logits(model, x_test), y_test, "test"))
    t0 = time.perf_counter()
    held_out = x_test[:cfg.rank_images]
    batches = [held_out[i:i + 64] for i in range(0, len(held_out), 64)]
    out.update(first_block_ranks(model, batches, rtol=cfg.rank_rtol))
    out["layer_hardmax_rank"] = block_hardmax_ranks(model, batches, n_layers=cfg.n_layers)
    out.update({"rank_s": time.perf_counter() - t0, "n_tokens": cfg.n_tokens,
                "n_params": int(sum(p.numel() for p in model.parameters()))})
    return out


def vit_run(config: dict, *, run_dir: Path | None = None) -> dict:
    """:func:`train_vit` as a :func:`lowrank.stores.sweep.sweep` run function. A run takes minutes, so it
    keeps no checkpoint: an interrupted sweep re-trains the unfinished run (same result, same seed)."""
    return train_vit(config)


def parameter_count(cfg: ViTConfig, n_classes: int = 10) -> int:
    """Parameters of :class:`VisionTransformer` in closed form: patch map, class token, positions,
    per block Q, K, V, O (with biases), two LayerNorms and the MLP, final LayerNorm, classifier."""
    c, h, w = SHAPES[cfg.dataset]
    d, inner = cfg.d_model, cfg.n_heads * cfg.head_dim
    block = (d * 3 * inner + 3 * inner) + (inner * d + d) + 2 * 2 * d + (d * cfg.d_ff + cfg.d_ff) + (cfg.d_ff * d + d)
    return (c * cfg.patch ** 2 * d + d) + d + cfg.n_tokens * d + cfg.n_layers * block + 2 * d + (d * n_classes + n_classes)
