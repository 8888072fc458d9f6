"""Attention read out of Hugging Face ``transformers`` models through their attention-function registry.

Models whose attention modules call ``ALL_ATTENTION_FUNCTIONS.get_interface(...)`` (BERT, RoBERTa,
DistilBERT, GPT-2, Llama and its rotary, grouped-query relatives Mistral and Qwen, ViT, ...) hand
the registered function the queries and keys *after* any rotary embedding, the scale and the
additive mask. :func:`reading` registers one such function under :data:`IMPLEMENTATION`, switches
the model to it for the duration of a ``with`` block, and restores the model's own implementation
afterwards. Inside, the function

- runs the model's own eager attention (the ``eager_attention_forward`` of the model's modeling
  file), so the forward pass computes exactly what eager attention computes;
- recomputes logits ``scale * Q K^T`` (keys repeated over grouped-query heads) and
  ``softmax(logits + mask)`` in float64, and checks the latter against the eager probabilities
  to a tolerance set by the model's dtype (:func:`cross_check_atol`). Variants the recomputation
  does not model (logit soft-capping, attention sinks, ...) fail this check instead of being ranked.

No private attribute of any attention module is read: only the arguments of the public
attention-function interface and the module's class (to find its eager function).

MPNet computes its attention inside its own module, adding a relative position bias to the scaled
dot products, so it never calls the registry. Its self-attention modules are read by forward
hooks instead (:data:`HOOKED`): queries and keys from the module's ``q`` and ``k`` projections,
the bias and the mask from the call's arguments, and the module's own probabilities (asked for
with ``output_attentions``) to check against. Its logits are the content part ``scale * Q K^T``,
the bilinear form the head size bounds; the probabilities are ``softmax(logits + bias + mask)``.
"""
from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

__all__ = ["IMPLEMENTATION", "HOOKED", "HFCall", "is_hf_model", "max_tokens", "reading", "cross_check_atol",
           "special_tokens", "text_windows"]

IMPLEMENTATION = "lowrank_probe"


@dataclass
class HFCall:
    """One attention call: float64 logits and probs (B, h, n, n), and the largest |probs - eager|."""
    index: int
    module: torch.nn.Module
    logits: torch.Tensor
    probs: torch.Tensor
    max_diff: float


def is_hf_model(model) -> bool:
    """Whether ``model`` is a ``transformers`` PreTrainedModel (without importing transformers)."""
    return any(c.__module__.startswith("transformers.") and c.__name__ == "PreTrainedModel"
               for c in type(model).__mro__)


def max_tokens(config) -> int | None:
    """The longest sequence the model embeds: ``max_position_embeddings`` less the position offset
    RoBERTa-style models reserve for padding."""
    limit = getattr(config, "max_position_embeddings", None)
    if not isinstance(limit, int):
        return None
    if config.model_type in ("roberta", "xlm-roberta", "camembert") and isinstance(config.pad_token_id, int):
        limit -= config.pad_token_id + 1
    return limit


def cross_check_atol(dtype: torch.dtype) -> float:
    """Tolerance of the probability cross-check: the rounding of the dtype the eager path ran in.

    float64 models get float32's tolerance: eager attention of Llama-style models takes its softmax
    in float32 whatever the model's dtype.
    """
    return {torch.bfloat16: 2e-2, torch.float16: 2e-3}.get(dtype, 1e-5)


def _eager_function(module) -> Callable:
    fn = getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None)
    if fn is None:
        raise ValueError(f"{type(module).__name__} has no eager_attention_forward in its modeling file, so the "
                         "probe cannot compare its recomputation with the model's own probabilities")
    return fn


def _additive(mask: torch.Tensor | None, shape) -> torch.Tensor | None:
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=torch.float64, device=mask.device).masked_fill(~mask, float("-inf"))
    # The key dimension of a cached mask can be longer than the keys of this call.
    return mask[..., :shape[-1]].to(torch.float64)


