"""A slip costs what its cell defines (DESIGN.md, invariant 10; issue 34, point 2): a helper that cannot be used is
replaced by its stand-in for its callers, whatever the reason it cannot, exactly as when it is left as the stub.

For every helper of every unit (found in the units' cases and timed paths: tests/helpers/slips.py), the callers' points
are the same whether the helper's cell holds the release's stub, code that does not compile, code that raises
before or while the helper is defined, no definition of it, a name bound to something that cannot be called, or
a wrong function; and the callers score full, since their own code is the finished one. Through the kit's grader
(notebooks and .py files), nbgrader's in-kernel checks (``hidden_check``) and, in test_nbgrader_slips.py,
``nbgrader autograde`` itself. The timing tier is run with ``timing_mode="give"`` here (the rule: which paths are
timed, with which stand-ins), and for real, on the CPU, for the helpers of timed paths.

Before the fix, a long_context notebook whose ntk_inverse_frequencies cell did not compile scored 71, and 87 with
the cell left as the stub: the stand-in went in only where the helper's name was bound.
"""

import contextlib
import io
import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import slips
from autograder.core import units
from autograder.core.grade import Grader
from autograder.intake.load import load

HELPERS = slips.helpers()
IDS = [f"{helper.unit}:{helper.name}" for helper in HELPERS]
TIMED = [helper for helper in HELPERS if units.get(helper.unit).rubric.TIMING.name in helper.callers]
RUNS = settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def test_every_unit_s_helpers_are_found_with_their_callers():
    # The list is derived from the units; this checks that the derivation finds what the units' rubrics and cases say.
    found = {(helper.unit, helper.name): set(helper.callers) for helper in HELPERS}
    assert found[("long_context", "ntk_inverse_frequencies")] == {"dynamic_ntk_inverse_frequencies"}
    assert found[("positional_encodings", "clipped_relative_positions")] == {"shaw", "timing"}
    assert found[("positional_encodings", "t5_relative_position_bucket")] == {"t5_bias", "timing"}
    assert found[("rotary_alibi", "rotary_angles")] == {"apply_rotary", "rope_scores"}
    assert found[("rotary_alibi", "apply_rotary")] == {"rope_scores"}
    assert found[("rotary_alibi", "alibi_slopes")] == {"timing"}
    for helper in HELPERS:
        rubric = units.get(helper.unit).rubric
        assert helper.task not in helper.callers and set(helper.callers) <= set(rubric.TASK_BY_NAME), helper


class Class:
    """One grader per unit (``timing_mode``), and each unit's baseline: the helper's cell as the release's stub."""

    def __init__(self, folder, timing_mode="give"):
        self.folder, self.timing_mode, self.graders, self.baselines = folder, timing_mode, {}, {}
        self.count = itertools.count()

    def grader(self, unit_name):
        if unit_name not in self.graders:
            self.graders[unit_name] = Grader(unit_name, sandbox="auto", timing_mode=self.timing_mode)
        return self.graders[unit_name]

    def write(self, helper, text, suffix):
        """A student's folder holding the finished submission with ``text`` in ``helper``'s cell or function."""
        unit = units.get(helper.unit)
        folder = self.folder / f"student{next(self.count)}"
        folder.mkdir()
        path = folder / f"{unit.module_name}{suffix}"
        if suffix == ".ipynb":
            path.write_text(json.dumps(slips.filled_notebook(helper.unit, slips.source_notebook(helper.unit), text,
                                                             helper.name)))
        else:
            path.write_text(slips.py_file(helper.unit, helper.name, text))
        return folder

    def grade(self, helper, text, suffix):
        return self.grader(helper.unit).grade(self.write(helper, text, suffix))

    def baseline(self, helper, suffix):
        key = (helper, suffix)
        if key not in self.baselines:
            self.baselines[key] = self.grade(helper, slips.stub_of(helper.unit, helper.name), suffix)
        return self.baselines[key]

    def close(self):
        for grader in self.graders.values():
            grader.close()


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    made = Class(tmp_path_factory.mktemp("slips"))
    yield made
    made.close()


def assert_costs_its_own_task(helper, slip, result, baseline):
    """The helper's own task at 0 (but for a wrong helper), every other test as with the stub, the callers' full."""
    said = f"{helper.unit}: {helper.name}'s cell holds {slip.kind} ({slip.how})"
    timing = units.get(helper.unit).rubric.TIMING.name
    expected = {test.id: test.score for test in baseline.tests}
    for test in result.tests:
        if test.task == helper.task:
            assert slip.kind == "wrong" or test.score == 0, (said, test.id, test.output)
            continue
        assert test.score == expected[test.id], (said, test.id, test.output)
        if test.task in helper.callers and test.task != timing:
            assert test.score == test.max_score, (said, test.id, test.output)
            assert "is not defined" not in test.output, (said, test.id, test.output)


@pytest.mark.parametrize("helper", HELPERS, ids=IDS)
@RUNS
@given(data=st.data())
def test_a_helper_that_cannot_be_used_costs_its_own_task_only_in_a_notebook(graded_class, helper, data):
    slip = data.draw(slips.slips(helper))
    result = graded_class.grade(helper, slip.text, ".ipynb")
    assert_costs_its_own_task(helper, slip, result, graded_class.baseline(helper, ".ipynb"))


