# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags
#     notebook_metadata_filter: kernelspec,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Attention and its ranks
#
# A head of size $d_h$ produces logits of rank at most $d_h$, yet its attention matrix is, numerically, full rank at the standard temperature.
#
# This chapter fixes the notation used in the whole book, sets the standard head size $d/h$ against a fixed head size $d_p$, defines the five rank measures we report, and shows how the numerical rank of an attention matrix moves with temperature and tolerance.

# %% tags=["parameters", "hide-input"]
seed = 0                      # random seed for every draw in this chapter
n = 64                        # sequence length (number of tokens)
head_dims = [1, 2, 4, 8, 16, 32, 64]   # head sizes d_h to sweep
n_trials = 20                 # random heads per setting
scales = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0]   # logit multipliers k (inverse temperatures)
rtols = [0.0, 1e-10, 1e-6, 1e-3]   # numerical-rank tolerances; 0 means the default max(m, n) * eps
d_model = 512                 # model width d for the parameter-cost table
seq_lens = [128, 512]         # sequence lengths n, used as the fixed head size d_p in the cost table

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
from myst_nb import glue

from lowrank.book import theory_figures, theory_tables
from lowrank.book.params import validate
from lowrank.book.plotting import use_style
from lowrank.experiments import attention_and_rank as ch
from lowrank.measure.rank import rank_label

use_style()

# %% tags=["hide-input"]
P = validate("01_attention_and_rank", globals())
tables = ch.run(P)
H = ch.headline(tables)
for key, value in H.items():
    glue(key, value, display=False)

# %% [markdown]
# ## Notation and the two conventions
#
# A sequence of $n$ tokens is a matrix $X \in \mathbb{R}^{n \times d}$ whose **rows** are the token vectors. One attention head with head size $d_h$ has projections $W_q, W_k, W_v \in \mathbb{R}^{d \times d_h}$ and computes
#
# $$
# S = \frac{(X W_q)(X W_k)^\top}{\sqrt{d_h}} \in \mathbb{R}^{n\times n}, \qquad
# A = \operatorname{softmax}_{\text{row}}(S), \qquad
# \operatorname{head}(X) = A\, X W_v .
# $$
#
# $S$ are the **logits** (query $i$ against key $j$ in entry $S_{ij}$) and $A$ is the **attention matrix**: row-stochastic, $A\mathbf{1} = \mathbf{1}$. Multiplying $S$ by $k$ before the softmax is a temperature $1/k$; $k \to \infty$ gives the **hardmax**, one 1 per row at the row's largest logit.
#
# Both papers write tokens as **columns**: $X \in \mathbb{R}^{d\times n}$, a column softmax and column-stochastic attention {cite}`bhojanapalli2020lowrank`. Every statement carries over by transposing $X$, $S$, $A$ and each projection. The one fact the rest of the book leans on is that a softmax over columns of $S$ is the transpose of a softmax over rows of $S^\top$:

# %%
print(f"max |colsoftmax(S) - rowsoftmax(S^T)^T| = {tables['gap']:.1e}")

# %% [markdown]
# ## Standard and fixed head size
#
# With $h$ heads the standard recipe {cite}`vaswani2017attention` sets $d_h = d/h$, so that the concatenated heads have width $d$ and a layer always holds $4d^2$ projection weights, whatever $h$. {cite:t}`bhojanapalli2020lowrank` decouple the two: every head gets a **fixed head size** $d_p$, independent of $d$ and $h$ (their FixedMultiHead), and propose $d_p = n$. The price is in parameters: $4\,d\,h\,d_p$ weights per layer (biases left out), growing with the number of heads.
#
# In `lowrank`, the argument `head_dim` is that choice: `MultiHeadAttention(d_model, n_heads)` is standard, `MultiHeadAttention(d_model, n_heads, head_dim=d_p)` is fixed. {numref}`tab-ch01-params` counts the weights of real layers built both ways and checks them against the formulas.

