#!/usr/bin/env bash
# The GPU checks, in one run, for a session with a CUDA GPU (a few minutes on one GPU):
#   1. the timing tier's CUDA tests (CUDA sizes, float32 and bfloat16, an index built on the CPU), the second unit's
#      (half precision turned in float32, both its paths timed on CUDA);
#   2. benchmarks/score_path.py on CUDA at the tier's sizes and at the default ones;
#   3. benchmarks/timing_noise.py: each unit's reference graded against itself 30 times on CUDA (the noise band).
# Every step runs even when one before it failed (a GPU session is short: one call should bring back every figure);
# the script exits non-zero when any step failed, and names it.
# Needs a CUDA build of torch in the environment: `python -c "import torch; print(torch.cuda.is_available())"`.
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python}
"$python" -c "import torch, sys; print(torch.__version__, torch.cuda.get_device_name(0)); sys.exit(not torch.cuda.is_available())" \
    || { echo "no CUDA GPU: nothing to check" >&2; exit 1; }
failed=()
step() {
    echo "== $*"
    local started=$SECONDS
    "$@" || failed+=("$*")
    echo "== $((SECONDS - started)) s"
}
step "$python" -m pytest -q -p no:cacheprovider -n 0 tests/core/test_timing_tier.py -k "gpu or cuda or loop or clocks"
step "$python" -m pytest -q -p no:cacheprovider -n 0 tests/units/rotary_alibi/test_rotary_alibi_grading.py -k "gpu or score_paths_are_timed"
step "$python" benchmarks/score_path.py --device cuda --batch 8 --heads 16 --head-dim 64 --lengths 1024 2048 --loop-max-length 1024
step "$python" benchmarks/score_path.py --device cuda
step "$python" benchmarks/timing_noise.py --runs 30 --jobs 4
if ((${#failed[@]})); then
    printf 'FAILED: %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "every GPU check passed"
