import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from lowrank.layers.attention import MultiHeadAttention
from lowrank.experiments.trained_attention import argmax_patterns, as_rtols, pretrained_ranks

NOTEBOOK = Path(__file__).resolve().parents[1] / "chapters" / "07_trained_attention.ipynb"

def test_as_rtols():
    assert as_rtols([0.0, 1e-6, None]) == (None, 1e-6, None)
    with pytest.raises(ValueError, match="rtols"):
        as_rtols([2.0])


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
    from lowrank.experiments.trained_attention import argmax_patterns

    model = _tiny_bert(16)
    texts = {"x": ["a bb ccc dddd " * 40]}
    from lowrank.experiments.trained_attention import with_float32
    mini = pretrained_ranks(model, Tok(), texts, seq_lens=[3, 12], counts=[2, 2], batch_size=2,
                            rtols=with_float32(rtols))
    mini = mini.assign(frac=mini.value / mini.n)
    ids = torch.tensor([[1] + [5 + i % 4 for i in range(10)] + [2]] * 2)
    pat = argmax_patterns(model, ids).assign(corpus="x")
    pat = pat.assign(rank_frac=pat.hardmax_rank / pat.n, neighbour=pat.to_prev + pat.to_self + pat.to_next)
    return {"model": {"layers": 2, "heads": 4, "head_dim": 4}, "mini": mini, "patterns": pat, "rtols": list(rtols)}


def _truncation_records():
    """Stored truncation records as truncation_run writes them (two n, ranks 1, 2 and 4 of d_h = 4,
    12 documents; at n = 8 rank 2 keeps the neighbours, at n = 16 only the full rank does)."""
    recs = []
    for n in (8, 16):
        keep2 = n == 8
        by_layer = [{"layer": l, "r": 1, "overlap": [0.5 + 0.1 * l] * 12, "sim_corr": 0.9, "cos_mean": 0.9}
                    for l in range(2)] if n == 8 else []
        recs.append({"config": {"n": n}, "wall_s": 3.0, "metrics": {
            "docs": 12, "head_dim": 4, "layers": 2, "full_acc": [0.9, 1.0], "by_layer": by_layer,
            "by_rank": [{"r": 1, "overlap": [0.3] * 12, "sim_corr": 0.5, "cos_mean": 0.6, "cos_sd": 0.1,
                         "cos_min": 0.4, "acc": [0.7, 0.8]},
                        {"r": 2, "overlap": [1.0] * 12 if keep2 else [0.8] * 12, "sim_corr": 0.99 if keep2 else 0.9,
                         "cos_mean": 0.95, "cos_sd": 0.01, "cos_min": 0.9, "acc": [0.9, 1.0]},
                        {"r": 4, "overlap": [1.0] * 12, "sim_corr": 1.0, "cos_mean": 1.0, "cos_sd": 0.0,
                         "cos_min": 1.0 - 1e-7, "acc": [0.9, 1.0]}]}})
    return recs


