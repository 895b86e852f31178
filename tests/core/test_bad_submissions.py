"""Bad input gets a row and a clear message, and the grader keeps going with the rest of the class."""

import pytest

from autograder.units.positional_encodings import rubric
from conftest import by_test, task_scores

REPLACE_SINUSOIDAL = "\n\ndef sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=None):\n{body}\n"

CASES = {
    # name: (how the file is made from the reference, what must be said, tasks that must keep full marks)
    # The rest of a .py file that does not compile still runs: the error costs the statement it is in.
    "syntax_error": (lambda ref: ref.replace("def biased_scores(q, k, bias, *, scale=None):",
                                             "def biased_scores(q, k, bias, *, scale=None)"),
                     "SyntaxError", tuple(task for task in rubric.TASK_NAMES if task != "biased_scores")),
    "missing_function": (lambda ref: ref.replace("def t5_bias(", "def t5_bias_renamed("),
                         "t5_bias is not defined", ("sinusoidal", "shaw", "t5_bucket", "biased_scores")),
    "returns_a_list": (lambda ref: ref + REPLACE_SINUSOIDAL.format(body="    return [[0.0] * d_model] * num_positions"),
                       "should be a torch.Tensor, but it is a list", ("learned", "shaw", "t5_bias")),
    "returns_numpy": (lambda ref: ref + "\nimport numpy as np\n" + REPLACE_SINUSOIDAL.format(
                          body="    return np.zeros((num_positions, d_model))"),
                      "numpy.ndarray", ("learned",)),
    "wrong_shape": (lambda ref: ref + REPLACE_SINUSOIDAL.format(body="    return torch.zeros(d_model, num_positions)"),
                    "has shape (16, 50), expected (50, 16)", ("learned",)),
    "nan_output": (lambda ref: ref + REPLACE_SINUSOIDAL.format(body="    return torch.full((num_positions, d_model), float('nan'))"),
                   "contains NaN", ("learned",)),
    "raises": (lambda ref: ref + REPLACE_SINUSOIDAL.format(body="    return {}['missing']"),
               "raised KeyError", ("learned",)),
    "exit_at_import": (lambda ref: ref + "\nimport sys\nsys.exit(0)\n", "sys.exit()", rubric.TASK_NAMES),
    "exit_in_a_call": (lambda ref: ref + REPLACE_SINUSOIDAL.format(body="    import os\n    os._exit(0)"),
                       "exited with status 0", ("learned", "biased_scores")),
    "loop_at_import": (lambda ref: "while True:\n    pass\n" + ref, "did not finish loading", ()),
    "loop_in_a_call": (lambda ref: ref + REPLACE_SINUSOIDAL.format(body="    while True:\n        pass"),
                       "ran for more than", ("learned", "t5_bias", "biased_scores")),
    "crash_in_a_call": (lambda ref: ref + REPLACE_SINUSOIDAL.format(
                            body="    import os, signal\n    os.kill(os.getpid(), signal.SIGSEGV)"),
                        "killed by SIGSEGV", ("learned", "biased_scores")),
}


@pytest.fixture(scope="module")
def bad_results(quick_grader, tmp_path_factory, reference_text):
    folder = tmp_path_factory.mktemp("bad")
    paths = []
    for name, (make, _, _) in CASES.items():
        path = folder / f"{name}.py"
        path.write_text(make(reference_text))
        paths.append(path)
    broken = folder / "malformed.ipynb"
    broken.write_text('{"cells": [ {"cell_type": "code", "source": "x = 1"')
    paths.append(broken)
    latin1 = folder / "latin1.py"
    latin1.write_bytes("# caf\xe9\n".encode("latin-1"))
    paths.append(latin1)
    paths.append(folder / "does_not_exist.py")
    results = quick_grader.grade_many(paths, jobs=2)
    assert [result.name for result in results] == [path.stem for path in paths]  # a row for each, in order
    return {result.name: result for result in results}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_submission_gets_a_row_with_a_clear_message(bad_results, name):
    result = bad_results[name]
    _, says, keeps = CASES[name]
    assert len(result.tests) == len(rubric.TESTS)
    everything = "\n".join(result.notes + [test.output for test in result.tests])
    assert says in everything, everything
    scores = task_scores(result)
    for task in keeps:
        assert scores[task] == rubric.task_points(task), (task, [t.output for t in result.tests if t.task == task])


def test_a_syntax_error_costs_the_function_it_is_in_and_names_the_line(bad_results):
    result = bad_results["syntax_error"]
    scores = task_scores(result)
    assert scores["biased_scores"] == 0
    notes = "\n".join(result.notes)
    assert "SyntaxError" in notes and "def biased_scores(q, k, bias, *, scale=None)" in notes, notes


def test_exit_at_import_keeps_what_was_defined_before_it(bad_results):
    assert bad_results["exit_at_import"].score == 100


def test_a_loop_at_import_scores_0_and_the_class_goes_on(bad_results):
    assert bad_results["loop_at_import"].score == 0
    assert bad_results["loop_in_a_call"].score > 0


def test_a_malformed_notebook_says_where_its_json_breaks(bad_results):
    result = bad_results["malformed"]
    assert result.score == 0
    assert "not a valid notebook" in result.tests[0].output and "line 1" in result.tests[0].output


def test_unreadable_and_missing_files_get_a_row(bad_results):
    assert "not UTF-8" in bad_results["latin1"].tests[0].output
    assert bad_results["does_not_exist"].score == 0
    assert "Could not read" in bad_results["does_not_exist"].tests[0].output


def test_a_hang_in_one_task_costs_only_that_task(bad_results):
    tests = by_test(bad_results["loop_in_a_call"])
    assert not tests["sinusoidal_values"].passed
    assert tests["shaw_values"].passed
