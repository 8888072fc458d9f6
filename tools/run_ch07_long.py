"""Run chapter 07's long retrieval grid into a store (the command that produced the committed one).

    python tools/run_ch07_long.py data/results/07_trained_attention_long.jsonl

One torch thread; parameters from chapters/params/long/07_trained_attention.yaml; resumable.
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
print(out["retrieval"][["n", "head_dim", "seed", "test_acc", "hardmax_rank", "wall_s"]].to_string())
