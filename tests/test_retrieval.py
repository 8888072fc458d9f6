"""The retrieval task of chapter 07: sampler, the construction that solves it, training determinism."""
import math

import pytest
import torch

from lowrank.tasks.retrieval import (RetrievalConfig, accuracy, attention_ranks, sample_batch, solving_model,
                               train_retrieval)


def test_sampler_keys_distinct_queries_permute_them_and_targets_match():
    g = torch.Generator().manual_seed(0)
    ck, cv, qk, t = sample_batch(50, 12, 20, 5, g)
    assert ck.shape == cv.shape == qk.shape == t.shape == (50, 12)
    assert int(ck.max()) < 20 and int(cv.max()) < 5
    for b in range(50):
        assert len(set(ck[b].tolist())) == 12                       # distinct keys
        assert sorted(qk[b].tolist()) == sorted(ck[b].tolist())      # queries: a permutation of them
        stored = dict(zip(ck[b].tolist(), cv[b].tolist()))
        assert [stored[k] for k in qk[b].tolist()] == t[b].tolist()  # target: the value stored with the key


def test_sampler_is_deterministic_by_generator():
    a = sample_batch(4, 8, 16, 4, torch.Generator().manual_seed(3))
    b = sample_batch(4, 8, 16, 4, torch.Generator().manual_seed(3))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_the_construction_solves_the_task_with_full_rank_attention():
    cfg = RetrievalConfig(n=8, head_dim=16, key_vocab=16, n_values=4, d_model=20)
    m = solving_model(16, 4, 16)
    res = accuracy(m, cfg, sequences=200, seed=1)
    assert res["test_acc"] == 1.0 and res["test_loss"] < 1e-3
    r = attention_ranks(m, cfg, sequences=8, seed=2)
    assert r["hardmax_rank"] == 8 and r["logit_rank_max"] <= 16
    with pytest.raises(ValueError):
        solving_model(16, 4, 8)


def test_logit_rank_is_at_most_head_dim_and_config_checks():
    cfg = RetrievalConfig(n=32, head_dim=2, d_model=16, n_values=4)
    torch.manual_seed(0)
    from lowrank.tasks.retrieval import RetrievalModel
    m = RetrievalModel(cfg.keys, 4, 16, 2)
    r = attention_ranks(m, cfg, sequences=4, seed=0)
    assert r["logit_rank_max"] <= 2 and 1 <= r["hardmax_rank"] <= 32
    with pytest.raises(ValueError):
        RetrievalConfig(n=32, head_dim=2, key_vocab=16)  # fewer keys than n


def test_training_is_deterministic_by_seed_and_learns():
    torch.set_num_threads(1)
    cfg = dict(n=8, head_dim=8, max_steps=300, min_steps=150, check_every=50, d_model=32, n_values=4,
               tokens_per_step=256, test_sequences=300, rank_sequences=8)
    a, b = train_retrieval(cfg), train_retrieval(cfg)
    c = train_retrieval({**cfg, "seed": 1})
    drop = {"train_s"}
    assert {k: v for k, v in a.items() if k not in drop} == {k: v for k, v in b.items() if k not in drop}
    assert a["test_acc"] != c["test_acc"] or a["train_loss_last"] != c["train_loss_last"]
    assert a["test_acc"] > 0.5 and a["test_sequences"] == 300 and a["test_queries"] == 2400
    assert 0 <= a["test_acc_se"] < 0.05 and not math.isnan(a["plateau_change"])
    # the cool-down is a fifth of the constant phase, and the run stops on the check grid
    assert a["cooldown_steps"] == round(0.2 * a["stable_steps"]) and a["stable_steps"] % 50 == 0
    assert a["steps_run"] == a["stable_steps"] + a["cooldown_steps"]


def test_plateau_stops_a_flat_run_and_reports_a_capped_one():
    torch.set_num_threads(1)
    # d_h = 8 at n = 4 learns at once: flat by the first check
    easy = train_retrieval(dict(n=4, head_dim=8, max_steps=2000, min_steps=200, check_every=50, d_model=32,
                                n_values=4, tokens_per_step=128, test_sequences=50, rank_sequences=2, lr=1e-2))
    assert easy["plateau"] and easy["stable_steps"] < 2000 and easy["plateau_change"] < 0.01
    # a cap at the first check on a run still learning: not at its plateau, and said so
    hard = train_retrieval(dict(n=16, head_dim=2, max_steps=100, min_steps=100, check_every=25, d_model=16,
                                n_values=4, tokens_per_step=128, test_sequences=50, rank_sequences=2))
    assert not hard["plateau"] and hard["stable_steps"] == 100 and hard["plateau_change"] >= 0.01


def test_plateau_change_compares_windows_a_quarter_apart():
    import numpy as np
    from lowrank.tasks.retrieval import plateau_change
    # 400 steps, window 50: span max(100, 100) = 100: mean of steps 250-300 minus mean of 350-400
    losses = np.r_[np.full(300, 2.0), np.full(100, 1.0)]
    assert plateau_change(losses, 50) == pytest.approx(1.0)
    assert plateau_change(np.full(400, 1.0), 50) == 0.0
    assert plateau_change(np.r_[np.full(300, 1.0), np.full(100, 1.5)], 50) == pytest.approx(-0.5)  # a rise
    # 1000 steps, window 50: the span is a quarter, 250 steps
    losses = np.r_[np.full(750, 3.0), np.full(250, 1.0)]
    assert plateau_change(losses, 50) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        plateau_change(np.ones(120), 50)


def test_pair_task_embeds_keys_as_sums_and_checks_its_vocabulary():
    cfg = RetrievalConfig(n=32, head_dim=4, task="pair")
    assert cfg.keys == 64 and cfg.pair_base == 8  # the smallest square >= 2 n
    from lowrank.tasks.retrieval import RetrievalModel
    m = RetrievalModel(cfg.keys, 16, 8, 4, pair_base=cfg.pair_base)
    k = torch.tensor([[0, 9, 63]])
    a, b = k // 8, k % 8
    assert torch.allclose(m.keys(k), m.key_emb(a) + m.key_emb_b(b))
    with pytest.raises(ValueError, match="square"):
        RetrievalConfig(n=32, head_dim=4, task="pair", key_vocab=70)
    with pytest.raises(ValueError, match="task"):
        RetrievalConfig(n=32, head_dim=4, task="triple")
    with pytest.raises(ValueError, match="schedule"):
        RetrievalConfig(n=32, head_dim=4, min_steps=10, max_steps=5)
