"""Tasks with their trainers, beside the language-model engine of :mod:`lowrank.train`.

fit        attention fitted to targets by batched L-BFGS in float64
retrieval  key-value retrieval one head must solve, its one-head model and trainer
plateau    a classifier trained until its validation loss stops falling
vision     a small vision transformer on the image sets
textclass  topic classification of the text corpora
"""
