import json
import random

import numpy as np
import pandas as pd
import pytest
import torch

from lowrank.attention import MultiHeadAttention
from lowrank.experiments.trained import (argmax_patterns, as_rtols, saturation_table, classification_batch, fresh_classifier, head_dim_sweep,
                             load_classifier, pretrained_ranks, saturation_point)

WORDS = ("the king queen lord lady sword crown night day love death war peace speak hear go come "
         "fair foul good ill heart blood honour grace").split()


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """Two topics of 20 documents each (BBC layout: label sub-folders) and a data root."""
    base = tmp_path_factory.mktemp("labelled")
    rng = random.Random(1)
    for label, vocab in (("a", WORDS[:12]), ("b", WORDS[12:])):
        (base / "docs" / label).mkdir(parents=True)
        for i in range(20):
            (base / "docs" / label / f"{i}.txt").write_text(" ".join(rng.choice(vocab) for _ in range(40)))
    return str(base / "docs"), str(base / "data")


def _base(corpus):
    return dict(task="classify", corpus=corpus, vocab_size=300, seq_len=12, d_model=16, n_layers=1, n_heads=2,
                batch_size=8, steps=6, lr=3e-3, warmup_steps=2, eval_interval=0, checkpoint_every=0,
                num_threads=1)


def test_saturation_point():
    x = [1, 2, 4, 8, 16]
    assert saturation_point(x, [0.2, 0.5, 0.8, 0.9, 0.9], fraction=0.9) == 8
    assert saturation_point(x, [0.2, 0.5, 0.8, 0.9, 0.9], fraction=0.5) == 4
    assert saturation_point(x, [0.2, 0.5, 0.8, 0.9, 0.9], fraction=1.0) == 8
    assert saturation_point(x, [3, 3, 3, 3, 3]) == 1
    with pytest.raises(ValueError, match="increasing"):
        saturation_point([2, 1], [0, 1])
    with pytest.raises(ValueError, match="fraction"):
        saturation_point(x, [1, 2, 3, 4, 5], fraction=0)


def test_saturation_table():
    import pandas as pd
    idx = pd.Index([1, 2, 4, 8], name="head_dim")
    curves = {"acc": pd.DataFrame({"mean": [0.5, 0.7, 0.9, 0.9], "std": [0.1, 0.1, 0.05, 0.05]}, index=idx),
              "flat": pd.DataFrame({"mean": [2.0, 2.1, 2.0, 2.05], "std": [0.2, 0.2, 0.2, 0.2]}, index=idx),
              "one seed": pd.DataFrame({"mean": [1.0, 2.0, 3.0, 4.0], "std": [float("nan")] * 4}, index=idx)}
    t = saturation_table(curves, fraction=0.9)
    assert t.loc["acc", "saturates_at"] == 4 and t.loc["acc", "rise"] == pytest.approx(0.4)
    assert t.loc["acc", "seed_sd"] == pytest.approx(0.075) and t.loc["acc", "rise_over_sd"] == pytest.approx(0.4 / 0.075)
    assert t.loc["flat", "rise_over_sd"] == pytest.approx(0.5)
    assert t.loc["one seed", "saturates_at"] == 8 and pd.isna(t.loc["one seed", "rise_over_sd"])
    with pytest.raises(ValueError, match="columns"):
        saturation_table({"x": pd.DataFrame({"mean": [1.0]}, index=[1])})


def test_as_rtols():
    assert as_rtols([0.0, 1e-6, None]) == (None, 1e-6, None)
    with pytest.raises(ValueError, match="rtols"):
        as_rtols([2.0])


def test_classification_batch_format(labelled):
    corpus, root = labelled
    b = classification_batch(corpus, vocab_size=300, seq_len=12, count=2, split="test", root=root)
    assert b["ids"].shape == (2, 13) and (b["ids"][:, 0] == 3).all()  # <cls> = 3, then 12 tokens, no <pad>
    assert (b["ids"][:, 1:] != 0).all()
    with pytest.raises(ValueError, match="fewer than count"):
        classification_batch(corpus, vocab_size=300, seq_len=12, count=50, split="test", root=root)


