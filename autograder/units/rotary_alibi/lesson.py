# The lesson of the second unit, as text. `python -m autograder build` turns it into the nbgrader source
# notebook assignments/source/rotary_alibi/rotary_alibi.ipynb; edit this file, not that one.
# The cell kinds are those of the first unit's lesson (autograder/units/positional_encodings/lesson.py):
# [markdown], plain code, [demo: NAME], [solution: FUNCTION] (from solutions/rotary_alibi.py) and
# [tests: TEST_ID] (a graded cell: visible checks here, the hidden ones added by the build).
# The answers live only in solutions/; nothing below may contain one.

# %% [markdown]
# # Position without parameters: rotary embeddings (RoPE) and ALiBi
#
# The first unit put position into attention by *adding* something: a vector at the input, a vector
# at the key, a learned number at the score. Nearly every open model of today uses one of two methods
# that add nothing that is learned. LLaMA, Qwen, Mistral and GPT-NeoX **rotate** the query and the key
# by an angle that grows with the position (RoPE, Su et al. 2021). BLOOM and MPT add a fixed **linear
# penalty** per head to the score (ALiBi, Press et al. 2022). And a model trained on short texts is made
# to read long ones by **position interpolation** (Chen et al. 2023). You build all three:
#
# | part | what | used in | your task (the `pytest -k` word) | points |
# |---|---|---|---|---|
# | 2 | the rotation angles | RoFormer, LLaMA | `rotary_angles` | {points:rotary_angles} |
# | 3 | rotating queries and keys, in both layouts | RoFormer, GPT-NeoX, LLaMA | `apply_rotary` | {points:apply_rotary} |
# | 4 | the scores of rotated queries and keys | | `rope_scores` | {points:rope_scores} |
# | 5 | a slope per head, a penalty per distance | BLOOM, MPT | `alibi_slopes`, `alibi_bias` | {points:alibi_slopes} + {points:alibi_bias} |
# | 6 | reading further than trained | LLaMA 2 long, Code Llama | `scaled_positions` | {points:scaled_positions} |
# | 7 | the speed of the score paths | | (timed by the grader) | {points:timing} |
#
# **How to work**, as in the first unit: each function to write says `# YOUR CODE HERE`; its docstring
# gives the formula, the shapes, the convention the grader expects and a worked example; the locked cells
# after it check your work, and the grader runs more cases than you see. `pytest -k rotary` (or any word
# of the table) runs the self-checks in a terminal. A check cell of a task not written yet raises
# `NotImplementedError`: use *Run > Run Selected Cell and All Below* from the next part to go on.
#
# **Rules of the game.** No Python loop over positions. Positions are counted from 0. `B` is the batch
# size, `H` the number of heads, `L` (`Lq`, `Lk`) the number of positions (queries, keys), `dh` the size
# of one head.

# %%
import math

import torch

# %% [demo: setup]
# Plotting and the checks used by the test cells. This cell is read-only.
import matplotlib.pyplot as plt

torch.manual_seed(0)  # the same pictures on every run (not the cell's last line, which would print it)
from checks import assert_close, assert_no_loops, assert_raises

# %% [markdown]
# ## 1. Why rotate
#
# The first unit ended part 4 with a property of the sinusoidal table: the pair `(sin tw, cos tw)` of
# position `t + d` is the pair of position `t` *turned* by the angle `d w`. RoPE uses that property the
# other way round. Take one pair of coordinates of a query, $q = (q_0, q_1)$, and one of a key. Turn the
# query by $m\theta$ (its position $m$ times a frequency $\theta$) and the key by $n\theta$:
#
# $$ R(m\theta)\, q \cdot R(n\theta)\, k \;=\; q \cdot R\big((n - m)\theta\big)\, k $$
#
# A rotation keeps lengths and angles, so only the *difference* of the two turns survives in the dot
# product: the score of query $m$ and key $n$ depends on their distance $n - m$, although each was turned
# by its own absolute position. No table is learned, nothing is added to the word vectors, and it costs
# $O(L \cdot d_h)$ per sequence, before the $O(L^2)$ scores.
#
# In numbers, for one pair and $\theta = 0.3$:

