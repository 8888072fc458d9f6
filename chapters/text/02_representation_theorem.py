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
# # The representation theorem
#
# One head can produce any positive attention matrix over $n$ independent tokens once its size reaches $n - 1$; a causal head needs $\lfloor n/2 \rfloor$.
#
# Below the threshold no dense $P$ is within reach, and a certified lower bound, not only an optimiser, says so.
# We run the construction behind Theorem 1 of {cite}`bhojanapalli2020lowrank`, compute its counterexample, fit heads of every size, print next to every fitted error a lower bound that holds for every head of that size, and then measure three regimes the theorem leaves open: causal masks, fewer input dimensions than tokens ($d < n$), and the error far below the threshold.

# %% tags=["parameters", "hide-input"]
seed = 0  # random seed
construction_ns = [4, 8, 16, 32]  # sequence lengths n for the exact construction
d_extra = 4  # inputs X have n + d_extra columns
threshold_ns = [8, 16, 32]  # sequence lengths n for the rank-threshold fits
concentrations = [1.0, 4.0]  # Dirichlet concentrations of the dense target rows
n_targets = 3  # targets (seeds) per n and concentration
near = 2  # fit every rank from n - near to n
coarse = 4  # plus this many geometrically spaced lower ranks
restarts = 2  # L-BFGS restarts per fit
max_iter = 1000  # L-BFGS iteration cap, threshold fits
vanish_tol = 1e-5  # max row total variation below which the error counts as vanished
bottleneck_n = 32  # sequence length for the error far below the threshold
bottleneck_ranks = [4, 8, 16]  # head sizes r << n fitted there
sparse_ns = [8, 16, 32, 64]  # sequence lengths n for sparse vs dense targets
sparse_kinds = ["permutation", "sparse", "dense"]  # target families
sparse_k = 2  # keys per row of the k-sparse targets
sparse_eps = 0.001  # mass off the support of sparse targets
sparse_n_targets = 2  # targets per n and family for sparse vs dense
sparse_ranks = [1, 2, 3, 4, 6, 8]  # logit ranks to fit (those below n - 1 are used)
sparse_tol = 0.01  # max row total variation a rank must reach
sparse_max_iter = 300  # L-BFGS iteration cap, sparse fits
causal_ns = [4, 5, 6, 8, 9, 12]  # sequence lengths n for the causal threshold
causal_n_targets = 2  # lower-triangular targets per n
causal_width = 1  # fit ranks floor(n/2) - width .. floor(n/2) + width (and 1)
causal_restarts = 4  # L-BFGS restarts per causal fit
causal_max_iter = 2000  # L-BFGS iteration cap, causal fits
dn_d = 8  # input rank d for the d < n sweep
dn_ns = [12, 16, 24, 32, 64]  # sequence lengths n > d for the d < n sweep
dn_n_targets = 2  # targets per n in the d < n sweep
many_n = 4  # tokens per input for the many-inputs capacity
many_d = 8  # input width d for the many-inputs capacity
many_ranks = [3, 4, 8]  # head sizes r for the many-inputs capacity
many_ms = [2, 3, 4, 5, 6]  # numbers of inputs fitted by one head
many_restarts = 3  # L-BFGS restarts per many-inputs fit

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
from myst_nb import glue

from lowrank.book import theory_figures, theory_tables
from lowrank.book.params import validate
from lowrank.book.plotting import use_style
from lowrank.experiments import representation_theorem as ch
from lowrank.experiments.evidence import write_evidence

use_style()

# %% tags=["hide-input"]
P = validate("02_representation_theorem", globals())
tables = ch.run(P)
H = ch.headline(tables)
for key, value in H.items():
    glue(key, value, display=False)
write_evidence("02_representation_theorem", H, P)

