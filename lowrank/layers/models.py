"""Transformer models with an independent head size, and BERT-style parameter counting.

One body (:class:`Transformer`: embeddings, ``n_layers`` blocks on
:class:`lowrank.layers.attention.MultiHeadAttention`, or on :class:`lowrank.layers.mla.MultiHeadLatentAttention`
with ``attention="mla"``) and three heads: :class:`CausalLM`,
:class:`MaskedLM` (BERT-style 80/10/10 masking, :func:`mask_tokens`) and
:class:`SequenceClassifier`. Shapes: ids (B, n) int64, hidden states (B, n, d_model),
LM logits (B, n, vocab_size), class logits (B, n_classes).

``head_dim=None`` is the standard d_model // n_heads; an int is the fixed head size d_p of
Bhojanapalli et al. (2020), and then n_heads need not divide d_model.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention, standard_head_dim
from .mla import MultiHeadLatentAttention

__all__ = ["INITS", "ATTENTIONS", "residual_output_std", "TransformerConfig", "Transformer", "CausalLM", "MaskedLM", "SequenceClassifier",
           "mask_tokens", "bert_parameter_count", "count_parameters", "IGNORE_INDEX"]

IGNORE_INDEX = -100

# Initialisations (TransformerConfig.init): "bert" draws every weight from trunc-normal(0.02);
# "scaled" does the same except for the two projections that write into the residual stream
# (attention's W_O and the feed-forward layer's second linear), see :func:`residual_output_std`.
INITS = ("bert", "scaled")
BERT_STD = 0.02
# Attention kinds (TransformerConfig.attention): "standard" is lowrank.layers.attention's layer; "mla" is
# lowrank.layers.mla's multi-head latent attention (keys and values from a latent of width kv_latent, a
# decoupled rotary part of width rope_dim), with the head size as its content query/key size.
ATTENTIONS = ("standard", "mla")


@dataclass
class TransformerConfig:
    """Shape of a Transformer. ``d_ff=None`` means 4 * d_model; ``head_dim=None`` standard heads.

    ``attention="mla"`` builds every block on multi-head latent attention of latent width
    ``kv_latent`` (required then) and rotary width ``rope_dim`` (even; 0 leaves the rotary part
    out); the head size is its content size and its value size. MLA applies no dropout to its
    attention weights (the residual dropout stays). ``kv_latent`` and ``rope_dim`` must be left
    at None and 0 with standard attention."""
    vocab_size: int
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    head_dim: int | None = None
    d_ff: int | None = None
    max_len: int = 512
    dropout: float = 0.0
    causal: bool = True
    norm: str = "post"
    tie_embeddings: bool = True
    init: str = "bert"
    attention: str = "standard"
    kv_latent: int | None = None
    rope_dim: int = 0

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "max_len"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        for name in ("head_dim", "d_ff"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise ValueError(f"{name} must be None or a positive int, got {v!r}")
        if self.head_dim is None:
            standard_head_dim(self.d_model, self.n_heads)  # raises when h does not divide d
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")
        if self.norm not in ("post", "pre"):
            raise ValueError(f"norm must be 'post' (BERT, the paper) or 'pre', got {self.norm!r}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, got {self.attention!r}")
        if self.attention == "mla":
            v = self.kv_latent
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"kv_latent must be a positive int with attention='mla', got {v!r}")
            r = self.rope_dim
            if not isinstance(r, int) or isinstance(r, bool) or r < 0 or r % 2:
                raise ValueError(f"rope_dim must be an even non-negative int, got {r!r}")
        elif self.kv_latent is not None or self.rope_dim != 0:
            raise ValueError(f"kv_latent and rope_dim belong to attention='mla'; with attention="
                             f"{self.attention!r} leave them at None and 0, got {self.kv_latent!r} and {self.rope_dim!r}")

    @property
    def head_size(self) -> int:
        return self.head_dim if self.head_dim is not None else standard_head_dim(self.d_model, self.n_heads)

    @property
    def ff_size(self) -> int:
        return self.d_ff if self.d_ff is not None else 4 * self.d_model

    def to_dict(self) -> dict:
        return asdict(self)


class Block(nn.Module):
    """Self-attention then feed-forward, each with a residual and a LayerNorm (post or pre)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.pre = cfg.norm == "pre"
        if cfg.attention == "mla":
            self.attn = MultiHeadLatentAttention(cfg.d_model, cfg.n_heads, kv_latent=cfg.kv_latent,
                                                 head_dim=cfg.head_size, rope_dim=cfg.rope_dim, causal=cfg.causal)
        else:
            self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.head_dim, causal=cfg.causal,
                                           dropout=cfg.dropout)
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.ff = nn.Sequential(nn.Linear(cfg.d_model, cfg.ff_size), nn.GELU(),
                                nn.Linear(cfg.ff_size, cfg.d_model))
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.pre:
            x = x + self.drop(self.attn(self.ln1(x), attn_mask=attn_mask)[0])
            return x + self.drop(self.ff(self.ln2(x)))
        x = self.ln1(x + self.drop(self.attn(x, attn_mask=attn_mask)[0]))
        return self.ln2(x + self.drop(self.ff(x)))


