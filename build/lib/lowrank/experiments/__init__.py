"""One module per chapter: functions that run its computations and return tidy tables, and
``headline(tables)``, the dict of every number the chapter glues. ``synthesis`` judges the
papers' claims from those dicts with rules fixed before the data (``verdicts``).

attention_rank (01)  representation (02)  multihead (03)  headsize (04)
barrier (05)  saturation (06)  trained (07)  synthesis (08)
"""
