"""`lowrank probe` end to end on tiny random checkpoints of six families, saved with save_pretrained."""
import json

import pandas as pd
import pytest
import torch

transformers = pytest.importorskip("transformers", reason="the hf extra (pip install -e .[hf]) is not installed")

from lowrank.book import cli  # noqa: E402
from lowrank.probes.report import FILES  # noqa: E402

WORDS = ("the rank of attention is bounded by the head size and softmax lifts it back to the length "
         "of the sequence when weights are random and the model is small").split()
TEXT = "\n".join(" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(40)) for i in range(20)) + "\n"
D_H = 8  # hidden 32 over 4 heads in every family below


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([TEXT], trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]"]))
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]")


def _configs():
    common = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
    return {
        "bert": transformers.BertConfig(**common, max_position_embeddings=64),
        "roberta": transformers.RobertaConfig(**common, max_position_embeddings=66, pad_token_id=1),
        "distilbert": transformers.DistilBertConfig(vocab_size=99, dim=32, n_layers=2, n_heads=4, hidden_dim=37,
                                                    max_position_embeddings=64),
        "gpt2": transformers.GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=4, n_positions=64),
        # rotary position embeddings and grouped-query attention: 4 query heads share 2 key heads
        "llama": transformers.LlamaConfig(**common, num_key_value_heads=2, max_position_embeddings=64),
        "vit": transformers.ViTConfig(image_size=32, patch_size=4, num_channels=3, hidden_size=32,
                                      num_hidden_layers=2, num_attention_heads=4, intermediate_size=37),
    }


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpt")
    tok = _tokenizer()
    paths = {}
    for name, cfg in _configs().items():
        torch.manual_seed(0)
        model = transformers.AutoModel.from_config(cfg)
        model.save_pretrained(root / name)
        if name != "vit":
            tok.save_pretrained(root / name)
        paths[name] = root / name
    (root / "texts.txt").write_text(TEXT)
    return paths, root / "texts.txt"


def _probe(capsys, *args):
    code = cli.main(["probe", *map(str, args)])
    return code, capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "gpt2", "llama", "vit"])
def test_every_family_writes_all_outputs_with_logit_rank_d_h(family, checkpoints, tmp_path, capsys):
    paths, texts = checkpoints
    out = tmp_path / "out"
    inputs = ["--images", "synthetic"] if family == "vit" else ["--texts", texts, "--lengths", 20, 40]
    code, err = _probe(capsys, paths[family], *inputs, "--windows", 2, "-o", out)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    ranks = pd.read_csv(out / "ranks.csv")
    assert list(ranks.columns) == ["layer", "head", "window", "n", "matrix", "measure", "tolerance", "value"]
    S = ranks[(ranks.matrix == "S") & (ranks.measure == "numerical_rank") & (ranks.tolerance == "rtol=max(m,n)eps")]
    # random weights, n > d_h: every head's logits reach the bound d_h exactly
    assert (S.n > D_H).all() and (S.value == D_H).all()
    assert len(S) == 2 * 4 * 2 * (1 if family == "vit" else 2)
    heads = pd.read_csv(out / "heads.csv")
    assert heads["logit_rank_at_bound"].all() and not heads["bound_trivial"].any()
    assert heads["rank_A_over_n"].between(0, 1).all()
    prov = json.loads((out / "provenance.json").read_text())
    check = prov["cross_check"]
    assert check["passed"] and 0 <= check["max_abs_diff"] <= check["atol"] and check["layer_batches"] >= 2
    ck = prov["checkpoint"]
    assert (ck["model_type"], ck["layers"], ck["heads"], ck["head_dim"]) == (family, 2, 4, D_H)
    assert ck["gqa_groups"] == (2 if family == "llama" else 1)
    assert len(next(iter(ck["weights"].values()))) == 64
    assert prov["lowrank_version"] and prov["git_revision"]
    assert "Caveats" in (out / "report.md").read_text()


def test_probe_matches_the_models_own_attention(checkpoints):
    """The float64 recomputation is what eager attention computes, for GQA + rotary too."""
    from lowrank.probes.probe import capture

    paths, _ = checkpoints
    model = transformers.AutoModel.from_pretrained(paths["llama"], attn_implementation="eager")
    ids = torch.randint(2, 99, (2, 20), generator=torch.Generator().manual_seed(0))
    ref = model(input_ids=ids, output_attentions=True).attentions
    got = capture(model, ids)
    assert all(torch.allclose(la.probs, r.double(), atol=1e-6) for la, r in zip(got, ref))
    # causal: nothing above the diagonal
    assert got[0].probs.triu(1).abs().max() == 0


def _one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lowrank: error: "), err
    return lines[0]