def test_headline_keys_and_values(tmp_path):
    from lowrank.experiments import trained_attention as ch

    tables = _tiny_pretrained_tables()
    store = tmp_path / "ret.jsonl"
    kw = dict(ns=[8, 16], pair_ns=[8], head_dims=[1, 8], n_seeds=2, pair_seeds=2, max_steps=40, min_steps=20,
              d_model=16, n_values=4, lr=3e-3, tokens_per_step=128, test_sequences=50, rank_sequences=4,
              rank_rtol=1e-3)
    tables.update(ch.run_retrieval(**kw, run=True, store=store, threads=1))
    # the same grid read back from the store, read only: identical table, nothing appended
    size = store.stat().st_size
    again = ch.run_retrieval(**kw, run=False, read_store=store)
    assert again["retrieval_source"] == "store" and store.stat().st_size == size
    assert again["retrieval"].test_acc.tolist() == tables["retrieval"].test_acc.tolist()
    recs = _truncation_records()
    tables["truncation"], tables["truncation_layers"] = ch.truncation_table(recs), ch.layer_table(recs)
    empty = tmp_path / "cls.jsonl"
    empty.touch()
    grid = ch.classifier_configs(image_set="digits", head_dims=[1, 2], seeds=2, vit_layers=1, text_layers=1)
    tables.update(ch.run_classifiers(grid, run=False, read_store=empty))
    tables.update(ch.run_latent(ch.latent_configs(kv_latents=[2, 4], seeds=1, head_dim=4, rope_dim=2, d_model=8,
                                                  n_heads=2, n_layers=1, seq_len=8, steps=2, batch_size=2, lr=1e-3),
                                rank_windows=2))
    # the two more pretrained models: read from the committed store, as the default scale does
    from lowrank.book.runner import notebook_parameters, resolve_chapter
    from lowrank.experiments.registry import validate
    from lowrank.experiments.trained_attention.runs import models_arguments

    P = validate("07_trained_attention", {k: v["default"] for k, v in notebook_parameters(
        resolve_chapter(str(NOTEBOOK), None)).items()})
    tables.update(ch.run_models(ch.models_configs(**models_arguments(P)), run=False, read_store=P["models_long_store"]))
    h = ch.headline(tables)
    assert set(h) == set(ch.HEADLINE_KEYS)
    assert h["ch07_cls_vit"] is None and h["ch07_verdict_vit"].startswith("inconclusive")
    assert h["ch07_verdict_mla_bound"] == "reproduced" and h["ch07_verdict_mla"].startswith("inconclusive")
    # MiniLM part: the tiny BERT has d_h = 4, so every logit matrix at n = 12 has rank 4.
    assert h["ch07_mini_dh"] == 4 and h["ch07_logit_range"] == "exactly 4"
    assert (h["ch07_logit_min"], h["ch07_logit_max"]) == (4, 4)
    assert h["ch07_n_max"] == 12 and h["ch07_n_min"] == 3
    assert h["ch07_barrier"] == pytest.approx(1 - (1 - 1 / 12) ** 12)
    assert h["ch07_coarse_tol"] == "rtol=0.001"
    assert 0 <= h["ch07_above_barrier"] <= 1 and h["ch07_pat_count"] == 2 * 2 * 4
    # float32 tolerance: coarser than float64's, so never more rank; logits at most d_h
    assert h["ch07_f32_tol"] == "rtol=max(m,n)eps_float32" and h["ch07_logit_f32_max"] <= 4
    assert h["ch07_f32_frac_nmax"] <= h["ch07_default_frac_nmax"] and h["ch07_full_f32"] <= h["ch07_full_default"]
    assert h["ch07_f32_head_lo"] <= h["ch07_f32_frac_nmax"] <= h["ch07_f32_head_hi"]
    assert h["ch07_f32_rtol_nmax"] == pytest.approx(12 * np.finfo(np.float32).eps)
    assert h["ch07_heads"] == 8 and 0 <= h["ch07_heads_above"] <= 8
    assert h["ch07_head_mean_lo"] <= h["ch07_head_mean"] <= h["ch07_head_mean_hi"]
    # retrieval part: 2 n x 2 d_h x 2 seeds one-key, 1 n two-key; too few seeds for any n to be judged
    assert (h["ch07_ret_runs"], h["ch07_ret_grid_runs"], h["ch07_ret_seeds"]) == (12, 12, 2)
    assert h["ch07_ret_plateau"] + h["ch07_ret_capped"] == 12
    assert h["ch07_ret_bounded"] == h["ch07_ret_cases"] == 12
    assert h["ch07_ret_ns"] == "8 and 16" and h["ch07_ret_dh"] == "1 and 8" and h["ch07_ret_pair_ns"] == "8"
    assert h["ch07_red_single"] == [] and h["ch07_red_single_judged"] == "none"
    assert h["ch07_red_laws"].startswith("not decided")
    assert h["ch07_ret_git"] not in ("", "not recorded") and h["ch07_ret_cpu_min"] > 0
    assert h["ch07_verdict_reduction"].startswith("inconclusive")
    # truncation part: rank 2 keeps the neighbours at n = 8 (interval (1, 2]); nothing below 4 at n = 16
    assert h["ch07_tr_ns"] == "8 and 16" and h["ch07_tr_dh"] == 4 and h["ch07_tr_full_dev"] == pytest.approx(1e-7)
    assert h["ch07_trr_points"] == [{"n": 8, "prev": 1, "r": 2}, {"n": 16, "prev": 2, "r": 4}]
    assert h["ch07_tr_cos_r1"] == pytest.approx(0.6) and h["ch07_tr_overlap_r1_lo"] == pytest.approx(0.3)
    assert h["ch07_tr_drop_r1"] == pytest.approx(0.2) and h["ch07_tr_acc_first"] == "r = 2"
    assert (h["ch07_trl_n"], h["ch07_trl_worst"], h["ch07_trl_best"]) == (8, 0, 1)
    assert h["ch07_verdict_truncation"] == "contradicted"
    for c in ch.CLAIMS:
        assert c.judge(h).verdict


