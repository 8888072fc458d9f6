"""Result stores.

sweep      lists of run configs appended, one record a run, to a resumable store
committed  files no command may write: the book's committed stores and ledger
"""
