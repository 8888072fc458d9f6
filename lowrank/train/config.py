"""What determines a training run: :class:`TrainConfig`, its run key and its learning-rate schedule."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields

from ..layers.models import TransformerConfig

__all__ = ["TASKS", "SCHEDULES", "INT_CEILING", "RANGES", "TrainConfig", "lr_at", "run_key", "clip"]

TASKS = ("lm", "mlm", "classify")
SCHEDULES = ("cosine", "inverse_sqrt", "constant")

INT_CEILING = 2**32 - 1  # the largest int a config holds (seeds included)
# (field, low, high, high included): the ranges a run can be trained with; outside them a run
# ends in nonsense (a negative learning-rate floor diverges) or cannot start.
RANGES = (
    ("lr", 0.0, 10.0, True), ("min_lr_ratio", 0.0, 1.0, True), ("weight_decay", 0.0, 10.0, True),
    ("beta1", 0.0, 1.0, False), ("beta2", 0.0, 1.0, False), ("grad_clip", 0.0, 1e6, True),
    ("mlm_prob", 0.0, 1.0, False), ("dropout", 0.0, 1.0, False), ("seq_len", 2, 65536, True),
    ("vocab_size", 1, 1 << 20, True), ("num_threads", 1, 4096, True), ("test_tokens", 1, INT_CEILING, True),
)


@dataclass
class TrainConfig:
    """Everything that determines a run. ``batch_size`` is the global batch (all processes)."""
    task: str = "lm"                 # 'lm' (causal), 'mlm' (BERT masking) or 'classify'
    corpus: str = "shakespeare"      # corpus name or local path (see lowrank.data.corpora)
    vocab_size: int = 1024           # BPE vocabulary size
    split_seed: int = 0              # seed of the document split
    seq_len: int = 64                # tokens per sequence n
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    head_dim: int | None = None      # None: standard d_model / n_heads; int: fixed head size d_p
    d_ff: int | None = None          # None: 4 * d_model
    dropout: float = 0.0
    norm: str = "post"
    tie_embeddings: bool = True
    init: str = "bert"               # 'bert' (trunc-normal 0.02) or 'scaled' (residual outputs by fan-in and depth)
    attention: str = "standard"      # 'standard' or 'mla' (multi-head latent attention, lowrank.layers.mla)
    kv_latent: int | None = None     # MLA: width of the shared key-value latent (required with 'mla')
    rope_dim: int = 0                # MLA: width of the decoupled rotary query and key (even)
    batch_size: int = 16
    steps: int = 200
    lr: float = 1e-3
    warmup_steps: int = 20
    schedule: str = "cosine"         # after warm-up: 'cosine', 'inverse_sqrt' or 'constant'
    min_lr_ratio: float = 0.1        # cosine floor as a fraction of lr
    weight_decay: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.98
    grad_clip: float = 1.0           # max global grad norm; 0 disables clipping
    eval_interval: int = 50          # steps between validation evaluations; 0: only at the end
    eval_tokens: int = 16384         # validation tokens (or docs * seq_len) per interval evaluation
    test_tokens: int | None = None   # tokens of the final validation/test evaluation; None: all
    log_interval: int = 10
    checkpoint_every: int = 100      # steps between checkpoints; 0: only at the end
    mlm_prob: float = 0.15
    seed: int = 0
    device: str = "auto"             # 'auto', 'cpu', 'cuda'
    compile: bool = False            # torch.compile the model (CUDA)
    num_threads: int | None = None   # torch CPU threads; None leaves torch's default

    def __post_init__(self):
        for f in fields(self):  # types first, so a string "64" is named, not a TypeError later
            v, kind = getattr(self, f.name), str(f.type)
            optional = "None" in kind
            if v is None and optional:
                continue
            base = kind.split("|")[0].strip()
            ok = {"int": lambda x: isinstance(x, int) and not isinstance(x, bool),
                  "float": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x),
                  "bool": lambda x: isinstance(x, bool),
                  "str": lambda x: isinstance(x, str)}.get(base, lambda x: True)(v)
            if not ok:
                raise ValueError(f"{f.name} must be {'an' if base == 'int' else 'a'} {base}"
                                 f"{' or None' if optional else ''}, got {short(v)}")
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        for name in ("steps", "batch_size", "seq_len", "vocab_size", "eval_tokens", "log_interval"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        for name in ("warmup_steps", "eval_interval", "checkpoint_every"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"{name} must be a non-negative int, got {v!r}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a positive finite number, got {self.lr!r}")
        for f in fields(self):  # no int past what torch and NumPy seeds take (2**70 would wrap)
            v = getattr(self, f.name)
            if str(f.type).startswith("int") and isinstance(v, int) and not 0 <= v <= INT_CEILING:
                raise ValueError(f"{f.name} must be in [0, {INT_CEILING}], got {short(v)}")
        for name, lo, hi, closed_hi in RANGES:
            v = getattr(self, name)
            if v is not None and not (lo <= v and (v <= hi if closed_hi else v < hi)):
                raise ValueError(f"{name} must be in [{lo}, {hi}{']' if closed_hi else ')'}, got {short(v)}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {self.device!r}")
        self.model_config(vocab_size=max(self.vocab_size, 1))  # shape errors surface now

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown training config key(s) {unknown}; allowed: {sorted(known)}")
        return cls(**d)

    def to_dict(self) -> dict:
        """Every field, except those at the default of a field added later (``init`` 'bert',
        ``attention`` 'standard', ``kv_latent`` None, ``rope_dim`` 0): the run key of every config
        written before they existed stays what it was (stored runs stay valid)."""
        d = asdict(self)
        for name, default in _LATER_DEFAULTS.items():
            if d[name] == default:
                del d[name]
        return d

    def model_config(self, *, vocab_size: int) -> TransformerConfig:
        return TransformerConfig(
            vocab_size=vocab_size, d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads,
            head_dim=self.head_dim, d_ff=self.d_ff, max_len=self.seq_len + (1 if self.task == "classify" else 0),
            dropout=self.dropout, causal=self.task == "lm", norm=self.norm,
            tie_embeddings=self.tie_embeddings, init=self.init, attention=self.attention,
            kv_latent=self.kv_latent, rope_dim=self.rope_dim)


# Fields added after stores were written, with the defaults that leave a run key unchanged.
_LATER_DEFAULTS = {"init": "bert", "attention": "standard", "kv_latent": None, "rope_dim": 0}


def short(value, limit: int = 80) -> str:
    """A repr of user input that never grows beyond ``limit`` characters."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxdict, r.maxstring, r.maxother = 3, 6, 6, limit, limit
    text = r.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def clip(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate for optimiser update ``step`` (1-based): linear warm-up, then decay."""
    w = cfg.warmup_steps
    if w and step <= w:
        return cfg.lr * step / w
    if cfg.schedule == "constant":
        return cfg.lr
    if cfg.schedule == "inverse_sqrt":
        return cfg.lr * math.sqrt(max(w, 1) / step)
    progress = (step - w) / max(1, cfg.steps - w)
    floor = cfg.min_lr_ratio
    return cfg.lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def run_key(config: dict) -> str:
    """16 hex digits of the sha256 of the canonical JSON of the full config (seed included)."""
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]