def _synthetic_runs(d_star, ns=(16, 32), dims=(1, 2, 3, 4, 8), seeds=5, task="single", capped=()):
    """Runs whose accuracy and rank / n step from 0.5 to 1 at d_star[n] (with a small seed offset)."""
    import pandas as pd
    rows, grid = [], []
    for n in ns:
        for s in range(seeds):
            for d in dims:
                v = 1.0 if d >= d_star[n] else 0.5 + 0.01 * s
                grid.append(dict(task=task, n=n, head_dim=d, seed=s))
                rows.append(dict(task=task, n=n, head_dim=d, seed=s, test_acc=v, hardmax_rank=v * n,
                                 plateau=(n, d, s) not in capped))
    return pd.DataFrame(rows), pd.DataFrame(grid)


def test_grid_intervals_are_never_zero_width_and_use_plateau_runs_only():
    from lowrank.experiments import trained_attention as ch

    runs, grid = _synthetic_runs({16: 3, 32: 8})
    p = ch.grid_intervals(runs, grid, "single").set_index("n")
    # every seed agrees: the bootstrap is degenerate, the grid still gives (2, 3] and (4, 8] (open top: 8 is the last)
    assert (p.loc[16, "a_lo"], p.loc[16, "a_hi"]) == (2, 3) and p.loc[16, "d_acc"] == 3
    assert p.loc[32, "a_lo"] == 4 and p.loc[32, "a_hi"] == float("inf")
    assert (p.a_hi > p.a_lo).all() and (p.r_hi > p.r_lo).all()
    # three seeds capped at n = 16: two complete seeds remain, fewer than MIN_SEEDS: n = 16 is not judged
    runs, grid = _synthetic_runs({16: 3, 32: 8}, capped={(16, 3, 0), (16, 2, 1), (16, 1, 2)})
    t = ch.plateau_table(runs, grid).set_index("n")
    assert (t.loc[16, "capped"], t.loc[16, "complete_seeds"], bool(t.loc[16, "judged"])) == (3, 2, False)
    assert t.loc[16, "capped_runs"] == "d_h 1 (seed 2), d_h 2 (seed 1), d_h 3 (seed 0)"
    assert ch.grid_intervals(runs, grid, "single").n.tolist() == [32]
    # one capped run leaves four complete seeds, more than MIN_SEEDS: still not judged, since leaving out
    # the seed that did not converge would choose seeds by their result
    runs, grid = _synthetic_runs({16: 3, 32: 8}, capped={(16, 2, 4)})
    t = ch.plateau_table(runs, grid).set_index("n")
    assert (t.loc[16, "complete_seeds"], bool(t.loc[16, "judged"])) == (4, False)
    assert ch.grid_intervals(runs, grid, "single").n.tolist() == [32]
    # a partial store: n = 32 missing d_h = 8 for every seed is not judged either
    part = runs[~((runs.n == 32) & (runs.head_dim == 8))]
    assert ch.grid_intervals(part, grid, "single").empty