# %% [demo: rotation_numbers]
def turn(pair, angle):  # a counter-clockwise rotation of one 2-vector
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([c * pair[0] - s * pair[1], s * pair[0] + c * pair[1]])


q_pair, k_pair, theta = torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0]), 0.3
for m, n in ((0, 3), (5, 8), (100, 103), (7, 4)):
    score = turn(q_pair, m * theta) @ turn(k_pair, n * theta)
    print(f"query at {m:>3}, key at {n:>3} (n - m = {n - m:>2}): score {score.item():+.6f}")
print("The same n - m, the same score, wherever the pair stands.")

# %% [markdown]
# ## 2. One angle per position and pair
#
# A head of size $d_h$ has $d_h / 2$ pairs, and pair $i$ turns at its own speed
#
# $$ \theta_i = \text{base}^{-2i/d_h}, \qquad i = 0, 1, \ldots, d_h/2 - 1, $$
#
# the frequencies of the sinusoidal table: the first pair turns by one radian per position, the last pair
# barely at all (its wavelength $2\pi/\theta_i$ is nearly $2\pi \cdot \text{base}$). `rotary_angles`
# computes $\cos(t\theta_i)$ and $\sin(t\theta_i)$ once, for any tensor of positions $t$.

# %% [solution: rotary_angles]

# %% [tests: rotary_angles_values]
cos, sin = rotary_angles(torch.tensor([2]), 4)
assert_close(cos[0], torch.tensor([math.cos(2), math.cos(0.02)]), what="cos at position 2 (dh = 4)", atol=1e-5,
             hint="theta_i = base ** (-2i / head_dim): 1 and 0.01 for head_dim 4.")
assert_close(sin[0], torch.tensor([math.sin(2), math.sin(0.02)]), what="sin at position 2 (dh = 4)", atol=1e-5,
             hint="the pair comes back as (cos, sin), in that order.")
cos, sin = rotary_angles(torch.arange(12).reshape(3, 4), 8)
assert tuple(cos.shape) == (3, 4, 4), f"positions (3, 4) give (3, 4, head_dim // 2) = (3, 4, 4), got {tuple(cos.shape)}"

# %% [tests: rotary_angles_edge_cases]
cos, sin = rotary_angles(torch.tensor([0.5]), 2, dtype=torch.float64)
assert cos.dtype == torch.float64, f"dtype=float64 asks for float64, got {cos.dtype}"
assert_close(sin, torch.tensor([[math.sin(0.5)]], dtype=torch.float64), what="sin at position 0.5", atol=1e-12)

# %% [tests: rotary_angles_invalid_args]
assert_raises(ValueError, rotary_angles, torch.arange(3), 7, hint="RoPE turns coordinates in pairs: dh must be even.")

# %% [demo: rotary_wavelengths]
# How many positions each pair needs for a full turn: 2 pi / theta_i, from 2 pi to nearly 2 pi * base.
head_dim = 64
cos, sin = rotary_angles(torch.arange(256), head_dim)
wavelengths = 2 * math.pi * 10000.0 ** (torch.arange(0, head_dim, 2) / head_dim)
print("pair i:      " + "  ".join(f"{i:>8}" for i in (0, 1, 4, 16, 31)))
print("wavelength:  " + "  ".join(f"{wavelengths[i].item():>8.1f}" for i in (0, 1, 4, 16, 31)))
figure, axis = plt.subplots(layout="constrained", figsize=(8, 3.2))
image = axis.imshow(cos.T, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1)
figure.colorbar(image, ax=axis, label="cos(t * theta_i)")
axis.set(xlabel="position t", ylabel="pair i", title="rotary_angles(arange(256), 64): fast pairs on top")
plt.show()