# %% tags=["hide-input"]
theory_tables.parameter_cost(tables["cost"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch01-params
#
# A fixed head size multiplies the projection weights by $h\,d_p/d$: the price grows with the number of heads, while the standard layer's stays put. Projection weights of layers built with `lowrank`, relative to the standard layer's $4d^2$, against the number of heads $h$.
# ```
#
# Each entry is the number of projection weights divided by the standard $4d^2$ (here $d$ = {glue:text}`ch01_d_model`). A fixed head size costs $h\,d_p/d$ times the standard layer: the bottleneck is removed by paying for it.
#
# ## Five ways to count rank
#
# A numerical rank needs a tolerance, and attention matrices have long tails of small singular values, so the book always says which measure and which tolerance it reports. All measures come from the singular values $\sigma_1 \ge \dots \ge \sigma_{\min(m, n)} \ge 0$ of one SVD (`lowrank.measure.rank`).
#
# ```{prf:definition} Numerical rank
# :label: def-numerical-rank
# $\operatorname{rank}_{\tau}(A) = \#\{ i : \sigma_i > \max(\text{atol}, \text{rtol}\cdot\sigma_1)\}$. The default of `torch.linalg.matrix_rank` and `numpy.linalg.matrix_rank`, used here unless stated, is atol $= 0$ and rtol $= \max(m, n)\,\varepsilon$ with $\varepsilon$ the machine epsilon ($2.2\times 10^{-16}$ in float64).
# ```
#
# ```{prf:definition} Effective rank
# :label: def-effective-rank
# With $p_i = \sigma_i / \sum_j \sigma_j$, $\operatorname{erank}(A) = \exp\big(-\sum_i p_i \log p_i\big)$ {cite}`roy2007effective`. It needs no tolerance and satisfies $1 \le \operatorname{erank}(A) \le \operatorname{rank}(A)$.
# ```
#
# ```{prf:definition} Stable rank
# :label: def-stable-rank
# $\operatorname{srank}(A) = \sum_i \sigma_i^2 / \sigma_1^2 = \|A\|_F^2 / \|A\|_2^2$ {cite}`rudelson2007sampling`; at most the rank, and insensitive to small singular values.
# ```
#
# ```{prf:definition} Energy rank
# :label: def-energy-rank
# The smallest $k$ with $\sum_{i \le k} \sigma_i^2 \ge e \sum_i \sigma_i^2$, for an energy fraction $e$ such as $0.99$.
# ```
#
# ```{prf:definition} Hardmax rank
# :label: def-hardmax-rank
# For a score matrix $S$, the number of distinct columns that hold a row maximum. It is the exact rank of the hardmax attention matrix, a 0/1 matrix with one 1 per row, and needs no SVD.
# ```
#
# ## The first surprise: low-rank logits, full-rank attention
#
# The logits $S = Q K^\top/\sqrt{d_h}$ factor through $d_h$ dimensions, so $\operatorname{rank}(S) \le d_h$: this is the bottleneck of {cite:t}`bhojanapalli2020lowrank`. The softmax, though, exponentiates entry by entry, and the entrywise exponential of a rank-$d_h$ matrix is generically of full rank. We sample random heads as in {cite:t}`min2025limitation`: orthonormal token vectors and Gaussian $W_q, W_k$, so that $Q$ and $K$ have independent $\mathcal{N}(0, 1)$ entries, at the standard temperature ($k = 1$).

# %% tags=["hide-input"]
fig = theory_figures.rank_vs_head_size(tables)
glue("ch01_fig_rank_vs_head_size", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch01_fig_rank_vs_head_size
# :name: fig-ch01-rank-vs-head-size
#
# Low-rank logits, full-rank attention: the rank of the logits follows $\min(d_h, n)$, while the attention matrices of the same heads are numerically full rank from small head sizes on. Numerical rank of the logits $S$ and of the attention matrix $A$ of random heads against head size, at the standard temperature ($n$ = {glue:text}`ch01_n`, mean and standard deviation over random heads).
# ```
#
# Across all {glue:text}`ch01_logit_draws` random heads of {numref}`fig-ch01-rank-vs-head-size` (every head size), the numerical rank of the logits {glue:text}`ch01_logit_excess_phrase` $\min(d_h, n)$ at the default tolerance, and equals it for {glue:text}`ch01_logit_at_bound` of them: the bound $\operatorname{rank}(S)\le d_h$ is met with equality, as it should be for generic $Q, K$. The attention matrices tell a different story. At $d_h$ = {glue:text}`ch01_dh_min` their mean numerical rank is already {glue:text}`ch01_prob_rank_dhmin:.1f` out of $n$ = {glue:text}`ch01_n`, and the smallest head size at which every sampled attention matrix is numerically full rank is $d_h$ = {glue:text}`ch01_first_full`. A coarser tolerance (the lines for larger rtol) lowers the count, because what survives the softmax above the rank of $S$ lives in small singular values.
#
# So "the rank of attention" is two different questions. The rank of $S$ is what bounds what a head can *represent* (chapters 2 and 3); the rank of $A$ is what Min & Li measure (chapters 5 and 6). Only the first is capped by $d_h$.
#
# ## Temperature and tolerance
#
# The numerical rank of $A$ is not a property of the head alone: it depends on how sharply the softmax is taken and on the cut-off. We rescale the logits by $k$ (temperature $1/k$) for a fixed head size and count again ({numref}`fig-ch01-temperature`).
#
# ```{glue:figure} ch01_fig_temperature
# :name: fig-ch01-temperature
#
# The measured rank of $A$ depends on temperature and tolerance: a colder softmax or a coarser tolerance lowers it. Left: numerical rank of $A$ against the logit multiplier $k$ (inverse temperature) at head size $d_h$ = {glue:text}`ch01_ref_dh` and $n$ = {glue:text}`ch01_n`, one line per tolerance, with $n$ (dotted) and $(1-1/e)\,n$ (dashed). Right: effective rank of $A$, which needs no tolerance, for each head size.
# ```

# %% tags=["hide-input"]
fig = theory_figures.temperature(tables)
glue("ch01_fig_temperature", fig, display=False)
plt.close(fig)

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
h = ch.headline(tables)
tol, coarse_tol = tables["default_tol"], h["ch01_coarse_tol"]
print(f"n = {n}, d_h = {h['ch01_ref_dh']}, mean over {n_trials} random heads")
print(f"  {rank_label('numerical rank', tol, 'A')} at k = 1: {h['ch01_rank_warm']:.1f}")
print(f"  {rank_label('numerical rank', tol, 'A')} at k = {h['ch01_cold_k']:g}: {h['ch01_rank_cold']:.1f}")
print(f"  {rank_label('numerical rank', coarse_tol, 'A')} at k = 1: {h['ch01_rank_warm_coarse']:.1f}")
print(f"  logits exceed min(d_h, n) by at most {h['ch01_logit_excess']}; "
      f"first d_h with every A full rank: {h['ch01_first_full']}")

# %% [markdown]
# Two effects pull in opposite directions. A colder softmax (large $k$) pushes each row towards one-hot, and for $k$ = {glue:text}`ch01_cold_k` the numerical rank at the default tolerance falls to {glue:text}`ch01_rank_cold:.1f` of {glue:text}`ch01_n`: rows start to share their argmax column, which is the mechanism behind the $(1-1/e)\,n$ barrier of chapter 5 (dashed line in {numref}`fig-ch01-temperature`). A coarse tolerance does the same at the standard temperature: with {glue:text}`ch01_coarse_tol` the count at $k = 1$ is {glue:text}`ch01_rank_warm_coarse:.1f`. Any "rank of attention" quoted without its temperature and tolerance is therefore underdetermined; the effective rank (right panel) avoids the tolerance but still moves with $k$.
#
# ## What to take away
#
# - Logits of a head of size $d_h$ have rank at most $d_h$, met with equality for random heads (equal to $\min(d_h, n)$ for {glue:text}`ch01_logit_at_bound` of {glue:text}`ch01_logit_draws` heads).
# - Softmax attention from the same heads is numerically full rank from $d_h$ = {glue:text}`ch01_first_full` on at the standard temperature and default tolerance ($n$ = {glue:text}`ch01_n`).
# - Lower temperature and coarser tolerance both lower the measured rank of $A$; every rank in this book is printed with its matrix, measure and tolerance.
# - A fixed head size $d_p$ removes the cap on the logits at a cost of $4\,d\,h\,d_p$ weights per layer instead of $4d^2$.
