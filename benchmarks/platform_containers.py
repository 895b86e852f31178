"""The kit inside a platform's container: time per submission, and the timing tier's clock, side by side.

A real Docker container with Docker's default settings (so the grader is in tier C: a user per job), built
as the Gradescope bundle is (tests/helpers/docker_kit.py makes the image, as the tests do). Two tables, each from
one run:

1. Seconds per submission through ``run_autograder`` (a fresh container each, the reference), by container
   size: the whole machine, PrairieLearn's default (0.9 CPU, 2 GiB) and Gradescope's (0.5 CPU, 768 MB).
2. In a container of ``--cpus`` (default 0.5), the timing tier's verdicts over ``--repeats`` gradings of the
   reference, the materialised Shaw path and the row loop, with the wall clock (forced) and with the CPU-time
   clock the grader picks there: the spread of the ratios and how many verdicts differ from the usual one.

Needs Docker and root, like the tests: ``python benchmarks/platform_containers.py [--repeats 10] [--cpus 0.5]``.
"""

import argparse
import json
import statistics
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import docker_kit  # noqa: E402
from autograder.ways_in import gradescope  # noqa: E402
from autograder.course.build import REFERENCE, strip_markers  # noqa: E402
from test_timing_tier import MATERIALISED, ROW_LOOP  # noqa: E402

DRIVER = """
import json, re, sys
sys.path.insert(0, "/autograder/source")
from autograder.core import timing
from autograder.core.grade import Grader
if sys.argv[1] == "wall":
    timing.cpu_allowance = lambda: 64.0  # as if the container had whole CPUs: the wall clock
grader = Grader("positional_encodings", sandbox="required", secrets=["/autograder/source"])
rows = []
for name in sys.argv[3:]:
    for _ in range(int(sys.argv[2])):
        result = grader.grade("/work/" + name + ".py")
        shaw = next(test for test in result.tests if test.id == "shaw_speed")
        ratio = re.search(r"([0-9.]+)x the reference \\(", shaw.output)
        rows.append([name, shaw.score, float(ratio.group(1)) if ratio else None])
grader.close()
print("ROWS " + json.dumps(rows))
"""


def image():
    base = docker_kit.base_image()
    folder = Path(docker_kit.cache_dir()) / "bench-bundle"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(gradescope.main_bundle(folder / "autograder.zip", unit="positional_encodings")) as archive:
        archive.extractall(folder / "source")
    for name in ("setup.sh", "run_autograder"):
        (folder / "source" / name).chmod(0o755)
    script = "set -e; cd /autograder/source && bash ./setup.sh && cp run_autograder /autograder/run_autograder"
    return docker_kit.build_image(base, {"/autograder/source": folder / "source"}, script, "gradescope-bench")


def per_submission(tag, reference, runs):
    print("Seconds per submission through run_autograder (the reference, a fresh container each):")
    print(f"{'container':<34} {'median s':>9} {'min s':>7} {'max s':>7}  score")
    for label, cpus, memory in (("whole machine", None, None), ("PrairieLearn's default (0.9 CPU, 2g)", 0.9, "2g"),
                                ("Gradescope's default (0.5 CPU, 768m)", 0.5, "768m")):
        seconds, scores = [], set()
        for _ in range(runs):
            started = time.monotonic()
            ran = docker_kit.run(tag, "/autograder/run_autograder",
                                 files={"/autograder/submission/positional_encodings.py": reference.encode()},
                                 fetch=["/autograder/results/results.json"], cpus=cpus, memory=memory)
            seconds.append(time.monotonic() - started)
            scores.add(json.loads(ran.files["/autograder/results/results.json"])["score"])
        print(f"{label:<34} {statistics.median(seconds):>9.1f} {min(seconds):>7.1f} {max(seconds):>7.1f}  "
              f"{sorted(scores)}")


def clocks(tag, reference, repeats, cpus):
    variants = {"reference": reference, "materialised": reference + MATERIALISED, "row_loop": reference + ROW_LOOP}
    files = {f"/work/{name}.py": text.encode() for name, text in variants.items()}
    files["/work/driver.py"] = DRIVER.encode()
    print(f"\nThe timing tier in a container of {cpus} CPU, {repeats} gradings each (shaw_speed: points; the ratio to "
          "the reference):")
    print(f"{'clock':<6} {'submission':<13} {'points seen':<14} {'ratio min':>9} {'median':>7} {'max':>7}")
    for clock in ("wall", "cpu"):
        ran = docker_kit.run(tag, "chmod -R go-rwx /autograder/source /work && cd /work && /autograder/venv/bin/python "
                             f"driver.py {clock} {repeats} " + " ".join(variants),
                             files=files, cpus=cpus, memory="768m", timeout=1800)
        line = next((line for line in ran.stdout.splitlines() if line.startswith("ROWS ")), None)
        if line is None:
            print(f"{clock}: the driver failed:\n{ran.stdout[-2000:]}{ran.stderr[-2000:]}")
            continue
        rows = json.loads(line[5:])
        for name in variants:
            mine = [row for row in rows if row[0] == name]
            ratios = [row[2] for row in mine if row[2] is not None]
            points = {}
            for row in mine:
                points[row[1]] = points.get(row[1], 0) + 1
            seen = ", ".join(f"{score:g} x{count}" for score, count in sorted(points.items(), reverse=True))
            figures = (f"{min(ratios):>9.2f} {statistics.median(ratios):>7.2f} {max(ratios):>7.2f}" if ratios
                       else f"{'-':>9} {'-':>7} {'-':>7}")
            print(f"{clock:<6} {name:<13} {seen:<14} {figures}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10, help="gradings of each submission per clock")
    parser.add_argument("--runs", type=int, default=3, help="containers per size in the first table")
    parser.add_argument("--cpus", type=float, default=0.5, help="the container's CPU quota for the second table")
    args = parser.parse_args(argv)
    problem = docker_kit.problem()
    if problem:
        sys.exit(f"Docker cannot be used here: {problem}")
    tag = image()
    reference = strip_markers(REFERENCE.read_text(encoding="utf-8"))
    per_submission(tag, reference, args.runs)
    clocks(tag, reference, args.repeats, args.cpus)


if __name__ == "__main__":
    main()
