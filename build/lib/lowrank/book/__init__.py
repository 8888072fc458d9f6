"""The book layer: executing, validating and rendering chapters.

runner   one way to execute a notebook (papermill), used by the CLI, make and the tests
cli      the ``lowrank`` command (run, list, book)
params   each chapter's parameter schema and ``validate``
glued    values a chapter glued, read back from its executed notebook
plotting the book's figure style

Imports nothing heavy at import time, so ``lowrank --help`` starts fast.
"""