def test_neighbour_overlap_and_similarity_correlation_can_fail():
    from lowrank.experiments import trained_attention as ch

    g = torch.Generator().manual_seed(0)
    E = torch.randn(40, 8, generator=g)
    assert ch.neighbour_overlap(E, E).tolist() == [1.0] * 40 and ch.similarity_correlation(E, E) == pytest.approx(1)
    # a rotation keeps every cosine: full agreement
    Q, _ = torch.linalg.qr(torch.randn(8, 8, generator=g))
    assert ch.neighbour_overlap(E @ Q, E).mean() == 1.0
    # unrelated embeddings: about k / (docs - 1) of the neighbours shared by chance
    F = torch.randn(40, 8, generator=g)
    assert ch.neighbour_overlap(F, E).mean() < 0.5 and abs(ch.similarity_correlation(F, E)) < 0.5
    a = ch.agreement(E + 0.01 * F, E)
    assert a["cos_min"] > 0.99 and len(a["overlap"]) == 40


def test_redundant_rank_interval_needs_both_measures():
    from lowrank.experiments import trained_attention as ch

    tr = ch.truncation_table(_truncation_records())
    red = ch.redundant_ranks(tr).set_index("n")
    assert (red.loc[8, "prev"], red.loc[8, "r_red"]) == (1, 2) and red.loc[16, "r_red"] == 4
    # perfect neighbours but a similarity correlation of 0.9 < 0.95 is not redundant
    tr.loc[(tr.n == 16) & (tr.r == 2), "overlap_lb"] = 1.0
    assert ch.redundant_ranks(tr).set_index("n").loc[16, "r_red"] == 4
    tr.loc[(tr.n == 16) & (tr.r == 2), "sim_corr"] = 0.96
    assert ch.redundant_ranks(tr).set_index("n").loc[16, "r_red"] == 2


def test_missing_store_fails_loudly(tmp_path):
    from lowrank.experiments import trained_attention as ch

    with pytest.raises(FileNotFoundError, match="no retrieval store"):
        ch.read_retrieval_store(tmp_path / "none.jsonl")


def test_truncate_logit_rank_full_rank_is_the_model_and_lower_rank_bounds_the_logits():
    from lowrank.data.pretrained import sentence_embeddings, truncate_logit_rank
    from lowrank.probes.probe import rank_table

    model = _tiny_bert(16)  # 4 heads of d_h = 4
    with torch.no_grad():  # biases are zero at initialisation; give them values, so their handling counts
        for layer in model.encoder.layer:
            layer.attention.self.query.bias.normal_()
            layer.attention.self.key.bias.normal_()
    ids = torch.tensor([[1] + [5 + (i * 7) % 50 for i in range(14)] + [2]] * 2)
    full = sentence_embeddings(model, ids)
    same = sentence_embeddings(truncate_logit_rank(model, 4), ids)
    assert torch.allclose(same, full, atol=1e-5)
    cut = truncate_logit_rank(model, 2)
    t = rank_table(cut, ids, measures=("numerical_rank",), rtols=(None,))
    logits = t[t.matrix == "logits"]
    assert (logits.value <= 2).all() and (logits.value == 2).any()
    # the original is untouched, and the key bias is zeroed in the copy only
    assert model.encoder.layer[0].attention.self.key.bias.abs().sum() > 0
    assert cut.encoder.layer[0].attention.self.key.bias.abs().sum() == 0
    with pytest.raises(ValueError):
        truncate_logit_rank(model, 5)


def test_probe_accuracy_separates_and_folds_are_stratified():
    from lowrank.experiments.shared.probe import probe_accuracy, stratified_folds

    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 10)
    feats = rng.standard_normal((30, 5)) + 4 * np.eye(3, 5)[y]
    acc = probe_accuracy(feats, y, folds=5, seed=0)
    assert acc.shape == (5,) and acc.mean() > 0.9
    f = stratified_folds(y, 5, seed=1)
    assert all((np.bincount(y[f == k], minlength=3) == 2).all() for k in range(5))
    noise = probe_accuracy(rng.standard_normal((30, 5)), y, folds=5, seed=0)
    assert noise.mean() < 0.7


