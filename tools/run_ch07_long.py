"""Run chapter 07's long-scale experiments into a store (the command that produced the committed one).

    python tools/run_ch07_long.py data/results/07_trained_attention_long.jsonl

One torch thread; parameters from chapters/params/long/07_trained_attention.yaml; resumable (finished
runs are skipped). First the retrieval grid, then MiniLM's head truncation. `lowrank run 07 --scale long`
runs the same grid through the chapter, into the store the parameter set names.
"""
import sys
from pathlib import Path

import torch
import yaml

from lowrank.experiments import trained as X

torch.set_num_threads(1)
P = yaml.safe_load((Path(__file__).resolve().parents[1] / "chapters/params/long/07_trained_attention.yaml").read_text())
out = X.run_retrieval(ns=P["retrieval_ns"], head_dims=P["retrieval_head_dims"], n_seeds=P["retrieval_seeds"],
                      seed=0, steps=P["retrieval_steps"], d_model=P["retrieval_d_model"],
                      n_values=P["retrieval_values"], lr=P["retrieval_lr"], tokens_per_step=P["retrieval_tokens"],
                      test_sequences=P["retrieval_test_sequences"], rank_sequences=P["retrieval_rank_sequences"],
                      rank_rtol=P["retrieval_rtol"], run=True, store=sys.argv[1], threads=1, show_progress=True)
print(out["retrieval"][["n", "head_dim", "seed", "test_acc", "hardmax_rank", "wall_s"]].to_string(), flush=True)
if "truncation_ns" in P:
    tr = X.run_truncation(ns=P["truncation_ns"], ranks=P["truncation_ranks"], per_class=P["truncation_per_class"],
                          folds=P["truncation_folds"], seed=0, l2=P["truncation_l2"], run=True, store=sys.argv[1])
    print(tr["truncation"].to_string(), flush=True)
