"""Tools several chapters use; not a chapter module, imports no chapter module.

montecarlo  sampled attention and its ranks as tidy tables (hardmax and every rank measure),
            and the mean band over draws that the chapters plot
laws        growth laws (a + b ln n, c n^alpha, c (ln n)^beta) fitted to points with bootstrap
            errors, compared by misfit, BIC and out-of-range prediction; ``law_value`` evaluates one
"""
