"""The unit vision_positions's sample class, for `python -m autograder demo --unit vision_positions`.

TODO: replace it with typical mistakes of the unit's tasks. Each is the reference with one line changed: the
sample's file name, the task it should lose points on, words the feedback must say, the text as the reference
has it (found exactly once), and as the student wrote it. `check-unit` grades each.
"""

from autograder.core.rubric import SampleMistake

MISTAKES = (
    SampleMistake("counted_from_one", "vision_positions_ramp", "counted from 1",
                  "positions = torch.arange(x.shape[1], device=x.device, dtype=x.dtype)",
                  "positions = torch.arange(1, x.shape[1] + 1, device=x.device, dtype=x.dtype)"),
)
