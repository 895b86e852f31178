"""Shaw et al. relative-key scores: the gather path against the materialised path.

What is measured
----------------
Two ways to compute the same (B, H, L, L) attention scores with Shaw et al.'s
clipped relative keys (``k`` = max relative position, ``index`` = the (L, L)
table of ``clipped_relative_positions``):

* ``reference``: ``solutions.positional_encodings.shaw_scores``. It computes
  ``q @ rel_k.T`` once, (B, H, L, 2k+1), and gathers entry ``index[i, j]``;
  its extra memory is O(L * (2k+1)) on top of the score-sized tensors.
* ``naive``: ``rel = rel_k[index]``, a (L, L, dh) tensor of relative keys,
  then ``scale * (q @ k^T + einsum('bhqd,qkd->bhqk', q, rel))``. The ``rel``
  tensor alone is L * L * dh * 4 bytes (1 GiB for L = 2048, dh = 64).

Both paths are checked to agree (``torch.allclose``) before anything is timed.

* time: the median wall time of one call over ``--repeats`` repetitions, after
  ``--warmup`` calls. Repetitions of the two paths are interleaved (the order
  alternates every repetition), so machine noise hits both alike. CPU: wall
  clock (``time.perf_counter``) with ``--threads`` torch threads (default 1).
  CUDA: CUDA events, synchronised.
* peak memory: how far memory rises above what was live just before the call,
  the returned scores included. CPU: one FRESH subprocess per (path, L)
  (this script re-invoked with ``--measure-memory PATH L``; ``--memory-jobs``
  of them at once, all before any timing starts). It allocates the
  inputs, makes a tiny warm-up call of the same path, and then resets the
  kernel's resident-set high-water mark (``echo 5 > /proc/self/clear_refs``)
  and reads ``VmHWM`` from ``/proc/self/status`` after the call; the figure is
  VmHWM minus the resident set at the reset. Why not ``ru_maxrss``: a child
  started by ``subprocess`` inherits its parent's ``ru_maxrss`` (exec records
  the old address space's peak), so the child's peak can read as zero growth;
  VmHWM after a reset does not have this problem. The child also runs with
  ``MALLOC_MMAP_THRESHOLD_=65536`` so every large tensor is a fresh mmap and
  never reuses heap memory freed before the baseline (which would undercount).
  Where ``/proc/self/clear_refs`` is not available, it falls back to the
  ``ru_maxrss`` increase (less reliable, see above; the table says which).
  CUDA: ``torch.cuda.max_memory_allocated`` minus ``memory_allocated`` before
  the call, in-process.

How to read the table
---------------------
One row per L. ``naive/ref`` > 1 means the materialised path is slower (time)
or needs more memory (peak) than the reference. ``out`` is the size of one
(B, H, L, L) float32 score tensor, for context: the reference's peak is a few
of these (content, relative, their sum and the scaled result are all alive at
once), while the naive peak adds the L * L * dh relative-key tensor on top.

Run from anywhere: ``python benchmarks/score_path.py`` (``--help`` for the
flags; ``--quick`` for tiny sizes, used by smoke tests: a few seconds, most of
it spent importing torch in this process and in the memory subprocesses).
"""

import argparse
import gc
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402

from solutions.positional_encodings import clipped_relative_positions, shaw_scores  # noqa: E402

DEFAULTS = dict(lengths=[256, 1024, 2048], batch=1, heads=8, head_dim=64, max_rel=16, repeats=5, warmup=1)
QUICK = dict(lengths=[64], batch=1, heads=2, head_dim=16, max_rel=4, repeats=3, warmup=1)
MIB = 1024.0 * 1024.0


def naive_scores(q, k, rel_k, max_relative_position, *, scale=None):
    """The materialised path: build the (Lq, Lk, dh) relative keys, then einsum."""
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    index = clipped_relative_positions(q.shape[-2], k.shape[-2], max_relative_position, device=q.device)
    rel = rel_k.to(q.dtype)[index]  # (Lq, Lk, dh)
    return scale * (q @ k.transpose(-2, -1) + torch.einsum("bhqd,qkd->bhqk", q, rel))


PATHS = {"reference": shaw_scores, "naive": naive_scores}


