# The lesson of the third unit, as text. `python -m autograder build` turns it into the nbgrader source notebook
# assignments/source/long_context/long_context.ipynb; edit this file, not that one.
# TODO (issue 26, point 5): this lesson is deliberately minimal: a markdown cell per task saying what it computes,
# the solution and tests cells the build needs, and nothing more. The full lesson (the why, the equations, a figure
# of the per-pair frequencies before and after each scaling) and the capstone experiment are to be written later.
# The cell kinds are those of the units before it, and [given: UNIT]: left empty, the build writes there the code
# this unit borrows from UNIT (the rubric's BORROWS), finished. No answer may appear here.

# %% [markdown]
# # Reading past the training length
#
# A RoPE model trained on $L$ positions has seen each pair of coordinates turn through the angles
# $t\,\theta_i$ of positions $t < L$ only. This unit builds the frequency scalings that let it read further:
#
# | part | what | your task (the `pytest -k` word) | points |
# |---|---|---|---|
# | 1 | NTK-aware base scaling | `ntk_inverse_frequencies` | {points:ntk_inverse_frequencies} |
# | 2 | dynamic NTK scaling | `dynamic_ntk_inverse_frequencies` | {points:dynamic_ntk_inverse_frequencies} |
# | 3 | YaRN's ramp | `yarn_inverse_frequencies` | {points:yarn_inverse_frequencies} |
# | 4 | YaRN's attention temperature | `yarn_attention_scale` | {points:yarn_attention_scale} |
# | 5 | Llama 3's wavelength rule | `llama3_inverse_frequencies` | {points:llama3_inverse_frequencies} |
# | 6 | scores at scaled frequencies | `scaled_rope_scores` | {points:scaled_rope_scores} |
# | 7 | the speed of the score path | (timed by the grader) | {points:timing} |
#
# **Rules of the game.** No Python loop over positions or pairs. Pair $i$ counts from 0 to $d_h/2 - 1$ and
# turns at $\theta_i = \text{base}^{-2i/d_h}$ before any scaling. $L$ is the trained length.

# %%
import math

import torch

# %% [demo: setup]
# The checks used by the test cells. This cell is read-only.
from checks import assert_close, assert_no_loops, assert_raises

# %% [markdown]
# ## The second unit's rotation, given
#
# `apply_rotary` is the second unit's reference, given here finished (you wrote your own there). Run the cell
# below and leave it as it is: `scaled_rope_scores` calls it, and the grader runs this code in any case.

# %% [given: rotary_alibi]

# %% [markdown]
# ## 1. NTK-aware base scaling
#
# Raise the base, $\text{base}' = \text{base} \cdot s^{d_h/(d_h-2)}$, so that pair 0 keeps its frequency and the
# slowest pair is divided by exactly the factor $s$: $\theta_i = \text{base}'^{-2i/d_h}$.

# %% [solution: ntk_inverse_frequencies]

# %% [tests: ntk_inverse_frequencies_values]
assert_close(ntk_inverse_frequencies(4, factor=4.0), torch.tensor([1.0, 0.0025]),
             what="ntk_inverse_frequencies(4, factor=4.0)", rtol=1e-5,
             hint="base' = 10000 * 4 ** (4 / 2) = 160000, theta = [160000 ** 0, 160000 ** (-2/4)].")

# %% [tests: ntk_inverse_frequencies_invalid_args]
assert_raises(ValueError, ntk_inverse_frequencies, 7, factor=2.0, hint="head_dim must be even.")
assert_raises(ValueError, ntk_inverse_frequencies, 8, factor=0.5, hint="a factor below 1 shrinks the context.")

# %% [markdown]
# ## 2. Dynamic NTK scaling
#
# NTK scaling with the factor $s = \max(1, \text{factor} \cdot \text{length} / L - (\text{factor} - 1))$: RoPE's
# own frequencies up to $L$, growing scaling past it.

# %% [solution: dynamic_ntk_inverse_frequencies]

# %% [tests: dynamic_ntk_inverse_frequencies_values]
assert_close(dynamic_ntk_inverse_frequencies(4, length=4096, trained_length=2048, factor=2.0),
             torch.tensor([1.0, 1 / 300]), what="dynamic_ntk_inverse_frequencies(4, length=4096, ...)", rtol=1e-5,
             hint="s = 2 * 4096 / 2048 - 1 = 3, base' = 10000 * 3 ** 2.")

# %% [tests: dynamic_ntk_inverse_frequencies_short]
assert_close(dynamic_ntk_inverse_frequencies(4, length=1000, trained_length=2048, factor=2.0),
             torch.tensor([1.0, 0.01]), what="dynamic_ntk_inverse_frequencies(4, length=1000, ...)", rtol=1e-5,
             hint="up to the trained length nothing is scaled.")

# %% [tests: dynamic_ntk_inverse_frequencies_invalid_args]
assert_raises(ValueError, dynamic_ntk_inverse_frequencies, 8, length=4096, trained_length=2048, factor=0.5,
              hint="a factor below 1.")