# %% [markdown]
# ## 3. Turning queries and keys, in two layouts
#
# `apply_rotary` turns every pair $(a, b)$ of a query (or key) row at position $t$ by the angle $t\theta_i$:
#
# $$ a' = a\cos t\theta_i - b\sin t\theta_i, \qquad b' = a\sin t\theta_i + b\cos t\theta_i. $$
#
# Which coordinates form a pair is a convention, and both are in use:
#
# * **interleaved** (RoFormer, the paper): pairs `(0, 1), (2, 3), ...`, neighbours;
# * **rotate half** (GPT-NeoX and the LLaMA family): pairs `(0, dh/2), (1, dh/2 + 1), ...`, one coordinate
#   from each half, because the turn can then be written as `x * cos + rotate_half(x) * sin` on whole
#   halves.
#
# The two give the same scores up to a fixed reordering of the coordinates, *but only if the weights were
# trained with that layout*. Load a LLaMA checkpoint into code that turns neighbours and every query is
# turned in pairs the model never used: the scores (and the text) are garbage, with no error raised.

# %% [solution: apply_rotary]

# %% [tests: apply_rotary_interleaved]
x = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
assert_close(apply_rotary(x, torch.arange(2)), torch.tensor([[1.0, 0.0], [math.cos(1), math.sin(1)]]),
             what="(1, 0) turned at positions 0 and 1 (dh = 2)", atol=1e-6,
             causes=[(torch.tensor([[1.0, 0.0], [math.cos(1), -math.sin(1)]]),
                      "the rotation turns clockwise: a' = a cos - b sin, b' = a sin + b cos.")])
x = torch.randn(2, 3, 5, 8)
before = x.clone()
out = apply_rotary(x, torch.arange(5))
assert tuple(out.shape) == (2, 3, 5, 8) and torch.equal(x, before), "keep x's shape, and leave x itself as it was"

# %% [tests: apply_rotary_half]
x = torch.randn(4, 8, dtype=torch.float64)
order = torch.tensor([0, 4, 1, 5, 2, 6, 3, 7])  # the halves' pairs laid out as neighbours
assert_close(apply_rotary(x, torch.arange(4), interleaved=False),
             apply_rotary(x[:, order], torch.arange(4))[:, order.argsort()], what="rotate half against interleaved",
             atol=1e-9, hint="interleaved=False pairs coordinate i with i + dh/2.")

# %% [tests: apply_rotary_positions]
x = torch.randn(3, 8, dtype=torch.float64)
assert not torch.allclose(apply_rotary(x, torch.arange(100, 103)), apply_rotary(x, torch.arange(3))), \
    "a cache's rows at positions 100..102 turn further than rows at 0..2: use the positions passed in"

# %% [tests: apply_rotary_dtype]
x = torch.randn(2, 8, 16).half()
assert apply_rotary(x, torch.arange(8)).dtype == torch.float16, "float16 in, float16 out (computed in float32)"

# %% [tests: apply_rotary_invalid_args]
assert_raises(ValueError, apply_rotary, torch.randn(4, 7), torch.arange(4), hint="coordinates turn in pairs: dh must be even.")
assert_raises(ValueError, apply_rotary, torch.randn(4, 8), torch.arange(3), hint="one position for each of the L rows of x.")

# %% [demo: rotary_picture]
# Four pairs of one row, turned at positions 0..11: each pair moves on its own circle at its own speed.
row = torch.ones(1, 8)
turned = apply_rotary(row.expand(12, 8), torch.arange(12))  # (12, 8): the same row at positions 0..11
q, k = torch.randn(1, 1, 16, 32), torch.randn(1, 1, 16, 32)
mixed = apply_rotary(q, torch.arange(16)) @ apply_rotary(k, torch.arange(16), interleaved=False).transpose(-2, -1)
same = apply_rotary(q, torch.arange(16)) @ apply_rotary(k, torch.arange(16)).transpose(-2, -1)
# Everything is computed before the figure is made: a function that raises leaves no empty figure behind.
figure, (left, right) = plt.subplots(1, 2, layout="constrained", figsize=(9, 3.8))
for pair in range(4):
    left.plot(turned[:, 2 * pair], turned[:, 2 * pair + 1], "o-", markersize=3, label=f"pair {pair}")
left.set(aspect="equal", xlabel="coordinate 2i", ylabel="coordinate 2i + 1", title="apply_rotary: each pair turns")
left.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
right.plot((mixed - same)[0, 0].flatten().abs().sort().values, label="|mixed - same layout|")
right.set(xlabel="score (sorted)", ylabel="absolute difference", title="q interleaved, k rotate half: wrong")
right.legend(loc="upper left")
plt.show()