class Transformer(nn.Module):
    """Token + learned position embeddings, then the blocks. ids (B, n) -> hidden (B, n, d).

    Post-norm (BERT) puts a LayerNorm on the embeddings; pre-norm puts one after the last block.
    ``pad_mask`` (B, n), True at real tokens, hides padding keys from every query.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.ln = nn.LayerNorm(cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.apply(_init_weights)
        if cfg.init == "scaled":
            for block in self.blocks:
                for proj in (block.attn.out_proj, block.ff[2]):
                    std = residual_output_std(proj.in_features, cfg.d_model, cfg.n_layers)
                    nn.init.trunc_normal_(proj.weight, std=std, a=-2 * std, b=2 * std)

    def forward(self, ids: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        if ids.dim() != 2:
            raise ValueError(f"ids must be (B, n), got shape {tuple(ids.shape)}")
        n = ids.shape[1]
        if n > self.cfg.max_len:
            raise ValueError(f"sequence length {n} exceeds max_len={self.cfg.max_len}")
        x = self.tok(ids) + self.pos(torch.arange(n, device=ids.device))
        if self.cfg.norm == "post":
            x = self.ln(x)
        x = self.drop(x)
        mask = None if pad_mask is None else pad_mask[:, None, None, :]  # (B, 1, 1, n) over keys
        for block in self.blocks:
            x = block(x, attn_mask=mask)
        return self.ln(x) if self.cfg.norm == "pre" else x


def residual_output_std(fan_in: int, d_model: int, n_layers: int) -> float:
    """Init std of a projection that writes into the residual stream under ``init="scaled"``:
    ``0.02 * sqrt(d_model / fan_in) / sqrt(2 * n_layers)``.

    The fan-in factor makes the branch's output variance independent of its inner width (a
    fixed head size with h * d_p > d, or a wide feed-forward layer, writes no more at
    initialisation than a standard W_O of fan-in d); the depth factor is GPT-2's 1/sqrt(2L)
    for the 2L residual branches, so the residual stream's variance at initialisation does not
    grow with depth. A standard W_O (fan-in d) at one layer gets 0.02 / sqrt(2).
    """
    for name, v in (("fan_in", fan_in), ("d_model", d_model), ("n_layers", n_layers)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    return BERT_STD * (d_model / fan_in) ** 0.5 / (2 * n_layers) ** 0.5


def _init_weights(m: nn.Module) -> None:
    # BERT's truncated-normal(0.02) init, which keeps post-norm training stable at small scale.
    if isinstance(m, (nn.Linear, nn.Embedding)):
        nn.init.trunc_normal_(m.weight, std=BERT_STD, a=-2 * BERT_STD, b=2 * BERT_STD)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)


class CausalLM(nn.Module):
    """Next-token prediction. forward(ids (B, n), targets (B, n) or None) -> (logits, loss)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        if not cfg.causal:
            raise ValueError("CausalLM needs causal=True in its TransformerConfig")
        self.cfg = cfg
        self.body = Transformer(cfg)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.head.weight = self.body.tok.weight
        else:
            _init_weights(self.head)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor | None = None):
        logits = self.head(self.body(ids))
        loss = None if targets is None else F.cross_entropy(
            logits.flatten(0, 1).float(), targets.flatten(), ignore_index=IGNORE_INDEX)
        return logits, loss


