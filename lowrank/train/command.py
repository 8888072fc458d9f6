"""Training loop: one process or ``torchrun`` (DDP), atomic checkpoints, exact resume.

The command ``python -m lowrank.train``: a JSON config in, one finished run folder out; input
errors are refused with one line and exit status 2 before anything is written.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

from ..core.commands import OneLineParser, interrupt_status, interrupt_words, signals_interrupt
from ..data.corpora import DataUnavailableError
from ..core.files import InputFileError, read_regular
from ..core.provenance import physical_memory
from .checkpoints import CheckpointError, last_step, not_resumable
from .config import TrainConfig, clip, run_key, short
from .loop import NonFiniteLossError, train

__all__ = ["memory_needed", "read_config", "MAX_CONFIG_BYTES", "main"]


def memory_needed(cfg: TrainConfig) -> float:
    """Bytes of a training step, roughly: weights with Adam state, and activations with the
    (batch, heads, n, n) attention matrices each layer keeps for the backward pass."""
    d, n, h = cfg.d_model, cfg.seq_len, cfg.n_heads
    dh = cfg.head_dim or max(d // max(h, 1), 1)
    d_ff = cfg.d_ff or 4 * d
    params = cfg.vocab_size * d + cfg.n_layers * (4 * d * h * dh + 2 * d * d_ff)
    acts = cfg.batch_size * cfg.n_layers * (n * (10 * d + 2 * d_ff) + 3 * h * n * n) * 4.0
    return 16.0 * params + acts



# A training config is a few dozen lines; anything larger is not one (and /dev/zero never ends).
MAX_CONFIG_BYTES = 1 << 20


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object whose keys are all different: with a key given twice json keeps the last value,
    and the run would train with one of the two a user wrote, silently."""
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"the key {short(key, 40)} is given twice; each field may be set once")
        seen[key] = value
    return seen


def read_config(path: Path) -> TrainConfig:
    """The :class:`TrainConfig` in the JSON file ``path``; ValueError naming the fault otherwise."""
    try:
        raw = read_regular(path, MAX_CONFIG_BYTES)
    except InputFileError as e:
        raise ValueError(f"{'no such file' if str(e) == 'does not exist' else e}; expected a JSON file of "
                         "TrainConfig fields") from None
    try:
        text = raw.decode("utf8")
    except UnicodeDecodeError as e:
        raise ValueError(f"cannot be read as UTF-8 text (byte {raw[e.start]:#04x} at offset {e.start})") from None
    try:
        config = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    if not isinstance(config, dict):
        raise ValueError(f"expected a JSON object of TrainConfig fields, got {type(config).__name__}")
    try:
        return TrainConfig.from_dict(config)
    except (ValueError, TypeError) as e:
        raise ValueError(clip(e)) from None


def main(argv: list[str] | None = None) -> int:
    """``python -m lowrank.train --config cfg.json [--out-dir DIR] [--resume]`` (also under torchrun).

    Exit status 0 done; 2 the input was refused (config file missing, unreadable, not a regular
    file, with a key given twice, an unknown key or a bad value; a used ``--out-dir`` without
    ``--resume``; an unreadable checkpoint), one line on stderr, nothing written; 1 the run failed
    (non-finite loss: the last good checkpoint is kept); 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP (one
    line; the last checkpoint is kept). ``--debug`` adds the Python traceback.
    """
    p = OneLineParser(prog="python -m lowrank.train", description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="JSON file with TrainConfig fields")
    p.add_argument("--out-dir", default=None,
                   help="run folder (default runs/<config hash>); a folder holding files is refused "
                        "unless --resume")
    p.add_argument("--resume", action="store_true", help="continue from the run folder's checkpoint")
    p.add_argument("--data-root", default=None, help="data folder (default $LOWRANK_DATA or ./data)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2), already printed in one line
        return e.code if isinstance(e.code, int) else 2

    def refuse(message: str, status: int = 2) -> int:
        if args.debug:
            import traceback

            traceback.print_exc()
        print(f"python -m lowrank.train: error: {message}", file=sys.stderr)
        return status

    path = Path(args.config)
    try:
        cfg = read_config(path)
    except ValueError as e:
        return refuse(f"--config {path}: {e}")
    if args.out_dir is None:
        args.out_dir = str(Path("runs") / run_key(cfg.to_dict()))
    out = Path(args.out_dir)
    if out.exists() and not out.is_dir():
        return refuse(f"--out-dir {out}: is a file; expected a run folder")
    if not args.resume and out.is_dir() and any(out.iterdir()):
        held = ", ".join(sorted(p.name for p in out.iterdir())[:5])
        return refuse(f"--out-dir {out} is not empty ({held}); nothing was changed: pass --resume to "
                      "continue the run there, or choose an empty or new folder")
    if args.resume and out.is_dir() and any(out.iterdir()):
        why = not_resumable(out, cfg)
        if why:
            return refuse(f"--out-dir {out} --resume: {why}; nothing was changed")
    need = memory_needed(cfg)
    have = physical_memory()
    if have and need > have and not (cfg.device != "cpu" and torch.cuda.is_available()):
        return refuse(f"--config {path}: this run needs about {need / 2**30:,.1f} GiB of memory (batch_size "
                      f"{cfg.batch_size}, seq_len {cfg.seq_len}, d_model {cfg.d_model}, n_layers {cfg.n_layers}); "
                      f"this machine has {have / 2**30:,.1f} GiB")
    try:
        with signals_interrupt():
            result = train(cfg, out_dir=out, resume=args.resume, progress=not args.no_progress,
                           data_root=args.data_root)
    except CheckpointError as err:
        return refuse(str(err))
    except NonFiniteLossError as err:
        return refuse(f"the run failed: {err}", status=1)
    except DataUnavailableError as err:
        return refuse(str(err))
    except ValueError as err:  # a corpus path, a vocabulary or a checkpoint that does not fit
        return refuse(clip(err, 400))
    except KeyboardInterrupt as err:  # Ctrl-C, or SIGTERM/SIGHUP through signals_interrupt
        print(f"python -m lowrank.train: {interrupt_words(err)}; resume with --resume (the last checkpoint "
              "is kept)", file=sys.stderr)
        return interrupt_status(err)
    except Exception as err:  # noqa: BLE001 - a failure inside the run (out of memory, a dead worker)
        last = last_step(out / "metrics.jsonl")
        return refuse(f"the run failed{f' after step {last}' if last is not None else ''}: "
                      f"{type(err).__name__}: {clip(err, 300)} (--debug shows the traceback; "
                      "--resume continues from the last checkpoint)", status=1)
    if int(os.environ.get("RANK", "0")) == 0:
        print(json.dumps({k: v for k, v in result.items() if k != "config"}))
    return 0