# %% [markdown]
# ## 4. The scores of rotated queries and keys
#
# `rope_scores` turns the queries by their positions and the keys by theirs, then takes the scaled dot
# products. The scale can be folded into the queries before the product: it then costs `Lq * dh`
# multiplications, not a pass over all `Lq * Lk` scores. With a cache (the queries of the last words, the
# keys of all), pass the positions explicitly: the queries are at `Lk - Lq ... Lk - 1`.
#
# The property your self-checks test: shift every query and every key by the same number of positions,
# and no score changes.

# %% [solution: rope_scores]

# %% [tests: rope_scores_values]
q, k = torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8)
assert_close(rope_scores(q, k), (q @ k.transpose(-2, -1)) / math.sqrt(8), what="scores at position 0", atol=1e-5,
             hint="position 0 turns nothing; the scale is 1/sqrt(dh) by default.")
got = rope_scores(torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8))
assert tuple(got.shape) == (2, 3, 5, 7), f"expected (B, H, Lq, Lk) = (2, 3, 5, 7), got {tuple(got.shape)}"

# %% [tests: rope_scores_positions]
q, k = torch.randn(1, 2, 4, 16, dtype=torch.float64), torch.randn(1, 2, 6, 16, dtype=torch.float64)
assert_close(rope_scores(q, k, positions_q=torch.arange(4) + 50, positions_k=torch.arange(6) + 50),
             rope_scores(q, k), what="scores with every position shifted by 50", atol=1e-8,
             hint="rotate q by positions_q and k by positions_k: the score then depends on n - m only.")

# %% [tests: rope_scores_layout]
q, k = torch.randn(1, 1, 3, 8, dtype=torch.float64), torch.randn(1, 1, 3, 8, dtype=torch.float64)
assert rope_scores(q, k).dtype == torch.float64, "keep q's dtype"
assert_close(rope_scores(q, k, scale=1.0), math.sqrt(8) * rope_scores(q, k), what="scale=1 against the default",
             atol=1e-9)

# %% [demo: rope_picture]
# One query row and one key row, placed at every pair of positions (m, n): the score is constant along each
# diagonal (each n - m), and it changes slowly with the distance.
vector = torch.randn(1, 1, 1, 32)
many = vector.expand(1, 1, 48, 32)
scores = rope_scores(many, torch.roll(many, 1, dims=-1))[0, 0]  # (48, 48): row m, column n
figure, axis = plt.subplots(layout="constrained", figsize=(4.6, 3.8))
image = axis.imshow(scores, cmap="RdBu_r")
figure.colorbar(image, ax=axis, label="score")
axis.set(xlabel="key position n", ylabel="query position m", title="rope_scores: a function of n - m")
plt.show()

# %% [markdown]
# ## 5. ALiBi: a penalty per distance, a slope per head
#
# ALiBi adds to the score of query $i$ and key $j \le i$ a penalty that grows linearly with the distance,
#
# $$ s_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_h}} - m_h\,(i - j), $$
#
# and each head $h$ has its own fixed slope $m_h$, a geometric sequence: for $n$ heads a power of two,
# $m_h = 2^{-8(h+1)/n}$, from $2^{-8/n}$ down to $2^{-8}$. A steep head looks at the last few words only, a gentle
# one reads far back. For other head counts the paper takes the slopes of the largest power of two below
# `n`, then every other slope of twice that power. Nothing is learned, and the penalty is the same at
# position 10 and position 10 000, which is why ALiBi reads texts longer than it was trained on.
#
# BLOOM writes the bias as $m_h\, j$ instead: per row it differs from $-m_h (i - j)$ by the
# constant $m_h\, i$, and a softmax does not change when a whole row is shifted, so under the causal
# mask both give the same attention. The grader accepts that form for the causal bias (and says so);
# without the mask (`causal=False`) it is no longer equivalent.

# %% [solution: alibi_slopes]

# %% [tests: alibi_slopes_power_of_two]
assert_close(alibi_slopes(8), torch.tensor([2.0 ** -(h + 1) for h in range(8)]), what="alibi_slopes(8)",
             atol=0.0, rtol=1e-6, hint="for n a power of two: 2 ** (-8 (h + 1) / n), h = 0 .. n-1.")

