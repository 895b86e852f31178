"""Self-checks for task vision_positions_ramp: vision_positions_ramp. Run: pytest -k vision_positions_ramp

TODO: replace these with the checks of the unit's tasks, a file ``test_<task>.py`` each: the shape first, then
the values of a small worked example, then the errors the contract asks for. They import the student's module,
vision_positions, and the comparison helpers of checks.py.
"""

import pytest
import torch

from checks import assert_close
from vision_positions import vision_positions_ramp


def test_vision_positions_ramp_keeps_the_shape_of_x():
    got = vision_positions_ramp(torch.zeros(2, 3, 4))
    assert tuple(got.shape) == (2, 3, 4), f"x of shape (2, 3, 4) should give (2, 3, 4), got {tuple(got.shape)}"


def test_vision_positions_ramp_matches_the_worked_example():
    assert_close(vision_positions_ramp(torch.zeros(1, 3, 2), scale=0.5), torch.tensor([[[0.0, 0.0], [0.5, 0.5], [1.0, 1.0]]]),
                 what="vision_positions_ramp(torch.zeros(1, 3, 2), scale=0.5)", atol=1e-6,
                 hint="position t adds scale * t to every feature of its row, counted from 0.")


@pytest.mark.parametrize("shape", [(3, 4), (1, 2, 3, 4)])
def test_vision_positions_ramp_rejects_an_x_that_is_not_three_dimensional(shape):
    with pytest.raises(ValueError):
        vision_positions_ramp(torch.zeros(shape))
