"""A run folder on disk: the checkpoint, the metrics log and the finished result.

The checkpoint is written whole or not at all (:func:`lowrank.core.files.atomic_write`) and read with
``weights_only=True``; a file that cannot be read is named in a :class:`CheckpointError` instead
of being overwritten, so a user decides whether to delete it.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from ..core.files import atomic_write
from .config import TrainConfig, clip

__all__ = ["CheckpointError", "finished_result", "load_checkpoint", "save_checkpoint", "read_metrics",
           "last_step", "not_resumable"]


class CheckpointError(ValueError):
    """A checkpoint file exists but cannot be read; the message names it and what to do."""


def finished_result(result_path: Path, cfg: TrainConfig) -> dict | None:
    """The stored result of a finished run of ``cfg``, or None (absent, or another config's)."""
    if not result_path.is_file():
        return None
    try:
        done = json.loads(result_path.read_bytes()[: 1 << 24])
    except (OSError, ValueError) as e:
        raise CheckpointError(f"result {result_path} cannot be read ({type(e).__name__}: {clip(e, 120)}); "
                              "delete it to finish the run again from its checkpoint") from e
    if isinstance(done, dict) and done.get("config") == cfg.to_dict():
        return done
    return None


def load_checkpoint(ckpt_path: Path, device, cfg: TrainConfig) -> dict:
    """The state saved by :func:`save_checkpoint` for ``cfg`` (on ``device``)."""
    try:
        state = torch.load(ckpt_path, map_location=device, weights_only=True)
        if not (isinstance(state, dict) and {"config", "model", "optimizer", "step"} <= set(state)):
            raise ValueError("not a lowrank training checkpoint")
    except Exception as e:
        raise CheckpointError(
            f"checkpoint {ckpt_path} cannot be read ({type(e).__name__}: {clip(e, 160)}); "
            "it is truncated or not a checkpoint: delete it to restart the run from step 0, or "
            "choose another out_dir") from e
    if state["config"] != cfg.to_dict():
        raise ValueError(f"checkpoint {ckpt_path} was written for a different config; "
                         "use a new out_dir or resume=False")
    return state


def save_checkpoint(state: dict, ckpt_path: Path) -> None:
    atomic_write(ckpt_path, lambda tmp: torch.save(state, tmp))


def read_metrics(path: Path, upto_step: int) -> list[str]:
    """The train and validation lines of a metrics log up to ``upto_step``: what a resumed run keeps."""
    if not path.is_file():
        return []
    keep = []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a kill
        if rec.get("split") in ("train", "validation") and rec.get("step", 0) <= upto_step:
            keep.append(line)
    return keep


def last_step(metrics: Path) -> int | None:
    """The last logged step of a run folder's metrics.jsonl, or None."""
    try:
        lines = metrics.read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            return int(json.loads(line)["step"])
        except (ValueError, KeyError, TypeError):
            continue
    return None


def not_resumable(out: Path, cfg: TrainConfig) -> str | None:
    """Why a used run folder cannot be resumed with ``cfg``, or None: it must hold a checkpoint or
    a finished result of this very config, so that resuming never overwrites someone's files."""
    ckpt, result = out / "checkpoint.pt", out / "result.json"
    if result.is_file():
        try:
            done = json.loads(result.read_bytes()[: 1 << 24])
        except (OSError, ValueError):
            return f"{result} cannot be read as JSON"
        if not (isinstance(done, dict) and done.get("config") == cfg.to_dict()):
            return f"{result} is the result of a different config"
        return None
    if ckpt.is_file():
        return None  # its config is compared when it is loaded
    held = ", ".join(sorted(p.name for p in out.iterdir())[:5])
    return f"holds no checkpoint.pt or result.json of a run to continue ({held})"
