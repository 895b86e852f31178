# nbgrader's configuration for the positional-encodings course. Run nbgrader in this folder,
# with the kit's environment first on PATH (nbgrader runs `alembic` from PATH):
#   PATH="$PWD/../.venv/bin:$PATH" nbgrader generate_assignment positional_encodings
# Each setting below answers a trap of nbgrader's; tests/ways_in/test_nbgrader_course.py checks them all.

import os
import warnings

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from sqlalchemy.exc import SAWarning
from nbgrader.converters import Autograde
from nbgrader.preprocessors import Execute, GetGrades, OverwriteCells, SaveAutoGrades

from autograder.sandbox import limits
from autograder.sandbox.kernel import SandboxedKernelManager
from autograder.ways_in.nbgrader_bridge import BoundedExecute, NamedContents, TrustedGrades
from autograder.ways_in.nbgrader_inert import ClearHiddenTestsInFeedback, MakeInert, OfflineMath, OverwriteCellsQuietly

c = get_config()  # noqa: F821  (nbgrader provides get_config)

# The course's id (each unit is an assignment of it, named after the unit: autograder/units/).
c.CourseDirectory.course_id = "positional_encodings"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))  # this folder, wherever nbgrader is run

# The stub left in each solution cell by generate_assignment: say what to do, not just "not implemented".
c.ClearSolutions.code_stub = {
    "python": '# YOUR CODE HERE\nraise NotImplementedError("not written yet: replace this line with your code")',
}

# The default 30 s per cell is too tight for a cold `import torch` on a slow grading machine.
# A cell that runs past the limit is interrupted and the rest of the notebook still runs.
c.Execute.timeout = limits.NOTEBOOK_CELL_SECONDS
c.Execute.interrupt_on_timeout = True
# Short tracebacks (the exception line only), so a failing hidden check shows its message and
# never the hidden code that raised it. The first argument is nbgrader's own default.
c.Execute.extra_arguments = ["--HistoryManager.hist_file=:memory:", "--InteractiveShell.xmode=Minimal"]

# nbgrader runs the notebook in a kernel with the instructor's rights, and by default one notebook can
# stop it: when its kernel dies (os._exit, a crash) or ignores the interrupt, nbgrader gives up on the
# whole submission and saves no grades, and a function that loops forever costs the cell limit in every
# cell that calls it. BoundedExecute (in place of Execute, below) gives the whole notebook this budget, goes on
# to the grades when the kernel dies or hangs, caps each cell's output as it arrives, limits the kernel's
# memory and kills whatever it leaves running (autograder/ways_in/nbgrader_bridge.py).
c.BoundedExecute.notebook_seconds = limits.NOTEBOOK_SECONDS

# The kernel runs with the instructor's rights by default: the student's code in it could rewrite
# gradebook.db, the grader's files or another student's notebook, or start a process that does so
# later. Here it runs under bubblewrap, as the grader's worker does: no network, the notebook's folder
# read-only, the grader and the reference out of sight (autograder/sandbox/kernel.py).
c.BoundedExecute.kernel_manager_class = SandboxedKernelManager

# A student who deletes a graded cell is still graded on it: the cell is put back from the gradebook.
c.OverwriteCells.add_missing_cells = True
# Each locked cell is put back from the gradebook, as nbgrader does; OverwriteCellsQuietly first gives a cell
# that is exactly as released its hidden tests back, so nbgrader's checksum warning is left for a cell a student
# did edit (nbgrader warns for every hidden test of every submission otherwise: autograder/ways_in/nbgrader_inert.py).
c.Autograde.sanitize_preprocessors = [OverwriteCellsQuietly if step is OverwriteCells else step
                                      for step in Autograde.class_traits()["sanitize_preprocessors"].default()]

# One warning of SQLAlchemy's, narrowly: nbgrader 0.9's Gradebook.add_submission makes each submission's rows from
# the student's and the assignment's, reads their relationships, and only then adds the submission to its session
# (nbgrader/api.py). SQLAlchemy 2 no longer adds an object along a backref, so its autoflush says the add "will not
# proceed", once per row, though nbgrader's own add follows and the gradebook holds every row
# (tests/ways_in/test_quiet_runs.py checks both). SQLAlchemy 1.4 would not warn, but the alembic that nbgrader runs needs 2.
warnings.filterwarnings("ignore", category=SAWarning, module=r"nbgrader\.api$",
                        message=r"Object of type <Submitted(Assignment|Notebook)> not in session, add operation along "
                                r"'(Student|Assignment|Notebook)\.submissions' will not proceed")

# Every non-notebook file of the source folder (checks.py) is put back over the student's copy at
# grading time, so an edited checks.py cannot weaken the visible checks. No file is excluded.
c.Autograde.exclude_overwriting = {}

# Feedback without the hidden tests: by default nbgrader's feedback shows the graded cells as they
# ran, hidden regions included. ClearHiddenTests removes them before the HTML is written.
# nbconvert copies a notebook's HTML, scripts and javascript: links into the page as they are; MakeInert
# cleans them out of the feedback (nh3), as it did out of the autograded notebook (below), so that a notebook
# graded before it was added is inert too (autograder/ways_in/nbgrader_inert.py).
# NamedContents puts a contents list that names each test at the top (nbgrader's own calls each "Test cell").
# OfflineMath writes each formula as MathML, which browsers draw themselves: nbconvert leaves the TeX for
# MathJax, loaded from a CDN, so a student reading the feedback offline would see raw TeX.
# The feedback page loads nothing from the network: nbgrader's template loads MathJax from a CDN, which a
# machine without the internet cannot reach and which OfflineMath (below) makes needless. The kit's template
# (autograder/ways_in/templates/kit_feedback) is nbgrader's, with nbconvert's MathJax macro replaced by one that
# writes nothing; nbgrader's template folder stays on the path, since the kit's is based on it.
import nbgrader as _nbgrader  # noqa: E402
import autograder.ways_in as _ways_in  # noqa: E402

c.HTMLExporter.template_name = "kit_feedback"
c.HTMLExporter.extra_template_basedirs = [
    os.path.join(os.path.dirname(_nbgrader.__file__), "server_extensions", "formgrader", "templates"),
    os.path.join(os.path.dirname(_ways_in.__file__), "templates")]
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTestsInFeedback, MakeInert, OfflineMath, NamedContents,
                                    CSSHTMLHeaderPreprocessor]

# The grade of each graded cell comes from the kit's grader, run out of the student's kernel on the
# notebook's code (autograder/ways_in/nbgrader_bridge.py), just before nbgrader saves the grades; the notebook
# runs in the kernel under BoundedExecute. Right after it, MakeInert leaves nothing active in the notebook
# that autograde saves, which the formgrader shows the instructor: its scripts, HTML and javascript: links
# cleaned, from the student's markdown and from what the kernel printed. The list replaces nbgrader's whole
# list, so it is built from nbgrader's own default.
_steps = [BoundedExecute if step is Execute else step
          for step in Autograde.class_traits()["autograde_preprocessors"].default()]
_ran = _steps.index(BoundedExecute) + 1
_steps[_ran:_ran] = [MakeInert]
_save = _steps.index(SaveAutoGrades)
c.Autograde.autograde_preprocessors = _steps[:_save] + [TrustedGrades] + _steps[_save:]
