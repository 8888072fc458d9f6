"""Closed forms, exact constructions and samplers from the two papers (float64).

sampling        random attention matrices under named settings (inputs, temperature, mask)
"""
from .sampling import INPUTS, sample_inputs, sample_qk, sample_attention, temperature_scale

__all__ = ["INPUTS", "sample_inputs", "sample_qk", "sample_attention", "temperature_scale"]
