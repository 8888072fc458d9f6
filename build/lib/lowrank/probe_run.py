"""``lowrank probe``: the book's rank analysis on a Hugging Face checkpoint, written to one folder.

:func:`run_probe` loads a local checkpoint folder (``save_pretrained`` output), builds unpadded
inputs (windows of text, or images for vision models), ranks every head's logits S and
probabilities A through :func:`lowrank.probe.text_ranks` (chapter 07's code path) or
:func:`lowrank.probe.rank_table`, and writes into OUTDIR (:mod:`lowrank.report`):
``ranks.csv`` (tidy), ``heads.csv`` (per-head summary), figures as PNG and SVG, ``report.md`` and
``provenance.json``.

Every input is checked before the model runs; a bad one raises :class:`ProbeInputError` with one
line naming the input, its value and what is allowed (the command exits 2 on it).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

__all__ = ["ProbeInputError", "ProbeSpec", "TESTED_FAMILIES", "DTYPES", "CheckpointInfo", "load_checkpoint",
           "max_tokens", "synthetic_images", "folder_images", "run_probe"]

# model_type values the test suite builds tiny checkpoints of; other models whose attention goes
# through transformers' AttentionInterface (Mistral, Qwen2, ...) are read the same way.
TESTED_FAMILIES = ("bert", "roberta", "distilbert", "gpt2", "llama", "vit")
DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp")
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
# Without one of these, transformers 5 builds an empty tokenizer from the config instead of failing.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "tokenizer.model")


class ProbeInputError(ValueError):
    """An input of ``lowrank probe`` that cannot be used; the message is one line."""


@dataclass
class ProbeSpec:
    """What to probe and how. ``texts`` is a corpus name or a local file or folder (text models);
    ``images`` is a folder or "synthetic" (vision models); ``lengths`` None means the defaults
    (text) or the model's fixed n (vision)."""
    path: Path
    out: Path
    texts: str | None = None
    images: str | None = None
    lengths: Sequence[int] | None = None
    windows: int = 4
    layers: Sequence[int] | None = None
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int = 4
    seed: int = 0


@dataclass
class CheckpointInfo:
    """What the provenance records about the model."""
    path: str
    model_type: str
    architecture: str
    layers: int
    heads: int
    head_dim: int
    kv_heads: int
    gqa_groups: int
    max_positions: int | None
    vision: bool
    image_size: int | None = None
    weights: dict = field(default_factory=dict)


def _fail(what: str, value, allowed: str) -> ProbeInputError:
    text = " ".join(str(value).split())
    return ProbeInputError(f"{what} = {text[:80]}: {allowed}")


def _weights_sha256(folder: Path) -> dict:
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)
    out = {}
    for p in files:
        h = hashlib.sha256()
        with p.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        out[p.name] = h.hexdigest()
    return out


def max_tokens(config) -> int | None:
    """The longest sequence the model embeds: ``max_position_embeddings`` less the position offset
    RoBERTa-style models reserve for padding."""
    limit = getattr(config, "max_position_embeddings", None)
    if not isinstance(limit, int):
        return None
    if config.model_type in ("roberta", "xlm-roberta", "camembert") and isinstance(config.pad_token_id, int):
        limit -= config.pad_token_id + 1
    return limit