# %% [tests: alibi_slopes_other_counts]
expected = torch.tensor([2.0 ** -(h + 1) for h in range(8)] + [2.0 ** -(h + 0.5) for h in range(4)])
assert_close(alibi_slopes(12), expected, what="alibi_slopes(12)", atol=0.0, rtol=1e-6,
             hint="8 slopes of 8 heads, then every other slope of 16 heads, from its first.")

# %% [tests: alibi_slopes_invalid_args]
assert_raises(ValueError, alibi_slopes, 0, hint="a model has one head or more.")

# %% [solution: alibi_bias]

# %% [tests: alibi_bias_causal]
assert_close(alibi_bias(3, 3, torch.tensor([0.5])),
             torch.tensor([[[[0.0, 0.0, 0.0], [-0.5, 0.0, 0.0], [-1.0, -0.5, 0.0]]]]), what="alibi_bias(3, 3, [0.5])",
             atol=1e-7, hint="-slope * (i - j) for keys at or before the query; 0 after it (the mask removes those).")

# %% [tests: alibi_bias_bidirectional]
assert_close(alibi_bias(3, 3, torch.tensor([0.5]), causal=False),
             torch.tensor([[[[0.0, -0.5, -1.0], [-0.5, 0.0, -0.5], [-1.0, -0.5, 0.0]]]]),
             what="alibi_bias(3, 3, [0.5], causal=False)", atol=1e-7, hint="both directions cost: -slope * |i - j|.")

# %% [tests: alibi_bias_layout]
got = alibi_bias(3, 5, torch.tensor([0.5, 0.25], dtype=torch.float64))
assert tuple(got.shape) == (1, 2, 3, 5) and got.dtype == torch.float64, \
    f"expected (1, H, Lq, Lk) = (1, 2, 3, 5) in the slopes' dtype, got {tuple(got.shape)} {got.dtype}"

# %% [tests: alibi_bias_invalid_args]
assert_raises(ValueError, alibi_bias, 3, 3, torch.tensor([[0.5], [0.25]]), hint="slopes hold one slope per head: (H,).")

# %% [demo: alibi_picture]
# The attention of four of eight heads over 24 positions, for random queries and keys: the steep heads (small h)
# keep to the last words, the gentle ones spread out.
q, k = torch.randn(1, 8, 24, 16), torch.randn(1, 8, 24, 16)
scores = q @ k.transpose(-2, -1) / 4 + alibi_bias(24, 24, alibi_slopes(8))
scores = scores.masked_fill(torch.ones(24, 24, dtype=torch.bool).triu(1), float("-inf"))
weights = scores.softmax(-1)[0]  # (8, 24, 24)
slopes = alibi_slopes(8)
# Two by two at the width of the notebook, one colour bar for all four: each head is large enough to read.
figure, axes = plt.subplots(2, 2, layout="constrained", sharex=True, sharey=True, figsize=(6.4, 5.8))
for axis, head in zip(axes.flat, (0, 2, 5, 7)):
    image = axis.imshow(weights[head], cmap="Blues", vmin=0, vmax=1)
    axis.set(title=f"head {head}: slope {slopes[head].item():.3g}")
for axis in axes[1]:
    axis.set_xlabel("key j")
for axis in axes[:, 0]:
    axis.set_ylabel("query i")
figure.colorbar(image, ax=axes, label="attention weight", shrink=0.8)
plt.show()

# %% [markdown]
# ## 6. Reading further than trained: position interpolation
#
# A RoPE model trained on $L$ positions has seen the angles of positions $0 \ldots L-1$ only. At position
# $2L$ the fast pairs have turned to angles it knows, but the slow pairs have turned further than ever,
# and its scores go wrong. Chen et al. (2023) squeeze the positions instead, $t \mapsto t / s$: to read
# $4L$ positions, divide every position by $s = 4$, so that they fall back inside `0 .. L`, at a finer spacing, and train a little at the
# new length. That is `scaled_positions`.

# %% [solution: scaled_positions]