def test_barrier_fraction_and_tolerance_names():
    from lowrank.experiments import trained_attention as ch

    assert ch.barrier_fraction(512) == pytest.approx(1 - (1 - 1 / 512) ** 512)
    assert ch.tolerance_names([1e-3, 0.0, 1e-6]) == ["rtol=max(m,n)eps", "rtol=max(m,n)eps_float32", "rtol=1e-06",
                                                     "rtol=0.001"]
    assert ch.with_float32([0.0]) == [0.0, "float32"] == ch.with_float32([0.0, "float32"])
    assert ch.as_rtols([0.0, "float32", 1e-3]) == (None, "float32", 1e-3)
    assert ch.coarse_tolerance([0.0]) == "rtol=max(m,n)eps"



def test_law_bands_cover_the_intervals_of_the_laws_that_fit():
    import pandas as pd
    from lowrank.experiments import trained_attention as ch

    pts = pd.DataFrame({"n": [16, 32, 64, 128, 256], "a_lo": [1, 3, 5, 7, 9], "a_hi": [2, 4, 6, 8, 10]})
    bands = ch.law_bands(pts, [16.0, 64.0, 256.0])
    assert "a + b ln n" in bands and "c n^alpha" not in bands  # the convex power law fits no parameter value
    lo, hi = bands["a + b ln n"]
    assert (lo >= np.array([1, 5, 9]) - 1e-6).all() and (hi <= np.array([2, 6, 10]) + 1e-6).all() and (lo < hi).all()
    table = ch.law_table(pts, predict=256).set_index("law")
    assert bool(table.loc["a + b ln n", "fits"]) and not bool(table.loc["c n^alpha", "fits"])
    # fitted below n = 256 only, ln n predicts an interval that meets the observed (9, 10]
    assert table.loc["a + b ln n", "pred_lo"] <= 10 and table.loc["a + b ln n", "pred_hi"] > 9


def test_deciding_text_gives_each_fitting_law_its_range_past_the_largest_judged_length():
    import pandas as pd
    from lowrank.experiments.trained_attention.reduction import deciding_text

    pts = pd.DataFrame({"n": [16, 32, 64], "a_lo": [2, 2, 2], "a_hi": [3, 3, 4]})
    text = deciding_text(pts, factors=(2, 8))
    parts = text.split("; ")
    assert [p.split(",")[0] for p in parts] == ["at n = 128", "at n = 512"]
    # ln n grows slower than a power of n: at n = 512 its largest d* lies below the power law's
    log_hi = float(parts[1].split("a + b ln n ")[1].split(" to ")[1].split(",")[0])
    pow_hi = float(parts[1].split("c n^alpha ")[1].split(" to ")[1].split(",")[0])
    assert log_hi < pow_hi
    assert deciding_text(pts.iloc[:2]) == ""
    # intervals no law fits (a jump up, then down) leave nothing to decide
    bad = pd.DataFrame({"n": [16, 32, 64], "a_lo": [1, 30, 1], "a_hi": [2, 31, 2]})
    assert deciding_text(bad).startswith("nowhere: no growth law fits every interval")


def test_truncating_one_layer_leaves_the_others_whole():
    from lowrank.data.pretrained import truncate_logit_rank

    model = _tiny_bert(16)
    cut = truncate_logit_rank(model, 1, layers=[0])
    for i, (a, b) in enumerate(zip(model.encoder.layer, cut.encoder.layer)):
        same = torch.equal(a.attention.self.query.weight, b.attention.self.query.weight)
        assert same == (i != 0)
    with pytest.raises(ValueError, match="layers"):
        truncate_logit_rank(model, 1, layers=[len(model.encoder.layer)])