def make_inputs(batch, heads, length, head_dim, max_rel, device, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, length, head_dim, generator=gen)
    k = torch.randn(batch, heads, length, head_dim, generator=gen)
    rel_k = torch.randn(2 * max_rel + 1, head_dim, generator=gen)
    return q.to(device), k.to(device), rel_k.to(device)


# --------------------------------------------------------------------------- memory (CPU)


def _proc_status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _reset_hwm():
    """Reset VmHWM to the current RSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        # Did it take? Right after a reset the high-water mark is the current RSS.
        return _proc_status_kib("VmHWM") <= _proc_status_kib("VmRSS") + 1024
    except (OSError, KeyError):
        return False


def _maxrss_bytes():
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # bytes on macOS, KiB on Linux


def measure_memory_child(args):
    """Run inside a fresh process: peak bytes above baseline for one (path, L)."""
    torch.set_num_threads(args.threads)
    fn = PATHS[args.measure_memory[0]]
    length = int(args.measure_memory[1])
    q, k, rel_k = make_inputs(args.batch, args.heads, length, args.head_dim, args.max_rel, "cpu")
    small = make_inputs(args.batch, args.heads, min(length, 16), args.head_dim, args.max_rel, "cpu")
    out = fn(*small, args.max_rel)  # warm-up: load kernels, start threads
    del out, small
    gc.collect()
    if _reset_hwm():
        method = "VmHWM"
        base = _proc_status_kib("VmRSS") * 1024
        out = fn(q, k, rel_k, args.max_rel)
        peak = _proc_status_kib("VmHWM") * 1024
    else:
        method = "ru_maxrss"
        base = _maxrss_bytes()
        out = fn(q, k, rel_k, args.max_rel)
        peak = _maxrss_bytes()
    del out
    print(json.dumps({"peak_bytes": max(peak - base, 0), "method": method}))


def measure_memory_cpu(path, length, args):
    cmd = [
        sys.executable, str(Path(__file__).resolve()), "--measure-memory", path, str(length),
        "--batch", str(args.batch), "--heads", str(args.heads), "--head-dim", str(args.head_dim),
        "--max-rel", str(args.max_rel), "--threads", str(args.threads),
    ]  # fmt: skip
    env = dict(os.environ)
    env.setdefault("MALLOC_MMAP_THRESHOLD_", "65536")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"memory child for {path} L={length} failed:\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return result["peak_bytes"], result["method"]


def measure_memory_cuda(fn, inputs, max_rel):
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = fn(*inputs, max_rel)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return peak


# --------------------------------------------------------------------------- timing


def time_once(fn, inputs, max_rel, device):
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        out = fn(*inputs, max_rel)
        end.record()
        torch.cuda.synchronize()
        seconds = start.elapsed_time(end) / 1000.0
    else:
        t0 = time.perf_counter()
        out = fn(*inputs, max_rel)
        seconds = time.perf_counter() - t0
    del out
    return seconds


def time_interleaved(inputs, max_rel, device, warmup, repeats):
    names = list(PATHS)
    for _ in range(warmup):
        for name in names:
            time_once(PATHS[name], inputs, max_rel, device)
    times = {name: [] for name in names}
    for rep in range(repeats):
        for name in names if rep % 2 == 0 else names[::-1]:
            times[name].append(time_once(PATHS[name], inputs, max_rel, device))
    return {name: statistics.median(ts) for name, ts in times.items()}


def check_agree(inputs, max_rel):
    ref = shaw_scores(*inputs, max_rel)
    naive = naive_scores(*inputs, max_rel)
    if not torch.allclose(ref, naive, rtol=1e-4, atol=1e-4):
        err = (ref - naive).abs().max().item()
        raise AssertionError(f"reference and naive scores disagree (max abs diff {err:.3g})")


# --------------------------------------------------------------------------- driver


def run_device(device, args):
    cpu_mem = {}
    if device == "cpu":
        # All CPU memory children first, before any timing (they would steal CPU
        # from it); --memory-jobs of them at a time, each its own fresh process.
        tasks = [(name, length) for length in args.lengths for name in PATHS]
        with ThreadPoolExecutor(max_workers=max(1, args.memory_jobs)) as pool:
            results = pool.map(lambda t: measure_memory_cpu(t[0], t[1], args), tasks)
            cpu_mem = dict(zip(tasks, results))
    rows = []
    for length in args.lengths:
        mem = {}
        method = "max_memory_allocated"
        if device == "cpu":
            for name in PATHS:
                mem[name], method = cpu_mem[(name, length)]
        inputs = make_inputs(args.batch, args.heads, length, args.head_dim, args.max_rel, device)
        check_agree(inputs, args.max_rel)
        if device == "cuda":
            for name in PATHS:
                mem[name] = measure_memory_cuda(PATHS[name], inputs, args.max_rel)
        med = time_interleaved(inputs, args.max_rel, device, args.warmup, args.repeats)
        del inputs
        gc.collect()
        rows.append(
            dict(
                device=device,
                length=length,
                time_ref=med["reference"],
                time_naive=med["naive"],
                mem_ref=mem["reference"],
                mem_naive=mem["naive"],
                out_bytes=args.batch * args.heads * length * length * 4,
                mem_method=method,
            )
        )
    return rows


def _ratio(a, b):
    return f"{a / b:.2f}x" if b > 0 else "n/a"


def print_table(rows, args, device):
    threads = f"threads={args.threads}" if device == "cpu" else "CUDA events"
    print(
        f"Shaw scores, reference (gather) vs naive (materialised (L, L, dh)) | device={device} {threads} | "
        f"B={args.batch} H={args.heads} dh={args.head_dim} k={args.max_rel} | "
        f"median of {args.repeats} interleaved reps after {args.warmup} warm-up | "
        f"peak memory: {rows[0]['mem_method']} | torch {torch.__version__}"
    )
    header = (
        f"{'L':>6} | {'ref ms':>9} {'naive ms':>9} {'naive/ref':>9} | "
        f"{'ref MiB':>9} {'naive MiB':>9} {'naive/ref':>9} | {'out MiB':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['length']:>6} | {r['time_ref'] * 1e3:>9.2f} {r['time_naive'] * 1e3:>9.2f} "
            f"{_ratio(r['time_naive'], r['time_ref']):>9} | "
            f"{r['mem_ref'] / MIB:>9.2f} {r['mem_naive'] / MIB:>9.2f} "
            f"{_ratio(r['mem_naive'], r['mem_ref']):>9} | {r['out_bytes'] / MIB:>8.2f}"
        )
    print("out MiB: one (B, H, L, L) float32 score tensor. Peak: rise above the live baseline, output included.")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lengths", type=int, nargs="+", help=f"sequence lengths L (default {DEFAULTS['lengths']})")
    p.add_argument("--batch", type=int, help=f"B (default {DEFAULTS['batch']})")
    p.add_argument("--heads", type=int, help=f"H (default {DEFAULTS['heads']})")
    p.add_argument("--head-dim", type=int, help=f"dh (default {DEFAULTS['head_dim']})")
    p.add_argument("--max-rel", type=int, help=f"k, max relative position (default {DEFAULTS['max_rel']})")
    p.add_argument("--repeats", type=int, help=f"timed repetitions per path (default {DEFAULTS['repeats']})")
    p.add_argument("--warmup", type=int, help=f"untimed calls per path first (default {DEFAULTS['warmup']})")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--memory-jobs", type=int, default=2,
                   help="CPU memory-measuring subprocesses run at once (default 2)")  # fmt: skip
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="auto: the CPU, plus CUDA when available (default)")  # fmt: skip
    p.add_argument("--quick", action="store_true", help=f"tiny sizes for a smoke test: {QUICK}")
    p.add_argument("--measure-memory", nargs=2, metavar=("PATH", "L"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    base = QUICK if args.quick else DEFAULTS
    for key, value in base.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.measure_memory and args.measure_memory[0] not in PATHS:
        p.error(f"--measure-memory PATH must be one of {list(PATHS)}")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.measure_memory:
        measure_memory_child(args)
        return None
    torch.set_num_threads(args.threads)
    if args.device == "auto":
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    else:
        devices = [args.device]
    if "cuda" in devices and not torch.cuda.is_available():
        raise SystemExit("--device cuda asked for, but torch.cuda.is_available() is False")
    all_rows = []
    for device in devices:
        rows = run_device(device, args)
        print_table(rows, args, device)
        all_rows.extend(rows)
    return all_rows


if __name__ == "__main__":
    main()