# %% [tests: scaled_positions_values]
assert_close(scaled_positions(torch.tensor([0, 1, 2, 8191]), factor=4), torch.tensor([0.0, 0.25, 0.5, 2047.75]),
             what="scaled_positions([0, 1, 2, 8191], factor=4)", atol=1e-6,
             hint="divide by the factor, as floats: the fractions are the point.")

# %% [tests: scaled_positions_invalid_args]
assert_raises(ValueError, scaled_positions, torch.arange(3), factor=0.0, hint="a factor must be positive.")

# %% [demo: interpolation_picture]
# The slowest pair's angle over positions 0..4L-1 (L = 32), as trained, read plainly, and interpolated.
positions = torch.arange(128)
slowest = lambda p: torch.atan2(rotary_angles(p, 16)[1][..., -1], rotary_angles(p, 16)[0][..., -1])  # noqa: E731
plain, interpolated = slowest(positions), slowest(scaled_positions(positions, factor=4))  # before the figure
figure, axis = plt.subplots(layout="constrained", figsize=(7, 3.2))
axis.plot(positions, plain, label="positions as they are")
axis.plot(positions, interpolated, label="scaled_positions(factor=4)")
axis.axvspan(0, 31, color="0.9", label="positions seen in training")
axis.set(xlabel="position", ylabel="angle of the slowest pair", title="interpolation keeps the angles in range")
axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
plt.show()

# %% [markdown]
# ### A second way: change the base, not the positions (NTK-aware scaling)
#
# Interpolation slows every pair by the same factor $s$, the fast ones too, and the fast pairs are the ones
# that tell neighbours apart: after the squeeze, two neighbouring tokens are $1/s$ of a position apart, closer
# than any two tokens the model ever saw. "NTK-aware" scaling (bloc97, 2023, on which YaRN, Peng et al. 2023,
# builds) leaves the positions alone and raises the base instead,
#
# $$b' = b \, s^{d/(d-2)}, \qquad \theta'_i = b'^{-2i/d} = \theta_i \, s^{-2i/(d-2)},$$
#
# so the fastest pair ($i = 0$) keeps its speed exactly and the slowest ($i = d/2 - 1$) is slowed by exactly
# $s$, like interpolation: at position $sL$ it has turned as far as it had at $L$. The pairs between are slowed
# by a factor that grows geometrically from 1 to $s$ (for $d = 16$, $s = 4$: 1, 1.22, 1.49, ... 3.28, 4). No function to write: it is `rotary_angles` with
# another `base`. The picture reads each pair's speed off your `rotary_angles` (the angle at position 1).

# %% [demo: ntk_picture]
head_dim, factor, base = 16, 4.0, 10000.0
def speeds(base):  # noqa: E306 (the angle of each pair at position 1, from your rotary_angles)
    cos, sin = rotary_angles(torch.tensor([1]), head_dim, base=base)
    return torch.atan2(sin[0], cos[0])
