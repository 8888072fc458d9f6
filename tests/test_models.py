import pytest
import torch

from lowrank.experiments.head_size_training import PAPER_TABLES
from lowrank.layers.models import (IGNORE_INDEX, CausalLM, MaskedLM, SequenceClassifier, Transformer,
                            TransformerConfig, bert_parameter_count, count_parameters, mask_tokens)


@pytest.mark.parametrize("table, d, h, dp, dff, reported", PAPER_TABLES)
def test_bert_parameter_count_reproduces_paper_tables(table, d, h, dp, dff, reported):
    assert abs(bert_parameter_count(d, 24, h, dp, dff) / 1e6 - reported) < 0.5


def test_bert_large_count_is_exact():
    # HF BertModel (bert-large-uncased, with pooler) has 335,141,888 parameters.
    assert bert_parameter_count(1024, 24, 16, pooler=True, mlm_head=False) == 335_141_888
    # d_ff = 2048 for d = 512 would contradict the reported 168M (the reason for d_ff = 4096).
    assert bert_parameter_count(512, 24, 8, 128, 2048) / 1e6 < 120


def test_count_parameters_matches_formula_for_our_models():
    cfg = TransformerConfig(vocab_size=500, d_model=48, n_layers=3, n_heads=5, head_dim=12, d_ff=100,
                            max_len=40, causal=False)
    mlm = MaskedLM(cfg)
    assert count_parameters(mlm) == bert_parameter_count(48, 3, 5, 12, 100, vocab_size=500, max_position=40,
                                                         type_vocab=0, pooler=False, mlm_head=True)
    clf = SequenceClassifier(cfg, 4)
    assert count_parameters(clf) == bert_parameter_count(48, 3, 5, 12, 100, vocab_size=500, max_position=40,
                                                         type_vocab=0, pooler=True, mlm_head=False) + 48 * 4 + 4
    lm = CausalLM(TransformerConfig(vocab_size=500, d_model=48, n_layers=3, n_heads=4, max_len=40))
    assert count_parameters(lm) == bert_parameter_count(48, 3, 4, None, None, vocab_size=500, max_position=40,
                                                        type_vocab=0, pooler=False, mlm_head=False)
    untied = CausalLM(TransformerConfig(vocab_size=500, d_model=48, n_layers=3, n_heads=4, max_len=40,
                                        tie_embeddings=False))
    assert count_parameters(untied) == count_parameters(lm) + 500 * 48


def test_fixed_heads_add_parameters_standard_heads_do_not():
    base = dict(vocab_size=100, d_model=32, n_layers=1, max_len=16)
    std = [count_parameters(CausalLM(TransformerConfig(n_heads=h, **base))) for h in (1, 2, 8, 32)]
    assert len(set(std)) == 1
    fixed = [count_parameters(CausalLM(TransformerConfig(n_heads=h, head_dim=8, **base))) for h in (1, 3, 4)]
    # each extra head of size 8 adds 4 * d * 8 weights and 3 * 8 biases
    assert fixed[1] - fixed[0] == 2 * (4 * 32 * 8 + 3 * 8) and fixed[2] == std[0]


def test_causal_lm_does_not_look_ahead_and_learns_loss_shapes():
    torch.manual_seed(0)
    m = CausalLM(TransformerConfig(vocab_size=50, d_model=16, n_layers=2, n_heads=3, head_dim=7, max_len=12)).eval()
    ids = torch.randint(50, (2, 10))
    other = ids.clone()
    other[:, 6:] = (other[:, 6:] + 1) % 50
    la, loss = m(ids, ids)
    lb, _ = m(other)
    assert la.shape == (2, 10, 50) and loss.ndim == 0
    assert torch.allclose(la[:, :6], lb[:, :6], atol=1e-6) and not torch.allclose(la[:, 6:], lb[:, 6:])


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_padding_keys_are_ignored_by_the_encoder(norm):
    torch.manual_seed(0)
    cfg = TransformerConfig(vocab_size=30, d_model=16, n_layers=2, n_heads=2, max_len=8, causal=False, norm=norm)
    clf = SequenceClassifier(cfg, 3).eval()
    ids = torch.tensor([[3, 4, 5, 0, 0, 0]])
    noise = torch.tensor([[3, 4, 5, 9, 8, 7]])
    mask = torch.tensor([[True, True, True, False, False, False]])
    logits, _ = clf(ids, pad_mask=mask)
    a = clf.body(ids, mask)[:, :3]
    b = clf.body(noise, mask)[:, :3]
    c = clf.body(noise)[:, :3]
    assert logits.shape == (1, 3) and torch.allclose(a, b, atol=1e-6) and (a - c).abs().max() > 1e-3


