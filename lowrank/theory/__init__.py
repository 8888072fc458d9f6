"""Closed forms, exact constructions and samplers from the two papers (float64).

sampling        random attention matrices under named settings (inputs, temperature, mask)
softmax_rank    rank of random attention vs head size, temperature and tolerance
"""
from .sampling import INPUTS, sample_inputs, sample_qk, sample_attention, temperature_scale
from .softmax_rank import rank_vs_head_dim

__all__ = ["INPUTS", "sample_inputs", "sample_qk", "sample_attention", "temperature_scale",
           "rank_vs_head_dim"]
