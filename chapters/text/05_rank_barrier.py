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
# # The rank barrier near 0.63 n
#
# Min & Li's "low-rank barrier" is exact arithmetic in one idealised setting: hardmax attention over orthonormal tokens with Gaussian $W_q, W_k$.
#
# There the expected rank is at most $n(1-(1-1/n)^n) \to (1-1/e)\,n$. We compute the bound, prove it by experiment as $d_h$ grows, and then leave the setting one assumption at a time: temperature, tolerance, inputs, causal mask, a reviewer's counterexample and several heads.

# %% tags=["parameters", "hide-input"]
seed = 0  # random seed
device = "cpu"  # where the Monte Carlo runs: "cpu" or "cuda"
ns = [32, 64, 128, 256]  # sequence lengths n for the hardmax sweep
head_dims = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]  # head sizes d_h for the hardmax sweep
n_trials = 50  # independent draws of X, W_q, W_k per (n, d_h)
n_setting = 128  # sequence length for the settings figures
setting_head_dims = [1, 2, 4, 8, 16, 32, 64, 128, 256]  # head sizes for the settings figures
setting_trials = 20  # draws per point in the settings figures
scales = [1.0, 4.0, 16.0, 64.0]  # logit multipliers k of Q K^T / sqrt(d_h); k of 1 is the standard temperature
rtols = [0.0, 1e-6, 1e-3]  # numerical-rank tolerances (0 means the default max(m, n) * eps)
energy = 0.99  # energy fraction for the energy rank
inputs = ["orthonormal", "gaussian", "sphere", "anisotropic", "minilm"]  # input settings ('minilm': real word embeddings)
d_model = 512  # token width for the non-orthonormal inputs
key_set_n = 64  # n for the upper-bound check on sampled key sets
key_head_dims = [1, 4, 16, 64, 256]  # head sizes for the key-set check
key_sets = 20  # sampled key sets per head size
query_sets = 100  # query sets per key set
heads = [1, 2, 4, 8, 16]  # numbers of heads h, each with head size heads_d_model // h
heads_d_model = 64  # model width shared by the heads
near_ns = [32, 64, 128, 256, 512, 1024]     # n for near-orthonormal tokens (Gram matrix I + E)
near_cs = [0.1, 1.0, 10.0]                  # off-diagonal size c of E, in units of n^-3/2 (c 0, orthonormal, is added)
near_head_dims = [8, 64]                    # head sizes for the near-orthonormal tokens
near_trials = 20                            # draws of E, W_q, W_k per n
mla_ns = [64, 128, 256]                     # n for random multi-head latent attention (MLA) heads
mla_latents = [1, 2, 4, 8, 16, 32, 64, 256]  # latent sizes kv_latent of the MLA heads
mla_head_dim = 16                           # content head size of the MLA heads
mla_rope_dims = [0, 8]                      # size of the decoupled rotary part (0: none)
mla_trials = 100                            # draws of the MLA weights per cell

# %% tags=["hide-input"]
from matplotlib import pyplot as plt
from myst_nb import glue

from lowrank.book import barrier_figures as figs
from lowrank.book.params import validate
from lowrank.book.plotting import use_style
from lowrank.book.verdict_view import rows_from_claims, verdict_cards
from lowrank.experiments import rank_barrier as ch
from lowrank.experiments.evidence import write_evidence
from lowrank.measure.rank import rank_label

use_style()

# %% tags=["hide-input"]
P = validate("05_rank_barrier", globals())
tables = ch.run(P)
H = ch.headline(tables)
for key, value in H.items():
    glue(key, value, display=False)
write_evidence("05_rank_barrier", H, P)

