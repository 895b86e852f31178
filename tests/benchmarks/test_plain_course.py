"""The benchmark's plain nbgrader course (benchmarks/class_throughput.py) is built from the kit's current hidden
cases, and the reference passes every one of its checks. It broke twice unseen: when cases began to pass a device
(the meta device) and tensors by keyword, the benchmark stopped before grading anything."""

import sys

from autograder.course.build import ROOT
from solutions import positional_encodings as ref

sys.path.insert(0, str(ROOT / "benchmarks"))
import class_throughput  # noqa: E402


def test_the_plain_course_builds_from_today_s_cases_and_the_reference_passes_every_check():
    notebook = class_throughput.plain_notebook()
    code = [cell["source"] for cell in notebook["cells"] if cell["cell_type"] == "code"]
    tests = [source for source in code if class_throughput.BEGIN_HIDDEN in source]
    assert len(tests) >= len([test for test in ref_tests() if test.task != "timing"]) > 0
    namespace = {}
    failed = []
    for source in code:
        try:
            exec(compile(source, "<plain course cell>", "exec"), namespace)
        except Exception as error:  # noqa: BLE001  (each failing cell is listed)
            failed.append(f"{type(error).__name__}: {str(error)[:300]}")
    assert not failed, failed
    assert callable(namespace.get("sinusoidal_table")) and namespace["sinusoidal_table"] is not ref.sinusoidal_table


def ref_tests():
    from autograder.core import units

    return units.get("positional_encodings").rubric.TESTS