def _recompute(query, key, mask, scaling):
    h, g = query.shape[1], key.shape[1]
    if h % g:
        raise ValueError(f"{h} query heads do not share {g} key heads evenly")
    q = query.double()
    k = key.double().repeat_interleave(h // g, dim=1)
    scale = q.shape[-1] ** -0.5 if scaling is None else float(scaling)
    logits = (q @ k.transpose(-2, -1)) * scale
    add = _additive(mask, logits.shape)
    masked = logits if add is None else logits + add
    return logits, torch.softmax(masked, dim=-1)


# Keyword arguments of the attention interface that change the probabilities beyond
# softmax(scale * Q K^T + mask). The cross-check would catch them too, but near-uniform attention
# can hide a soft-cap inside its tolerance, so they are refused by name.
_UNMODELLED = {"softcap": "logit soft-capping", "s_aux": "attention sinks"}


@dataclass
class _Reader:
    on_call: Callable[[HFCall], None]
    want: Callable[[int], bool]
    calls: int = 0


# The reader of the ``with reading(...)`` block running in this thread or task: the registered
# function is global to transformers, so concurrent probes find their own reader here.
_READER: contextvars.ContextVar[_Reader | None] = contextvars.ContextVar("lowrank_probe_reader", default=None)


def _attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    reader = _READER.get()
    out, weights = _eager_function(module)(module, query, key, value, attention_mask, scaling=scaling,
                                           dropout=dropout, **kwargs)
    if reader is None:  # a model left switched to this implementation outside a probe: plain eager
        return out, weights
    index, reader.calls = reader.calls, reader.calls + 1
    if not reader.want(index):
        return out, weights
    unmodelled = [name for name in _UNMODELLED if kwargs.get(name) is not None]
    if unmodelled:
        raise ValueError(f"{type(module).__name__} passes {', '.join(unmodelled)} to its attention "
                         f"({', '.join(_UNMODELLED[n] for n in unmodelled)}), which the probe's recomputation "
                         "does not model")
    if query.shape[-2] != key.shape[-2]:
        raise ValueError(f"{type(module).__name__}: {query.shape[-2]} queries but {key.shape[-2]} keys; the "
                         "probe reads self-attention over one full sequence (no key/value cache, no "
                         "cross-attention)")
    logits, probs = _recompute(query, key, attention_mask, scaling)
    # No probabilities from the eager path means nothing to check against: NaN fails the check.
    diff = float((probs - weights.double()).abs().max()) if weights is not None else float("nan")
    reader.on_call(HFCall(index, module, logits, probs, diff))
    return out, weights


# Attention modules that bypass the registry and are read by hooks: class name -> how to split a
# call's positional arguments into (hidden states, additive mask, additive position bias).
HOOKED = {"MPNetSelfAttention": lambda args, kwargs: (
    args[0] if args else kwargs["hidden_states"],
    args[1] if len(args) > 1 else kwargs.get("attention_mask"),
    args[2] if len(args) > 2 else kwargs.get("position_bias"))}


def _hooked_modules(model) -> list[torch.nn.Module]:
    return [m for m in model.modules() if type(m).__name__ in HOOKED]


def _ask_for_probs(module, args, kwargs):
    return args, {**kwargs, "output_attentions": True}


def _hooked_call(reader: _Reader, module, args, kwargs, output) -> None:
    index, reader.calls = reader.calls, reader.calls + 1
    if not reader.want(index):
        return
    hidden, mask, bias = HOOKED[type(module).__name__](args, kwargs)
    B, n, _ = hidden.shape
    h = module.num_attention_heads
    q = module.q(hidden).view(B, n, h, -1).transpose(1, 2)
    k = module.k(hidden).view(B, n, h, -1).transpose(1, 2)
    logits, _ = _recompute(q, k, None, None)
    masked = logits
    for extra in (bias, mask):
        if extra is not None:
            masked = masked + _additive(extra, logits.shape)
    probs = torch.softmax(masked, dim=-1)
    own = output[1] if isinstance(output, tuple) and len(output) > 1 else None
    diff = float((probs - own.double()).abs().max()) if own is not None else float("nan")
    reader.on_call(HFCall(index, module, logits, probs, diff))


@contextlib.contextmanager
def _hooks(model, reader: _Reader) -> Iterator[None]:
    handles = []
    for m in _hooked_modules(model):
        handles.append(m.register_forward_pre_hook(_ask_for_probs, with_kwargs=True))
        handles.append(m.register_forward_hook(
            lambda mod, args, kwargs, output: _hooked_call(reader, mod, args, kwargs, output), with_kwargs=True))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def reading(model, on_call: Callable[[HFCall], None], *,
            want: Callable[[int], bool] = lambda index: True) -> Iterator[None]:
    """Within the block, every attention call of ``model`` that ``want(index)`` accepts is passed
    to ``on_call`` as an :class:`HFCall`; the others run as plain eager attention.

    Calls are numbered in forward order from 0 (the layer index for a single stack). Raises
    ValueError when no call arrived: the model's attention does not go through the registry (the
    message names the model class). The model's own implementation (sdpa, eager, ...) is restored
    on exit. MPNet's attention (:data:`HOOKED`) is read by forward hooks, removed on exit.
    """
    if _hooked_modules(model):
        reader = _Reader(on_call, want)
        with _hooks(model, reader):
            yield
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    AttentionInterface.register(IMPLEMENTATION, _attention)
    # The eager path's additive float mask, which the recomputation adds to the logits.
    AttentionMaskInterface.register(IMPLEMENTATION, ALL_MASK_ATTENTION_FUNCTIONS["eager"])
    before = model.config._attn_implementation
    # A model whose attention bypasses the registry keeps its own implementation (transformers
    # logs a warning); it is recognised below by the calls that never arrive.
    model.set_attn_implementation(IMPLEMENTATION)
    reader = _Reader(on_call, want)
    token = _READER.set(reader)
    try:
        yield
    finally:
        _READER.reset(token)
        model.set_attn_implementation(before)
    if reader.calls == 0:
        raise ValueError(f"no attention call of {type(model).__name__} reached the probe: its attention does not "
                         "go through transformers' AttentionInterface (sdpa- or custom-only attention)")


def special_tokens(tokenizer) -> tuple[list[int], list[int]]:
    """The ids a tokenizer puts before and after a text ([CLS] / [SEP] for BERT, BOS for Llama, none for GPT-2)."""
    bare = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    for i in range(len(full) - len(bare) + 1):
        if full[i:i + len(bare)] == bare:
            return list(full[:i]), list(full[i + len(bare):])
    raise ValueError(f"{type(tokenizer).__name__}: cannot tell its special tokens from a text's tokens")


def text_windows(tokenizer, texts, *, n: int, count: int, seed: int = 0) -> torch.Tensor:
    """``count`` unpadded windows of exactly ``n`` tokens, (count, n) int64, each with the tokenizer's
    own special tokens around ``n`` minus their number of text tokens.

    Documents are taken in a seeded random order, from a random offset into the first, and their
    tokens concatenated into one running stream cut into consecutive windows (a window may cross a
    document boundary). For a BERT tokenizer this is [CLS] + n - 2 word pieces + [SEP], the windows
    of :func:`lowrank.data.pretrained.encode_windows`.
    """
    import random

    before, after = special_tokens(tokenizer)
    body = n - len(before) - len(after)
    if not isinstance(n, int) or body < 1:
        raise ValueError(f"n must be an int of at least {len(before) + len(after) + 1} (the tokenizer's special "
                         f"tokens and one text token), got {n!r}")
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive int, got {count!r}")
    if len(texts) == 0:
        raise ValueError("texts is empty")
    need = count * body
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    stream: list[int] = []
    for i, doc in enumerate(order):
        # verbose=False: long documents are cut into windows here, not fed whole to the model.
        ids = tokenizer(texts[doc], add_special_tokens=False, verbose=False)["input_ids"]
        if i == 0 and len(ids) > need:
            ids = ids[random.Random(seed + 1).randrange(len(ids) - need + 1):]
        stream.extend(ids)
        if len(stream) >= need:
            break
    if len(stream) < need:
        raise ValueError(f"the texts hold {len(stream)} tokens, fewer than the {need} that {count} windows "
                         f"of {n} tokens need")
    rows = torch.tensor(stream[:need], dtype=torch.long).view(count, body)
    return torch.cat([torch.tensor([before] * count, dtype=torch.long).view(count, -1), rows,
                      torch.tensor([after] * count, dtype=torch.long).view(count, -1)], dim=1)
