"""The book layer: executing, validating and rendering chapters.

runner           one way to execute a notebook (papermill), used by the CLI, make and the tests;
                 it re-exports the names of the modules that do its work:
  parameter_files  ``-p`` values and YAML parameter sets, ``# requires:`` headers
  chapters         finding chapters and reading their parameters cell
  planning         every check of a run before a kernel starts
  guards           where a run may write: committed stores, the book's sources, path parameters
  run_folders      a run's output folder, its lock and its ``.failed`` twin
  records          a run's ``params.json`` (with the git revision and code hash of provenance)
  execution        papermill in a hidden run folder, temporary files, failures
  staging          ``lowrank book``: every chapter run, then a staged copy rendered
errors           the exceptions of a run and their exit statuses
cli              the ``lowrank`` command (run, list, book, probe)
params           each chapter's parameter schema and ``validate``, from the registry
sets             every parameter set with its estimate and measured time (the README table)
costs            time and memory estimates, parameter-set metadata
outputs          a run's figures and tables as files
cells            which cells are setup a reader need not see
figures          narrow variants of figures, and their smallest text
plotting         the book's figure style
plain_maths      formulas written in plain text, typeset for MathJax
verdict_view     the verdict table as a reader scans it
text_sources     chapter notebooks as text (py:percent)
theory_figures, theory_tables   the figures and tables of chapters 01 to 03
training_figures the figures of chapter 04, drawn from its ``figure_data(tables, H)``
bands            the band plot of sampled ranks that chapters 05 and 06 share
barrier_figures, saturation_figures   the figures of chapters 05 and 06
trained_figures  the figures of chapter 07, drawn from its ``figure_data(tables, H, P)``
synthesis_figures   chapter 08's verdict chart

Imports nothing heavy at import time, so ``lowrank --help`` starts fast.
"""
