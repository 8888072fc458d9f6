"""lowrank: attention with an independent head size, rank measures, and the experiments of
the companion book to Bhojanapalli et al. (2020) and Min & Li (ICLR 2025 submission).

Folders in order, each importing only itself and the ones listed before it:
  core/         files, params, progress, commands, glued, provenance
  measure/      rank, stats
  layers/       attention, mla, models
  data/         corpora, images, pretrained, pretrained_models
  train/        config, tasks, loop, evaluate, checkpoints, command (the language-model engine)
  probes/       probe, hf, logit_cut, report, run
  tasks/        fit, retrieval, plateau, vision, textclass
  stores/       sweep, committed
  theory/       closed forms, exact constructions, bounds and samplers
  experiments/  registry (the one list of chapters), one module or package per chapter, costs,
                shared/ (tools several chapters use), verdicts, ledger, inventory, claims, synthesis
  book/         runner (parameter_files, chapters, planning, guards, run_folders, records,
                execution, staging), cli, params, sets, costs, outputs, cells, figures, plotting,
                plain_maths, verdict_view, text_sources, theory_figures, theory_tables,
                training_figures, bands, barrier_figures, saturation_figures, trained_figures,
                synthesis_figures

The top-level names load torch on first use, not at import, so the command line starts fast.
"""
from importlib import import_module

__version__ = "0.1.0"
__all__ = ["MultiHeadAttention", "MultiHeadLatentAttention", "numerical_rank", "effective_rank", "stable_rank",
           "energy_rank", "hardmax_rank", "rank_report"]
_HOME = {"MultiHeadAttention": "layers.attention", "MultiHeadLatentAttention": "layers.mla",
         **{name: "measure.rank" for name in __all__[2:]}}


def __getattr__(name):
    if name in _HOME:
        value = getattr(import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lowrank' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
