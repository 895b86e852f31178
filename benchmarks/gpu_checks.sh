#!/usr/bin/env bash
# The GPU checks, in one run, for a session with a CUDA GPU (a few minutes on one GPU):
#   1. the timing tier's CUDA tests (CUDA sizes, float32 and bfloat16, an index built on the CPU), the second unit's
#      (half precision turned in float32, both its paths timed on CUDA);
#   2. benchmarks/score_path.py on CUDA at the tier's sizes and at the default ones.
# Needs a CUDA build of torch in the environment: `python -c "import torch; print(torch.cuda.is_available())"`.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python}
"$python" -c "import torch, sys; print(torch.__version__, torch.cuda.get_device_name(0)); sys.exit(not torch.cuda.is_available())"
"$python" -m pytest -q -p no:cacheprovider -n 0 tests/test_timing_tier.py -k "gpu or cuda or loop or clocks"
"$python" -m pytest -q -p no:cacheprovider -n 0 tests/test_rotary_alibi_grading.py -k "gpu or score_paths_are_timed"
"$python" benchmarks/score_path.py --device cuda --batch 8 --heads 16 --head-dim 64 --lengths 1024 2048 --loop-max-length 1024
"$python" benchmarks/score_path.py --device cuda
