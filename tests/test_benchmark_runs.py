"""The score-path benchmark runs and prints its side-by-side table (figures are read by people, not asserted)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_score_path_benchmark_prints_reference_and_naive_side_by_side():
    run = subprocess.run([sys.executable, "benchmarks/score_path.py", "--quick"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "ref ms" in run.stdout and "naive ms" in run.stdout and "naive/ref" in run.stdout
    assert any(line.strip().startswith("64 |") for line in run.stdout.splitlines())