ntk_base = base * factor ** (head_dim / (head_dim - 2))
slowdown_ntk = speeds(base) / speeds(ntk_base)
print(f"NTK-aware base for s = {factor:g}, d = {head_dim}: {ntk_base:.0f}")
print("slowdown of each pair, interpolation:", [factor] * (head_dim // 2))
print("slowdown of each pair, NTK-aware:    ", [round(value, 2) for value in slowdown_ntk.tolist()])
figure, axis = plt.subplots(layout="constrained", figsize=(7, 3.2))
pairs = torch.arange(head_dim // 2)
axis.plot(pairs, torch.full((head_dim // 2,), factor), "o-", label="position interpolation: every pair by s")
axis.plot(pairs, slowdown_ntk, "s-", label="NTK-aware base: the fast pairs kept")
axis.set(xlabel="pair i (fast to slow)", ylabel="slowdown (old speed / new)", ylim=(0, factor + 0.5),
         title=f"two ways to read s = {factor:g} times further")
axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
plt.show()

# %% [markdown]
# ## 7. Speed: the score paths are tensor code
#
# The grader times your `rope_scores`, and the ALiBi path `q @ k^T * scale + alibi_bias(L, L,
# alibi_slopes(H))`, against the reference on large inputs, once they are correct: {timing_bands} of the
# reference's time, none beyond; at most {rubric:TIMING_MEMORY_SCORES} score-sized tensors of memory; no
# Python loop over positions. A loop over the heads (in `alibi_slopes`, or one plane per head in `alibi_bias`) is
# not one and costs nothing: the ALiBi authors' own code builds the slopes in a Python list. The checks below run a
# function with a loop at growing lengths and count the lines it runs and its tensor operations, as the grader does:
# a count that changes with the length is a loop over positions.

# %% [tests: rope_speed]
assert_no_loops(rope_scores, inputs=lambda length: (torch.randn(1, 4, length, 8), torch.randn(1, 4, length, 8)))
assert_no_loops(apply_rotary)
assert_no_loops(rotary_angles)
scores = rope_scores(torch.randn(1, 4, 512, 32), torch.randn(1, 4, 512, 32))
assert tuple(scores.shape) == (1, 4, 512, 512), f"expected (1, 4, 512, 512), got {tuple(scores.shape)}"

# %% [tests: alibi_speed]
assert_no_loops(alibi_bias, inputs=lambda length: (length, length, alibi_slopes(4)))
bias = alibi_bias(512, 512, alibi_slopes(4))
assert tuple(bias.shape) == (1, 4, 512, 512), f"expected (1, 4, 512, 512), got {tuple(bias.shape)}"

# %% [markdown]
# ## 8. Train short, test long
#
# The first unit's tiny language model (`capstone.py`, in this folder: two blocks, width 64, four heads,
# trained on the kit's short stories with a context of 32 words) is trained here twice, with your RoPE and
# with your ALiBi, and then reads windows **four times** as long as it was trained on. RoPE is read three
# ways: as trained; and with position interpolation (your `scaled_positions`, factor 4) after 30 steps of
# training at the longer length, as Chen et al. do. The plot gives the held-out loss at each position of
# the longer windows (lower is better); the dashed line is the end of the trained context. About 15 seconds
# on a laptop's CPU.

# %% [demo: longer_run]
import os
import time

from capstone import train_short_test_long

GRADING = os.environ.get("NBGRADER_EXECUTION") == "autograde"
QUICK = os.environ.get("POSITIONAL_KIT_QUICK") == "1"
started = time.perf_counter()
if GRADING:
    longer, left_out = {}, {}
    print("nbgrader is grading this notebook: part 8 trains nothing here, so that grading the class stays fast. "
          "Run the notebook yourself to see it. Part 8 is not graded.")
else:
    longer, left_out = train_short_test_long(globals(), seed=0, steps=3 if QUICK else 200,
                                             tune_steps=2 if QUICK else 30, stories_count=300 if QUICK else 3000)
    if QUICK:
        print("POSITIONAL_KIT_QUICK is set: 3 training steps only, so the figures are not the lesson's.")
for name, run in longer.items():
    print(f"{name:<21} loss over the trained positions {run.trained_loss:.3f}, beyond them {run.beyond_loss:.3f}")
for name, why in left_out.items():
    print(f"{name} is left out: {why}.")
print(f"All of it: {time.perf_counter() - started:.0f} s")

# %% [demo: longer_picture]
if longer:
    figure, axis = plt.subplots(layout="constrained", figsize=(8, 3.8))
    for number, (name, run) in enumerate(longer.items()):
        axis.plot(run.per_position, color=f"C{number}", label=name)
    axis.axvline(31.5, color="black", linestyle="--", label="trained up to here")
    axis.set(xlabel="position in the window", ylabel="held-out loss",
             title="windows four times as long as in training")
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    plt.show()
else:  # the grading run trains nothing: the plot would hold only the dashed line
    print("No model was trained in this run, so there are no curves to draw.")

# %% [markdown]
# What to read in it, with the reference (seed 0): over the trained positions RoPE and ALiBi are alike
# (about 0.83). Beyond them RoPE read plainly gets worse (about 0.98), RoPE with interpolation recovers part
# of the way after a few steps at the new length (about 0.90), and ALiBi, whose penalty is the same at every
# position, does not get worse at all (about 0.81). That is the trade the field made: RoPE for quality,
# with interpolation (and its successors, NTK-aware scaling of the base and YaRN) to read 128K tokens after
# training on 4K; ALiBi for reading further with no tuning at all.
