"""What the error model (autograder/core/mutants.py) costs a class: each unit's blind set of mistakes
(tests/submissions/blind/<unit>/mistakes, every file failing a task, most with no declared mistake to name
them) and its alternatives graded with the model and without it, alternately, in one run, and how many
mistakes each names.

    python benchmarks/error_model.py [--rounds 2] [--jobs 2] [--units positional_encodings,...]

Both rows use one seed (a class without a course secret): the model's outcomes are kept per seed, so a
mistake graded after another of the same task reuses their calls; ``--per-student`` draws a seed per file
instead (a course secret), the model's worst case. The timing tier is skipped ("give") in both rows: it does not
depend on the model.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.core import units  # noqa: E402
from autograder.core.grade import Grader  # noqa: E402

BLIND = ROOT / "tests" / "submissions" / "blind"


def files(unit_name, folder):
    unit = units.get(unit_name)
    paths = []
    for kind in ("mistakes", "alternatives"):
        for source in sorted((BLIND / unit_name / kind).glob("*.py")):
            path = folder / f"{kind}__{source.name}"
            path.write_text(unit.finished_reference + "\n\n" + source.read_text(encoding="utf-8"), encoding="utf-8")
            paths.append(path)
    return paths


def grade(unit_name, paths, model, jobs, per_student):
    grader = Grader(unit_name, sandbox="auto", timing_mode="give")
    if not model:
        grader.model = None
    try:
        start = time.perf_counter()
        if per_student:
            results = [grader.grade(path, seed=number + 1) for number, path in enumerate(paths)]
        else:
            results = grader.grade_many(paths, jobs=jobs)
        seconds = time.perf_counter() - start
    finally:
        grader.close()
    named = sum(any("Likely mistake" in test.output for test in result.tests if not test.passed)
                for result in results if result.name.startswith("mistakes__"))
    return seconds, named


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--units", default="positional_encodings,rotary_alibi,long_context")
    parser.add_argument("--per-student", action="store_true")
    options = parser.parse_args()
    print(f"{'unit':22s} {'files':>5s} {'without model':>14s} {'with model':>11s} {'ratio':>6s} "
          f"{'named without':>14s} {'named with':>11s}")
    with tempfile.TemporaryDirectory() as folder:
        for unit_name in options.units.split(","):
            paths = files(unit_name, Path(folder))
            times = {False: [], True: []}
            named = {}
            for _ in range(options.rounds):
                for model in (False, True):  # alternately, so that the machine's drift falls on both rows
                    seconds, named[model] = grade(unit_name, paths, model, options.jobs, options.per_student)
                    times[model].append(seconds)
            without, with_model = statistics.median(times[False]), statistics.median(times[True])
            mistakes = sum(path.name.startswith("mistakes__") for path in paths)
            print(f"{unit_name:22s} {len(paths):5d} {without:13.1f}s {with_model:10.1f}s {with_model / without:6.2f} "
                  f"{named[False]:>9d}/{mistakes:<4d} {named[True]:>6d}/{mistakes:<4d}")


if __name__ == "__main__":
    main()