# %% [markdown]
# ## 3. YaRN's ramp
#
# Pairs that turn more than $\beta_\text{fast}$ times within $L$ keep $\theta_i$, pairs that turn fewer than
# $\beta_\text{slow}$ times get $\theta_i / s$, and a linear ramp over the pair index joins them.

# %% [solution: yarn_inverse_frequencies]

# %% [tests: yarn_inverse_frequencies_values]
assert_close(yarn_inverse_frequencies(8, factor=4.0, trained_length=2048), torch.tensor([1.0, 0.1, 0.00625, 0.00025]),
             what="yarn_inverse_frequencies(8, factor=4.0, trained_length=2048)", rtol=1e-5,
             hint="low = floor(1.008) = 1, high = ceil(2.513) = 3: the ramp is [0, 0, 0.5, 1].")

# %% [tests: yarn_inverse_frequencies_options]
untruncated = yarn_inverse_frequencies(8, factor=4.0, trained_length=2048, truncate=False)
assert tuple(untruncated.shape) == (4,), f"expected (4,), got {tuple(untruncated.shape)}"

# %% [tests: yarn_inverse_frequencies_invalid_args]
assert_raises(ValueError, yarn_inverse_frequencies, 8, factor=4.0, trained_length=2048, beta_fast=1.0,
              beta_slow=32.0, hint="beta_slow above beta_fast.")

# %% [markdown]
# ## 4. YaRN's attention temperature
#
# The factor on the scores, $1/t = (0.1 \cdot \text{mscale} \cdot \ln s + 1)^2$.

# %% [solution: yarn_attention_scale]

# %% [tests: yarn_attention_scale_values]
assert abs(yarn_attention_scale(4.0) - 1.296477) < 1e-6, f"expected 1.296477, got {yarn_attention_scale(4.0)}"

# %% [tests: yarn_attention_scale_invalid_args]
assert_raises(ValueError, yarn_attention_scale, 0.5, hint="a factor below 1.")

# %% [markdown]
# ## 5. Llama 3's wavelength rule
#
# Wavelengths shorter than $L / \text{high\_freq\_factor}$ are kept, longer than $L / \text{low\_freq\_factor}$
# divided by the factor, and those between blended smoothly.

# %% [solution: llama3_inverse_frequencies]

# %% [tests: llama3_inverse_frequencies_values]
assert_close(llama3_inverse_frequencies(8), torch.tensor([1.0, 0.037606, 0.00052485, 6.6479e-06]),
             what="llama3_inverse_frequencies(8)", rtol=1e-4,
             hint="wavelengths 6.3 and 167 are kept, 4443 is blended, 118144 is divided by 8.")

# %% [tests: llama3_inverse_frequencies_invalid_args]
assert_raises(ValueError, llama3_inverse_frequencies, 64, low_freq_factor=4.0, high_freq_factor=1.0,
              hint="high_freq_factor must be above low_freq_factor.")

# %% [markdown]
# ## 6. Scores at scaled frequencies
#
# Queries and keys turned pair by pair at the frequencies given (rotate half), through `apply_rotary`, then
# $\text{attention\_scale} / \sqrt{d_h} \cdot q' \cdot k'$.

# %% [solution: scaled_rope_scores]

# %% [tests: scaled_rope_scores_values]
one = torch.tensor([1.0, 0.0]).view(1, 1, 1, 2)
assert_close(scaled_rope_scores(one, one, torch.tensor([0.5]), positions_q=torch.tensor([3]),
                                positions_k=torch.tensor([1])), torch.tensor([[[[0.382051]]]]),
             what="scaled_rope_scores(q, k, [0.5]) at positions 3 and 1", rtol=1e-5,
             hint="cos((3 - 1) * 0.5) / sqrt(2).")

# %% [tests: scaled_rope_scores_contract]
scores = scaled_rope_scores(torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.ones(4) / 10)
assert tuple(scores.shape) == (2, 3, 5, 7), f"expected (2, 3, 5, 7), got {tuple(scores.shape)}"

# %% [tests: scaled_rope_scores_attention_scale]
assert_close(scaled_rope_scores(one, one, torch.tensor([0.5]), attention_scale=2.0), torch.tensor([[[[2 ** 0.5]]]]),
             what="scaled_rope_scores(q, q, [0.5], attention_scale=2.0)", rtol=1e-5,
             hint="the scale multiplies the score 1 / sqrt(2) once.")

# %% [tests: scaled_rope_scores_invalid_args]
assert_raises(ValueError, scaled_rope_scores, torch.randn(1, 1, 3, 8), torch.randn(1, 1, 3, 8), torch.ones(8),
              hint="inverse_frequencies has one entry per pair, (dh/2,).")

# %% [markdown]
# ## 7. Speed
#
# The grader times `scaled_rope_scores` at long lengths against the reference: no Python loop over positions.

# %% [tests: scaled_rope_speed]
assert_no_loops(scaled_rope_scores, inputs=lambda length: (torch.randn(1, 4, length, 8), torch.randn(1, 4, length, 8),
                                                           torch.ones(4) / 10))
