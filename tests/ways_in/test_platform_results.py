"""The platforms' results files, for generated results: every Gradescope entry at a legal visibility, no hidden
case in sight before its date, the score unchanged; PrairieLearn's format kept whatever the outputs say."""

from hypothesis import given, settings, strategies as st

from autograder.ways_in import gradescope, prairielearn
from autograder.units.positional_encodings import rubric
from autograder.core import grade, voice

SECRET = "sinusoidal_table(50, 16) is wrong at [0, 1]: expected 0.841471, got 0.540302"
SWAPPED = "sin and cos are swapped."
# (a row's text, its typed parts as grade.score_tests makes them): the grader's parts are read from the latter only
outputs = st.sampled_from([("", {}), (SECRET, {"kind": voice.WRONG}),
                           (SECRET + f"\nLikely mistake: {SWAPPED}",
                            {"kind": voice.WRONG, "diagnosis": voice.Diagnosis(mistakes=(SWAPPED,))}),
                           ("Passed: values.", {"kind": voice.PASSED}),
                           ("shaw_scores did not finish: it ran for more than 15 s.", {"kind": voice.DID_NOT_FINISH})])
fractions = st.sampled_from([0.0, 0.5, 1.0])


@st.composite
def results(draw):
    tests = [grade.TestResult(test.id, test.task, test.points * draw(fractions), test.points, output, **parts)
             for test in rubric.TESTS for output, parts in [draw(outputs)]]
    return grade.Result("x", "x.py", tests, draw(st.lists(st.sampled_from(["a note", SECRET]), max_size=2)))


@settings(max_examples=80, deadline=None)
@given(results())
def test_gradescope_keeps_the_score_and_shows_no_hidden_case_before_its_date(result):
    made = gradescope.to_results(result, "x.py")
    assert made["score"] == result.score and made["max_score"] == rubric.MAX_SCORE
    assert sum(test["score"] for test in made["tests"]) == result.score
    by_name = {test["name"]: test for test in made["tests"]}
    assert len(by_name) == len(made["tests"]) and len({test["number"] for test in made["tests"]}) == len(by_name)
    for test in result.tests:
        entry, rubric_test = by_name[test.id], rubric.TEST_BY_ID[test.id]
        assert entry["visibility"] == rubric_test.visibility and entry["visibility"] in rubric.VISIBILITIES
        details = by_name.get(f"{test.id} (details)")
        if test.passed or rubric_test.details == rubric_test.visibility:
            assert details is None and entry["output"] == test.output
        else:
            assert SECRET not in entry["output"]  # the case, expected against got: not before its date
            assert details["output"] == test.output and details["max_score"] == 0
            assert details["visibility"] == rubric_test.details
            if test.diagnosis.mistakes:
                assert f"Likely mistake: {SWAPPED}" in entry["output"]


@settings(max_examples=80, deadline=None)
@given(results())
def test_prairielearn_results_keep_their_format_and_hide_the_case(result):
    made = prairielearn.to_results(result, "x.py")
    assert made["gradable"] is True and 0 <= made["score"] <= 1
    assert abs(made["score"] - result.score / result.max_score) < 1e-12
    for test, entry in zip(result.tests, made["tests"]):
        assert entry["name"] == test.id and 0 <= entry["points"] <= entry["max_points"] == test.max_score
        if not test.passed and rubric.TEST_BY_ID[test.id].details != "visible":
            assert SECRET not in entry["message"]
        else:
            assert entry["message"] == test.output
