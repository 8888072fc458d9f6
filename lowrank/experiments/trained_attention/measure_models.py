"""The long-scale measurement of chapter 07's two more pretrained models, as a command.

A module of its own, which the chapter's package does not import, so ``python -m`` runs it without
finding it imported already.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .pretrained_models import LONG_MODELS_STORE, models_configs, run_models
from .runs import models_arguments

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lowrank.experiments.trained_attention.measure_models --store FILE``: the two
    models measured with the long parameter set's ``models_*`` values into FILE (resumable by run key)."""
    import argparse
    import sys

    import yaml

    from ...core.files import BOOK_ROOT

    ap = argparse.ArgumentParser(prog="python -m lowrank.experiments.trained_attention.measure_models")
    ap.add_argument("--store", required=True, help="your store (the committed one is read, never written)")
    args = ap.parse_args(argv)
    store, committed = Path(args.store).resolve(), (BOOK_ROOT / LONG_MODELS_STORE).resolve()
    # By identity too: a hard link to the committed store is the committed store.
    if store == committed or (store.exists() and committed.exists() and store.samefile(committed)):
        print(f"{ap.prog}: error: --store {args.store}: the committed store is never written; measure into "
              "runs/ and copy it back", file=sys.stderr)
        return 2
    p = yaml.safe_load((BOOK_ROOT / "chapters" / "params" / "long" / "07_trained_attention.yaml").read_text())

    configs = models_configs(**models_arguments({**p, "seed": p.get("seed", 0)}))
    run_models(configs, run=True, store=store)
    print(f"{len(configs)} configurations measured into {store}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
