"""Numbers read off matrices and samples.

rank   rank measures for batches of matrices, all from one SVD
stats  means with standard errors, t intervals, paired differences, bootstraps
"""
