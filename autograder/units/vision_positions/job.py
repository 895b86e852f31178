"""The unit vision_positions's code that runs in a job, beside the student's: nothing yet but the empty tables.

It imports torch and nothing of the grader: its text is sent with each job. TODO, only where the unit needs it:
* STAND_INS, {name: function}: the grader's stand-in for a helper task, so that a task that calls another is
  graded on its own (a case's ``call_probe(..., substitute=...)`` names it, as a TimedPath's helpers do);
* VIEWS, {name: function}: what makes one tensor of a value a function returns (``call_probe(..., view=...)``);
* ``timing_inputs(spec, draw)`` and ``score_path(namespace, spec)``, for the rubric's TIMED_PATHS: the
  inputs of a timed path, each made by ``draw(*shape)`` (a fresh tensor of the spec's dtype on its device, new
  values each call), and the call of the path named ``spec["path"]``, as the
  code of ``namespace`` wrote it (docs/writing-a-unit.md shows both).
"""

STAND_INS = {}
VIEWS = {}