def test_run_maps_the_validated_parameters_onto_the_three_experiments(monkeypatch):
    from lowrank.book.runner import notebook_parameters, resolve_chapter
    from lowrank.experiments import trained_attention as ch
    from lowrank.experiments.registry import validate
    from lowrank.experiments.trained_attention import runs
    from lowrank.train import run_key

    chapter = resolve_chapter(str(NOTEBOOK), None)
    P = validate("07_trained_attention", {k: v["default"] for k, v in notebook_parameters(chapter).items()})
    P.update(threads=1, retrieval_run=True, retrieval_store="mine.jsonl", truncation_run=False)
    calls = {}

    def record(name):
        def experiment(*args, **kw):
            calls[name] = {**kw, "args": args}
            return {name: True}
        return experiment

    for name in ("run_pretrained", "run_retrieval", "run_truncation", "run_classifiers", "run_latent", "run_models"):
        monkeypatch.setattr(runs, name, record(name))
    threads = torch.get_num_threads()
    try:
        tables = ch.run(P)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    assert set(tables) == set(calls) == {"run_pretrained", "run_retrieval", "run_truncation", "run_classifiers",
                                         "run_latent", "run_models"}
    assert calls["run_models"]["read_store"] == P["models_long_store"] and calls["run_models"]["run"] == P["models_run"]
    mla = calls["run_latent"]
    assert mla["rank_windows"] == P["mla_rank_windows"]
    assert [c["kv_latent"] for c in mla["args"][0]][:len(P["mla_kv_latents"])] == P["mla_kv_latents"]
    assert calls["run_classifiers"]["read_store"] == P["classifiers_long_store"]
    assert calls["run_pretrained"]["seq_lens"] == P["minilm_seq_lens"] and calls["run_pretrained"]["seed"] == P["seed"]
    ret, tr = calls["run_retrieval"], calls["run_truncation"]
    assert (ret["run"], ret["store"], ret["read_store"]) == (True, "mine.jsonl", P["retrieval_long_store"])
    assert (tr["run"], tr["store"]) == (False, "mine.jsonl") and tr["layer_n"] == P["truncation_layer_n"]
    # the keys of the runs it trains are the keys the chapter's estimate and the store use
    assert ch.run_keys(P) == {run_key(c) for c in ch.grid_configs(**ch.retrieval_arguments(P))}


def test_figures_and_tables_draw_from_the_tables():
    import matplotlib.pyplot as plt

    from lowrank.book import trained_figures as tf
    from lowrank.book.plotting import subplots
    from lowrank.experiments import trained_attention as ch
    from lowrank.experiments.trained_attention import plots

    runs, grid = _synthetic_runs({16: 2, 32: 3, 64: 4, 128: 4}, ns=(16, 32, 64, 128), capped=[(128, 1, 0)])
    recs = _truncation_records()
    tables = {**_tiny_pretrained_tables(), "retrieval": runs.assign(task="single"), "retrieval_grid": grid,
              "truncation": ch.truncation_table(recs), "truncation_layers": ch.layer_table(recs)}
    mini, n_max = tables["mini"], int(tables["mini"].n.max())
    barrier = ch.barrier_fraction(n_max)
    # Each figure's inputs as figure_data prepares them (the two-key task has no run: its row is empty).
    data = {"ranks_vs_n": plots.rank_summary(mini, rtols=[0.0, 1e-3], head_dim=4),
            "patterns": plots.pattern_points(tables["patterns"], layers=2, n_max=n_max, barrier=barrier),
            "layers": plots.layer_fractions(mini, rtols=[0.0, 1e-3], n_max=n_max, barrier=barrier, layers=2),
            "retrieval": plots.retrieval_summary(tables["retrieval"], ns=[16, 32, 64]),
            "saturation": plots.saturation_intervals(tables["retrieval"], grid, ns=[16, 32, 64],
                                                     head_dims=[1, 2, 3, 4, 8]),
            "truncation": plots.truncation_curves(tables["truncation"], ns=[8, 16], folds=2),
            "truncation_layers": plots.layer_truncation(tables["truncation_layers"], ranks=[1])}
    shapes = {"ranks_vs_n": (1, 2), "patterns": (1, 2), "layers": (1, 1), "retrieval": (2, 2), "saturation": (1, 2),
              "truncation": (1, 3), "truncation_layers": (1, 2)}
    figs = {name: subplots(*shape) for name, shape in shapes.items()}
    tf.plot_ranks_vs_n(figs["ranks_vs_n"][1], **data["ranks_vs_n"])
    tf.plot_patterns(figs["patterns"][1], **data["patterns"])
    tf.plot_layers(figs["layers"][1][0, 0], **data["layers"])
    tf.plot_retrieval(figs["retrieval"][1], **data["retrieval"])
    tf.plot_saturation(figs["saturation"][1], **data["saturation"])
    tf.plot_truncation(figs["truncation"][1], **data["truncation"])
    tf.plot_truncation_layers(figs["truncation_layers"][1], **data["truncation_layers"])
    try:
        legend = lambda name: [t.get_text() for t in figs[name][0].legends[0].get_texts()]  # noqa: E731
        assert "$d_h$ = 4 (left)" in legend("ranks_vs_n") and "barrier $n(1-(1-1/n)^n)$ (right)" in legend("ranks_vs_n")
        assert legend("patterns") == ["layer 0", "layer 1"]
        # three lengths of the one-key task: the growth laws that fit are drawn (ln n fits this step)
        assert "$a + b\\ln n$ fits" in legend("saturation")
        assert [t.get_text() for t in figs["saturation"][1][0, 0].get_yticklabels()] == ["1", "2", "4", "8", "16"]
        assert legend("truncation") == ["n = 8", "n = 16"] and legend("truncation_layers") == ["layer 0", "layer 1"]
        assert figs["truncation"][1][0, 0].get_lines()[-1].get_ydata()[0] == 1 - ch.NEIGHBOUR_MARGIN
    finally:
        for fig, _ in figs.values():
            plt.close(fig)
    assert list(ch.windows_table(tables).data.columns) == ["sequence length n (tokens)", "x windows"]
    status = ch.retrieval_status_table(tables).data
    assert status["stopped by the cap"].tolist() == [0, 0, 0, 1] and status["task"].tolist() == ["one-key"] * 4
    assert "(a) top-10 overlap" in ch.truncation_display(tables).data.columns