def test_head_dim_sweep_ranks_and_resume(labelled, tmp_path):
    corpus, root = labelled
    runs, ranks = head_dim_sweep(_base(corpus), head_dims=[1, 4], seeds=[0, 1], probe_count=2,
                                 rtols=[0.0, 1e-3], results_dir=tmp_path, root=root)
    assert sorted(zip(runs.head_dim, runs.seed)) == [(1, 0), (1, 1), (4, 0), (4, 1)]
    assert runs["test_acc"].between(0, 1).all()
    assert set(ranks["stage"]) == {"init", "trained"} and (ranks["n"] == 13).all()
    logit = ranks[(ranks.matrix == "logits") & (ranks.measure == "numerical_rank")
                  & (ranks.tolerance == "rtol=max(m,n)eps")]
    # The bottleneck: logit rank = d_h (< n = 13) for every head, sequence, run and stage.
    assert (logit["min"] == logit["head_dim"]).all() and (logit["max"] == logit["head_dim"]).all()
    probs = ranks[(ranks.matrix == "probs") & (ranks.measure == "numerical_rank")]
    assert (probs["max"] <= 13).all() and (probs["min"] >= 1).all()
    # A second call finds every run in the store and trains nothing.
    store = tmp_path / "ch07_head_dim_sweep.jsonl"
    lines = store.read_text().splitlines()
    again, ranks2 = head_dim_sweep(_base(corpus), head_dims=[1, 4], seeds=[0, 1], probe_count=2,
                                   rtols=[0.0, 1e-3], results_dir=tmp_path, root=root)
    assert store.read_text().splitlines() == lines and again.equals(runs)
    run_dir = tmp_path / "runs" / json.loads(lines[0])["key"]
    trained, fresh = load_classifier(run_dir), fresh_classifier(run_dir, seed=0)
    assert not torch.equal(trained.body.blocks[0].attn.in_proj.weight, fresh.body.blocks[0].attn.in_proj.weight)
    assert trained.body.blocks[0].attn.head_dim == json.loads(lines[0])["config"]["head_dim"]
    # An LM checkpoint in that place is named and refused, not loaded into a classifier.
    lm_dir = tmp_path / "lm_run"
    lm_dir.mkdir()
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    state["config"]["task"] = "lm"
    state["model"] = {k: v for k, v in state["model"].items() if not k.startswith("classifier.")}
    torch.save(state, lm_dir / "checkpoint.pt")
    with pytest.raises(ValueError, match="is not a classifier checkpoint"):
        load_classifier(lm_dir)


class Tok:
    """A tokenizer stand-in: one id per word (5 + its length), [CLS] = 1, [SEP] = 2."""
    cls_token_id, sep_token_id = 1, 2

    def __call__(self, text, add_special_tokens=False, verbose=False):
        return {"input_ids": [5 + len(w) for w in text.split()]}


def _tiny_bert(hidden: int):
    """A random 2-layer, 4-head BERT with eager attention (so the probe sees its probabilities)."""
    transformers = pytest.importorskip("transformers", reason="the hf extra is not installed")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=60, hidden_size=hidden, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=2 * hidden, max_position_embeddings=64)
    cfg._attn_implementation = "eager"
    return transformers.BertModel(cfg).eval()


def test_pretrained_ranks_tiny_bert():
    model = _tiny_bert(32)
    texts = {"x": ["a bb ccc dddd " * 40], "y": ["eeeee ff g " * 40]}
    t = pretrained_ranks(model, Tok(), texts, seq_lens=[6, 20], counts=[3, 2], batch_size=2,
                         measures=("numerical_rank",), rtols=[0.0])
    assert set(t["corpus"]) == {"x", "y"} and set(t["n"]) == {6, 20}
    assert sorted(t[(t.corpus == "x") & (t.n == 6)]["seq"].unique()) == [0, 1, 2]
    logits = t[t.matrix == "logits"]
    assert (logits["value"] == logits["n"].clip(upper=8)).all()  # head_dim = 8
    with pytest.raises(ValueError, match="same length"):
        pretrained_ranks(model, Tok(), texts, seq_lens=[6], counts=[1, 2])



class Fixed(torch.nn.Module):
    """One-hot positions in; head 0 attends to the previous token, head 1 to the first token."""

    def __init__(self, n):
        super().__init__()
        self.attn = MultiHeadAttention(n, 2, n, bias=False, scale=50.0)
        w = torch.zeros(6 * n, n)
        w[:n] = torch.eye(n)                      # head 0 queries: q_i = e_i
        w[2 * n + 1:3 * n, :n - 1] = torch.eye(n - 1)  # head 0 keys: k_j = e_{j+1}
        w[n] = 1.0                                # head 1 queries: q_i = e_0
        w[3 * n, 0] = 1.0                         # head 1 keys: only token 0 has k = e_0
        with torch.no_grad():
            self.attn.in_proj.weight.copy_(w)

    def forward(self, x):
        return self.attn(x)[0]


def test_argmax_patterns_counts_shares():
    n = 6
    t = argmax_patterns(Fixed(n), torch.eye(n)[None].repeat(2, 1, 1))
    assert list(t["head"]) == [0, 1, 0, 1] and list(t["seq"]) == [0, 0, 1, 1] and (t["n"] == n).all()
    h0, h1 = t.iloc[0], t.iloc[1]
    # Head 0: query 0 has no match and ties go to key 0; every other query takes its predecessor.
    assert h0.hardmax_rank == n - 1
    assert (h0.to_prev, h0.to_self, h0.to_first, h0.to_next) == pytest.approx(((n - 1) / n, 1 / n, 2 / n, 0.0))
    assert h1.hardmax_rank == 1 and h1.to_first == 1.0 and h1.to_last == 0.0
    assert (h1.to_self, h1.to_prev) == pytest.approx((1 / n, 1 / n))


