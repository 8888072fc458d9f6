"""lowrank: attention with an independent head size, rank measures, and the experiments of
the companion book to Bhojanapalli et al. (2020) and Min & Li (ICLR 2025 submission).

Layers, each importing only the ones before it:
  library       attention, rank, probe, models, data, pretrained, fit, train, sweep, progress
  theory/       closed forms, exact constructions, bounds and samplers
  experiments/  one module per chapter (run functions, ``headline``) and the verdicts
  book/         runner, cli, params, glued, plotting

The top-level names load torch on first use, not at import, so the command line starts fast.
"""
from importlib import import_module

__version__ = "0.1.0"
__all__ = ["MultiHeadAttention", "numerical_rank", "effective_rank", "stable_rank", "energy_rank",
           "hardmax_rank", "rank_report"]
_HOME = {"MultiHeadAttention": "attention", **{name: "rank" for name in __all__[1:]}}


def __getattr__(name):
    if name in _HOME:
        value = getattr(import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lowrank' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
