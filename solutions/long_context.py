"""Long context: the reference of the unit long_context, every answer of it once.

TODO: replace this skeleton (written by `python -m autograder new-unit long_context`) with the unit's tasks. Its one
task, ``long_context_ramp``, is a toy placeholder that grades from the start. Each answer lies between the markers
``### BEGIN SOLUTION`` and ``### END SOLUTION``: the build turns each region into a stub that raises
NotImplementedError, and nbgrader clears it from the notebook; everything outside them (signatures, docstrings,
imports) is what students receive.

Conventions used everywhere: positions are counted from 0; ``B`` is the batch size, ``L`` the number of
positions, ``d`` the number of features. No Python loop over positions.
"""

import torch


def long_context_ramp(x, *, scale=1.0):
    """A toy positional encoding: add each position's index, times ``scale``, to every feature of its row.

        out[b, t, i] = x[b, t, i] + scale * t

    TODO: a placeholder, there to show the form a task takes; replace it with a task of the unit.

    Args:
        x: (B, L, d) float tensor: B sequences of L positions, d features each.
        scale: a number, the slope of the ramp (0 and negative numbers included).

    Returns:
        out: (B, L, d) tensor of the dtype and device of ``x``; ``x`` itself is left as it was.

    Raises:
        ValueError: if ``x`` is not three-dimensional, (B, L, d).

    Convention the grader expects: positions counted from 0 (the first row of each sequence comes back
    unchanged), computed in the dtype of ``x``, into a new tensor.

    Worked example: x = torch.zeros(1, 3, 2) and scale = 0.5 give
    [[[0.0, 0.0], [0.5, 0.5], [1.0, 1.0]]].

    Paper: TODO (the paper the task comes from: its authors, year, and the equation this implements).
    """
    ### BEGIN SOLUTION
    if x.dim() != 3:
        raise ValueError(f"x must be (B, L, d), got a tensor of shape {tuple(x.shape)}")
    positions = torch.arange(x.shape[1], device=x.device, dtype=x.dtype)  # (L,)
    return x + scale * positions[:, None]  # (B, L, d): one value per row, broadcast over B and d
    ### END SOLUTION
