"""Transformer blocks on multi-head latent attention (TransformerConfig(attention="mla"))."""
import pytest
import torch

from lowrank.layers.mla import MultiHeadLatentAttention
from lowrank.layers.models import CausalLM, SequenceClassifier, TransformerConfig, count_parameters
from lowrank.probes.probe import capture
from lowrank.measure.rank import numerical_rank
from lowrank.train import TrainConfig, run_key


def _cfg(**kw):
    base = dict(vocab_size=40, d_model=16, n_layers=2, n_heads=2, head_dim=6, attention="mla", kv_latent=3,
                rope_dim=4, norm="pre", max_len=16)
    return TransformerConfig(**{**base, **kw})


def test_shapes_and_layer_kind():
    torch.manual_seed(0)
    m = CausalLM(_cfg())
    assert all(isinstance(b.attn, MultiHeadLatentAttention) for b in m.body.blocks)
    ids = torch.randint(40, (3, 9))
    logits, loss = m(ids, ids)
    assert logits.shape == (3, 9, 40) and loss.ndim == 0 and torch.isfinite(loss)


def test_causal_mask_no_look_ahead():
    torch.manual_seed(1)
    m = CausalLM(_cfg()).eval()
    ids = torch.randint(40, (1, 10))
    changed = ids.clone()
    changed[0, 6:] = (changed[0, 6:] + 1) % 40
    with torch.no_grad():
        a, b = m(ids)[0], m(changed)[0]
    assert torch.allclose(a[0, :6], b[0, :6], atol=1e-6) and not torch.allclose(a[0, 6:], b[0, 6:])


def test_block_reduces_to_the_layer_and_a_reference_computation():
    """A block's attention is the MLA layer: its output equals the reference path (materialised
    probabilities times values), and its logits are q_C k_C^T + q_R k_R^T times the scale."""
    torch.manual_seed(2)
    m = CausalLM(_cfg(n_layers=1)).double().eval()
    attn = m.body.blocks[0].attn
    x = torch.randn(2, 8, 16, dtype=torch.float64)
    fast, _ = attn(x)
    ref, probs = attn(x, need_weights=True)
    assert torch.allclose(fast, ref, atol=1e-12)
    p = attn.parts(x)
    s = (p.q_c @ p.k_c.transpose(-2, -1) + p.q_r @ p.k_r.transpose(-2, -1)) * attn.scale
    mask = torch.ones(8, 8, dtype=torch.bool).tril()
    want = torch.softmax(s.masked_fill(~mask, float("-inf")), -1)
    assert torch.allclose(probs, want, atol=1e-12)


def test_parameter_count_of_the_mla_block():
    d, h, dh, L, r, V, ff = 16, 2, 6, 3, 4, 40, 64
    m = CausalLM(_cfg(n_layers=1))
    attn = d * L + L * h * dh + L * h * dh + d * r + d * h * (dh + r) + h * dh * d  # no biases
    block = attn + (d * ff + ff + ff * d + d) + 2 * 2 * d
    body = V * d + 16 * d + 2 * d + block  # embeddings (head tied), LayerNorms
    assert count_parameters(m) == body
    # the latent is the only size that moves with kv_latent: (1 + 2 h d_h) parameters per latent column
    assert count_parameters(CausalLM(_cfg(n_layers=1, kv_latent=5))) - body == 2 * (d + 2 * h * dh)


def test_probe_reads_mla_heads_and_their_logits_respect_the_bound():
    torch.manual_seed(3)
    m = CausalLM(_cfg(kv_latent=2, rope_dim=2, n_layers=2)).double()
    ids = torch.randint(40, (2, 12))
    layers = capture(m, ids)
    assert len(layers) == 2
    for la in layers:
        assert la.logits.shape == (2, 2, 12, 12) and la.max_diff <= 1e-5
        assert int(numerical_rank(la.logits).max()) <= m.body.blocks[0].attn.logit_rank_bound(12) == 4
        assert torch.allclose(la.probs.sum(-1), torch.ones(2, 2, 12, dtype=torch.float64))


def test_encoder_with_mla_and_padding():
    torch.manual_seed(4)
    m = SequenceClassifier(_cfg(causal=False), 3)
    ids = torch.randint(40, (2, 7))
    logits, _ = m(ids, pad_mask=torch.tensor([[True] * 7, [True] * 4 + [False] * 3]))
    assert logits.shape == (2, 3)


@pytest.mark.parametrize("kw, words", [
    (dict(attention="mla", kv_latent=None), "kv_latent"),
    (dict(attention="mla", kv_latent=4, rope_dim=3), "rope_dim"),
    (dict(attention="standard", kv_latent=4, rope_dim=0), "belong to attention='mla'"),
    (dict(attention="flash", kv_latent=None, rope_dim=0), "attention must be one of"),
])
def test_config_errors(kw, words):
    with pytest.raises(ValueError, match=words):
        _cfg(**kw)


def test_train_config_keeps_old_run_keys_and_passes_mla_through():
    old = TrainConfig().to_dict()
    assert not {"attention", "kv_latent", "rope_dim"} & set(old)
    mla = TrainConfig(attention="mla", kv_latent=4, rope_dim=2, head_dim=8)
    assert run_key(mla.to_dict()) != run_key(old) and mla.to_dict()["kv_latent"] == 4
    mc = mla.model_config(vocab_size=50)
    assert (mc.attention, mc.kv_latent, mc.rope_dim) == ("mla", 4, 2)
    with pytest.raises(ValueError, match="kv_latent"):
        TrainConfig(attention="mla")
