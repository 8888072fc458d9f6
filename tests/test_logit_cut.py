"""The run-time logit cut of rotary models and the weight-level cut of MPNet."""
import pytest
import torch

transformers = pytest.importorskip("transformers", reason="the hf extra (pip install -e .[hf]) is not installed")

from lowrank.probes.logit_cut import logit_rank_cut, low_rank_logits, next_token_loss  # noqa: E402
from lowrank.data.pretrained import truncate_logit_rank  # noqa: E402
from lowrank.probes.probe import capture  # noqa: E402


def _llama():
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=60, hidden_size=48, num_hidden_layers=2, num_attention_heads=6,
                                   num_key_value_heads=2, intermediate_size=37, max_position_embeddings=64)
    cfg._attn_implementation = "eager"
    return transformers.LlamaForCausalLM(cfg).eval()


def _ids(B=3, n=20):
    return torch.randint(5, 60, (B, n), generator=torch.Generator().manual_seed(1))


def test_low_rank_logits_is_the_best_rank_r_approximation():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 3, 30, 8, generator=g), torch.randn(2, 3, 30, 8, generator=g)
    full = (q.double() @ k.double().transpose(-2, -1)) * 0.5
    for r in (1, 3, 8):
        cut = low_rank_logits(q, k, 0.5, r)
        U, S, Vh = torch.linalg.svd(full)
        best = (U[..., :r] * S[..., None, :r]) @ Vh[..., :r, :]
        assert torch.allclose(cut, best, atol=1e-9)
        assert torch.linalg.matrix_rank(cut).max() == r


def test_the_cut_at_d_h_is_the_model_and_below_it_moves_the_loss():
    model, ids = _llama(), _ids()
    full = next_token_loss(model, ids)
    with logit_rank_cut(model, 8):
        same = next_token_loss(model, ids)
    with logit_rank_cut(model, 1):
        cut = next_token_loss(model, ids)
    assert torch.allclose(full, same, atol=1e-5)
    assert (cut - full).abs().max() > 1e-4
    assert model.config._attn_implementation == "eager"
    with torch.no_grad():
        ref = torch.nn.functional.cross_entropy(model(input_ids=ids).logits[:, :-1].reshape(-1, 60).double(),
                                                ids[:, 1:].reshape(-1))
    assert abs(float(full.mean()) - float(ref)) < 1e-5


def test_mpnet_weight_cut_bounds_its_content_logits():
    torch.manual_seed(0)
    cfg = transformers.MPNetConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   intermediate_size=37, max_position_embeddings=66)
    model = transformers.MPNetModel(cfg).eval()
    ids = _ids()
    same = truncate_logit_rank(model, 8)
    assert torch.allclose(same(input_ids=ids).last_hidden_state, model(input_ids=ids).last_hidden_state, atol=1e-4)
    for la in capture(truncate_logit_rank(model, 2), ids):
        assert torch.linalg.matrix_rank(la.logits).max() <= 2
