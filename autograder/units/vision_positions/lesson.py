# The lesson of the unit vision_positions, as text. `python -m autograder build` turns it into nbgrader's source notebook
# assignments/source/vision_positions/vision_positions.ipynb; edit this file, not that one.
# TODO: replace the toy part below with the unit's lesson. The cell kinds: [markdown]; plain code; [demo: NAME]
# (read-only, not graded); [solution: FUNCTION] (left empty: the build puts the function from
# solutions/vision_positions.py there); [tests: TEST_ID] (a graded cell for each test of the rubric, after its task's
# solution cells: the visible checks here, the hidden ones added by the build). No answer may appear here.

# %% [markdown]
# # Vision positions
#
# TODO: why this matters and what the student builds, then a table of the parts (the points come from the
# rubric).
#
# | part | what | your task (the `pytest -k` word) | points |
# |---|---|---|---|
# | 1 | a toy position ramp (a placeholder) | `vision_positions_ramp` | {points:vision_positions_ramp} |
#
# **Rules of the game.** No Python loop over positions. Positions are counted from 0. `B` is the batch size,
# `L` the number of positions, `d` the number of features.

# %%
import torch

# %% [demo: setup]
# The checks the test cells use. This cell is read-only.
from checks import assert_close, assert_raises

# %% [markdown]
# ## 1. A toy position ramp
#
# TODO: the idea, the equation, then the code. The placeholder adds its position's index, times a slope $s$, to
# every feature of a row:
#
# $$ \text{out}_{b,t,i} = x_{b,t,i} + s \cdot t $$

# %% [solution: vision_positions_ramp]

# %% [tests: vision_positions_ramp_values]
assert_close(vision_positions_ramp(torch.zeros(1, 3, 2), scale=0.5), torch.tensor([[[0.0, 0.0], [0.5, 0.5], [1.0, 1.0]]]),
             what="vision_positions_ramp(torch.zeros(1, 3, 2), scale=0.5)", atol=1e-6,
             hint="position t adds scale * t to every feature of its row, counted from 0.")

# %% [tests: vision_positions_ramp_invalid_args]
assert_raises(ValueError, vision_positions_ramp, torch.zeros(3, 4), hint="x must be three-dimensional, (B, L, d).")
