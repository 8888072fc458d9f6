"""lowrank: attention with an independent head size, rank measures, and the experiments of
the companion book to Bhojanapalli et al. (2020) and Min & Li (ICLR 2025 submission)."""
from .attention import MultiHeadAttention
from .rank import (effective_rank, energy_rank, hardmax_rank, numerical_rank, rank_report,
                   stable_rank)

__version__ = "0.1.0"
__all__ = ["MultiHeadAttention", "numerical_rank", "effective_rank", "stable_rank", "energy_rank",
           "hardmax_rank", "rank_report"]