def _tiny_pretrained_tables(rtols=(0.0, 1e-3)):
    """The tables run_pretrained returns, from a tiny random BERT (no MiniLM needed)."""
    from lowrank.experiments.trained import argmax_patterns

    model = _tiny_bert(16)
    texts = {"x": ["a bb ccc dddd " * 40]}
    from lowrank.experiments.trained import with_float32
    mini = pretrained_ranks(model, Tok(), texts, seq_lens=[3, 12], counts=[2, 2], batch_size=2,
                            rtols=with_float32(rtols))
    mini = mini.assign(frac=mini.value / mini.n)
    ids = torch.tensor([[1] + [5 + i % 4 for i in range(10)] + [2]] * 2)
    pat = argmax_patterns(model, ids).assign(corpus="x")
    pat = pat.assign(rank_frac=pat.hardmax_rank / pat.n, neighbour=pat.to_prev + pat.to_self + pat.to_next)
    return {"model": {"layers": 2, "heads": 4, "head_dim": 4}, "mini": mini, "patterns": pat, "rtols": list(rtols)}


def test_headline_keys_and_values(labelled):
    from lowrank.experiments import trained as X

    corpus, root = labelled
    tables = _tiny_pretrained_tables()
    tables.update(X.run_sweep(corpus=corpus, vocab_size=300, seq_len=12, d_model=16, n_layers=1, n_heads=2, d_ff=32,
                              head_dims=[1, 4], seeds=[0, 1], steps=4, batch_size=8, lr=3e-3, probe_docs=2,
                              rtols=[0.0, 1e-3], energy=0.99, threads=1, root=root),
                  saturation_fraction=0.9)
    h = X.headline(tables)
    assert set(h) == set(X.HEADLINE_KEYS)
    # MiniLM part: the tiny BERT has d_h = 4, so every logit matrix at n = 12 has rank 4.
    assert h["ch07_mini_dh"] == 4 and h["ch07_logit_range"] == "exactly 4"
    assert (h["ch07_logit_min"], h["ch07_logit_max"]) == (4, 4)
    assert h["ch07_n_max"] == 12 and h["ch07_n_min"] == 3
    assert h["ch07_barrier"] == pytest.approx(1 - (1 - 1 / 12) ** 12)
    assert h["ch07_coarse_tol"] == "rtol=0.001"
    assert 0 <= h["ch07_above_barrier"] <= 1 and h["ch07_pat_count"] == 2 * 2 * 4
    # sweep part: n = 13, and the logits have rank min(d_h, n) in every (run, stage) pair
    assert h["ch07_clf_n"] == 13 and h["ch07_clf_ln_n"] == pytest.approx(np.log(13))
    assert h["ch07_clf_exact"] == h["ch07_clf_cases"] == 2 * 2 * 2
    assert (h["ch07_dh_min"], h["ch07_dh_max"], h["ch07_seeds"]) == (1, 4, 2)
    assert h["ch07_clf_barrier"] == pytest.approx(13 * (1 - (1 - 1 / 13) ** 13))
    assert h["ch07_acc_sat"] in (1, 4) and h["ch07_test_docs"] > 0
    # float32 tolerance: coarser than float64's, so never more rank; logits at most d_h
    assert h["ch07_f32_tol"] == "rtol=max(m,n)eps_float32" and h["ch07_logit_f32_max"] <= 4
    assert h["ch07_f32_frac_nmax"] <= h["ch07_default_frac_nmax"] and h["ch07_full_f32"] <= h["ch07_full_default"]
    assert h["ch07_f32_head_lo"] <= h["ch07_f32_frac_nmax"] <= h["ch07_f32_head_hi"]
    assert h["ch07_f32_rtol_nmax"] == pytest.approx(12 * np.finfo(np.float32).eps)
    # barrier over heads (2 layers x 4 heads) and the accuracy comparison's power
    assert h["ch07_heads"] == 8 and 0 <= h["ch07_heads_above"] <= 8
    assert h["ch07_head_mean_lo"] <= h["ch07_head_mean"] <= h["ch07_head_mean_hi"]
    assert h["ch07_clf_bounded"] == h["ch07_clf_cases"] and h["ch07_clf_f32_tr_max"] <= 13
    assert h["ch07_acc_mde"] > 0 and h["ch07_margin"] == X.REDUCTION_MARGIN
    assert h["ch07_acc_dstar_phrase"].startswith(("d_h = ", "no head size"))
    for c in X.CLAIMS:
        assert c.judge(h).verdict


def test_barrier_fraction_and_tolerance_names():
    from lowrank.experiments import trained as X

    assert X.barrier_fraction(512) == pytest.approx(1 - (1 - 1 / 512) ** 512)
    assert X.tolerance_names([1e-3, 0.0, 1e-6]) == ["rtol=max(m,n)eps", "rtol=max(m,n)eps_float32", "rtol=1e-06",
                                                     "rtol=0.001"]
    assert X.with_float32([0.0]) == [0.0, "float32"] == X.with_float32([0.0, "float32"])
    assert X.as_rtols([0.0, "float32", 1e-3]) == (None, "float32", 1e-3)
    assert X.coarse_tolerance([0.0]) == "rtol=max(m,n)eps"
    y = pd.Series([1.0, 3.0, 2.0])
    assert X.normalised(y).tolist() == [0.0, 1.0, 0.5] and X.normalised(pd.Series([2.0, 2.0])).tolist() == [0.0, 0.0]
