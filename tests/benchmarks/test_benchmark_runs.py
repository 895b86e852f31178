"""The score-path benchmark runs and prints its side-by-side table (figures are read by people, not asserted)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_score_path_benchmark_prints_every_path_side_by_side():
    """Through --allocators (the benchmark in a child process, with freed memory reused, then the table of x bare
    by allocator): what the default run prints is printed by that child."""
    run = subprocess.run([sys.executable, "benchmarks/score_path.py", "--quick", "--allocators", "reuse"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    for column in ("ref ms", "naive ms", "loop ms", "hf ms", "ref MiB", "hf MiB", "x ref"):
        assert column in run.stdout, column
    titles = {"shaw": "Shaw relative-key scores", "t5": "T5 relative-bias scores", "rope": "RoPE scores (rotate half)",
              "alibi": "ALiBi scores", "scaled_rope": "Scaled RoPE scores"}
    for title in titles.values():
        assert title in run.stdout, title
    assert sum(line.strip().startswith("64 |") for line in run.stdout.splitlines()) == 5  # a row per group
    assert run.stdout.count("freed memory reused (MALLOC_MMAP_MAX_=0, heap never trimmed)") == 5  # each table says which
    lines = run.stdout.split("by allocator, from the runs above")[1].strip().splitlines()
    assert lines[0].split() == ["path", "L", "|", "reuse"]
    rows = {tuple(line.split()[:2]): line.split()[3] for line in lines[2:]}
    assert sorted(rows) == sorted((group, "64") for group in titles)
    for (group, _), ratio in rows.items():  # the figure of its own table, carried over
        table = run.stdout.split(titles[group], 1)[1]
        row = next(line for line in table.splitlines() if line.strip().startswith("64 |"))
        assert row.split()[4] == ratio


def test_the_lesson_benchmark_prints_each_part_and_no_warning():
    """benchmarks/lesson_time.py runs the lesson in a real kernel and prints the seconds of each part; the kernel
    is shut down with the run (a kernel left running printed ipykernel's "Parent appears to have exited" when the
    benchmark ended), and nothing else reaches stderr."""
    run = subprocess.run([sys.executable, "benchmarks/lesson_time.py", "--quick", "--units", "rotary_alibi"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    timed = [line.split(" s  ", 1)[1] for line in run.stdout.splitlines() if " s  " in line]  # "  9.0 s  title"
    assert "8. Train short, test long" in timed and "1. Why rotate" in timed, run.stdout
    assert "rotary_alibi:" in run.stdout and "s in all" in run.stdout
    assert "WARNING" not in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_the_noise_benchmark_grades_every_units_reference_as_a_student_file():
    """benchmarks/timing_noise.py grades each unit's finished reference, the borrowed code of another unit written
    in (before, the third unit's file still imported solutions.rotary_alibi and every timing test read 0)."""
    from autograder.core import units

    timed = [unit.name for unit in units.all_units() if getattr(unit.rubric, "TIMED_PATHS", ())]
    run = subprocess.run([sys.executable, "benchmarks/timing_noise.py", "--runs", "1", "--device", "cpu",
                          "--units", *timed], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    for name in timed:
        line = next(line for line in run.stdout.splitlines() if line.startswith(f"{name}:"))
        assert "timing tests scored full in" in line and "full in 0 of" not in line, line
    assert "every timing test full: yes" in run.stdout, run.stdout
