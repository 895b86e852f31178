"""Every nbgrader command loads the course's nbgrader_config.py, and with it the kit's preprocessors
(ways_in/nbgrader_bridge.py, nbgrader_inert.py, sandbox/kernel.py). Only ``autograde`` grades: the others
(generate_assignment, generate_feedback, export, db ...) must not pay for torch and the job's code at their start,
about 1.3 s of CPU each, which a course's instructor pays per command and CI per nbgrader test."""

import subprocess
import sys

from autograder.course.notebook import COURSE

LOAD = """
import sys
from traitlets.config.loader import PyFileConfigLoader
config = PyFileConfigLoader("nbgrader_config.py", path=sys.argv[1]).load_config()
steps = [step.__name__ for step in config.Autograde.autograde_preprocessors]
print(steps[0], "TrustedGrades" in steps, sorted(name for name in sys.modules
      if name.split(".")[0] == "torch" or name == "autograder.sandbox.worker")[:3])
"""


def test_loading_the_course_config_imports_no_torch_and_no_job_code():
    ran = subprocess.run([sys.executable, "-c", LOAD, str(COURSE)], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-3000:]
    # The config really loaded the kit's preprocessors, and nothing of torch came with them.
    assert ran.stdout.split() == ["BoundedExecute", "True", "[]"], ran.stdout