def load_checkpoint(path: Path, *, device: str = "cpu", dtype: str = "float32"):
    """(model, tokenizer or None, :class:`CheckpointInfo`) for a local Hugging Face checkpoint folder."""
    path = Path(path)
    if not (path / "config.json").is_file():
        raise _fail("PATH", path, "not a checkpoint folder (expected config.json beside the weights, as "
                    "save_pretrained writes)")
    if dtype not in DTYPES:
        raise _fail("--dtype", dtype, f"expected one of {', '.join(DTYPES)}")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise _fail("--device", device, "expected cpu, cuda, cuda:N or mps") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise _fail("--device", device, "CUDA is not available on this machine; use --device cpu")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import transformers
    except ImportError:
        raise ProbeInputError("lowrank probe needs the 'hf' extra: pip install 'lowrank[hf]'") from None
    from transformers.utils import logging as hf_logging

    from .probe_hf import supports_interface

    hf_logging.disable_progress_bar()
    try:
        config = transformers.AutoConfig.from_pretrained(path)
    except Exception as e:
        raise _fail("PATH", path, f"its config.json cannot be read ({type(e).__name__})") from None
    families = ", ".join(TESTED_FAMILIES)
    if getattr(config, "is_encoder_decoder", False):
        raise _fail("PATH", path, f"{config.model_type} is an encoder-decoder model; the probe reads one "
                    f"self-attention stack (tested families: {families})")
    if not _weights_sha256(path):
        raise _fail("PATH", path, "holds no weights (*.safetensors or *.bin)")
    try:
        model = transformers.AutoModel.from_pretrained(path, dtype=DTYPES[dtype])
    except Exception as e:
        raise _fail("PATH", path, f"transformers cannot load it as a model ({type(e).__name__}: "
                    f"{' '.join(str(e).split())[:120]})") from None
    if not supports_interface(model):
        raise _fail("PATH", path, f"{type(model).__name__} does not route attention through transformers' "
                    f"AttentionInterface (sdpa- or custom-only attention); supported: {families} and other "
                    "models built on that interface")
    text = config.get_text_config()
    heads = int(text.num_attention_heads)
    width = int(getattr(text, "hidden_size", 0))
    head_dim = int(getattr(text, "head_dim", None) or width // heads)
    kv = int(getattr(text, "num_key_value_heads", None) or heads)
    vision = hasattr(config, "image_size") and hasattr(config, "num_channels")
    info = CheckpointInfo(
        path=str(path.resolve()), model_type=config.model_type,
        architecture=(config.architectures or [type(model).__name__])[0], layers=int(text.num_hidden_layers),
        heads=heads, head_dim=head_dim, kv_heads=kv, gqa_groups=heads // kv, max_positions=max_tokens(config),
        vision=vision, image_size=int(config.image_size) if vision else None, weights=_weights_sha256(path))
    tokenizer = None
    if not vision:
        if not any((path / name).is_file() for name in _TOKENIZER_FILES):
            raise _fail("PATH", path, "has no tokenizer files (save the tokenizer with the model: "
                        "tokenizer.save_pretrained(PATH))")
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        except Exception:
            raise _fail("PATH", path, "has no tokenizer files (save the tokenizer with the model: "
                        "tokenizer.save_pretrained(PATH))") from None
    return model.eval().to(dev), tokenizer, info


def synthetic_images(count: int, size: int, *, channels: int = 3, seed: int = 0) -> torch.Tensor:
    """(count, channels, size, size): smooth random images (a few seeded sinusoids and a little
    noise), about in [-1, 1] like normalised photographs; offline stand-ins for real images."""
    g = torch.Generator().manual_seed(seed)
    y, x = torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size), indexing="ij")
    out = torch.zeros(count, channels, size, size)
    for _ in range(4):
        fx, fy, phase = torch.rand(3, count, channels, 1, 1, generator=g) * torch.tensor([6.0, 6.0, 6.28])[:, None,
                                                                                                          None, None, None]
        out += torch.sin(2 * np.pi * (fx * x + fy * y) + phase) / 4
    return out + 0.1 * torch.randn(out.shape, generator=g)


def folder_images(folder: Path, count: int, size: int, *, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)) -> torch.Tensor:
    """(k, 3, size, size): the first ``count`` images of ``folder`` (sorted), RGB, resized, normalised."""
    from PIL import Image

    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)[:count]
    if not files:
        raise _fail("--images", folder, f"holds no images ({', '.join(IMAGE_SUFFIXES)})")
    rows = []
    for p in files:
        try:
            with Image.open(p) as im:
                arr = np.asarray(im.convert("RGB").resize((size, size)), dtype=np.float32) / 255.0
        except OSError as e:
            raise _fail("--images", p, f"cannot be read as an image ({type(e).__name__})") from None
        rows.append((torch.from_numpy(arr).permute(2, 0, 1) - torch.tensor(mean)[:, None, None])
                    / torch.tensor(std)[:, None, None])
    return torch.stack(rows)


def _image_stats(path: Path) -> tuple[list[float], list[float]]:
    try:
        pre = json.loads((path / "preprocessor_config.json").read_text())
        return list(pre["image_mean"]), list(pre["image_std"])
    except (OSError, ValueError, KeyError, TypeError):
        return [0.5] * 3, [0.5] * 3