def test_mask_tokens_80_10_10():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(4, 1000, (200, 100), generator=g)
    ids[:, 0] = 1  # special token, never masked
    inp, lab = mask_tokens(ids, vocab_size=1000, mask_id=2, special_ids=(1,), prob=0.15, generator=g)
    chosen = lab != IGNORE_INDEX
    assert not chosen[:, 0].any() and torch.equal(lab[chosen], ids[chosen])
    assert abs(chosen[:, 1:].float().mean().item() - 0.15) < 0.01
    frac_mask = (inp[chosen] == 2).float().mean().item()
    frac_same = (inp[chosen] == ids[chosen]).float().mean().item()
    assert abs(frac_mask - 0.8) < 0.02 and abs(frac_same - 0.1) < 0.02
    assert torch.equal(inp[~chosen], ids[~chosen])


@pytest.mark.parametrize("kw, words", [
    (dict(n_heads=3), "divide d_model"),
    (dict(norm="sandwich"), "norm must be 'post'"),
    (dict(head_dim=0), "head_dim must be None or a positive int"),
    (dict(dropout=1.0), "dropout"),
])
def test_config_errors(kw, words):
    with pytest.raises(ValueError, match=words):
        TransformerConfig(vocab_size=10, d_model=16, **{"n_heads": 2, **kw})


def test_head_kind_and_length_checks():
    with pytest.raises(ValueError, match="causal=True"):
        CausalLM(TransformerConfig(vocab_size=10, d_model=8, n_heads=2, causal=False))
    body = Transformer(TransformerConfig(vocab_size=10, d_model=8, n_heads=2, max_len=4))
    with pytest.raises(ValueError, match="exceeds max_len=4"):
        body(torch.zeros(1, 5, dtype=torch.long))


# --- initialisation: "bert" unchanged, "scaled" by fan-in and depth -----------------

def _weights(cfg, seed=0):
    torch.manual_seed(seed)
    return dict(Transformer(cfg).named_parameters())


def test_bert_init_is_the_default_and_unchanged():
    cfg = TransformerConfig(vocab_size=50, d_model=32, n_layers=2, n_heads=4)
    assert cfg.init == "bert"
    w = _weights(cfg)
    for name, p in w.items():
        if p.dim() == 2:  # every matrix: trunc-normal(0.02) cut at 2 std
            assert p.abs().max() <= 0.04 + 1e-7, name
    explicit = _weights(TransformerConfig(vocab_size=50, d_model=32, n_layers=2, n_heads=4, init="bert"))
    assert all(torch.equal(w[k], explicit[k]) for k in w)


@pytest.mark.parametrize("h, dp, layers", [(4, None, 1), (4, None, 3), (32, 16, 2), (8, 4, 2)])
def test_scaled_init_output_std_follows_fan_in_and_depth(h, dp, layers):
    from lowrank.layers.models import residual_output_std

    d = 64
    cfg = TransformerConfig(vocab_size=50, d_model=d, n_layers=layers, n_heads=h, head_dim=dp, d_ff=256,
                            init="scaled")
    inner = h * (dp or d // h)
    w = _weights(cfg)
    # trunc-normal at 2 std has standard deviation 0.880 * std
    ratio = 0.8796
    for i in range(layers):
        wo, w2 = w[f"blocks.{i}.attn.out_proj.weight"], w[f"blocks.{i}.ff.2.weight"]
        want_o = 0.02 * (d / inner) ** 0.5 / (2 * layers) ** 0.5
        assert residual_output_std(inner, d, layers) == pytest.approx(want_o)
        assert wo.std().item() == pytest.approx(ratio * want_o, rel=0.1)
        assert wo.abs().max().item() <= 2 * want_o + 1e-7
        want_2 = 0.02 * (d / 256) ** 0.5 / (2 * layers) ** 0.5
        assert w2.std().item() == pytest.approx(ratio * want_2, rel=0.1)
        # everything else is as under "bert"
        assert w[f"blocks.{i}.attn.in_proj.weight"].std().item() == pytest.approx(ratio * 0.02, rel=0.1)
    # the residual branch writes the same variance whatever the inner width: W_O's output on unit inputs
    x = torch.randn(4096, inner)
    out = x @ w["blocks.0.attn.out_proj.weight"].T
    assert out.std().item() == pytest.approx(ratio * 0.02 * d ** 0.5 / (2 * layers) ** 0.5, rel=0.1)  # no inner width


def test_init_is_validated_and_bert_keeps_run_keys():
    from lowrank.train import TrainConfig, run_key

    with pytest.raises(ValueError, match="init must be one of"):
        TransformerConfig(vocab_size=50, init="xavier")
    with pytest.raises(ValueError, match="init must be one of"):
        TrainConfig(init="xavier")
    assert "init" not in TrainConfig().to_dict()  # run keys written before 'init' existed stay valid
    assert TrainConfig(init="scaled").to_dict()["init"] == "scaled"
    assert run_key(TrainConfig(init="scaled").to_dict()) != run_key(TrainConfig().to_dict())
    assert TrainConfig.from_dict(TrainConfig(init="scaled").to_dict()).init == "scaled"