# %% [markdown]
# (ch02-theorem1)=
# ## Theorem 1 and its construction
#
# Notation is the book's row convention ({doc}`01_attention_and_rank`): the $n$ tokens are the rows of $X \in \mathbb{R}^{n \times d}$, one head computes $\operatorname{softmax}_{\text{row}}\!\big(X W_q (X W_k)^\top / \sqrt{d_k}\big)$ with $W_q, W_k \in \mathbb{R}^{d \times d_k}$, and an attention matrix is row-stochastic. The paper writes tokens as columns; the statement carries over by transposition.
#
# ```{prf:theorem} Representation theorem
# :label: thm-representation
#
# ({cite}`bhojanapalli2020lowrank`, Theorem 1.) If $d_k = d \ge n$, then for every $X \in \mathbb{R}^{n \times d}$ of full row rank $n$ and every positive row-stochastic $P \in \mathbb{R}^{n \times n}$ there are $W_q, W_k$ with
# $\operatorname{softmax}_{\text{row}}\!\big(X W_q (X W_k)^\top / \sqrt{d_k}\big) = P$.
# If $d < n$, there are $X$ and $P$ for which no $W_q, W_k$ work.
# ```
#
# ```{prf:proof}
# $X$ has a right inverse $X^+ = X^\top (X X^\top)^{-1}$, so $X X^+ = I_n$. Take $W_q = X^+$ and $W_k = \sqrt{n}\, X^+ (\log P)^\top$ (head size $n$, $\log$ entrywise, defined because $P > 0$). Then the logits are $X W_q (X W_k)^\top / \sqrt{n} = \log P$, and each row of $\operatorname{softmax}_{\text{row}}(\log P)$ is $P_{i\cdot} / \sum_j P_{ij} = P_{i\cdot}$. For a larger head size $d_k > n$, pad $W_q, W_k$ with zero columns **and** replace the factor $\sqrt{n}$ by $\sqrt{d_k}$: the padding adds nothing to the product, but the softmax scale changes from $1/\sqrt{n}$ to $1/\sqrt{d_k}$, so $W_k$ must carry $\sqrt{d_k}$ for the logits to stay $\log P$ (`lowrank.theory.representation_weights` does exactly this). The case $d < n$ is the counterexample below.
# ```
#
# The row softmax ignores a constant added to each row: $\operatorname{softmax}_{\text{row}}(S + c\,\mathbf{1}^\top) = \operatorname{softmax}_{\text{row}}(S)$. That buys one dimension of **head size**:
#
# ```{prf:proposition} Head-size threshold
# :label: prop-sharp-threshold
#
# For $X$ of full row rank, one head of size $r$ reproduces $P$ exactly if and only if $r \ge \operatorname{rank}(L_0)$, where $L_0 = \log P\,(I - \tfrac{1}{n}\mathbf{1}\mathbf{1}^\top)$ is $\log P$ with each row centred. Always $\operatorname{rank}(L_0) \le n - 1$, and $\operatorname{rank}(L_0) = n - 1$ for a generic dense $P$.
# ```
#
# ```{prf:proof}
# $\operatorname{softmax}_{\text{row}}(S) = P$ exactly when $S = \log P + c\,\mathbf{1}^\top$ for some $c \in \mathbb{R}^n$. Multiplying by the centring matrix $C = I - \tfrac{1}{n}\mathbf{1}\mathbf{1}^\top$ removes $c\,\mathbf{1}^\top$, so $\operatorname{rank}(S) \ge \operatorname{rank}(SC) = \operatorname{rank}(L_0)$, with equality for $c = -\log P\,\mathbf{1}/n$. The logits of a head of size $r$ have rank at most $r$; conversely any $L_0 = A B^\top$ with $A, B \in \mathbb{R}^{n \times r}$ is reached by $W_q = X^+ A$, $W_k = \sqrt{r}\,X^+ B$. Since $L_0 \mathbf{1} = 0$, its rank is at most $n - 1$.
# ```
#
# This does not sharpen Theorem 1 itself. There the head size equals the embedding size, $d_k = d$, and the condition $d \ge n$ is about the **inputs**: with $d = n - 1$ Gaussian tokens the logits $X W_q W_k^\top X^\top$ are confined to a $d$-dimensional column space and a generic $P$ is out of reach ({ref}`ch02-d-below-n` measures how far). What the proposition corrects is the paper's informal reading of the theorem as a statement about head size (its Section 2.3, the basis of {doc}`03_multihead_bottleneck`): with independent tokens, the head needs size $n - 1$, not $n$.
#
# `lowrank.theory.representation_weights` implements both: head size $n$ (the paper's proof) and head size $n - 1$ (the row-centred $\log P$). We run them on Gaussian $X$ with $d = n + {}${glue:text}`ch02_d_extra` and targets with Dirichlet(1) rows.

