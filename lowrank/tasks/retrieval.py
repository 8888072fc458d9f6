"""Key-value retrieval: a task one attention head must solve by retrieving, a one-head model, its trainer.

The task (multi-query associative recall). A sequence holds n context tokens, each a pair
(key, value) with n *distinct* keys drawn from a key vocabulary of ``key_vocab`` (at least n)
and values drawn uniformly from ``n_values``; then n query tokens, each one of the context keys
(a random permutation of them). The target of query i is the value stored with its key. Nothing
but attention from the query to the context can solve it: the context is a set (no positions),
and a query's own embedding carries no information about the value.

The model (:class:`RetrievalModel`). Width ``d_model``; context token x_j = E_key[k_j] +
E_val[v_j], query token y_i = E_key[q_i] + e_query. One attention head with query/key size
``head_dim`` (d_h): logits S = (y W_q)(x W_k)^T / sqrt(d_h), A = softmax_row(S) (n x n,
queries x context), output A (x W_v) W_o + y, then a linear read-out to ``n_values`` classes.
The value path has the full width (W_v: d_model -> d_model), so d_h bounds only the rank of
the logits, rank(S) <= d_h, the quantity of both papers' rank arguments; the value channel is
never the bottleneck. The head is the library's :class:`lowrank.layers.attention.MultiHeadAttention`
only in spirit: queries and keys here come from different tokens (cross-attention from the
queries to the context), which that class does not take.

:func:`train_retrieval` trains one (n, d_h, seed) with Adam for a fixed number of steps and
returns the training curve's plateau check, the accuracy on fresh sequences with its standard
error, and the ranks of the trained head's attention on held-out sequences.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from ..measure.rank import batched_svdvals, hardmax_rank, numerical_rank, numerical_rank_of_singular_values

__all__ = ["RetrievalConfig", "sample_batch", "RetrievalModel", "solving_model", "accuracy",
           "attention_ranks", "train_retrieval", "plateau_change", "TASKS", "WARMUP_STEPS"]

TASKS = ("single", "pair")
# Linear warm-up of the learning rate; short against every run's min_steps.
WARMUP_STEPS = 100


@dataclass(frozen=True)
class RetrievalConfig:
    n: int                      # context pairs (= queries) per sequence
    head_dim: int               # d_h: query/key size of the one head
    seed: int = 0
    task: str = "single"        # "single": one key per token; "pair": a key is a pair (a, b), see pair_base
    key_vocab: int = 0          # 0: 2 n keys ("single") or the smallest square >= 2 n ("pair")
    n_values: int = 16
    d_model: int = 64
    max_steps: int = 2000       # step cap of the constant-rate phase (the run stops earlier at its plateau)
    min_steps: int = 1000       # no plateau check before this step
    check_every: int = 250      # plateau check interval, also the averaging window of the loss
    plateau_tol: float = 0.01   # nats: plateau when the loss fell by less than this over the last quarter
    cooldown: float = 0.2       # linear decay to zero over this fraction of the steps run, after the stop
    tokens_per_step: int = 2048  # queries per optimiser step; batch = tokens_per_step // n sequences
    lr: float = 3e-3
    test_sequences: int = 10_000
    rank_sequences: int = 64
    rank_rtol: float = 1e-3

    def __post_init__(self):
        if self.n < 1 or self.head_dim < 1 or self.n_values < 2 or self.d_model < 1:
            raise ValueError(f"bad retrieval config {self}")
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        # the first plateau check compares two windows two windows apart: it needs three
        if not (1 <= 3 * self.check_every <= self.min_steps <= self.max_steps) or self.plateau_tol <= 0 \
                or not 0 <= self.cooldown < 1:
            raise ValueError(f"bad training schedule in {self}: need 3 check_every <= min_steps <= max_steps, "
                             f"check_every >= 1, plateau_tol > 0, 0 <= cooldown < 1")
        if self.keys < self.n:
            raise ValueError(f"key_vocab = {self.key_vocab} is smaller than n = {self.n}: keys must be distinct")
        if self.task == "pair" and math.isqrt(self.keys) ** 2 != self.keys:
            raise ValueError(f"task 'pair' needs a square key_vocab (pairs of a square grid), got {self.keys}")

    @property
    def keys(self) -> int:
        if self.key_vocab:
            return self.key_vocab
        return math.ceil(math.sqrt(2 * self.n)) ** 2 if self.task == "pair" else 2 * self.n

    @property
    def pair_base(self) -> int:
        """m for task "pair" (key k is the pair (k // m, k % m) of an m x m grid), 0 otherwise."""
        return math.isqrt(self.keys) if self.task == "pair" else 0

    @property
    def batch(self) -> int:
        return max(1, self.tokens_per_step // self.n)

    def to_dict(self) -> dict:
        return asdict(self)


def sample_batch(batch: int, n: int, keys: int, n_values: int, generator: torch.Generator):
    """(ctx_keys, ctx_values, query_keys, targets), each (batch, n) long.

    Context keys are n distinct keys of ``keys`` (a random subset in random order); queries are a
    random permutation of the context keys; targets[b, i] is the value stored with query_keys[b, i].
    """
    ctx_k = torch.argsort(torch.rand(batch, keys, generator=generator), dim=1)[:, :n]
    ctx_v = torch.randint(0, n_values, (batch, n), generator=generator)
    perm = torch.argsort(torch.rand(batch, n, generator=generator), dim=1)
    q_k = torch.gather(ctx_k, 1, perm)
    target = torch.gather(ctx_v, 1, perm)
    return ctx_k, ctx_v, q_k, target


class RetrievalModel(nn.Module):
    """Embeddings, one cross-attention head of query/key size d_h, a linear read-out (see module doc)."""

    def __init__(self, keys: int, n_values: int, d_model: int, head_dim: int, *, pair_base: int = 0):
        super().__init__()
        self.head_dim = head_dim
        self.pair_base = pair_base
        # Task "pair": a key (a, b) is embedded as E_a[a] + E_b[b], so tokens sharing a or b
        # share half their key embedding and a partial match scores part of a full match.
        self.key_emb = nn.Embedding(pair_base if pair_base else keys, d_model)
        self.key_emb_b = nn.Embedding(pair_base, d_model) if pair_base else None
        self.val_emb = nn.Embedding(n_values, d_model)
        self.query_marker = nn.Parameter(torch.zeros(d_model))
        self.W_q = nn.Linear(d_model, head_dim, bias=False)
        self.W_k = nn.Linear(d_model, head_dim, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.readout = nn.Linear(d_model, n_values)

    def keys(self, k: torch.Tensor) -> torch.Tensor:
        if self.key_emb_b is None:
            return self.key_emb(k)
        return self.key_emb(k // self.pair_base) + self.key_emb_b(k % self.pair_base)

    def logits_attention(self, ctx_k, ctx_v, q_k) -> torch.Tensor:
        """S = (y W_q)(x W_k)^T / sqrt(d_h), shape (batch, n queries, n context)."""
        x = self.keys(ctx_k) + self.val_emb(ctx_v)
        y = self.keys(q_k) + self.query_marker
        return self.W_q(y) @ self.W_k(x).transpose(1, 2) / math.sqrt(self.head_dim)

    def forward(self, ctx_k, ctx_v, q_k) -> torch.Tensor:
        x = self.keys(ctx_k) + self.val_emb(ctx_v)
        y = self.keys(q_k) + self.query_marker
        S = self.W_q(y) @ self.W_k(x).transpose(1, 2) / math.sqrt(self.head_dim)
        h = y + self.W_o(torch.softmax(S, dim=-1) @ self.W_v(x))
        return self.readout(h)


def solving_model(keys: int, n_values: int, head_dim: int, *, scale: float = 30.0) -> RetrievalModel:
    """The construction that solves the task exactly when d_h >= keys: one-hot keys, one-hot values.

    Width keys + n_values: E_key one-hot in the first ``keys`` coordinates, E_val one-hot in the
    last ``n_values``; W_q = W_k = sqrt(scale) times the projection onto the key coordinates (so a
    matching key scores scale / sqrt(d_h) and every other key 0); W_v W_o copies the value block
    and the read-out reads it (the query's own key block and marker are zero in the value block).
    """
    if head_dim < keys:
        raise ValueError(f"the construction needs d_h >= keys, got d_h = {head_dim} < {keys}")
    d = keys + n_values
    m = RetrievalModel(keys, n_values, d, head_dim)
    with torch.no_grad():
        m.key_emb.weight.copy_(torch.eye(d)[:keys])
        m.val_emb.weight.copy_(torch.eye(d)[keys:])
        m.query_marker.zero_()
        proj = torch.zeros(head_dim, d)
        proj[:keys, :keys] = torch.eye(keys)
        s = math.sqrt(scale * math.sqrt(head_dim))
        m.W_q.weight.copy_(s * proj)
        m.W_k.weight.copy_(s * proj)
        m.W_v.weight.copy_(torch.eye(d))
        m.W_o.weight.copy_(torch.eye(d))
        m.readout.weight.zero_()
        m.readout.weight[:, keys:] = 20.0 * torch.eye(n_values)  # confident read-out: loss near 0
        m.readout.bias.zero_()
    return m


@torch.no_grad()
def accuracy(model: RetrievalModel, cfg: RetrievalConfig, *, sequences: int, seed: int,
             chunk: int = 250) -> dict:
    """Accuracy over all queries of ``sequences`` fresh sequences (generator ``seed``).

    Returns acc, its standard error from the per-sequence accuracies (queries of one sequence
    are not independent; their sequences are), the binomial s.e. as if queries were independent,
    the mean cross-entropy, and the counts.
    """
    g = torch.Generator().manual_seed(seed)
    model.eval()
    per_seq, loss_sum = [], 0.0
    done = 0
    while done < sequences:
        b = min(chunk, sequences - done)
        ck, cv, qk, t = sample_batch(b, cfg.n, cfg.keys, cfg.n_values, g)
        out = model(ck, cv, qk)
        loss_sum += float(nn.functional.cross_entropy(out.reshape(-1, cfg.n_values), t.reshape(-1),
                                                      reduction="sum"))
        per_seq.append((out.argmax(-1) == t).double().mean(1))
        done += b
    s = torch.cat(per_seq).numpy()
    acc = float(s.mean())
    queries = sequences * cfg.n
    return {"test_acc": acc, "test_acc_se": float(s.std(ddof=1) / math.sqrt(len(s))) if len(s) > 1 else float("nan"),
            "test_acc_binom_se": math.sqrt(acc * (1 - acc) / queries), "test_loss": loss_sum / queries,
            "test_sequences": int(sequences), "test_queries": int(queries)}


@torch.no_grad()
def attention_ranks(model: RetrievalModel, cfg: RetrievalConfig, *, sequences: int, seed: int) -> dict:
    """Mean over ``sequences`` held-out sequences of the ranks of the head's n x n attention A.

    hardmax rank (distinct argmax columns), numerical rank of A at rtol = ``cfg.rank_rtol`` and at
    the float64 default max(m, n) eps (analysis in float64), and the numerical rank of the logits S
    at the default tolerance (at most d_h). The attention is recomputed in float64 from the trained
    weights, so float32 round-off does not count as rank.
    """
    g = torch.Generator().manual_seed(seed)
    ck, cv, qk, _ = sample_batch(sequences, cfg.n, cfg.keys, cfg.n_values, g)
    S = copy.deepcopy(model).double().eval().logits_attention(ck, cv, qk)  # float64: rank(S) <= d_h exactly
    A = torch.softmax(S, dim=-1)
    sigma = batched_svdvals(A)  # once for both tolerances: the SVDs dominate the cost at n = 512
    m, k = A.shape[-2:]
    return {"hardmax_rank": float(hardmax_rank(A).double().mean()),
            "numerical_rank": float(numerical_rank_of_singular_values(sigma, m, k, None, cfg.rank_rtol).double().mean()),
            "numerical_rank_default": float(numerical_rank_of_singular_values(sigma, m, k, None, None).double().mean()),
            "logit_rank_default": float(numerical_rank(S).double().mean()),
            "logit_rank_max": int(numerical_rank(S).max())}


def plateau_change(losses: np.ndarray, window: int) -> float:
    """How far the training loss fell over the last quarter of ``losses`` (at least two windows).

    Mean loss over the ``window`` steps that end a span earlier, minus the mean over the last
    ``window`` steps; span = max(2 window, a quarter of the steps so far), rounded down to whole
    windows. The span grows with the run, so a longer run must stay flat for longer to stop.
    Negative when the loss rose.
    """
    s = len(losses)
    span = max(2 * window, (s // 4) // window * window)
    if s < span + window:
        raise ValueError(f"{s} steps are too few for a plateau check with window {window}")
    return float(losses[s - span - window:s - span].mean() - losses[s - window:].mean())


def train_retrieval(config: dict | RetrievalConfig, *, threads: int | None = None) -> dict:
    """Train one run to its plateau (or its step cap); return the plateau record, accuracy, ranks.

    Schedule (warm-up, stable, decay): Adam, the learning rate rising linearly over
    ``WARMUP_STEPS``, then constant. From ``min_steps`` on, every ``check_every`` steps the run
    checks :func:`plateau_change`; it stops the constant phase when the loss fell by less than
    ``plateau_tol`` nats over the last quarter (``plateau = True``) or at ``max_steps``
    (``plateau = False``: reported, and the chapter's rule does not use the run). Then the rate
    decays linearly to zero over ``cooldown`` times the steps run, and the model is tested.

    Training batches come from generator ``seed``, the initialisation from torch's seed ``seed``,
    the test sequences from generator 10**6 + seed and the rank sequences from 2 * 10**6 + seed
    (never seen in training: fresh draws of a space of more than 10^20 sequences).
    """
    cfg = config if isinstance(config, RetrievalConfig) else RetrievalConfig(**config)
    if threads:
        torch.set_num_threads(threads)
    t0 = time.perf_counter()
    torch.manual_seed(cfg.seed)
    model = RetrievalModel(cfg.keys, cfg.n_values, cfg.d_model, cfg.head_dim, pair_base=cfg.pair_base)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    g = torch.Generator().manual_seed(cfg.seed)
    losses: list[float] = []
    model.train()

    def step(lr: float) -> None:
        for group in opt.param_groups:
            group["lr"] = lr
        ck, cv, qk, t = sample_batch(cfg.batch, cfg.n, cfg.keys, cfg.n_values, g)
        loss = nn.functional.cross_entropy(model(ck, cv, qk).reshape(-1, cfg.n_values), t.reshape(-1))
        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite training loss at step {len(losses)} of {cfg}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))

    plateau, change = False, float("nan")
    while len(losses) < cfg.max_steps:
        step(cfg.lr * min(1.0, (len(losses) + 1) / WARMUP_STEPS))
        s = len(losses)
        if s >= cfg.min_steps and s % cfg.check_every == 0:
            change = plateau_change(np.asarray(losses), cfg.check_every)
            if change < cfg.plateau_tol:
                plateau = True
                break
    if not plateau:
        change = plateau_change(np.asarray(losses), cfg.check_every)
    stable = len(losses)
    decay = int(round(cfg.cooldown * stable))
    for i in range(decay):
        step(cfg.lr * (1 - (i + 1) / (decay + 1)))
    train_s = time.perf_counter() - t0
    w = cfg.check_every
    curve = np.asarray(losses)
    out = {"plateau": plateau, "plateau_change": change, "stable_steps": stable, "cooldown_steps": decay,
           "steps_run": len(losses), "train_loss_stop": float(curve[stable - w:stable].mean()),
           "train_loss_last": float(curve[-min(w, len(curve)):].mean()), "train_s": train_s,
           "loss_curve": [float(curve[i:i + w].mean()) for i in range(0, len(curve), w)]}
    out.update(accuracy(model, cfg, sequences=cfg.test_sequences, seed=10**6 + cfg.seed))
    out.update(attention_ranks(model, cfg, sequences=cfg.rank_sequences, seed=2 * 10**6 + cfg.seed))
    out["n_params"] = int(sum(p.numel() for p in model.parameters()))
    return out
