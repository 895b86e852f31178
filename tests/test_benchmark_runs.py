"""The score-path benchmark runs and prints its side-by-side table (figures are read by people, not asserted)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_score_path_benchmark_prints_every_path_side_by_side():
    run = subprocess.run([sys.executable, "benchmarks/score_path.py", "--quick"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    for column in ("ref ms", "naive ms", "loop ms", "hf ms", "ref MiB", "hf MiB", "x ref"):
        assert column in run.stdout, column
    for title in ("Shaw relative-key scores", "T5 relative-bias scores", "RoPE scores", "ALiBi scores"):
        assert title in run.stdout, title
    assert sum(line.strip().startswith("64 |") for line in run.stdout.splitlines()) == 4  # a row per group
    assert "x bare" in run.stdout
