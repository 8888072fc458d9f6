"""Training loop: one process or ``torchrun`` (DDP), atomic checkpoints, exact resume.

``train(config, out_dir=...)`` trains one model and returns its final metrics. The same code
runs under ``torchrun --nproc_per_node N -m lowrank.train --config cfg.json``: every process
takes its slice of the global batch, DDP averages the gradients, rank 0 writes the files.

Reproducibility comes from making every random draw a function of (seed, step, rank): the
batch of step s, the dropout stream of step s and the MLM masks of step s are all seeded from
those numbers, and the learning rate is a pure function of the step. A checkpoint therefore
needs only the step, the model and the optimiser state, and a run killed at any point and
resumed with ``resume=True`` ends with exactly the metrics of an uninterrupted run (same
seed, same machine, same number of processes).

Files in ``out_dir``: ``config.json``; ``metrics.jsonl`` (one JSON object per logged train
interval, evaluation and the final test); ``checkpoint.pt`` (written to a temporary file and
renamed, loaded with ``weights_only=True``); ``result.json`` when the run has finished.

The package's modules: :mod:`~lowrank.train.config` (the config, its run key, the learning-rate
schedule), :mod:`~lowrank.train.tasks` (batches and losses of the three tasks),
:mod:`~lowrank.train.loop` (:func:`train`), :mod:`~lowrank.train.evaluate`,
:mod:`~lowrank.train.checkpoints` (checkpoints, metrics and results on disk) and
:mod:`~lowrank.train.command` (``python -m lowrank.train``).
"""
from .checkpoints import CheckpointError
from .command import main
from .config import TrainConfig, lr_at, run_key
from .loop import NonFiniteLossError, train

__all__ = ["TrainConfig", "NonFiniteLossError", "CheckpointError", "train", "lr_at", "run_key", "main"]
