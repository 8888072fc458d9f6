"""Run chapter 07's long-scale experiments into a store (the command that produced the committed one).

    python tools/run_ch07_long.py STORE [retrieval|truncation|all]

One torch thread; parameters from chapters/params/long/07_trained_attention.yaml; resumable
(finished runs are skipped by run key). Run it from a clean checkout of the commit that registered
chapter 07's rules, so every record's provenance names that commit.
"""
import sys
from pathlib import Path

import torch
import yaml

from lowrank.experiments import trained_attention as X

if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in ("retrieval", "truncation", "all")):
    print("usage: python tools/run_ch07_long.py STORE [retrieval|truncation|all]", file=sys.stderr)
    sys.exit(2)
what = sys.argv[2] if len(sys.argv) == 3 else "all"
torch.set_num_threads(1)
P = yaml.safe_load((Path(__file__).resolve().parents[1] / "chapters/params/long/07_trained_attention.yaml").read_text())
if what in ("retrieval", "all"):
    out = X.run_retrieval(ns=P["retrieval_ns"], pair_ns=P["retrieval_pair_ns"], head_dims=P["retrieval_head_dims"],
                          n_seeds=P["retrieval_seeds"], pair_seeds=P["retrieval_pair_seeds"], seed=0,
                          max_steps=P["retrieval_max_steps"], min_steps=P["retrieval_min_steps"],
                          d_model=P["retrieval_d_model"], n_values=P["retrieval_values"], lr=P["retrieval_lr"],
                          tokens_per_step=P["retrieval_tokens"], test_sequences=P["retrieval_test_sequences"],
                          rank_sequences=P["retrieval_rank_sequences"], rank_rtol=P["retrieval_rtol"], run=True,
                          store=sys.argv[1], threads=1, show_progress=True)
    print(out["retrieval"][["task", "n", "head_dim", "seed", "plateau", "test_acc", "hardmax_rank",
                            "wall_s"]].to_string(), flush=True)
if what in ("truncation", "all"):
    tr = X.run_truncation(ns=P["truncation_ns"], ranks=P["truncation_ranks"], per_class=P["truncation_per_class"],
                          folds=P["truncation_folds"], seed=0, l2=P["truncation_l2"],
                          layer_n=P["truncation_layer_n"], layer_ranks=P["truncation_layer_ranks"], run=True,
                          store=sys.argv[1])
    print(tr["truncation"].to_string(), flush=True)