class MaskedLM(nn.Module):
    """BERT's MLM: body, transform (dense + GELU + LayerNorm), decoder (tied) with output bias.

    forward(ids, labels) -> (logits (B, n, V), loss over positions whose label is not -100).
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        if cfg.causal:
            raise ValueError("MaskedLM needs causal=False in its TransformerConfig")
        self.cfg = cfg
        self.body = Transformer(cfg)
        self.transform = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_model), nn.GELU(),
                                       nn.LayerNorm(cfg.d_model))
        self.decoder = nn.Linear(cfg.d_model, cfg.vocab_size, bias=True)
        _init_weights(self.transform[0])
        _init_weights(self.decoder)
        if cfg.tie_embeddings:
            self.decoder.weight = self.body.tok.weight

    def forward(self, ids: torch.Tensor, labels: torch.Tensor | None = None,
                pad_mask: torch.Tensor | None = None):
        logits = self.decoder(self.transform(self.body(ids, pad_mask)))
        loss = None if labels is None else F.cross_entropy(
            logits.flatten(0, 1).float(), labels.flatten(), ignore_index=IGNORE_INDEX)
        return logits, loss


class SequenceClassifier(nn.Module):
    """BERT-style classifier: pooler (dense + tanh) on the first token, then a linear layer.

    forward(ids (B, n), labels (B,) or None, pad_mask) -> (logits (B, n_classes), loss).
    """

    def __init__(self, cfg: TransformerConfig, n_classes: int):
        super().__init__()
        if not isinstance(n_classes, int) or n_classes < 2:
            raise ValueError(f"n_classes must be an int >= 2, got {n_classes!r}")
        self.cfg = cfg
        self.body = Transformer(cfg)
        self.pooler = nn.Linear(cfg.d_model, cfg.d_model)
        self.classifier = nn.Linear(cfg.d_model, n_classes)
        self.drop = nn.Dropout(cfg.dropout)
        _init_weights(self.pooler)
        _init_weights(self.classifier)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor | None = None,
                pad_mask: torch.Tensor | None = None):
        pooled = torch.tanh(self.pooler(self.body(ids, pad_mask)[:, 0]))
        logits = self.classifier(self.drop(pooled))
        loss = None if labels is None else F.cross_entropy(logits.float(), labels)
        return logits, loss


def mask_tokens(ids: torch.Tensor, *, vocab_size: int, mask_id: int, special_ids=(),
                prob: float = 0.15, generator: torch.Generator | None = None):
    """BERT masking: choose ``prob`` of the non-special positions; of those 80 % become
    ``mask_id``, 10 % a random token, 10 % stay. Returns (inputs, labels), labels -100
    where nothing is predicted."""
    if not 0.0 < prob < 1.0:
        raise ValueError(f"prob must be in (0, 1), got {prob!r}")
    special = torch.zeros_like(ids, dtype=torch.bool)
    for s in special_ids:
        special |= ids == s
    u = torch.rand(ids.shape, generator=generator, device=ids.device)
    chosen = (u < prob) & ~special
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE_INDEX))
    action = torch.rand(ids.shape, generator=generator, device=ids.device)
    random_tok = torch.randint(vocab_size, ids.shape, generator=generator, device=ids.device)
    inputs = torch.where(chosen & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & (action >= 0.8) & (action < 0.9), random_tok, inputs)
    return inputs, labels


def bert_parameter_count(d_model: int, n_layers: int, n_heads: int, head_dim: int | None = None,
                         d_ff: int | None = None, vocab_size: int = 30522, max_position: int = 512,
                         type_vocab: int = 2, *, pooler: bool = True, mlm_head: bool = True) -> int:
    """Parameters of a BERT-style model, counted as google-research/bert builds it.

    Embeddings (word, position, token type) + LayerNorm; per layer Q, K, V of width
    n_heads * head_dim with biases, the output projection with bias, two LayerNorms and the
    feed-forward layer with biases; the pooler (d^2 + d); the MLM transform (dense + LayerNorm)
    and output bias (decoder tied to the word embeddings). ``head_dim=None`` is d / h,
    ``d_ff=None`` is 4 d.
    """
    d, h = d_model, n_heads
    dp = standard_head_dim(d, h) if head_dim is None else head_dim
    ff = 4 * d if d_ff is None else d_ff
    inner = h * dp
    emb = (vocab_size + max_position + type_vocab) * d + 2 * d
    attn = 3 * (d * inner + inner) + inner * d + d
    ffn = d * ff + ff + ff * d + d
    layer = attn + ffn + 2 * (2 * d)
    total = emb + n_layers * layer
    if pooler:
        total += d * d + d
    if mlm_head:
        total += d * d + d + 2 * d + vocab_size
    return total


def count_parameters(model: nn.Module, *, trainable_only: bool = False) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    seen, total = set(), 0
    for p in model.parameters():
        if id(p) in seen or (trainable_only and not p.requires_grad):
            continue
        seen.add(id(p))
        total += p.numel()
    return total