def test_the_page_draws_each_figure_from_its_figure_data(monkeypatch):
    """Every figure cell of the page draws with a function of lowrank.book.trained_figures from the
    inputs figure_data keys by the cell's glue key (less ch07_fig_), and figure_data prepares no other."""
    import ast
    from unittest.mock import MagicMock

    from lowrank.book import trained_figures
    from lowrank.experiments.trained_attention import plots

    for name in set(plots.__all__) - {"LAW_LABELS", "figure_data"}:
        monkeypatch.setattr(plots, name, lambda *args, **kwargs: {})
    prepared = set(plots.figure_data(MagicMock(), MagicMock(), MagicMock()))
    drawn = {}
    for cell in json.loads(NOTEBOOK.read_text(encoding="utf8"))["cells"]:
        if cell["cell_type"] != "code" or "trained_figures.plot_" not in "".join(cell["source"]):
            continue
        calls = [n for n in ast.walk(ast.parse("".join(cell["source"]))) if isinstance(n, ast.Call)]
        glued = [c.args[0].value for c in calls if getattr(c.func, "id", None) == "glue"]
        plot = next(c for c in calls
                    if isinstance(c.func, ast.Attribute) and ast.unparse(c.func.value) == "trained_figures")
        assert hasattr(trained_figures, plot.func.attr), plot.func.attr
        (inputs,) = [ast.unparse(k.value) for k in plot.keywords if k.arg is None]
        drawn[glued[0].removeprefix("ch07_fig_")] = inputs
    assert prepared and drawn == {key: f"F[{key!r}]" for key in prepared}


def test_the_check_cell_prints_the_committed_numbers():
    """The page's check cell, rebuilt from the committed notebook's glued values and its default
    parameters, prints what the committed notebook printed."""
    from lowrank.core.glued import read_glue
    from lowrank.book.runner import notebook_parameters, resolve_chapter
    from lowrank.experiments import trained_attention as ch

    chapter = resolve_chapter(str(NOTEBOOK), None)
    P = {k: v["default"] for k, v in notebook_parameters(chapter).items()}
    nb = json.loads(chapter.path.read_text(encoding="utf8"))
    cell = next(c for c in nb["cells"] if "NBVAL_CHECK_OUTPUT" in "".join(c["source"]))
    printed = "".join("".join(o.get("text", "")) for o in cell["outputs"])
    assert printed and ch.check_summary(read_glue(chapter.path), P) + "\n" == printed
