"""Training loop: one process or ``torchrun`` (DDP), atomic checkpoints, exact resume.

The command ``python -m lowrank.train``: a JSON config in, one finished run folder out; input
errors are refused with one line and exit status 2 before anything is written.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

from ..data import DataUnavailableError
from ..provenance import physical_memory
from .checkpoints import CheckpointError, last_step, not_resumable
from .config import TrainConfig, clip, run_key
from .loop import NonFiniteLossError, train

__all__ = ["memory_needed", "main"]


def memory_needed(cfg: TrainConfig) -> float:
    """Bytes of a training step, roughly: weights with Adam state, and activations with the
    (batch, heads, n, n) attention matrices each layer keeps for the backward pass."""
    d, n, h = cfg.d_model, cfg.seq_len, cfg.n_heads
    dh = cfg.head_dim or max(d // max(h, 1), 1)
    d_ff = cfg.d_ff or 4 * d
    params = cfg.vocab_size * d + cfg.n_layers * (4 * d * h * dh + 2 * d * d_ff)
    acts = cfg.batch_size * cfg.n_layers * (n * (10 * d + 2 * d_ff) + 3 * h * n * n) * 4.0
    return 16.0 * params + acts



def main(argv: list[str] | None = None) -> int:
    """``python -m lowrank.train --config cfg.json [--out-dir DIR] [--resume]`` (also under torchrun).

    Exit status 0 done; 2 the input was refused (config file missing or unreadable, unknown key,
    bad value, a used ``--out-dir`` without ``--resume``, an unreadable checkpoint), one line on
    stderr, nothing written; 1 the run failed (non-finite loss: the last good checkpoint is kept).
    ``--debug`` adds the Python traceback.
    """
    p = argparse.ArgumentParser(prog="python -m lowrank.train", description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="JSON file with TrainConfig fields")
    p.add_argument("--out-dir", default=None,
                   help="run folder (default runs/<config hash>); a folder holding files is refused "
                        "unless --resume")
    p.add_argument("--resume", action="store_true", help="continue from the run folder's checkpoint")
    p.add_argument("--data-root", default=None, help="data folder (default $LOWRANK_DATA or ./data)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks")
    args = p.parse_args(argv)

    def refuse(message: str, status: int = 2) -> int:
        if args.debug:
            import traceback

            traceback.print_exc()
        print(f"python -m lowrank.train: error: {message}", file=sys.stderr)
        return status

    path = Path(args.config)
    try:
        text = path.read_text(encoding="utf8")
    except IsADirectoryError:
        return refuse(f"--config {path}: is a folder; expected a JSON file of TrainConfig fields")
    except FileNotFoundError:
        return refuse(f"--config {path}: no such file")
    except (OSError, UnicodeDecodeError) as e:
        return refuse(f"--config {path}: cannot be read as UTF-8 text ({type(e).__name__})")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        return refuse(f"--config {path}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})")
    if not isinstance(raw, dict):
        return refuse(f"--config {path}: expected a JSON object of TrainConfig fields, got "
                      f"{type(raw).__name__}")
    try:
        cfg = TrainConfig.from_dict(raw)
    except (ValueError, TypeError) as e:
        return refuse(f"--config {path}: {clip(e)}")
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
    import signal
    import threading

    def stop(signum, frame):  # SIGTERM, SIGHUP: end as Ctrl-C does (exit 130, checkpoint kept)
        raise KeyboardInterrupt

    signals = [sg for sg in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if sg is not None]
    on_main = threading.current_thread() is threading.main_thread()
    previous = {sg: signal.signal(sg, stop) for sg in signals} if on_main else {}
    try:
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
    except KeyboardInterrupt:
        print("python -m lowrank.train: interrupted; resume with --resume (the last checkpoint is kept)",
              file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - a failure inside the run (out of memory, a dead worker)
        last = last_step(out / "metrics.jsonl")
        return refuse(f"the run failed{f' after step {last}' if last is not None else ''}: "
                      f"{type(err).__name__}: {clip(err, 300)} (--debug shows the traceback; "
                      "--resume continues from the last checkpoint)", status=1)
    finally:
        for sg, handler in previous.items():
            signal.signal(sg, handler)
    if int(os.environ.get("RANK", "0")) == 0:
        print(json.dumps({k: v for k, v in result.items() if k != "config"}))
    return 0
