import pandas as pd
import pytest

from lowrank.experiments import headsize as hs
from lowrank.sweep import ResultStore


def test_paper_parameter_table_matches_every_row():
    t = hs.paper_parameter_table()
    assert len(t) == 15 and (t["difference (M)"].abs() < 0.5).all()
    assert t.loc[0, "d_p"] == 128 and t.loc[0, "head size"] == "d/h" and t.loc[14, "formula (M)"] == 327.41


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    base_dir = tmp_path_factory.mktemp("hs")
    docs = base_dir / "docs"
    docs.mkdir()
    for i in range(8):
        (docs / f"{i}.txt").write_text(f"play {i}: to be or not to be, that is the question {i}.\n" * 20)
    base = dict(task="lm", corpus=str(docs), vocab_size=280, seq_len=8, d_model=8, n_layers=1, d_ff=16,
                batch_size=4, steps=3, warmup_steps=1, eval_interval=0, eval_tokens=64, test_tokens=64,
                checkpoint_every=0, num_threads=1)
    return base, base_dir


def test_families_share_the_d_over_h_run_and_keep_labels(tiny, monkeypatch):
    base, base_dir = tiny
    monkeypatch.setenv("LOWRANK_DATA", str(base_dir / "data"))
    store = base_dir / "store.jsonl"
    grids = {"heads": hs.heads_at_fixed_width(base, heads=[1, 2, 3], head_dim=4, seeds=[0, 1]),
             "sizes": hs.head_size_at_fixed_heads(base, n_heads=2, head_dims=[4], seeds=[0])}
    frames = hs.run_grids(grids, store=store, runs_dir=hs.default_runs_dir(store), progress=False)
    df = frames["heads"]
    # standard h = 1, 2 (3 does not divide 8); fixed h = 1, 2, 3; fixed h = 2 is standard h = 2
    assert sorted(zip(df.family, df.h, df.d_h, df.seed))[:3] == [("fixed", 1, 4, 0), ("fixed", 1, 4, 1),
                                                                  ("fixed", 2, 4, 0)]
    assert len(df) == 10 and len(ResultStore(store).records()) == 8
    shared = df[df.h == 2]
    assert shared.groupby("seed").val_ppl.nunique().eq(1).all() and set(shared.family) == {"standard", "fixed"}
    assert (base_dir / "store-runs").is_dir()
    c = hs.curves(df, ["family", "h"])
    assert set(c.split) == {"train", "validation"} and c.step.max() == 3
    table = hs.configuration_table(df)
    assert list(table.kind) == ["fixed", "fixed", "standard", "standard"] and table.seeds.tolist() == [2] * 4
    sizes = frames["sizes"]
    assert len(sizes) == 1 and sizes.val_ppl.iloc[0] in set(shared.val_ppl)


def _frame(rows):
    df = pd.DataFrame([dict(zip(["family", "d", "h", "d_h", "seed", "n_params", "val_ppl"], r)) for r in rows])
    return df.assign(test_ppl=df.val_ppl, train_wall_s=1.0,
                     key=[f"{f}-{d}-{h}-{dh}-{s}" for f, d, h, dh, s in zip(df.family, df.d, df.h, df.d_h, df.seed)])


def _tables(heads, matched, sizes, n_seeds=2):
    corpus = {"n_docs": 3, "n_words": 100, "vocab": 300, "train_tokens": 1000, "val_tokens": 50,
              "test_tokens": 60, "val_docs": "a", "test_docs": "b"}
    setup = {"d": 64, "n": 16, "dp": 8, "n_layers": 1, "steps": 10, "n_seeds": n_seeds, "base_heads": 8,
             "base_widths": [96, 128], "size_heads": 8, "tokens_seen": 500, "store": "x", "wall_s": 3.0}
    return {**hs.run_parameter_table(), "corpus": corpus, "setup": setup, "heads": heads, "matched": matched,
            "sizes": sizes, "configs": hs.configuration_table(heads, matched, sizes)}


def test_headline_verdicts_follow_the_numbers():
    heads = _frame([("standard", 64, 1, 64, s, 100, 50 + s) for s in (0, 1)]
                   + [("standard", 64, 32, 2, s, 100, 60 + s) for s in (0, 1)]
                   + [("fixed", 64, 1, 8, s, 80, 55 + s) for s in (0, 1)]
                   + [("fixed", 64, 32, 8, s, 200, 40 + s) for s in (0, 1)])
    matched = _frame([("fixed", 64, 1, 8, s, 80, 55 + s) for s in (0, 1)]
                     + [("fixed", 64, 32, 8, s, 200, 40 + s) for s in (0, 1)]
                     + [("standard", 96, 8, 12, s, 190, 40.2 + s) for s in (0, 1)]
                     + [("standard", 128, 8, 16, s, 400, 30 + s) for s in (0, 1)])
    sizes = _frame([("fixed", 64, 8, 2, s, 60, 70 + s) for s in (0, 1)]
                   + [("fixed", 64, 8, 32, s, 300, 69.5 + s) for s in (0, 1)])
    H = {k[5:]: v for k, v in hs.headline(_tables(heads, matched, sizes)).items()}
    assert set(hs.headline(_tables(heads, matched, sizes))) == set(hs.HEADLINE_KEYS)
    assert H["table_rows"] == 15 and H["table_max_diff"] < hs.PARAMETER_TOLERANCE_M and H["epochs"] == 0.5
    assert H["std_trend"] == "rises" and H["fixed_trend"] == "falls" and H["fixed_monotone"] == "yes"
    assert H["gap_h"] == 32 and H["gap_ppl"] == 20 and H["gap_verdict"] == "lower"
    assert H["match_base_d"] == 96 and H["match_verdict"] == "not distinguishable from"
    assert H["widest_base_d"] == 128 and H["widest_base_ppl"] == 30.5
    assert H["dp_trend"] == "does not change beyond seed noise" and H["dp_first"] == 2
    same = heads[heads.h == 32].assign(family="standard")
    both = pd.concat([same, same.assign(family="fixed")])
    H2 = {k[5:]: v for k, v in hs.headline(_tables(both, matched, sizes)).items()}
    assert H2["gap_verdict"] == "identical to" and H2["fixed_monotone"] == "yes"


def test_summarise_and_errors():
    s = hs.summarise(_frame([("fixed", 8, 2, 4, 0, 10, 3.0), ("fixed", 8, 2, 4, 1, 10, 5.0)]), ["h"])
    assert s.loc[0, "mean"] == 4.0 and s.loc[0, "sem"] == pytest.approx(1.0) and s.loc[0, "n_params"] == 10
    with pytest.raises(ValueError, match="no finished runs"):
        hs.summarise(pd.DataFrame(), ["h"])
    with pytest.raises(ValueError, match="multiples of baseline_heads"):
        hs.parameter_matched({"d_model": 8}, heads=[1], head_dim=4, baseline_widths=[10], baseline_heads=4,
                             seeds=[0])
    with pytest.raises(ValueError, match="standard family would be empty"):
        hs.heads_at_fixed_width({"d_model": 8}, heads=[3, 5], head_dim=4, seeds=[0])