# %% tags=["hide-input"]
theory_tables.construction(tables["construction"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch02-construction
#
# Both constructions are exact to round-off: head size $n$ (the paper's proof) and head size $n - 1$ reproduce the target. For each $n$, width $d$ and head size: the largest entry of $|\softmax(S) - P|$ and the numerical rank of the logits $S$.
# ```

# %% tags=["hide-input"]
fig = theory_figures.construction_example(tables)
glue("ch02_fig_construction", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch02_fig_construction
# :name: fig-ch02-construction
#
# The construction is exact: a head of size $n - 1$ reproduces a dense target up to floating-point round-off. A dense target $P$ (left, $n$ = {glue:text}`ch02_example_n`), the attention of the head of size $n - 1$ built for it by the row-centred construction (middle), and their entrywise difference (right), which is floating-point round-off.
# ```
#
# Over $n$ = {glue:text}`ch02_construction_ns` and both head sizes, the largest entrywise error $\max |\operatorname{softmax}(\text{logits}) - P|$ is {glue:text}`ch02_construction_error:.1e`: the construction is exact to floating point ({numref}`fig-ch02-construction` shows one case). The logits at head size $n$ have full rank $n$, those at $n - 1$ rank $n - 1$, and both give the same $P$.
#
# ## The counterexample for $d < n$
#
# The paper's counterexample has $n = 2$ tokens in $d = 1$ dimension: $X = \begin{pmatrix} 1 \\ 0 \end{pmatrix}$ and the target with rows $(0.5, 0.5)$ and $(0.75, 0.25)$.

# %%
ce = tables["counterexample"].iloc[0]
print(ce["reason"])
print(f"row 2 over {ce['draws']:,} random weight pairs: max |A[1] - (0.5, 0.5)| = {ce['row2_max_move']:.1e}; "
      f"smallest total variation to P's row 2 = {ce['row2_min_tv']:.3f}")

# %% [markdown]
# The second token is the zero vector, so its query is zero whatever $W_q$ is; its logits are all zero and its attention row is uniform. Over 10,000 random weight pairs the second row never moves from $(0.5, 0.5)$ and stays at total variation {glue:text}`ch02_counterexample_tv:.3f` from the target row. The counterexample works by making a token zero. That $d \ge n$ is also needed for tokens in general position is shown by {ref}`ch02-d-below-n`; whether a smaller **head** fails on independent tokens is the next question.
#
# (ch02-threshold)=
# ## Where the error vanishes: fitting heads of every size, with a certified bound
#
# {prf:ref}`prop-sharp-threshold` predicts that a dense $P$ needs head size exactly $n - 1$. We test it in two independent ways.
#
# **Fitting.** For full-row-rank $X$ the logits of a head of size $r$ are exactly the matrices $A B^\top$ with $A, B \in \mathbb{R}^{n \times r}$, so we fit $\operatorname{softmax}_{\text{row}}(A B^\top)$ to $P$ by minimising the mean row-wise $\mathrm{KL}(P_{i\cdot} \,\|\, \operatorname{softmax}(A B^\top)_{i\cdot})$ with L-BFGS in float64 from {glue:text}`ch02_restarts` random starts. The error reported is the largest row total variation $\max_i \tfrac12 \sum_j |P_{ij} - \hat P_{ij}|$ (max-row TV) of the best start. An optimiser that stops above zero proves nothing about the best head, so:
#
# **A lower bound that holds for every head.** The row-centred log of any head's attention is $SC$, of rank at most $r$, so by Eckart–Young its distance to $L_0$ is at least $\tau_r = \big(\sum_{k > r} \sigma_k(L_0)^2\big)^{1/2}$ (the singular values of $L_0$). To turn this into total variation: if row $i$ of $\hat P$ is within TV $t$ of row $i$ of $P$, every entry moves by at most $t$ and the moves sum to $2t$, so the row's log-ratio has squared norm at most $t^2\big((p_{(1)} - t)^{-2} + (p_{(2)} - t)^{-2}\big)$, with $p_{(1)}, p_{(2)}$ the row's two smallest entries. Summing over rows, the max-row TV of every head of size $r$ is at least the root $t^\ast$ of $\sum_i t^2\big((p_{i(1)} - t)^{-2} + (p_{i(2)} - t)^{-2}\big) = \tau_r^2$ (`lowrank.theory.tv_lower_bound`). The bound is positive exactly when $r < \operatorname{rank}(L_0)$, and it is conservative: it pays for the smallest entries of $P$, where a small TV can hide a large change of logits. Targets have Dirichlet rows at concentrations {glue:text}`ch02_concentrations` (small: peaked rows; large: near-uniform rows), {glue:text}`ch02_n_targets` targets each.

# %% tags=["hide-input"]
theory_tables.vanishing(tables["vanish"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch02-threshold
#
# Fitting agrees with the construction: the error vanishes from head size $n - 1$ on and not one size below. For each $n$: the smallest head size whose fits reach the tolerance, the worst fit one size below, and the worst fit at that size (max-row TV).
# ```

# %% tags=["hide-input"]
fig = theory_figures.threshold(tables)
glue("ch02_fig_threshold", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch02_fig_threshold
# :name: fig-ch02-threshold
#
# Every target is fitted from head size $r = n - 1$ on, and no fit gets below its certified bound, which is positive for smaller heads. Best fitted max-row TV of the worst target (solid) and the smallest certified lower bound over the targets (dotted, triangles) against head size $r$, one panel per $n$. The vertical line is $r = n - 1$, the dashed line the tolerance {glue:text}`ch02_vanish_tol`. Every fit lies above its bound; the bound is 0 from $r = n - 1$ on and positive below.
# ```
#
# The fitted error first stays below {glue:text}`ch02_vanish_tol` at $r$ = {glue:text}`ch02_vanish_list` for $n$ = {glue:text}`ch02_ns_list` ({numref}`tab-ch02-threshold`, {numref}`fig-ch02-threshold`): the threshold is {glue:text}`ch02_threshold_verdict`. The exact criterion of {prf:ref}`prop-sharp-threshold` gives $\operatorname{rank}(L_0) = n - 1$ for {glue:text}`ch02_all_generic` of these targets (`lowrank.theory.min_logit_rank`). One size below, the worst target's best fit stays at {glue:text}`ch02_below_min:.1e` or more, while from $r = n - 1$ on every target is fitted to within {glue:text}`ch02_at_max:.1e`, a drop of {glue:text}`ch02_gap_orders:.1f` orders of magnitude. That size of the drop is set by the iteration budget ({glue:text}`ch02_max_iter` L-BFGS steps), not by the mathematics: at $r \ge n - 1$ the exact error is 0.
#
# The failure below $n - 1$ no longer rests on the optimiser. In all {glue:text}`ch02_bound_rows` (target, size) pairs the certified bound is at most the fitted error ({glue:text}`ch02_bound_violations` exceptions), it is 0 from {glue:text}`ch02_bound_zero_at`, and below $n - 1$ it lies between {glue:text}`ch02_bound_min_below:.1e` and {glue:text}`ch02_bound_max_below:.1e`: no head of those sizes reaches those targets, whatever its weights. The TV bound is loose (at most {glue:text}`ch02_bound_ratio_max:.2f` of the fitted error) because it pays for the smallest entries of $P$; in the centred-logit metric the Eckart–Young bound is attained exactly, by the truncated SVD of $L_0$.
#
# The paper's threshold is $d_k \ge n$. The paper's proof already contains the reason it can be lowered: its free positive diagonal $D_0$ (in the column convention) is exactly the per-row shift, and spending that freedom on the rank saves one dimension.
#
# (ch02-bottleneck)=
# ### Far below the threshold
#
# The threshold is about exactness. Near it the loss is small: at $n$ = {glue:text}`ch02_near_n` a head of size {glue:text}`ch02_near_rank` still reaches max-row TV {glue:text}`ch02_near_error:.4f`. The real bottleneck is a head much smaller than $n$.

# %% tags=["hide-input"]
theory_tables.bottleneck(tables["bottleneck"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch02-bottleneck
#
# Far below the threshold the loss is large, and no method recovers it. For each head size $r$: the worst fitted max-row TV, the certified lower bound on it, the max-row TV of the truncated SVD of the centred logits, and the share of the centred logits out of reach (Eckart–Young).
# ```
#
# At $n$ = {glue:text}`ch02_bottleneck_n`, heads of size {glue:text}`ch02_bottleneck_ranks` reach a worst-target max-row TV of {glue:text}`ch02_bottleneck_tv_list` (Dirichlet(1) targets). Measured in centred logits, a head of those sizes cannot reach {glue:text}`ch02_bottleneck_logit_list` of $\|L_0\|_F$ (exact, Eckart–Young); the truncated SVD, the best head in that metric, has max-row TV {glue:text}`ch02_bottleneck_trunc_list`, above what the KL fit finds.
#
# ## Sparse and structured targets
#
# {cite}`likhosherstov2021expressive` show, for a **fixed** head whose **inputs** may be chosen, that any sparse pattern with a bounded number of non-zero entries per row and per column can be approximated with head size $O(\log n)$, while an exact dense $P$ needs about $n$. Our fits choose the logits directly, which is what free inputs or free weights allow at full row rank. We compare three families: near-permutation $P$ (mass $1 - \varepsilon$ on one key per row), $k$-sparse $P$ ($k$ = {glue:text}`ch02_sparse_k` keys share $1 - \varepsilon$) and dense Dirichlet(1) $P$, with $\varepsilon$ = {glue:text}`ch02_sparse_eps` keeping $P$ positive; {glue:text}`ch02_sparse_n_targets` targets per family and $n$. For each we fit the head sizes {glue:text}`ch02_sparse_ranks` that lie below $n - 1$ and record the smallest one whose error stays below {glue:text}`ch02_sparse_tol`.

# %% tags=["hide-input"]
fig = theory_figures.sparse_vs_dense(tables)
glue("ch02_fig_sparse", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch02_fig_sparse
# :name: fig-ch02-sparse
#
# Sparse targets are fitted by much smaller heads than dense ones. Left: the smallest head size whose fit reaches max-row TV {glue:text}`ch02_sparse_tol`, against $n$, per target family; crosses on the grey line mean "not reached by any size up to {glue:text}`ch02_sparse_rmax`". Right: the worst target's error against head size at $n$ = {glue:text}`ch02_sparse_nmax`.
# ```
#
# To reach a max-row TV of {glue:text}`ch02_sparse_tol`, near-permutation targets need {glue:text}`ch02_sparse_permutation_nmin` at $n$ = {glue:text}`ch02_sparse_nmin` and {glue:text}`ch02_sparse_permutation_nmax` at $n$ = {glue:text}`ch02_sparse_nmax`; $k$-sparse targets need {glue:text}`ch02_sparse_sparse_nmin` and {glue:text}`ch02_sparse_sparse_nmax` ({numref}`fig-ch02-sparse`). Dense targets reach it with a head of size at most {glue:text}`ch02_sparse_rmax` at {glue:text}`ch02_sparse_dense_reached` of the {glue:text}`ch02_sparse_n_count` sequence lengths; this says nothing about sizes between {glue:text}`ch02_sparse_rmax` and $n - 1$ (at $n$ = {glue:text}`ch02_near_n`, size {glue:text}`ch02_near_rank` reaches {glue:text}`ch02_near_error:.4f`, above). Sparse patterns, the ones {cite}`likhosherstov2021expressive` address, are cheap to approximate; the exact representation of these sparse targets still needs $n - 1$ ($\log P$ is a shifted multiple of a permutation or support matrix, whose centred rank is generically $n - 1$). With {glue:text}`ch02_sparse_n_targets` targets per family this is a small sample: it shows slow growth with $n$ and is too coarse to tell $\log n$ from other slow rates.
#
# (ch02-causal)=
# ## Causal heads need half the size
#
# LM1B, the paper's language-modelling task, and every decoder use a causal mask: query $i$ attends to keys $j \le i$ only, and the attention matrix is lower triangular. What head size does one causal head need to represent every positive lower-triangular $P$?
#
# ```{prf:proposition} Causal threshold, the book's own
# :label: prop-causal-threshold
#
# A causal head reproduces $P$ exactly when its logits satisfy $S_{ij} = \log P_{ij} + c_i$ for $j \le i$; the entries above the diagonal are free. Every block of rows $k, \dots, n-1$ and columns $0, \dots, k$ is fully prescribed, so $\operatorname{rank}(S)$ is at least the rank of that block of $\log P$ after centring its rows, generically $\min(n - k, k)$, at most $\lfloor n/2 \rfloor$. Eckart–Young on each block, with the TV conversion above, gives a certified lower bound on the error of smaller heads (`lowrank.theory.causal_tv_lower_bound`).
# ```
#
# The proposition is a lower bound. Whether $\lfloor n/2 \rfloor$ also suffices, that is, whether the free upper triangle can always be filled to keep the rank that low, we measure by fitting masked heads of sizes 1 and $\lfloor n/2 \rfloor - 1$ to $\lfloor n/2 \rfloor + 1$ to lower-triangular targets with Dirichlet(1) rows, {glue:text}`ch02_causal_n_targets` per $n$, {glue:text}`ch02_causal_restarts` starts each.

# %% tags=["hide-input"]
theory_tables.causal_threshold(tables["causal_threshold"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch02-causal
#
# A causal mask halves the head size needed: the fitted threshold against the certified lower bound and $\lfloor n/2 \rfloor$, for each $n$ (Dirichlet(1) lower-triangular targets).
# ```

# %% tags=["hide-input"]
fig = theory_figures.causal(tables)
glue("ch02_fig_causal", fig, display=False)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} ch02_fig_causal
# :name: fig-ch02-causal
#
# A causal head fits every target from head size $\lfloor n/2 \rfloor$ on, half the bidirectional $n - 1$. The worst target's best max-row TV against head size minus $\lfloor n/2 \rfloor$, one line per $n$. The error drops to the tolerance (dashed) at 0; sizes 1 and below $\lfloor n/2 \rfloor$ stay far above it.
# ```
#
# For $n$ = {glue:text}`ch02_causal_ns` the fitted threshold is {glue:text}`ch02_causal_fitted_list` and the certified bound {glue:text}`ch02_causal_bound_list` ({numref}`fig-ch02-causal`): the threshold is {glue:text}`ch02_causal_law`, and no certified bound exceeded a fitted error ({glue:text}`ch02_causal_bound_violations` exceptions). The law we find: **one causal head represents every generic lower-triangular positive $P$ from head size $\lfloor n/2 \rfloor$, and no smaller head does** — half the bidirectional $n - 1$. The lower half of the claim is proved (the proposition); the upper half is measured at these lengths, not proved. {doc}`03_multihead_bottleneck` turns this into head counts for the paper's settings.
#
# (ch02-d-below-n)=
# ## Fewer input dimensions than tokens
#
# Long-context models have $n \gg d$. With inputs $X \in \mathbb{R}^{n \times d}$ of rank $d < n$ every head's logits are $X M X^\top$ for a $d \times d$ matrix $M$, so even an unlimited head size cannot reach a generic $P$. The best centred logits are a least-squares problem with an exact answer: the error $\|L_0 - \Pi_X L_0 \Pi_{CX}\|_F$, with $\Pi$ the projectors onto the columns of $X$ and of $CX$ (`lowrank.theory.input_limited_logit_error`). For random $L_0$ and random $X$ the projections keep about a share $d^2 / (n(n-1))$ of $\|L_0\|_F^2$, so the relative error should follow $\sqrt{1 - d^2/(n(n-1))}$. We take Gaussian $X$ with $d$ = {glue:text}`ch02_dn_d`, Dirichlet(1) targets, and also fit a head of size $d$.

# %% tags=["hide-input"]
theory_tables.d_below_n(tables["d_below_n"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch02-input-limited
#
# When $n$ exceeds $d$, the inputs, not the head size, limit what a head can reach, and the exact error follows the law $\sqrt{1 - d^2/(n(n-1))}$. For each $n$: the exact relative error of the best centred logits, the law, the certified TV bound and the worst fitted max-row TV of a head of size $d$.
# ```
#
# At $d$ = {glue:text}`ch02_dn_d` and $n$ = {glue:text}`ch02_dn_ns`, the share of the centred logits that no head on these inputs reaches is {glue:text}`ch02_dn_logit_list` against the law's {glue:text}`ch02_dn_law_list` (largest gap {glue:text}`ch02_dn_law_maxdev:.2f`): once $n$ is a few times $d$, almost nothing of a generic dense $P$ is reachable, and the fitted max-row TV settles at {glue:text}`ch02_dn_tv_list`. The certified TV bounds lie below every fit ({glue:text}`ch02_dn_bound_violations` exceptions). Dense, arbitrary attention is therefore out of reach in exactly the regime of long contexts; what such models represent well must be the structured, sparse patterns of the previous sections.
#
# ## What the theorem does not say
#
# - **It is about one input.** {prf:ref}`thm-representation` gives, for one $X$ and one $P$, weights that depend on both ($W_q = X^+$). The same head on a different sequence produces something else; a model must produce suitable $P$ for all its inputs with one set of weights ({ref}`ch02-many-inputs`).
# - **It is an existence result.** Nothing in it says that gradient training finds such weights, or that useful attention patterns are dense and exact. The fits above are a different, easier problem (one $X$, one $P$, the logits parametrised directly) and still needed up to {glue:text}`ch02_max_iter` L-BFGS iterations in float64 to bring the error down to {glue:text}`ch02_at_max:.0e`.
# - **It concerns logits, not probabilities.** The constraint is on the rank of the logits modulo the row shift. The attention matrix $P$ itself is numerically full rank for almost any logits ({doc}`01_attention_and_rank`), so "low-rank bottleneck" refers to what can be reached, not to the rank of $P$.

# %% [markdown]
# (ch02-many-inputs)=
# ### One weight set for many inputs
#
# How many inputs can one head of size $r$ fit exactly? Its bilinear form $W_q W_k^\top$ has $2dr - r^2$ degrees of freedom ($d^2$ once $r \ge d$), and every input with a generic dense target imposes $n(n-1)$ equations (one row shift per row is free), so counting predicts $\lfloor (2dr - r^2) / (n(n-1)) \rfloor$ inputs when $r \ge n - 1$ and none below. We fit one head to $m$ = {glue:text}`ch02_many_ms` Gaussian inputs at once ($n$ = {glue:text}`ch02_many_n`, $d$ = {glue:text}`ch02_many_d`, Dirichlet(1) targets) for head sizes {glue:text}`ch02_many_ranks`.

# %% tags=["hide-input"]
theory_tables.many_inputs(tables["many_inputs"])

# %% [markdown]
# ```{table-caption}
# :name: tab-ch02-many-inputs
#
# One weight set fits exact attention for only a few inputs at once. Worst max-row TV of one head fitted to $m$ inputs together, for each head size.
# ```
#
# The largest number of inputs fitted below {glue:text}`ch02_vanish_tol` is {glue:text}`ch02_many_capacity_list` for head sizes {glue:text}`ch02_many_ranks`, against the counting estimate {glue:text}`ch02_many_counting_list`: {glue:text}`ch02_many_law`. Counting is an upper limit (with more equations than degrees of freedom a generic target has no exact fit); where a fit falls short of it, that is as far as the optimiser got, not a proof that no head exists. Either way one head stores exact attention for only a handful of inputs; beyond that it must share structure across them.

# %% tags=["remove-cell"]
# NBVAL_CHECK_OUTPUT
print("\n".join(ch.summary(tables)))

# %% [markdown]
# ## What to take away
#
# - Theorem 1's construction is exact: error {glue:text}`ch02_construction_error:.1e` for $n$ up to {glue:text}`ch02_construction_nmax`, at head size $n$ and, through the row shift, at $n - 1$.
# - A dense target needs head size $n - 1$: fits vanish from $r$ = {glue:text}`ch02_vanish_list` for $n$ = {glue:text}`ch02_ns_list`, and below that a certified bound (at least {glue:text}`ch02_bound_min_below:.0e`, never above a fit) proves that no head gets there. This corrects the paper's head-size reading ($n$), not Theorem 1 ($d \ge n$ is needed for generic inputs).
# - Far below the threshold the loss is large: max-row TV {glue:text}`ch02_bottleneck_tv_list` at head sizes {glue:text}`ch02_bottleneck_ranks` for $n$ = {glue:text}`ch02_bottleneck_n`; near it, small ({glue:text}`ch02_near_error:.4f` at size {glue:text}`ch02_near_rank`).
# - A causal head needs $\lfloor n/2 \rfloor$: {glue:text}`ch02_causal_law` (fits and certified bound agree at $n$ = {glue:text}`ch02_causal_ns`).
# - With input rank $d$ = {glue:text}`ch02_dn_d` below $n$, the share of a dense $P$'s centred logits that no head reaches is {glue:text}`ch02_dn_logit_list` at $n$ = {glue:text}`ch02_dn_ns`, close to $\sqrt{1 - d^2/(n(n-1))}$.
# - Sparse targets are cheap: near-permutation $P$ reaches max-row TV {glue:text}`ch02_sparse_tol` with {glue:text}`ch02_sparse_permutation_nmax` at $n$ = {glue:text}`ch02_sparse_nmax`.
