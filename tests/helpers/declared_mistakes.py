"""Submissions that make one declared mistake, for tests/course/test_self_checks_name_mistakes.py.

A declared mistake is a ``Mistake`` of a task's cases module: its words and its output at a call's inputs
(``check_at`` gives them at any call). The submission is the finished reference with the task's function replaced by
one that returns the mistake's output wherever the mistake is declared, and the reference's output elsewhere (and
raises wherever the reference does). It imports the kit from the repository, so it runs in a student folder only
with the repository on the path: a test's submission, never a student's.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def made(unit_name, name, words, right, args, kwargs):
    """What ``name`` returns when it makes the mistake of ``words``: the first declared output of those words at
    these inputs (in the reference's dtype and device; a pair, (cos, sin), where the reference returns one, whose
    check reads the two stacked), else the reference's own."""
    import torch

    from autograder.core import units
    from autograder.course.mistake_table import known_at

    result = right(*args, **kwargs)  # raises where the reference does
    _, mistakes = known_at(units.get(unit_name), name, args, kwargs)
    for mistake in mistakes:
        if mistake.explain != words:
            continue
        try:
            output = mistake.output()
        except Exception:  # noqa: BLE001  (not a mistake one can make at these inputs)
            continue
        if isinstance(result, torch.Tensor) and isinstance(output, torch.Tensor):
            return output.to(dtype=result.dtype, device=result.device)
        if isinstance(result, tuple) and isinstance(output, torch.Tensor) and len(output) == len(result):
            return tuple(part.to(dtype=right.dtype, device=right.device) for part, right in zip(output, result))
        if isinstance(result, float) and isinstance(output, torch.Tensor) and output.numel() == 1:
            return float(output)
    return result


def submission(unit, name, words):
    """The text of ``unit``'s finished reference with its function ``name`` making the mistake of ``words``."""
    return unit.finished_reference + f'''

import sys as _sys

_sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests" / "helpers")!r}]
import declared_mistakes as _declared  # noqa: E402

_right = {name}


def {name}(*args, **kwargs):
    return _declared.made({unit.name!r}, {name!r}, {words!r}, _right, args, kwargs)
'''
