"""One module per chapter, named after the chapter's notebook (``registry`` lists them): its
parameters (``SCHEMA``, ``CONSTRAINTS``), its cost ``estimate``, functions that run its
computations and return tidy tables, ``headline(tables)`` (every number the chapter glues) and,
where it tests the papers, ``CLAIMS``. ``synthesis`` judges the claims from the headline dicts with
rules fixed before the data (``verdicts``, ``ledger``); ``costs`` turns estimates into time.

attention_and_rank (01)  representation_theorem (02)  multihead_bottleneck (03)
head_size_training (04)  rank_barrier (05)  rank_saturation (06)  trained_attention (07)  synthesis (08)
"""