def test_bad_inputs_exit_2_with_one_line(checkpoints, tmp_path, capsys):
    paths, texts = checkpoints
    out = tmp_path / "o"
    cases = [
        ([tmp_path], "not a checkpoint folder"),
        ([paths["bert"], "--texts", texts, "--lengths", 65], "longer than the 64 positions"),
        ([paths["roberta"], "--texts", texts, "--lengths", 65], "longer than the 64 positions"),
        ([paths["vit"], "--lengths", 20], "fixed by its 32-pixel images"),
        ([paths["vit"], "--texts", texts], "vision model"),
        ([paths["gpt2"], "--images", "synthetic"], "text model"),
        ([paths["gpt2"], "--texts", tmp_path / "missing.txt"], "--texts"),
        ([paths["gpt2"], "--texts", texts, "--layers", 2], "layer indices in [0, 1]"),
        ([paths["gpt2"], "--texts", texts, "--windows", 0], "--windows"),
        ([paths["gpt2"], "--device", "cuda:7"] if not torch.cuda.is_available() else [tmp_path], "--device"
         if not torch.cuda.is_available() else "not a checkpoint"),
    ]
    for args, words in cases:
        code, err = _probe(capsys, *args, "-o", out)
        assert code == 2, (args, err)
        assert words in _one_line(err), (args, err)
        assert not out.exists()
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("keep")
    code, err = _probe(capsys, paths["gpt2"], "--texts", texts, "-o", busy)
    assert code == 2 and "not an empty folder" in _one_line(err)
    assert (busy / "mine.txt").read_text() == "keep"


def test_a_checkpoint_without_tokenizer_or_weights_is_named(checkpoints, tmp_path, capsys):
    paths, texts = checkpoints
    bare = tmp_path / "bare"
    transformers.AutoModel.from_config(_configs()["gpt2"]).save_pretrained(bare)
    code, err = _probe(capsys, bare, "--texts", texts, "-o", tmp_path / "o")
    assert code == 2 and "no tokenizer files" in _one_line(err)
    (bare / "model.safetensors").unlink()
    code, err = _probe(capsys, bare, "--texts", texts, "-o", tmp_path / "o")
    assert code == 2 and "no weights" in _one_line(err)


def test_unsupported_architecture_lists_the_families(checkpoints, tmp_path, capsys, monkeypatch):
    paths, texts = checkpoints
    # a model that keeps its own attention implementation, as one that bypasses the registry does
    monkeypatch.setattr(transformers.BertModel, "set_attn_implementation", lambda self, *a, **k: None)
    code, err = _probe(capsys, paths["bert"], "--texts", texts, "--lengths", 20, "-o", tmp_path / "o")
    line = _one_line(err)
    assert code == 2 and "AttentionInterface" in line and "bert, roberta, distilbert, gpt2, llama, mistral, qwen2, vit" in line


def test_a_failed_cross_check_exits_1_and_writes_nothing(checkpoints, tmp_path, capsys, monkeypatch):
    from transformers.models.gpt2 import modeling_gpt2

    paths, texts = checkpoints
    eager = modeling_gpt2.eager_attention_forward
    monkeypatch.setattr(modeling_gpt2, "eager_attention_forward",
                        lambda *a, **k: (lambda o, w: (o, w * 1.01))(*eager(*a, **k)))
    out = tmp_path / "o"
    code, err = _probe(capsys, paths["gpt2"], "--texts", texts, "--lengths", 20, "-o", out)
    assert code == 1 and "cross-check failed" in _one_line(err)
    assert not out.exists() and not list(tmp_path.glob(".o.tmp-*"))


def test_every_probe_option_is_documented():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "appendix" / "probe.md").read_text()
    sub = next(a for a in cli._parser()._actions if a.dest == "command").choices["probe"]
    options = [a.option_strings for a in sub._actions if a.option_strings and "--help" not in a.option_strings]
    assert len(options) >= 10
    missing = [o for o in options if not any(f"`{s} " in page for s in o)]
    assert not missing, missing


@pytest.fixture()
def lowrank_run(tmp_path, monkeypatch):
    """A `python -m lowrank.train` run folder (config.json, checkpoint.pt) of a small causal LM, on a
    local corpus whose tokenizer and token cache go to a private data folder."""
    from lowrank.data.corpora import prepare_lm
    from lowrank.layers.models import CausalLM
    from lowrank.train import TrainConfig

    monkeypatch.setenv("LOWRANK_DATA", str(tmp_path / "data"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(WORDS[(i * 5 + j) % len(WORDS)] for j in range(30))
                                for i in range(200)) + "\n")
    cfg = TrainConfig(task="lm", corpus=str(corpus), vocab_size=300, seq_len=24, d_model=16, n_layers=2,
                      n_heads=3, head_dim=4, steps=1, batch_size=2)
    torch.manual_seed(0)
    model = CausalLM(cfg.model_config(vocab_size=prepare_lm(cfg.corpus, vocab_size=300).vocab_size))
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(cfg.to_dict()))
    torch.save({"config": cfg.to_dict(), "model": model.state_dict(), "optimizer": {}, "step": 1},
               run / "checkpoint.pt")
    return run, cfg