# %% [markdown]
# ## The claim and the setting it is proved in
#
# The paper's text is not available; what follows is reconstructed from its abstracts and from the reviewers' quotations {cite}`min2025limitation`. We use the row convention of the book: $X \in \mathbb{R}^{n \times d}$ holds the tokens as rows, $Q = XW_q$, $K = XW_k \in \mathbb{R}^{n \times d_h}$, and attention is row-stochastic.
#
# ```{prf:definition} Hardmax attention and its rank
# :label: def-hardmax-attention
#
# The hardmax (zero-temperature) attention of logits $S = QK^\top$ is the 0/1 matrix $A$ with $A_{ij} = 1$ iff $j = \arg\max_k S_{ik}$. Each row has exactly one 1, so $\operatorname{rank} A$ is the number of distinct columns that hold a row maximum. We compute it exactly, without an SVD, as the *hardmax rank*.
# ```
#
# ```{prf:theorem} The low-rank barrier: Min & Li's Theorem 1, as the reviewers report it
# :label: thm-barrier
#
# Assume (i) the token vectors are orthonormal ($XX^\top = I_n$, so $d \ge n$); (ii) $W_q, W_k \in \mathbb{R}^{d \times d_h}$ have i.i.d. $\mathcal{N}(0, 1)$ entries; (iii) attention is the hardmax limit. Then the expected rank of the attention matrix is about $n\,(1 - (1 - 1/n)^n) \approx (1 - 1/e)\,n \approx 0.632\,n$, whatever $d_h$.
# ```
#
# Under (i) and (ii), $Q$ and $K$ have i.i.d. $\mathcal{N}(0,1)$ entries exactly (rotation invariance), which is how `lowrank.theory.sample_qk` draws them in that setting. Every experiment below names which of (i)-(iii) it keeps and which it drops.

# %% [markdown]
# ## The coupon-collector count
#
# ```{prf:proposition} Expected number of distinct columns
# :label: prop-coupon
#
# If each of $m$ rows picks its column independently from a distribution $p$ on $n$ columns, the expected number of distinct columns picked is $\sum_{j=1}^n 1 - (1 - p_j)^m$. For uniform $p$ and $m = n$ this is $n(1 - (1 - 1/n)^n)$, which decreases to $(1 - 1/e)\,n$ in units of $n$.
# ```
#
# ```{prf:proof}
# Column $j$ is missed by one row with probability $1 - p_j$ and by all $m$ independent rows with probability $(1 - p_j)^m$; sum the indicator expectations over $j$. For the limit, $(1 - 1/n)^n \uparrow e^{-1}$.
# ```

# %% tags=["hide-input"]
fig = figs.coupon()
glue("ch05_fig_coupon", fig, display=False)
plt.close(fig)
tables["coupon"].style.hide(axis="index").format(precision=3)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch05-bound
#
# The bound $\Ebound$ falls to $(1 - 1/e)\,n$ from above, and is within a fraction of a column of it already at small $n$. The bound and its limit for each sequence length $n$.
# ```
#
# ```{glue:figure} ch05_fig_coupon
# :name: fig-ch05-coupon
#
# The bound approaches $(1-1/e)\,n$ from above, so at finite $n$ it is the exact bound, not its limit, that a rank is compared with. The bound in units of $n$: $(1-(1-1/n)^n)$ against $n$ (solid) and its limit $1-1/e$ (dotted).
# ```

# %% [markdown]
# {numref}`fig-ch05-coupon` shows the bound in units of $n$. At $n$ = {glue:text}`ch05_nmax` the exact bound is {glue:text}`ch05_bound_frac_nmax:.4f` $n$; the limit $1 - 1/e \approx 0.6321$ is approached from above, so for finite $n$ the right yardstick is $n(1 - (1 - 1/n)^n)$, and that is what "the bound" means below.

# %% [markdown]
# ## Why 0.63 n is an upper bound
#
# ```{prf:theorem} The barrier bounds the mean from above
# :label: thm-barrier-upper
#
# Under assumptions (i)-(iii) of {prf:ref}`thm-barrier`, for every $d_h$: $\mathbb{E}[\operatorname{rank} A] \le n(1 - (1 - 1/n)^n)$.
# ```
#
# ```{prf:proof}
# Condition on $K$. The rows $q_i$ of $Q$ are i.i.d. and independent of $K$, so the row argmaxes $\arg\max_j q_i^\top k_j$ are i.i.d. draws from a column distribution $p(K)$. By {prf:ref}`prop-coupon`, $\mathbb{E}[\operatorname{rank} A \mid K] = \sum_j f(p_j)$ with $f(p) = 1 - (1-p)^n$ concave on $[0, 1]$. By Jensen, $\sum_j f(p_j) \le n f(\tfrac1n \sum_j p_j) = n f(1/n)$. Taking the expectation over $K$ keeps the inequality.
# ```
#
# The proof says more than the claim: the bound is attained only when every key is equally likely to win, and $p(K)$ is far from uniform when $d_h$ is small (with $d_h = 1$ only the largest and the smallest key can ever win). As $d_h \to \infty$, $KK^\top / d_h \to I_n$ and $p(K)$ tends to uniform, so the rank should rise *toward* the bound with $d_h$, not sit at it. We check the conditional statement on sampled key sets: for each key set $K$ we draw {glue:text}`ch05_query_sets` independent query sets, and compare the mean rank with $\sum_j 1-(1-\hat p_j)^n$ computed from the winning frequencies $\hat p(K)$.