def _check_spec(spec: ProbeSpec) -> None:
    if not isinstance(spec.windows, int) or not 1 <= spec.windows <= 1024:
        raise _fail("--windows", spec.windows, "expected an integer in [1, 1024]")
    if not isinstance(spec.batch_size, int) or spec.batch_size < 1:
        raise _fail("--batch-size", spec.batch_size, "expected a positive integer")
    if spec.lengths is not None and (not spec.lengths or len(spec.lengths) > 64
                                     or any(not isinstance(n, int) or n < 2 for n in spec.lengths)):
        raise _fail("--lengths", spec.lengths, "expected 1 to 64 integers >= 2")
    if spec.texts is not None and spec.images is not None:
        raise _fail("--images", spec.images, "give --texts for a text model or --images for a vision model, not both")
    out = Path(spec.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise _fail("-o", out, "exists and is not an empty folder; name a new one")
    if not out.resolve().parent.is_dir():
        raise _fail("-o", out, "its parent folder does not exist")


def _inputs(spec: ProbeSpec, info: CheckpointInfo, tokenizer):
    """The corpus texts (text models) or the image batch (vision models), and their description."""
    if info.vision:
        if spec.texts is not None:
            raise _fail("--texts", spec.texts, f"{info.model_type} is a vision model; use --images DIR|synthetic")
        if spec.lengths is not None:
            raise _fail("--lengths", spec.lengths, f"a vision model's n is fixed by its {info.image_size}-pixel "
                        "images; leave --lengths out")
        source = spec.images or "synthetic"
        if source == "synthetic":
            return synthetic_images(spec.windows, info.image_size, seed=spec.seed), {"images": "synthetic"}
        folder = Path(source)
        if not folder.is_dir():
            raise _fail("--images", source, "expected a folder of images or 'synthetic'")
        mean, std = _image_stats(Path(spec.path))
        pixels = folder_images(folder, spec.windows, info.image_size, mean=mean, std=std)
        return pixels, {"images": str(folder.resolve()), "count": len(pixels)}
    if spec.images is not None:
        raise _fail("--images", spec.images, f"{info.model_type} is a text model; use --texts FILE|shakespeare|bbcnews")
    from . import data

    source = spec.texts or "shakespeare"
    try:
        corpus = data.load_corpus(source)
    except (ValueError, OSError, data.DataUnavailableError) as e:
        raise _fail("--texts", source, " ".join(str(e).split())[:160]) from None
    lengths = list(spec.lengths or (64, 128, 256))
    limit = info.max_positions
    too_long = [n for n in lengths if limit is not None and n > limit]
    if too_long:
        raise _fail("--lengths", lengths, f"{too_long[0]} is longer than the {limit} positions "
                    f"{info.architecture} embeds; use lengths up to {limit}")
    from .probe_hf import special_tokens

    before, after = special_tokens(tokenizer)
    short = [n for n in lengths if n <= len(before) + len(after)]
    if short:
        raise _fail("--lengths", lengths, f"{short[0]} leaves no room for text between the tokenizer's "
                    f"{len(before) + len(after)} special tokens")
    return corpus.texts, {"texts": source, "corpus": corpus.name, "documents": len(corpus.texts),
                          "lengths": lengths}


def run_probe(spec: ProbeSpec) -> Path:
    """Check ``spec``, probe the checkpoint and write every output into ``spec.out``; returns it.

    The folder is written as a hidden sibling and renamed at the end, so OUTDIR exists only complete.
    """
    from . import __version__, report
    from .probe import ProbeMismatchError, layer_count, layer_ranks, for_each_layer, text_ranks
    from .provenance import git_revision
    from .rank import FLOAT32

    _check_spec(spec)
    torch.manual_seed(spec.seed)
    model, tokenizer, info = load_checkpoint(Path(spec.path), device=spec.device, dtype=spec.dtype)
    count = layer_count(model)
    if spec.layers is not None and any(not isinstance(i, int) or not 0 <= i < count for i in spec.layers):
        raise _fail("--layers", spec.layers, f"expected layer indices in [0, {count - 1}]")
    inputs, described = _inputs(spec, info, tokenizer)
    rtols = (None, FLOAT32)
    checks: list = []
    try:
        if info.vision:
            frames = []

            def rank_layer(la):
                frames.append(layer_ranks(la, rtols=rtols))
                checks.append((la.valid.shape[1], la.layer, la.max_diff))
            for start in range(0, len(inputs), spec.batch_size):
                batch = {"pixel_values": inputs[start:start + spec.batch_size].to(spec.device, DTYPES[spec.dtype])}
                size = len(frames)
                for_each_layer(model, batch, rank_layer, layers=spec.layers)
                for f in frames[size:]:
                    f["seq"] += start
            import pandas as pd
            table = pd.concat(frames, ignore_index=True)
        else:
            table = text_ranks(model, tokenizer, inputs, lengths=described["lengths"], windows=spec.windows,
                               batch_size=spec.batch_size, seed=spec.seed, rtols=rtols, layers=spec.layers,
                               cross_checks=checks)
    except ProbeMismatchError as e:
        raise ProbeMismatchError(f"cross-check failed: {e}") from None
    except ValueError as e:
        raise ProbeInputError(" ".join(str(e).split())[:240]) from None
    from .probe_hf import cross_check_atol

    diffs = [d for _, _, d in checks]
    provenance = {
        "checkpoint": asdict(info), "dtype": spec.dtype, "device": spec.device,
        "inputs": {**described, "windows": spec.windows, "batch_size": spec.batch_size, "seed": spec.seed,
                   "layers": list(spec.layers) if spec.layers is not None else "all"},
        "tolerances": {"float64": "rtol = max(m, n) * eps(float64)", "float32": "rtol = max(m, n) * eps(float32)"},
        "cross_check": {"passed": True, "max_abs_diff": max(diffs) if diffs else None,
                        "atol": cross_check_atol(DTYPES[spec.dtype]), "layer_batches": len(diffs)},
        "lowrank_version": __version__, "git_revision": git_revision(), "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
    }
    out = Path(spec.out).resolve()
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        report.write_outputs(tmp, table, info, provenance)
        if out.exists():
            out.rmdir()  # empty, checked above
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out