def test_a_lowrank_training_run_is_probed_on_its_own_corpus(lowrank_run, tmp_path, capsys):
    run, cfg = lowrank_run
    out = tmp_path / "out"
    code, err = _probe(capsys, run, "--windows", 2, "-o", out)
    assert code == 0, err
    ranks = pd.read_csv(out / "ranks.csv")
    S = ranks[(ranks.matrix == "S") & (ranks.measure == "numerical_rank") & (ranks.tolerance == "rtol=max(m,n)eps")]
    # no length given: the longest the model has positions for; every head at its bound d_h = 4
    assert set(S.n) == {cfg.seq_len} and (S.value == 4).all() and len(S) == 2 * 3 * 2
    A = ranks[(ranks.matrix == "A") & (ranks.measure == "numerical_rank")]
    assert (A.value == A.n).all()  # causal: lower triangular, positive diagonal
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["checkpoint"]["model_type"] == "lowrank-lm" and prov["checkpoint"]["head_dim"] == 4
    assert 0 <= prov["cross_check"]["max_abs_diff"] <= 1e-5 and "checkpoint.pt" in prov["checkpoint"]["weights"]


def test_a_lowrank_run_refuses_other_inputs_and_tasks(lowrank_run, tmp_path, capsys):
    run, cfg = lowrank_run
    for args, words in (([run, "--texts", "bbcnews"], "its own corpus"),
                        ([run, "--lengths", 25], "longer than the 24 positions"),
                        ([run, "--images", "synthetic"], "text model")):
        code, err = _probe(capsys, *args, "-o", tmp_path / "o")
        assert code == 2 and words in _one_line(err), (args, err)
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    torch.save({**state, "config": {**state["config"], "task": "classify"}}, run / "checkpoint.pt")
    code, err = _probe(capsys, run, "-o", tmp_path / "o")
    assert code == 2 and "'classify' run" in _one_line(err)
    (run / "checkpoint.pt").write_bytes(b"not a checkpoint")
    code, err = _probe(capsys, run, "-o", tmp_path / "o")
    assert code == 2 and "checkpoint.pt cannot be read" in _one_line(err)


def test_a_batch_whose_maps_cannot_fit_is_refused(checkpoints, tmp_path, capsys, monkeypatch):
    import os

    paths, texts = checkpoints
    real = os.sysconf
    monkeypatch.setattr(os, "sysconf", lambda name: 1 if name == "SC_AVPHYS_PAGES" else real(name))
    code, err = _probe(capsys, paths["bert"], "--texts", texts, "--lengths", 40, "-o", tmp_path / "o")
    assert code == 2 and "--batch-size = 4: one layer's maps at n = 40 need about" in _one_line(err)


@pytest.mark.parametrize("dtype, atol", [("bfloat16", 2e-2), ("float16", 2e-3), ("float64", 1e-5)])
def test_other_dtypes_cross_check_at_their_own_rounding(dtype, atol, checkpoints, tmp_path, capsys):
    paths, texts = checkpoints
    out = tmp_path / "out"
    code, err = _probe(capsys, paths["llama"], "--texts", texts, "--lengths", 20, "--windows", 2, "--dtype", dtype,
                       "-o", out)
    assert code == 0, err
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["dtype"] == dtype and prov["cross_check"]["atol"] == atol
    assert prov["cross_check"]["max_abs_diff"] <= atol
    ranks = pd.read_csv(out / "ranks.csv")
    S = ranks[(ranks.matrix == "S") & (ranks.measure == "numerical_rank") & (ranks.tolerance == "rtol=max(m,n)eps")]
    assert (S.value == D_H).all()


def test_a_folder_of_images_feeds_a_vision_model(checkpoints, tmp_path, capsys):
    import numpy as np
    from PIL import Image

    paths, _ = checkpoints
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i, size in enumerate((40, 28, 64)):  # any size: each is resized to the model's 32 pixels
        Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8)).save(folder / f"im{i}.png")
    (folder / "notes.txt").write_text("not an image, skipped")
    out = tmp_path / "out"
    code, err = _probe(capsys, paths["vit"], "--images", folder, "--windows", 2, "-o", out)
    assert code == 0, err
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["inputs"]["count"] == 2 and prov["inputs"]["images"] == str(folder.resolve())
    assert set(pd.read_csv(out / "ranks.csv")["window"]) == {0, 1}
    (folder / "im0.png").write_bytes(b"broken")
    code, err = _probe(capsys, paths["vit"], "--images", folder, "-o", tmp_path / "o2")
    assert code == 2 and "im0.png: cannot be read as an image" in _one_line(err)
    empty = tmp_path / "empty"
    empty.mkdir()
    code, err = _probe(capsys, paths["vit"], "--images", empty, "-o", tmp_path / "o2")
    assert code == 2 and "holds no images" in _one_line(err)