# %% tags=["hide-input"]
fig = figs.keysets(tables)
glue("ch05_fig_keysets", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch05_fig_keysets
# :name: fig-ch05-keysets
#
# Uneven winning shares keep the hardmax rank below the bound, and the plug-in formula predicts the measured rank. One point per sampled key set $K$. Left: the conditional mean hardmax rank against the plug-in value $\sum_j 1-(1-\hat p_j)^n$ (grey: equality). Right: the plug-in value against the largest winning share. Dotted: the bound.
# ```

# %% [markdown]
# In {numref}`fig-ch05-keysets`, over all sampled key sets at $n$ = {glue:text}`ch05_key_n`, the plug-in value $\sum_j 1-(1-\hat p_j)^n$ reaches at most {glue:text}`ch05_key_max_formula_frac:.3f` of the bound (it cannot exceed it: that is Jensen applied to $\hat p$), and it matches the directly measured conditional mean rank to within {glue:text}`ch05_key_max_gap:.2f` columns. The most popular key wins a share {glue:text}`ch05_key_maxp_d1:.3f` of the queries at the smallest $d_h$ and {glue:text}`ch05_key_maxp_dmax:.3f` at the largest ($1/n$ would be uniform): non-uniform winning shares are exactly what keeps the rank below the bound.

# %% [markdown]
# (sec-ch05-monte-carlo)=
# ## Monte Carlo: the rank rises toward the bound and stays below it
#
# Setting (i)-(iii) exactly: every draw has its own orthonormal $X$ and Gaussian $W_q, W_k$. The bands are mean $\pm 1.96$ standard errors over {glue:text}`ch05_n_trials` draws.

# %% tags=["hide-input"]
fig = figs.montecarlo(tables)
glue("ch05_fig_montecarlo", fig, display=False)
plt.close(fig)
ch.montecarlo_table(tables).style.hide(axis="index").format(precision=3)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch05-montecarlo
#
# In the theorem's setting the mean hardmax rank at the largest head size comes close to the bound and stays below it. Mean hardmax rank over $n$ with its 95 % interval, the number of draws and the bound over $n$.
# ```
#
# ```{glue:figure} ch05_fig_montecarlo
# :name: fig-ch05-montecarlo
#
# In the theorem's setting the mean hardmax rank rises with $d_h$ towards the bound. Mean hardmax rank over $n$ against $d_h$, bands $\pm 1.96$ standard errors; dotted lines: the bound $n(1-(1-1/n)^n)$ for each $n$.
# ```

# %% [markdown]
# In {numref}`fig-ch05-montecarlo` the rank rises with $d_h$ (at $n$ = {glue:text}`ch05_nmax` from {glue:text}`ch05_frac_dh1_nmax:.3f` $n$ at the smallest $d_h$) and approaches the dotted bound. At $d_h$ = {glue:text}`ch05_dhmax` the mean rank is {glue:text}`ch05_frac_dhmax_list`. In {glue:text}`ch05_cells_above` of {glue:text}`ch05_cells` $(n, d_h)$ cells does the mean exceed the bound by more than 1.96 standard errors (largest excess: {glue:text}`ch05_max_excess_se:.2f` standard errors). Single draws are another matter: {glue:text}`ch05_draws_above` of {glue:text}`ch05_draws` draws lie above the bound, as they must, because {prf:ref}`thm-barrier-upper` bounds the mean, not every matrix.

# %% [markdown]
# ## Where the barrier holds and where it does not
#
# From here on $n$ = {glue:text}`ch05_n_setting` and {glue:text}`ch05_setting_trials` draws per point; each figure drops one assumption of {prf:ref}`thm-barrier`.
#
# ### Temperature
#
# The theorem needs the hardmax limit. At a finite temperature the softmax is strictly positive, and whether its rank is "0.63 n" depends on how close to hardmax it is: we scale the standard logits $QK^\top/\sqrt{d_h}$ by $k$ (larger $k$ is colder) and measure the numerical rank with the default tolerance.

# %% tags=["hide-input"]
fig = figs.temperature(tables)
glue("ch05_fig_temperature", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch05_fig_temperature
# :name: fig-ch05-temperature
#
# A finite temperature does not reproduce the barrier on its own: only the coldest softmax comes near hardmax, and only at small $d_h$. Numerical rank (default tolerance) of softmax attention at logit multipliers $k$, and of hardmax, against $d_h$; bands $\pm 1.96$ standard errors; dotted: the bound.
# ```

# %% [markdown]
# In {numref}`fig-ch05-temperature`, at the largest $d_h$ the numerical rank (default tolerance) is {glue:text}`ch05_temp_standard:.3f` $n$ at $k$ = {glue:text}`ch05_temp_standard_k:g` and {glue:text}`ch05_temp_coldest:.3f` $n$ at $k$ = {glue:text}`ch05_temp_coldest_k:g`; hardmax gives {glue:text}`ch05_temp_hardmax:.3f` $n$. A positive softmax keeps every column in play, and at machine-precision tolerance even tiny tails count, so a finite temperature does not reproduce the barrier on its own. Only the coldest softmax looks like hardmax at small $d_h$: at $k$ = {glue:text}`ch05_temp_coldest_k:g` it starts at {glue:text}`ch05_temp_coldest_d1:.3f` $n$ for the smallest $d_h$ and then climbs past the bound, because the 1/$\sqrt{d_h}$-scaled logits do not grow with $d_h$ and the tails come back into view.

# %% [markdown]
# ### Tolerance
#
# Same draws at the standard temperature, different rank measures. Each says which tolerance it uses; the energy rank counts the singular values that hold a fraction of $\sum \sigma_i^2$.

# %% tags=["hide-input"]
fig = figs.tolerance(tables)
glue("ch05_fig_tolerance", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch05_fig_tolerance
# :name: fig-ch05-tolerance
#
# The rank of a softmax matrix is a choice of measure and tolerance, and none lands on the bound by itself. The same standard-temperature draws under four rank measures against $d_h$; dotted: the bound.
# ```

# %% [markdown]
# In {numref}`fig-ch05-tolerance`, at the standard temperature and the largest $d_h$: {glue:text}`ch05_tol_default:.3f` $n$ at the default tolerance, {glue:text}`ch05_tol_coarse:.3f` $n$ at rtol = {glue:text}`ch05_tol_coarse_rtol:g`, and {glue:text}`ch05_tol_energy:.3f` $n$ by the energy rank. The number one reports as "the rank" of a softmax matrix is a choice of tolerance; none of these measures lands on $0.63\,n$ by itself at the standard temperature.

# %% [markdown]
# ### Input distribution
#
# Hardmax again, but the tokens are no longer orthonormal: Gaussian rows ($d$ = {glue:text}`ch05_d_model`, nearly orthogonal), rows uniform on the sphere, anisotropic rows sharing one direction (mean cosine 0.75, as contextual embeddings are {cite}`ethayarajh2019contextual`), and real word-piece embeddings of all-MiniLM-L6-v2 (384-dimensional, distinct tokens drawn at random).

# %% tags=["hide-input"]
fig = figs.inputs(tables)
glue("ch05_fig_inputs", fig, display=False)
plt.close(fig)
ch.inputs_table(tables).style.hide(axis="index").format(precision=3)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch05-inputs
#
# The token distribution moves the rank: nearly orthogonal tokens behave like orthonormal ones, tokens sharing a direction pick far fewer columns. Hardmax rank over $n$ at the largest head size, by token distribution.
# ```
#
# ```{glue:figure} ch05_fig_inputs
# :name: fig-ch05-inputs
#
# Nearly orthogonal tokens behave like orthonormal ones; tokens that share a direction pick the same keys more often. Hardmax rank over $n$ for five token distributions against $d_h$; dotted: the bound.
# ```

# %% [markdown]
# In {numref}`fig-ch05-inputs`, at the largest $d_h$ the orthonormal, Gaussian and spherical settings give {glue:text}`ch05_in_orthonormal:.3f` $n$, {glue:text}`ch05_in_gaussian:.3f` $n$ and {glue:text}`ch05_in_sphere:.3f` $n$: nearly orthogonal inputs behave like orthonormal ones, as the paper argues. Anisotropic tokens end at {glue:text}`ch05_in_anisotropic:.3f` $n$: a shared direction does not shift the argmax over keys (it adds the same amount to every logit in a row), but it makes the queries alike, so they tend to pick the same keys. Real MiniLM word embeddings end at {glue:text}`ch05_in_minilm:.3f` $n$.

# %% [markdown]
# (sec-ch05-near)=
# ### Near-orthonormal tokens: the 2026 version's hypothesis
#
# The 2026 version of the paper states the barrier for tokens that are only nearly orthonormal: $XX^\top = I + E$ with $|E_{ij}| = o(n^{-3/2})$. We take $E$ symmetric with zero diagonal and every off-diagonal entry exactly $c\,n^{-3/2}$ in size, with random signs, for $c$ = {glue:text}`ch05_near_cs` at $n$ = {glue:text}`ch05_near_ns`, head sizes $d_h$ = {glue:text}`ch05_near_dhs` and {glue:text}`ch05_near_trials` draws of $E$, $W_q$ and $W_k$ per $n$. Each draw is also run with $E = 0$ (orthonormal tokens, the same $W_q$ and $W_k$), so the effect of the perturbation is measured within the draw.

# %% tags=["hide-input"]
fig = figs.near(tables)
glue("ch05_fig_near", fig, display=False)
plt.close(fig)
ch.near_table(tables).style.hide(axis="index")

# %% [markdown]
# ```{table-caption}
# :name: tab-ch05-near
#
# Perturbations of the size the hypothesis allows leave the hardmax rank where orthonormal tokens put it. Hardmax rank of $A$ over $n$ at the largest head size, its change from orthonormal tokens paired by draw, and its excess over the bound in standard errors, per $n$ and $c$.
# ```
#
# ```{glue:figure} ch05_fig_near
# :name: fig-ch05-near
#
# The perturbation moves the rank by a few hundredths of $n$ at most, and never above the bound. Left: hardmax rank of $A$ over $n$ at the largest head size against $n$, for orthonormal tokens and each $c$, with the bound (dotted). Right: the change from orthonormal tokens over $n$, paired by draw, with 95 % intervals.
# ```

# %% [markdown]
# Over the {glue:text}`ch05_near_cells` cells $(n, c, d_h)$ with $c > 0$, the largest excess of a mean over the bound is {glue:text}`ch05_near_max_z:.2f` standard errors ({glue:text}`ch05_near_worst`), and the largest change of the mean rank from orthonormal tokens is {glue:text}`ch05_near_shift_max:+.4f` $n$ ({glue:text}`ch05_near_shift_worst`). Verdict: **{glue:text}`ch05_verdict_near`**.

# %% [markdown]
# (sec-ch05-mla)=
# ### Multi-head latent attention
#
# The 2026 abstract says the results "are verified in multi-head latent attention (MLA) as used in DeepSeek-V3" without saying what was measured. In MLA (`lowrank.layers.mla.MultiHeadLatentAttention`), every head's keys and values come from one shared latent $c_{KV} = X W_{DKV}$ of size kv_latent, $k_C = c_{KV} W_{UK}$, and a decoupled rotary part of size rope_dim adds $q_R k_R^\top$ with a rotation per position. One head's logits therefore have rank at most $\min(d_h, \text{kv\_latent}) + \text{rope\_dim}$ (capped at $n$): the latent bounds the content part, the rotary part adds its own dimensions. For one DeepSeek-V3 head ({glue:text}`ch05_mla_v3_sizes`) the bound is {glue:text}`ch05_mla_v3_bound` at $n$ = {glue:text}`ch05_mla_v3_n:,`: its head size and rotary part bind, not its latent. We check the bound, and measure the barrier and the saturation in the latent size, on random heads of head size {glue:text}`ch05_mla_head_dim` (rotary part {glue:text}`ch05_mla_rope_dims`, kv_latent {glue:text}`ch05_mla_latents`, $n$ = {glue:text}`ch05_mla_ns`, {glue:text}`ch05_mla_trials` draws per cell, orthonormal tokens, Gaussian weights scaled so that every query and key entry has variance 1).

# %% tags=["hide-input"]
fig = figs.mla(tables)
glue("ch05_fig_mla", fig, display=False)
plt.close(fig)
ch.mla_table(tables).style.hide(axis="index")

# %% [markdown]
# ```{table-caption}
# :name: tab-ch05-mla
#
# A random MLA head's rank rises with its latent toward that of a standard head of the same size, and stays below the barrier. At the largest $n$: hardmax rank of $A$ over $n$ with its 95 % interval per rotary size and latent size, the barrier over $n$, the logit-rank bound and the share of heads whose logits reach it (numerical rank, float64 default tolerance).
# ```
#
# ```{glue:figure} ch05_fig_mla
# :name: fig-ch05-mla
#
# The latent caps a random MLA head's rank the way the head size caps a standard head's, and the barrier holds. Hardmax rank of $A$ over $n$ against the latent size kv_latent, without and with a rotary part, one line per $n$ with its 95 % band; dotted: each $n$'s barrier.
# ```

# %% [markdown]
# The logit bound: over {glue:text}`ch05_mla_cells` cells, the largest logit rank minus the bound is {glue:text}`ch05_mla_logit_excess` and in every cell at least {glue:text}`ch05_mla_logit_at:.0%` of the heads reach it. Verdict: **{glue:text}`ch05_verdict_mla_bound`**. The barrier and the saturation: the largest excess of a cell's mean hardmax rank over the barrier is {glue:text}`ch05_mla_max_z:.1f` standard errors ({glue:text}`ch05_mla_worst`); the rank rises from the smallest latent to the largest by at least {glue:text}`ch05_mla_min_rise:.3f` $n$; and the largest relative increment per doubling of the latent over the grid's last step is {glue:text}`ch05_mla_max_increment:.3f` ({glue:text}`ch05_mla_flat_where`), against the paper's saturation criterion of {glue:text}`ch05_mla_criterion:g`. Verdict: **{glue:text}`ch05_verdict_mla`**.

# %% [markdown]
# ### The causal mask
#
# With a causal mask, row $i$ can only pick among columns $1..i$. If it picks uniformly, column $j$ is missed with probability $\prod_{i \ge j}(1 - 1/i) = (j-1)/n$, so the expected number of distinct columns is $\sum_j (1 - (j-1)/n) = (n+1)/2$, not $0.63\,n$. Causal *softmax*, on the other hand, is lower triangular with a positive diagonal, so its determinant is positive and it is exactly full rank.

# %% tags=["hide-input"]
fig = figs.causal(tables)
glue("ch05_fig_causal", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch05_fig_causal
# :name: fig-ch05-causal
#
# Under a causal mask the answer is not the $(1-1/e)\,n$ barrier, for hardmax or for softmax. Left: causal hardmax rank over $n$ (dotted: the uniform-prefix law $(n+1)/(2n)$). Right: numerical rank of causal softmax at the standard temperature.
# ```

# %% [markdown]
# In {numref}`fig-ch05-causal`, causal hardmax at $n$ = {glue:text}`ch05_nmax` and the largest $d_h$ reaches {glue:text}`ch05_causal_frac_nmax:.3f` $n$ against the uniform-prefix law $(n+1)/(2n)$ = {glue:text}`ch05_causal_law_nmax:.3f`. Causal softmax is full rank in exact arithmetic; numerically, at the default tolerance, its mean rank is {glue:text}`ch05_causal_soft_mean:.3f` $n$, a fraction {glue:text}`ch05_causal_soft_full:.2f` of the draws come out at rank $n$, and the smallest observed numerical rank is {glue:text}`ch05_causal_soft_min` (the last rows spread their weight over many keys, and the smallest singular values fall below $n\,\varepsilon\,\sigma_1$). Either way the causal answer is not $0.63\,n$.

# %% [markdown]
# ### The reviewers' counterexample: $Q = K = X$
#
# An ICLR 2025 reviewer noted that with $Q = K = X$ and unit-norm rows, hardmax attention is the identity: $x_i^\top x_j < 1 = x_i^\top x_i$ for distinct unit vectors (Cauchy-Schwarz). Rolling $Q$ by one row ("attend to the previous token") gives a permutation. Both are full rank for any $d$, even $d = 2$; random Gaussian $W_q, W_k$ never produce these weight patterns, which is the assumption doing the work.

# %% tags=["hide-input"]
ch.counterexample_table(tables).style.hide(axis="index").format(precision=3)

# %% [markdown]
# ```{table-caption}
# :name: tab-ch05-counterexample
#
# The reviewers' constructions are full rank at every width, even $d = 2$: the bound needs random weights. Hardmax rank over $n$ of $Q = K = X$ and of its shifted variant, at each width $d$.
# ```
#
# The smallest hardmax rank over both constructions and all widths is {glue:text}`ch05_counter_min:.3f` $n$.
#
# ### Heads combined
#
# The paper's multi-head setting ties $h\,d_h = d_\text{model}$ (here $d_\text{model}$ = {glue:text}`ch05_heads_d_model`), and a reviewer asked how ranks are aggregated over heads. We report the mean single-head hardmax rank, the numerical rank of the head average $\frac1h\sum_i A_i$, and of the stacked $[A_1 | \dots | A_h]$, whose column space contains every head's output $A_i V_i$.

# %% tags=["hide-input"]
fig = figs.heads(tables)
glue("ch05_fig_heads", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch05_fig_heads
# :name: fig-ch05-heads
#
# The barrier is about one head: the heads' average and the stacked heads reach a higher rank than each head alone. Ranks over $n$ against the number of heads $h$ at a fixed width ($d_h = d/h$): one hardmax head, and the numerical rank (default tolerance) of the heads' average and of the stacked heads; dotted: the bound.
# ```

# %% [markdown]
# In {numref}`fig-ch05-heads`, with $h$ = {glue:text}`ch05_heads_max` heads, each head alone has rank {glue:text}`ch05_heads_one:.3f` $n$ (small $d_h$), but their average has numerical rank {glue:text}`ch05_heads_avg:.3f` $n$ and the stacked heads {glue:text}`ch05_heads_stacked:.3f` $n$. The barrier is a statement about one head; how heads are combined decides whether a layer sees more than $0.63\,n$ directions.

# %% [markdown]
# (sec-ch05-summary)=
# ## Summary: the bound inside and outside its hypotheses
#
# The claim is decided inside its hypotheses, where {prf:ref}`thm-barrier-upper` applies: hardmax attention, orthonormal tokens, Gaussian weights, one head. There, {glue:text}`ch05_inside_cells` $(n, d_h)$ cells of {numref}`fig-ch05-montecarlo` with {glue:text}`ch05_n_trials` draws each are tested against the bound together: the largest excess of a cell mean over the bound is {glue:text}`ch05_inside_max_z:+.2f` standard errors, against a limit of {glue:text}`ch05_bonferroni_z:.2f` (a 95 % test over all cells at once, Bonferroni), and at the largest $d_h$ the mean is at most {glue:text}`ch05_inside_gap:.3f` $n$ below the bound.
#
# {numref}`tab-ch05-hypotheses` has one row per setting that drops one hypothesis, at $n$ = {glue:text}`ch05_n_setting` and the largest $d_h$ of the settings figures, grouped by the hypothesis dropped. Two questions are kept apart, because "the barrier holds" is one-sided: a setting far *below* $0.63\,n$ respects the bound without showing the barrier. *Bound respected*: the mean rank is at most $n(1-(1-1/n)^n)$ within its 95 % interval. *Near the bound*: the mean lies within {glue:text}`ch05_near_margin:g` $n$ of it (a margin fixed before the data, as the precision the word "about" in "about 0.63 n" can carry).

# %% tags=["hide-input"]
ch.summary_table(tables["summary"]).style.hide(axis="index")

# %% [markdown]
# ```{table-caption}
# :name: tab-ch05-hypotheses
#
# Outside the theorem's hypotheses the bound is sometimes broken and rarely approached. Rank over $n$ with its 95 % interval for each setting, grouped by the hypothesis dropped, whether the bound is respected and whether the rank comes near it.
# ```
#
# Outside the hypotheses the bound is respected in {glue:text}`ch05_settings_hold` of {glue:text}`ch05_settings_total` rows (the theorem's own row included) and broken in {glue:text}`ch05_outside_broken_rows` of {glue:text}`ch05_outside_rows`: {glue:text}`ch05_outside_broken`. Only {glue:text}`ch05_outside_near_rows` of the {glue:text}`ch05_outside_rows` outside rows land near the bound; the others sit well below it (for example anisotropic tokens and causal hardmax, which respect the bound without showing the barrier) or far above it (for example finite temperature, $Q = K = X$ and several heads).
#
# **Verdicts** (in {numref}`tab-ch05-verdicts`, each with its rule, fixed before these outputs):
# - The barrier: {glue:text}`ch05_verdict_barrier`.
# - The rank rises with $d_h$ toward it: {glue:text}`ch05_verdict_rises`.

# %% tags=["hide-input"]
verdict_cards(rows_from_claims(ch.CLAIMS, H, kind="simulation"))

# %% [markdown]
# ```{table-caption}
# :name: tab-ch05-verdicts
#
# The verdict on each claim of this chapter, with its reason; the rule that produced it and the evidence it was applied to unfold under each row.
# ```

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
lab = rank_label("hardmax rank", matrix="A (exact, no tolerance)")
top = tables["band"][tables["band"].head_dim == max(P["head_dims"])].set_index("n")["mean"]
print(f"bound n(1-(1-1/n)^n)/n at n={H['ch05_nmax']}: {H['ch05_bound_frac_nmax']:.4f}")
for n in P["ns"]:
    print(f"{lab} / n at n={n}, d_h={H['ch05_dhmax']}: {top[n]:.2f}")
print(f"cells with mean above the bound by > 1.96 se: {H['ch05_cells_above']} of {H['ch05_cells']}")
print(f"causal {lab} / n at n={H['ch05_nmax']}: {H['ch05_causal_frac_nmax']:.2f} (law (n+1)/(2n) = {H['ch05_causal_law_nmax']:.2f})")
print(f"{rank_label('numerical rank', 'default rtol', 'P')} / n, standard softmax, n={H['ch05_n_setting']}, d_h={max(P['setting_head_dims'])}: {H['ch05_tol_default']:.2f}")
print(f"settings respecting the bound: {H['ch05_settings_hold']} of {H['ch05_settings_total']}")
print(f"verdicts: {H['ch05_verdict_barrier_word']}; {H['ch05_verdict_rises_word']}")


# %% [markdown]
# ## What to take away
#
# - The barrier is the coupon-collector count $n(1-(1-1/n)^n)$ (= {glue:text}`ch05_bound_frac_nmax:.4f` $n$ at $n$ = {glue:text}`ch05_nmax`), and Jensen's inequality makes it an upper bound on the *mean* hardmax rank for every $d_h$ ({prf:ref}`thm-barrier-upper`).
# - In the theorem's own setting the rank rises with $d_h$ toward the bound: {glue:text}`ch05_frac_dhmax_nmax:.3f` $n$ at $n$ = {glue:text}`ch05_nmax`, $d_h$ = {glue:text}`ch05_dhmax`; {glue:text}`ch05_cells_above` of {glue:text}`ch05_cells` cells exceed it by more than 1.96 standard errors, while single draws do ({glue:text}`ch05_draws_above` of {glue:text}`ch05_draws`).
# - Leave the hardmax limit and the number depends on temperature and tolerance: standard softmax has numerical rank {glue:text}`ch05_tol_default:.3f` $n$ at the default tolerance.
# - The causal mask changes the law to about $(n+1)/2$ for hardmax ({glue:text}`ch05_causal_frac_nmax:.3f` $n$ measured) and to full rank for softmax; $Q = K = X$ gives the identity; stacking heads gives {glue:text}`ch05_heads_stacked:.3f` $n$.
# - Verdicts, judged inside the theorem's hypotheses ({ref}`sec-ch05-summary`): the barrier, *{glue:text}`ch05_verdict_barrier`*; the rise toward it with $d_h$, *{glue:text}`ch05_verdict_rises`*. It is a property of random Gaussian projections at zero temperature, not of attention in general.
