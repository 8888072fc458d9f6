"""Item 4: one training step of our masked-LM encoder against Hugging Face BertForMaskedLM.

Same shape on both sides: layers, width, heads, d_ff, vocabulary, positions = sequence length,
dropout, batch; GELU, post-LayerNorm, tied decoder with the MLM transform; sdpa attention in
BERT. A step is zero_grad, forward with the MLM loss, backward, AdamW step, on one fixed
masked batch. The losses of both models on that batch (before any step) are recorded and must
be of the same magnitude, near log(vocab) at initialisation.
"""
from __future__ import annotations

import contextlib
import math

import torch

from harness import ERROR, Result, compare, cuda_sync

MASK_PROB = 0.15


def masked_batch(batch: int, n: int, vocab: int, *, seed: int = 0, device="cpu"):
    """(inputs, labels), each (batch, n): 15 % of positions replaced by token 0 and predicted."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab, (batch, n), generator=g)
    chosen = torch.rand(batch, n, generator=g) < MASK_PROB
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    inputs = torch.where(chosen, torch.zeros_like(ids), ids)
    return inputs.to(device), labels.to(device)


def _models(cfg: dict, device):
    from transformers import BertConfig, BertForMaskedLM
    from transformers.utils import logging as hf_logging

    from lowrank.layers.models import MaskedLM, TransformerConfig

    torch.manual_seed(0)
    ours = MaskedLM(TransformerConfig(
        vocab_size=cfg["vocab"], d_model=cfg["d_model"], n_layers=cfg["layers"], n_heads=cfg["heads"],
        d_ff=cfg["d_ff"], max_len=cfg["n"], dropout=cfg["dropout"], causal=False, norm="post",
        tie_embeddings=True))
    hf_logging.set_verbosity_error()
    bert = BertForMaskedLM(BertConfig(
        vocab_size=cfg["vocab"], hidden_size=cfg["d_model"], num_hidden_layers=cfg["layers"],
        num_attention_heads=cfg["heads"], intermediate_size=cfg["d_ff"], max_position_embeddings=cfg["n"],
        hidden_dropout_prob=cfg["dropout"], attention_probs_dropout_prob=cfg["dropout"],
        hidden_act="gelu", tie_word_embeddings=True, attn_implementation="sdpa"))
    if bert.config._attn_implementation != "sdpa":
        raise RuntimeError(f"BertForMaskedLM runs {bert.config._attn_implementation!r} attention, not sdpa")
    return ours.to(device).train(), bert.to(device).train()


def _step(model, loss_fn, device, amp):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ctx = (lambda: torch.autocast(device.type, dtype=amp)) if amp is not None else contextlib.nullcontext

    def run():
        opt.zero_grad(set_to_none=True)
        with ctx():
            loss = loss_fn()
        loss.backward()
        opt.step()
    return run


def bench_training_step(cfg: dict, *, device: torch.device, timing: dict,
                        amp: torch.dtype | None = None) -> Result:
    """The item-4 row for one config dict (vocab, d_model, layers, heads, d_ff, n, batch, dropout).

    ``timing``: keyword arguments of harness.compare (warmup, reps, budget_s).
    """
    key = f"train_step_L{cfg['layers']}_d{cfg['d_model']}_V{cfg['vocab']}_n{cfg['n']}_B{cfg['batch']}"
    config = {**cfg, "device": str(device),
              "dtype": "float32" if amp is None else f"autocast {amp}".replace("torch.", ""),
              "optimizer": "AdamW"}
    ours_label, base_label = "MaskedLM training step", "HF BertForMaskedLM (sdpa) training step"
    try:
        ours, bert = _models(cfg, device)
    except ImportError as e:
        return Result(key=key, item=4, ours=ours_label, baseline=base_label, config=config,
                      status="skipped", note=f"needs lowrank.layers.models and transformers ({e})")
    inputs, labels = masked_batch(cfg["batch"], cfg["n"], cfg["vocab"], device=device)

    def ours_loss():
        return ours(inputs, labels)[1]

    def bert_loss():
        return bert(input_ids=inputs, labels=labels).loss

    # The loss check runs without dropout, so the two numbers differ only by the initial weights.
    for m in (ours, bert):
        m.eval()
    with torch.no_grad():
        l_ours, l_bert = float(ours_loss()), float(bert_loss())
    for m in (ours, bert):
        m.train()
    losses = {"ours": l_ours, "bert": l_bert, "log_vocab": math.log(cfg["vocab"])}
    if not 0.5 <= l_ours / l_bert <= 2.0:
        return Result(key=key, item=4, ours=ours_label, baseline=base_label, config=config,
                      status=ERROR, extra={"losses": losses},
                      note=f"losses differ in magnitude: ours {l_ours:.3f}, BERT {l_bert:.3f}")
    row = compare(key, 4, config=config, target=1.0,
                  ours=(ours_label, _step(ours, ours_loss, device, amp)),
                  baseline=(base_label, _step(bert, bert_loss, device, amp)),
                  sync=cuda_sync(device), **timing, extra={"losses": losses})
    row.note = f"initial loss: ours {l_ours:.3f}, BERT {l_bert:.3f} (log V = {math.log(cfg['vocab']):.3f})"
    return row
