"""The timing verdict's noise band: the reference graded against itself, many times (issue 25, point 8).

A submission that is the reference does the same work as the reference, so every ratio the timing tier reads for it
is noise: the two jobs' start, the machine's other work, the clock. This grades each unit's reference ``--runs`` times
through the real grader (its sandbox, its fork servers, its interleaved pairs), reads the median ratio each run got
on each timed path and dtype, and prints their spread beside the bands of the rubric (full points up to the first
band's limit). The band is set right when the largest ratio stays under the first limit with room to spare and every
run scores full.

    python benchmarks/timing_noise.py                        # 30 runs of each unit, one at a time
    python benchmarks/timing_noise.py --runs 60 --jobs 2     # two submissions graded at once (the CLI's --jobs)
    python benchmarks/timing_noise.py --busy 1               # beside one busy process (a second user, a kernel)
    python benchmarks/timing_noise.py --device cpu           # the CPU sizes even where CUDA is present

A GPU machine times on CUDA at the CUDA sizes (float32 and bfloat16) unless ``--device cpu`` is given.
"""

import argparse
import multiprocessing
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# A line of the tier's feedback: "Time (CPU, float32, B=1 H=4 L=384 dh=32): 1.07x the reference (... median of 5 ...".
TIME_LINE = re.compile(r"^Time \((?P<where>[^)]*)\): (?P<ratio>[0-9.]+)x the reference .*?median of (?P<pairs>\d+) ")


def _spin(stop):
    while not stop.is_set():
        pass


def _quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure_unit(name, runs, jobs):
    """{(path test id, where): [(ratio, pairs)]} and [(test id, score, max)] over ``runs`` gradings of the reference."""
    from autograder.core import units
    from autograder.core.grade import Grader

    unit = units.get(name)
    text = unit.finished_reference  # as a student's finished file reads: markers gone, borrowed code written in
    ratios, scores = {}, []
    with tempfile.TemporaryDirectory(prefix="timing-noise-") as folder:
        paths = []
        for run in range(runs):
            path = Path(folder) / f"reference_{run:03d}" / unit.file_names[0]
            path.parent.mkdir()
            path.write_text(text, encoding="utf-8")
            paths.append(path)
        grader = Grader(unit, sandbox="auto")
        try:
            started = time.perf_counter()
            results = grader.grade_many(paths, jobs=jobs)
            seconds = time.perf_counter() - started
        finally:
            grader.close()
    for result in results:
        for test in result.tests:
            if test.task != "timing":
                continue
            scores.append((test.id, test.score, test.max_score))
            for line in test.output.splitlines():
                found = TIME_LINE.match(line.strip())
                if found:
                    ratios.setdefault((test.id, found["where"]), []).append(
                        (float(found["ratio"]), int(found["pairs"])))
    return ratios, scores, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="gradings of the reference per unit (default 30)")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
    parser.add_argument("--busy", type=int, default=0, help="busy processes beside the grading (default 0)")
    parser.add_argument("--units", nargs="+", default=None, help="unit names (default: every unit with a timed path)")
    parser.add_argument("--device", choices=("auto", "cpu"), default="auto",
                        help="cpu: hide CUDA from the grader's jobs, so the CPU sizes are timed")
    args = parser.parse_args(argv)
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before torch is imported, here and in every job
    import torch
    from autograder.core import units
    from autograder.sandbox import limits

    names = args.units or [unit.name for unit in units.all_units() if unit.rubric.TIMED_PATHS]
    first_limit = limits.TIMING_BANDS[0][0]
    bands = ", ".join(f"{share:g} of the points up to {limit:g}x" for limit, share in limits.TIMING_BANDS)
    print(f"{os.cpu_count()} CPUs; torch {torch.__version__}; CUDA: "
          f"{torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none'}; {args.runs} runs per unit, "
          f"--jobs {args.jobs}, {args.busy} busy process(es) beside; bands: {bands}")
    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for spinner in spinners:
        spinner.start()
    worst, all_full = 0.0, True
    try:
        for name in names:
            ratios, scores, seconds = measure_unit(name, args.runs, args.jobs)
            full = sum(score >= top for _, score, top in scores)
            all_full &= full == len(scores)
            print(f"\n{name}: {args.runs} gradings in {seconds:.1f} s; timing tests scored full in {full} of "
                  f"{len(scores)}")
            print(f"  {'path':<12} {'where':<44} {'n':>3} {'min':>6} {'p10':>6} {'median':>6} {'p90':>6} "
                  f"{'max':>6} {'max/limit':>9} {'pairs':>6}")
            for (test_id, where), values in sorted(ratios.items()):
                read = [ratio for ratio, _ in values]
                pairs = statistics.median(pairs for _, pairs in values)
                worst = max(worst, max(read))
                print(f"  {test_id:<12} {where[:44]:<44} {len(read):>3} {min(read):>6.2f} {_quantile(read, 0.1):>6.2f} "
                      f"{statistics.median(read):>6.2f} {_quantile(read, 0.9):>6.2f} {max(read):>6.2f} "
                      f"{max(read) / first_limit:>9.2f} {pairs:>6g}")
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join(timeout=5)
    print(f"\nlargest ratio of the reference against itself: {worst:.2f}x, the full-points limit {first_limit:g}x "
          f"({first_limit / worst if worst else float('inf'):.1f} times the largest); every timing test full: "
          f"{'yes' if all_full else 'NO'}")
    return 0 if all_full else 1


if __name__ == "__main__":
    sys.exit(main())
