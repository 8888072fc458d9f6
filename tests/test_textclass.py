"""Text classification with an independent head size: config checks, ranks over real tokens only,
a tiny run that learns, and the real BBC News corpus."""
import pytest
import torch

from lowrank.data import corpora as data
from lowrank.core.params import ParameterError
from lowrank.tasks.plateau import first_block_ranks
from lowrank.measure.rank import hardmax_rank, numerical_rank
from lowrank.tasks.textclass import TextConfig, build_model, load_text_splits, train_text

WORDS = {"sport": "goal match team score league player coach season win cup",
         "money": "bank market share price profit trade rate loan fund stock"}


@pytest.fixture
def two_topics(tmp_path, monkeypatch):
    """A folder corpus of two topics with disjoint vocabularies; data root in the test's folder."""
    monkeypatch.setenv("LOWRANK_DATA", str(tmp_path / "data"))
    g = torch.Generator().manual_seed(0)
    for label, words in WORDS.items():
        (tmp_path / "docs" / label).mkdir(parents=True)
        vocab = words.split()
        for i in range(40):
            n = 2 + int(torch.randint(0, 12, (1,), generator=g))  # lengths vary: padding is exercised
            text = " ".join(vocab[int(j)] for j in torch.randint(0, len(vocab), (n,), generator=g))
            (tmp_path / "docs" / label / f"{i:02d}.txt").write_text(text + "\n")
    return tmp_path / "docs"


def test_bad_configs_are_refused_naming_the_field():
    for bad, field in [(dict(head_dim=-1), "head_dim"), (dict(head_dim=4, vocab_size=100), "vocab_size"),
                       (dict(head_dim=4, norm="mid"), "norm"), (dict(head_dim=4, seq_len=0), "seq_len"),
                       (dict(head_dim=4, test_fraction=0.6), "test_fraction"),
                       (dict(head_dim=4, cooldown=1.0), "cooldown"),
                       (dict(head_dim=4, val_fraction=0.45, test_fraction=0.45), "val_fraction")]:
        with pytest.raises(ParameterError, match=field):
            TextConfig.from_dict(bad)
    with pytest.raises(ParameterError, match=r"unknown TextConfig field\(s\) \['steps'\]"):
        TextConfig.from_dict(dict(head_dim=4, steps=100))


def test_splits_are_padded_after_cls_and_by_document(two_topics):
    cfg = TextConfig(head_dim=4, corpus=str(two_topics), vocab_size=300, seq_len=48, val_fraction=0.1,
                     test_fraction=0.2)
    s = load_text_splits(cfg)
    assert {k: len(v) for k, v in s.ids.items()} == {"train": 56, "validation": 8, "test": 16}
    assert all((v[:, 0] == data.CLS).all() and v.shape[1] == 49 for v in s.ids.values())
    ids = s.ids["train"]
    real = ids != data.PAD
    assert not real.all() and (real.cummin(1).values == real).all()  # padding only after the text
    assert s.label_names == ["money", "sport"]


def test_ranks_count_real_tokens_only(two_topics):
    """A padded document's first-block ranks equal those of the same document without padding."""
    cfg = TextConfig(head_dim=3, corpus=str(two_topics), vocab_size=300, seq_len=48, n_layers=2)
    s = load_text_splits(cfg)
    torch.manual_seed(0)
    model = build_model(cfg, vocab_size=s.vocab_size, n_classes=2)
    ids = s.ids["test"][:6]
    mask = ids != data.PAD
    lengths = mask.sum(1)
    assert len(set(lengths.tolist())) > 1
    got = first_block_ranks(model, [{"ids": ids, "pad_mask": mask}], rtol=1e-3)
    assert got["rank_inputs"] == 6 and got["rank_mean_tokens"] == pytest.approx(float(lengths.double().mean()))
    # by hand: each document alone, unpadded, through a float64 copy of the first block
    m64 = build_model(cfg, vocab_size=s.vocab_size, n_classes=2)
    m64.load_state_dict(model.state_dict())
    m64 = m64.double().eval()
    hard, logit = [], []
    with torch.no_grad():
        for row, L in zip(ids, lengths.tolist()):
            x = m64.body.tok(row[None, :L]) + m64.body.pos(torch.arange(L))
            attn = m64.body.blocks[0].attn
            xin = m64.body.blocks[0].ln1(x)
            hard.append(hardmax_rank(attn.probs(xin)).double())
            logit.append(numerical_rank(attn.logits(xin)).double())
    assert got["hardmax_rank"] == pytest.approx(float(torch.cat(hard).mean()))
    assert got["logit_rank_default"] == pytest.approx(float(torch.cat(logit).mean())) and got["logit_rank_max"] <= 3


def test_a_tiny_run_learns_and_is_deterministic(two_topics):
    torch.set_num_threads(1)
    cfg = dict(head_dim=2, corpus=str(two_topics), vocab_size=300, seq_len=48, d_model=32, d_ff=64,
               max_steps=150, min_steps=150, warmup_steps=20, eval_every=25, batch_size=16, lr=3e-3,
               rank_documents=8)
    a, b = train_text(cfg), train_text(cfg)
    timing = {"train_s", "rank_s"}
    assert {k: v for k, v in a.items() if k not in timing} == {k: v for k, v in b.items() if k not in timing}
    assert a["test_acc"] >= 0.9 and a["test_n"] == 16 and a["logit_rank_max"] <= 2
    assert a["rank_inputs"] == 8 and a["rank_mean_tokens"] < 49


@pytest.mark.slow
def test_bbcnews_learns_above_chance_in_a_short_run():
    torch.set_num_threads(1)
    res = train_text(dict(head_dim=4, seq_len=64, max_steps=300, min_steps=300, warmup_steps=50,
                          rank_documents=8))
    assert res["test_n"] == 445 and res["test_acc"] > 0.5  # five topics: chance is about 0.23
    assert res["logit_rank_max"] <= 4 and res["rank_mean_tokens"] <= 65