@pytest.mark.parametrize("helper", HELPERS, ids=IDS)
def test_a_syntax_error_in_a_helper_s_cell_costs_its_own_task_only(graded_class, helper):
    """The issue's own case, for every helper: the cell does not compile (the def's colon left out)."""
    slip = next(slips.Slip("syntax", how, text) for how, text in slips.syntax_errors(
        slips.function_source(slips.finished(helper.unit), helper.name)).items() if "colon" in how)
    result = graded_class.grade(helper, slip.text, ".ipynb")
    assert_costs_its_own_task(helper, slip, result, graded_class.baseline(helper, ".ipynb"))


def test_the_issue_s_notebook_scores_87_as_with_the_stub(graded_class):
    helper = next(helper for helper in HELPERS if helper.name == "ntk_inverse_frequencies")
    broken = slips.function_source(slips.finished(helper.unit), helper.name).replace("):", ")", 1)
    result = graded_class.grade(helper, broken, ".ipynb")
    rubric = units.get(helper.unit).rubric
    # The rubric's figures: everything but NTK's own 13 points.
    assert rubric.task_points("ntk_inverse_frequencies") == 13 and rubric.MAX_SCORE == 100
    assert result.score == 87, [(test.id, test.output) for test in result.tests if not test.passed]
    assert result.task_score("dynamic_ntk_inverse_frequencies") == rubric.task_points("dynamic_ntk_inverse_frequencies")
    assert any("SyntaxError" in note for note in result.notes), result.notes  # the error is still named


@pytest.mark.parametrize("helper", HELPERS, ids=IDS)
@RUNS
@given(data=st.data())
def test_in_a_py_file_a_helper_that_does_not_compile_costs_its_own_task_only(graded_class, helper, data):
    """A .py file: a statement that does not compile is set apart, and the rest of the file runs."""
    slip = data.draw(slips.slips(helper, slips.PY_KINDS))
    result = graded_class.grade(helper, slip.text, ".py")
    assert_costs_its_own_task(helper, slip, result, graded_class.baseline(helper, ".py"))


# nbgrader's checks in the kernel (a course without the kit's nbgrader config): the same probes and stand-ins, run on
# the notebook's namespace as the kernel built it, cell by cell.

def kernel_namespace(notebook_path):
    """The namespace a kernel builds from the notebook's code cells, each run on its own as IPython runs it: a cell
    that does not compile runs nothing, one that raises stops there; its text is in the history (``_ih``)."""
    namespace = {"__name__": "__main__", "_ih": [""]}
    for chunk in load(notebook_path).chunks:
        namespace["_ih"].append(chunk["source"])
        with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
            exec(compile(chunk["source"], chunk["label"], "exec"), namespace)
    return namespace


@pytest.mark.parametrize("helper", HELPERS, ids=IDS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_in_the_kernel_a_helper_that_cannot_be_used_costs_its_callers_nothing(graded_class, helper, data):
    from autograder.ways_in import nbgrader_bridge

    slip = data.draw(slips.slips(helper))
    namespace = kernel_namespace(next(graded_class.write(helper, slip.text, ".ipynb").iterdir()))
    rubric = units.get(helper.unit).rubric
    for task in helper.callers:
        for test in (test for test in rubric.tests_of(task) if task != rubric.TIMING.name):
            result = nbgrader_bridge.run_test(test.id, namespace)
            assert result.passed, (helper.name, slip.kind, slip.how, test.id, result.output)


@pytest.mark.parametrize("helper", TIMED, ids=[f"{helper.unit}:{helper.name}" for helper in TIMED])
def test_in_the_kernel_a_timed_path_runs_with_the_stand_in_of_a_missing_helper(graded_class, helper):
    from autograder.ways_in import nbgrader_bridge

    rubric = units.get(helper.unit).rubric
    for text in ("", slips.stub_of(helper.unit, helper.name)):  # never defined, and the stub that raises
        namespace = kernel_namespace(next(graded_class.write(helper, text, ".ipynb").iterdir()))
        for path in (path for path in rubric.TIMED_PATHS if helper.name in {name for _, name, _ in path.helpers}):
            result = nbgrader_bridge.run_test(path.test, namespace)
            assert result.score > 0, (helper.name, repr(text[:40]), path.test, result.output)


# The timing tier for real (on the CPU here): a path whose helper is missing or blank is timed with the stand-in.

@pytest.fixture(scope="module")
def timed_class(tmp_path_factory):
    made = Class(tmp_path_factory.mktemp("timed-slips"), timing_mode="cpu")
    yield made
    made.close()


@pytest.mark.parametrize("helper", TIMED, ids=[f"{helper.unit}:{helper.name}" for helper in TIMED])
def test_a_timed_path_is_timed_with_the_stand_in_whatever_became_of_its_helper(timed_class, helper):
    rubric = units.get(helper.unit).rubric
    paths = [path for path in rubric.TIMED_PATHS if helper.name in {name for _, name, _ in path.helpers}]
    colon = slips.function_source(slips.finished(helper.unit), helper.name).replace("):", ")", 1)
    for kind, text in (("stub", slips.stub_of(helper.unit, helper.name)), ("syntax", colon), ("never", "")):
        rows = {test.id: test for test in timed_class.grade(helper, text, ".ipynb").tests}
        for path in paths:
            output = rows[path.test].output
            assert f"stand-in for {helper.name} in its place" in output and "Time (" in output, (kind, output)
            assert "raised" not in output, (kind, output)
