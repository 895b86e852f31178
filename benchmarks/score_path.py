"""The score path, side by side: the reference against the bare matrix product, the naive, looping and Hugging Face ways.

What is measured
----------------
Five computations of (B, H, L, L) attention scores with positions, each
in several ways, all checked to agree with the reference before anything is timed
(all but ``bare``, which leaves the position term out):

Every group:
* ``bare``: ``q @ k^T`` alone, the matrix product every score path contains: the
  floor a path is measured against (``ref x bare``: the reference's time over it).

Shaw et al. (relative keys, clipping distance k):
* ``reference``: ``solutions.positional_encodings.shaw_scores``: ``q @ rel_k.T``
  per distance, (B, H, L, 2k+1), written into one fresh (B, H, L, L) tensor (a
  strip of width 2k - 1 and two constant triangles, as rectangles of a view with
  row stride L + 1), then ``q @ k^T`` added in the product's kernel (``baddbmm_``).
* ``naive``: the (L, L, dh) relative keys ``rel_k[index]`` built, then einsum.
* ``loop``: a Python loop over query positions, each row vectorized.
* ``hf``: Hugging Face's relative-key score term (Wav2Vec2-BERT's
  ``_apply_relative_key_position_encoding``, BERT's ``relative_key`` scheme with
  the clipping of Shaw et al.; classic BERT dropped it in transformers 5),
  its distance table set to ``rel_k``, plus the scaled ``q @ k^T``.

RoPE (the second unit; the rotate-half layout, scale 1/sqrt(dh)):
* ``reference``: ``solutions.rotary_alibi.rope_scores(q, k, interleaved=False)``:
  q and k rotated once each (O(L dh)), the scale folded into q, one product.
* ``loop``: the rotation row by row in a Python loop over positions.
* ``hf``: LLaMA's ``LlamaRotaryEmbedding`` and ``apply_rotary_pos_emb``, then the product.

ALiBi (the second unit; the causal bias, scale 1/sqrt(dh)):
* ``reference``: ``alibi_bias(L, L, alibi_slopes(H))`` broadcast into the scores' own storage, then
  ``scale * q @ k^T`` added there in the product's kernel (``baddbmm_``, beta = 1), as the timing tier's ALiBi
  path runs it: no (B, H, L, L) tensor but the scores.
* ``loop``: the bias built row by row in a Python loop over query positions.
* ``hf``: BLOOM's ``build_alibi_tensor`` (``slope * j``, equal after the softmax), added to the scores.

T5 (a learned bias per distance bucket and head, scale 1 as in T5):
* ``reference``: ``biased_scores(q, k, t5_bias(L, L, table), scale=1.0)``; the
  buckets are computed once per distance j - i (2L - 1 of them), not per pair;
  the bias copied once from a strided view, then into the scores, where
  ``baddbmm_`` adds ``q @ k^T`` to it.
* ``loop``: the bias built row by row in a Python loop over query positions.
* ``hf``: ``T5Attention.compute_bias(L, L)`` (buckets per pair) plus ``q @ k^T``.

Scaled RoPE (the third unit's timed path; YaRN's frequencies for 4096 trained positions read 8 times further, and
its attention scale, made once outside the calls as the timing tier makes its frequencies):
* ``reference``: ``solutions.long_context.scaled_rope_scores(q, k, frequencies, attention_scale=...)``.
* ``loop``: the rotation row by row in a Python loop over positions. No Hugging Face column.

* time: the median wall time of one call over ``--repeats`` repetitions after
  ``--warmup`` calls, the paths interleaved (the order turns every repetition),
  under ``torch.no_grad()``. CPU: ``time.perf_counter`` with ``--threads``
  torch threads (default 1). CUDA: CUDA events around the call, synchronised.
* peak memory: how far memory rises above what was live just before the call,
  the returned scores included. CPU: one fresh process per (path, L) (this
  script again, ``--measure-memory``), which resets the kernel's resident
  high-water mark (``/proc/self/clear_refs``) and reads ``VmHWM`` after the
  call, with ``MALLOC_MMAP_THRESHOLD_=65536`` so each large tensor is a fresh
  mapping. CUDA: ``torch.cuda.max_memory_allocated`` above the memory allocated
  before the call.
* floor (CUDA only): the (B, H, L, L) float32 output written once, at the
  device's copy bandwidth measured in the same run (a 1 GiB clone): no score
  path can be faster than that.

The CPU allocator (``--allocators default thp reuse``): on the CPU much of a large
call can be the kernel's first touch of fresh memory. glibc maps every block of
32 MiB or more anew and each 4 KiB page of it then faults; the bare product pays
that once (its output), a path that returns a bias and then the scores pays it
twice. ``thp`` runs the same benchmark with ``THP_MEM_ALLOC_ENABLE=1``
(PyTorch's switch for transparent huge pages on large CPU allocations, where the
kernel allows them by ``madvise``), where a fault brings 2 MiB; ``reuse`` with
glibc keeping what is freed (no block of its own mapping, the heap never
trimmed), as a caching allocator does: no faults after the warm-up, the work of
the path alone. Each allocator runs in a process of its own (its settings are
read once per process), one after the other in the same run, and a last table
puts each path's ``x bare`` under each side by side.

Run from anywhere: ``python benchmarks/score_path.py`` (``--help`` for the
flags; ``--quick`` for tiny sizes, used by a smoke test).
"""

import argparse
import functools
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402

from solutions.positional_encodings import (  # noqa: E402
    biased_scores, clipped_relative_positions, shaw_scores, t5_bias, t5_relative_position_bucket)
from solutions.rotary_alibi import alibi_bias, alibi_slopes, rope_scores, rotary_angles  # noqa: E402
from solutions.long_context import scaled_rope_scores, yarn_attention_scale, yarn_inverse_frequencies  # noqa: E402

DEFAULTS = dict(lengths=[256, 1024, 2048], batch=1, heads=8, head_dim=64, max_rel=16, repeats=5, warmup=1,
                loop_max_length=1024)
QUICK = dict(lengths=[64], batch=1, heads=2, head_dim=16, max_rel=4, repeats=3, warmup=1, loop_max_length=64)
NUM_BUCKETS = 32
MIB = 1024.0 * 1024.0


def make_inputs(batch, heads, length, head_dim, max_rel, device, seed=0):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, length, head_dim, generator=generator)
    k = torch.randn(batch, heads, length, head_dim, generator=generator)
    rel_k = torch.randn(2 * max_rel + 1, head_dim, generator=generator)
    table = torch.randn(NUM_BUCKETS, heads, generator=generator)
    return SimpleNamespace(q=q.to(device), k=k.to(device), rel_k=rel_k.to(device), table=table.to(device),
                           max_rel=max_rel)


# --------------------------------------------------------------------------- the paths


def bare_matmul(x):
    return x.q @ x.k.transpose(-2, -1)


def shaw_reference(x):
    return shaw_scores(x.q, x.k, x.rel_k, x.max_rel)


def shaw_naive(x):
    scale = 1.0 / math.sqrt(x.q.shape[-1])
    index = clipped_relative_positions(x.q.shape[-2], x.k.shape[-2], x.max_rel, device=x.q.device)
    relative_keys = x.rel_k[index]  # (L, L, dh)
    return scale * (x.q @ x.k.transpose(-2, -1) + torch.einsum("bhqd,qkd->bhqk", x.q, relative_keys))


def shaw_loop(x):
    scale = 1.0 / math.sqrt(x.q.shape[-1])
    index = clipped_relative_positions(x.q.shape[-2], x.k.shape[-2], x.max_rel, device=x.q.device)
    rows = [(x.q[..., i:i + 1, :] @ (x.k + x.rel_k[index[i]]).transpose(-2, -1))[..., 0, :]
            for i in range(x.q.shape[-2])]
    return scale * torch.stack(rows, dim=-2)


def _hf_relative_key():
    from transformers.models.wav2vec2_bert.modeling_wav2vec2_bert import _apply_relative_key_position_encoding

    def path(x):
        head_dim = x.q.shape[-1]
        if getattr(x, "hf_module", None) is None:
            embedding = torch.nn.Embedding(2 * x.max_rel + 1, head_dim).to(x.q.device)
            embedding.weight.data.copy_(x.rel_k)
            x.hf_module = SimpleNamespace(left_max_position_embeddings=x.max_rel, scaling=head_dim ** -0.5,
                                          right_max_position_embeddings=x.max_rel, distance_embedding=embedding)
        module = x.hf_module
        _, relative = _apply_relative_key_position_encoding(module, x.q, x.k)  # (B, H, L, L), scaled
        return (x.q @ x.k.transpose(-2, -1)) * module.scaling + relative

    return path


def t5_reference(x):
    length = x.q.shape[-2]
    return biased_scores(x.q, x.k, t5_bias(length, length, x.table), scale=1.0)


def t5_loop(x):
    length = x.q.shape[-2]
    positions = torch.arange(length, device=x.q.device)
    rows = [x.table[t5_relative_position_bucket(positions - i)].transpose(0, 1) for i in range(length)]  # (H, L)
    return x.q @ x.k.transpose(-2, -1) + torch.stack(rows, dim=1).unsqueeze(0)


def _hf_t5():
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    def path(x):
        heads, head_dim = x.q.shape[1], x.q.shape[-1]
        if getattr(x, "hf_t5", None) is None:
            config = T5Config(d_model=heads * head_dim, d_kv=head_dim, num_heads=heads, dropout_rate=0.0,
                              relative_attention_num_buckets=NUM_BUCKETS, relative_attention_max_distance=128)
            attention = T5Attention(config, has_relative_attention_bias=True).to(x.q.device)
            attention.relative_attention_bias.weight.data.copy_(x.table)
            x.hf_t5 = attention
        length = x.q.shape[-2]
        return x.q @ x.k.transpose(-2, -1) + x.hf_t5.compute_bias(length, length, device=x.q.device)

    return path


def rope_reference(x):
    return rope_scores(x.q, x.k, interleaved=False)  # the rotate-half layout of LLaMA, for the comparison


def rope_loop(x):
    """RoPE with the rotation done row by row in a Python loop over positions."""
    half = x.q.shape[-1] // 2

    def turned(t):
        rows = []
        for position in range(t.shape[-2]):
            cos, sin = rotary_angles(torch.tensor([position], device=t.device), t.shape[-1])
            a, b = t[..., position:position + 1, :half], t[..., position:position + 1, half:]
            rows.append(torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1))
        return torch.cat(rows, dim=-2)

    return (turned(x.q) / math.sqrt(x.q.shape[-1])) @ turned(x.k).transpose(-2, -1)


def _hf_llama():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    def path(x):
        heads, length, head_dim = x.q.shape[1], x.q.shape[-2], x.q.shape[-1]
        if getattr(x, "hf_rope", None) is None:
            config = LlamaConfig(hidden_size=heads * head_dim, num_attention_heads=heads, head_dim=head_dim,
                                 max_position_embeddings=max(length, 2048))
            x.hf_rope = LlamaRotaryEmbedding(config).to(x.q.device)
        positions = torch.arange(length, device=x.q.device)[None]
        cos, sin = x.hf_rope(x.q, positions)
        q, k = apply_rotary_pos_emb(x.q, x.k, cos, sin)
        return (q @ k.transpose(-2, -1)) / math.sqrt(head_dim)

    return path


@functools.lru_cache(maxsize=None)
def _yarn(head_dim, device):
    """YaRN's frequencies (dh/2,) on ``device`` and its attention scale, for a model trained at 4096 positions read 8
    times further: made once, outside the calls timed, as the third unit's timing tier makes its frequencies."""
    frequencies = yarn_inverse_frequencies(head_dim, factor=8.0, trained_length=4096)
    return frequencies.to(device), yarn_attention_scale(8.0)


def scaled_rope_reference(x):
    """The third unit's score path (its timing tier's): q and k turned at YaRN's frequencies, times its scale."""
    frequencies, attention_scale = _yarn(x.q.shape[-1], x.q.device)
    return scaled_rope_scores(x.q, x.k, frequencies, attention_scale=attention_scale)


def scaled_rope_loop(x):
    """The same with the rotation done row by row in a Python loop over positions (rotate-half pairs)."""
    frequencies, attention_scale = _yarn(x.q.shape[-1], x.q.device)
    half = x.q.shape[-1] // 2

    def turned(t):
        rows = []
        for position in range(t.shape[-2]):
            angle = position * frequencies  # (dh/2,)
            cos, sin = torch.cos(angle), torch.sin(angle)
            a, b = t[..., position:position + 1, :half], t[..., position:position + 1, half:]
            rows.append(torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1))
        return torch.cat(rows, dim=-2)

    return (attention_scale / math.sqrt(x.q.shape[-1])) * (turned(x.q) @ turned(x.k).transpose(-2, -1))


def alibi_reference(x):
    """The ALiBi path as the timing tier runs it (autograder/units/rotary_alibi/job.py): the reference's bias,
    and scale * q @ k^T added to it in the product's own kernel."""
    batch, heads, length, head_dim = x.q.shape
    bias = alibi_bias(length, length, alibi_slopes(heads, device=x.q.device))  # (1, H, L, L)
    scores = torch.empty(batch, heads, length, length, dtype=x.q.dtype, device=x.q.device)  # (B, H, L, L)
    scores.copy_(bias)  # broadcast over the batch into the scores' own storage: no (B, H, L, L) temporary
    scores.view(batch * heads, length, length).baddbmm_(x.q.reshape(batch * heads, length, head_dim),
                                                        x.k.reshape(batch * heads, length, head_dim).transpose(1, 2),
                                                        alpha=1.0 / math.sqrt(head_dim))
    return scores


def alibi_loop(x):
    """The ALiBi bias built row by row in a Python loop over query positions."""
    length, heads = x.q.shape[-2], x.q.shape[1]
    slopes = alibi_slopes(heads, device=x.q.device)
    keys = torch.arange(length, device=x.q.device)
    rows = [-slopes[:, None] * (i - keys).clamp(min=0) for i in range(length)]  # each (H, L)
    return (x.q @ x.k.transpose(-2, -1)) / math.sqrt(x.q.shape[-1]) + torch.stack(rows, dim=1).unsqueeze(0)


def _hf_bloom():
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    def path(x):
        batch, heads, length, head_dim = x.q.shape
        mask = torch.ones(batch, length, device=x.q.device)
        bias = build_alibi_tensor(mask, heads, x.q.dtype).view(batch, heads, 1, length)  # slope * j (BLOOM's form)
        return (x.q @ x.k.transpose(-2, -1)) / math.sqrt(head_dim) + bias

    return path


PATHS = {
    "shaw": lambda: {"bare": bare_matmul, "reference": shaw_reference, "naive": shaw_naive, "loop": shaw_loop},
    "t5": lambda: {"bare": bare_matmul, "reference": t5_reference, "loop": t5_loop},
    "rope": lambda: {"bare": bare_matmul, "reference": rope_reference, "loop": rope_loop},
    "alibi": lambda: {"bare": bare_matmul, "reference": alibi_reference, "loop": alibi_loop},
    "scaled_rope": lambda: {"bare": bare_matmul, "reference": scaled_rope_reference, "loop": scaled_rope_loop},
}
HUGGING_FACE = {"shaw": _hf_relative_key, "t5": _hf_t5, "rope": _hf_llama, "alibi": _hf_bloom}


def paths_of(group, hugging_face=True):
    """{name: function} for one group; a Hugging Face path only where transformers has it."""
    paths = PATHS[group]()
    if hugging_face:
        try:
            if group in HUGGING_FACE:  # no Hugging Face path for the third unit's scaled scores
                paths["hf"] = HUGGING_FACE[group]()
        except ImportError:
            print(f"({group}: transformers is not installed, so there is no Hugging Face column)", file=sys.stderr)
    return paths


GROUPS = ("shaw", "t5", "rope", "alibi", "scaled_rope")


# --------------------------------------------------------------------------- memory


def _proc_status_kib(field):
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def measure_memory_child(args):
    """In a fresh process: peak bytes above the baseline for one (group, path, L), as JSON on stdout."""
    torch.set_num_threads(args.threads)
    group, name, length = args.measure_memory[0], args.measure_memory[1], int(args.measure_memory[2])
    function = paths_of(group, hugging_face=name == "hf")[name]
    with torch.no_grad():
        small = make_inputs(args.batch, args.heads, min(length, 16), args.head_dim, args.max_rel, "cpu")
        function(small)  # warm-up: load kernels, build any module
        x = make_inputs(args.batch, args.heads, length, args.head_dim, args.max_rel, "cpu")
        for attribute in ("hf_module", "hf_t5"):
            if hasattr(small, attribute):
                setattr(x, attribute, None)
        if name == "hf":
            function(make_inputs(args.batch, args.heads, 2, args.head_dim, args.max_rel, "cpu"))
        del small
        gc.collect()
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        base = _proc_status_kib("VmRSS") * 1024
        out = function(x)
        peak = _proc_status_kib("VmHWM") * 1024
    del out
    print(json.dumps({"peak_bytes": max(peak - base, 0)}))


def measure_memory_cpu(group, name, length, args):
    command = [sys.executable, str(Path(__file__).resolve()), "--measure-memory", group, name, str(length),
               "--batch", str(args.batch), "--heads", str(args.heads), "--head-dim", str(args.head_dim),
               "--max-rel", str(args.max_rel), "--threads", str(args.threads)]
    # Each large tensor a fresh mapping, whatever allocator the times are taken with: the peak is the path's.
    environment = {**without_allocator(os.environ), "MALLOC_MMAP_THRESHOLD_": "65536"}
    process = subprocess.run(command, capture_output=True, text=True, env=environment)
    if process.returncode != 0:
        raise RuntimeError(f"memory child for {group}/{name} L={length} failed:\n{process.stderr[-2000:]}")
    return json.loads(process.stdout.strip().splitlines()[-1])["peak_bytes"]


def measure_memory_cuda(function, x):
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    with torch.no_grad():
        out = function(x)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return peak


# --------------------------------------------------------------------------- time


def time_once(function, x, device):
    with torch.no_grad():
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            out = function(x)
            end.record()
            torch.cuda.synchronize()
            seconds = start.elapsed_time(end) / 1000.0
        else:
            started = time.perf_counter()
            out = function(x)
            seconds = time.perf_counter() - started
    del out
    return seconds


def time_interleaved(paths, x, device, warmup, repeats):
    names = list(paths)
    for _ in range(warmup):
        for name in names:
            time_once(paths[name], x, device)
    times = {name: [] for name in names}
    for repeat in range(repeats):
        for name in names if repeat % 2 == 0 else names[::-1]:
            times[name].append(time_once(paths[name], x, device))
    return {name: statistics.median(values) for name, values in times.items()}


def check_agree(paths, x, group):
    with torch.no_grad():
        reference = paths["reference"](x)
        for name, function in paths.items():
            if name == "bare":  # no position term: nothing to agree on
                continue
            got = function(x)
            if group == "alibi":  # BLOOM's slope * j is slope * i more per row on the keys the causal mask keeps:
                # compare those, each row less its diagonal
                kept = torch.ones(got.shape[-2:], dtype=torch.bool, device=got.device).tril()
                got, expected = ((t - t.diagonal(dim1=-2, dim2=-1)[..., None]) * kept for t in (got, reference))
            else:
                expected = reference
            if not torch.allclose(got, expected, rtol=1e-4, atol=1e-3):
                error = (got - expected).abs().max().item()
                raise AssertionError(f"{group}: {name} disagrees with the reference (max abs diff {error:.3g})")


def copy_bandwidth():
    """Bytes per second of a device-to-device copy of 1 GiB (read + write), the best of 5."""
    source = torch.empty(256 * 1024 * 1024, dtype=torch.float32, device="cuda")
    best = float("inf")
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        source.clone()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1000.0)
    return 2 * source.numel() * 4 / best


# --------------------------------------------------------------------------- driver


def run(device, group, args):
    paths = paths_of(group)
    memory = {}
    if device == "cpu":
        jobs = [(name, length) for length in args.lengths for name in paths
                if not (name == "loop" and length > args.loop_max_length)]
        with ThreadPoolExecutor(max_workers=max(1, args.memory_jobs)) as pool:
            memory = dict(zip(jobs, pool.map(lambda job: measure_memory_cpu(group, job[0], job[1], args), jobs)))
    bandwidth = copy_bandwidth() if device == "cuda" else None
    rows = []
    for length in args.lengths:
        here = {name: function for name, function in paths.items()
                if not (name == "loop" and length > args.loop_max_length)}
        x = make_inputs(args.batch, args.heads, length, args.head_dim, args.max_rel, device)
        check_agree(here, x, group)
        if device == "cuda":
            memory.update({(name, length): measure_memory_cuda(function, x) for name, function in here.items()})
        times = time_interleaved(here, x, device, args.warmup, args.repeats)
        out_bytes = args.batch * args.heads * length * length * 4
        rows.append(dict(length=length, times=times, memory={name: memory[(name, length)] for name in here},
                         out_bytes=out_bytes, floor=out_bytes / bandwidth if bandwidth else None))
        del x
        gc.collect()
    return list(paths), rows


def print_table(device, group, names, rows, args):
    clock = f"threads={args.threads}, {allocator_words()}" if device == "cpu" else "CUDA events"
    title = {"shaw": "Shaw relative-key scores", "t5": "T5 relative-bias scores", "rope": "RoPE scores (rotate half)",
             "alibi": "ALiBi scores (causal bias)",
             "scaled_rope": "Scaled RoPE scores (YaRN's frequencies and scale, the third unit)"}[group]
    print(f"\n{title} | device={device} ({clock}) | B={args.batch} H={args.heads} dh={args.head_dim} "
          f"k={args.max_rel} | median of {args.repeats} interleaved reps after {args.warmup} warm-up | "
          f"torch {torch.__version__}")
    others = [name for name in names if name not in ("bare", "reference")]
    header = (f"{'L':>6} | {'bare ms':>8} {'ref ms':>8} {'x bare':>7} "
              + " ".join(f"{name + ' ms':>10} {'x ref':>7}" for name in others)
              + (f" {'floor ms':>9}" if device == "cuda" else "")
              + f" | {'bare MiB':>8} {'ref MiB':>8} " + " ".join(f"{name + ' MiB':>10} {'x ref':>7}" for name in others))
    print(header)
    print("-" * len(header))
    for row in rows:
        times, memory = row["times"], row["memory"]
        cells = [f"{row['length']:>6} | {times['bare'] * 1e3:>8.2f} {times['reference'] * 1e3:>8.2f} "
                 f"{times['reference'] / times['bare']:>6.2f}x"]
        for name in others:
            cells.append(f"{times[name] * 1e3:>10.2f} {times[name] / times['reference']:>6.2f}x" if name in times
                         else f"{'-':>10} {'-':>7}")
        if device == "cuda":
            cells.append(f"{row['floor'] * 1e3:>9.3f}")
        cells.append(f"| {memory['bare'] / MIB:>8.1f} {memory['reference'] / MIB:>8.1f}")
        for name in others:
            cells.append(f"{memory[name] / MIB:>10.1f} {memory[name] / max(memory['reference'], 65536):>6.2f}x"
                         if name in memory else f"{'-':>10} {'-':>7}")
        print(" ".join(cells))
    print(f"x bare: the reference's time over q @ k^T's alone. x ref > 1: slower or larger than the reference. "
          f"'-': not run (the loop only up to L = "
          f"{args.loop_max_length}). One (B, H, L, L) float32 output is {rows[-1]['out_bytes'] / MIB:.0f} MiB "
          f"at L = {rows[-1]['length']}.")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", help=f"sequence lengths L (default {DEFAULTS['lengths']})")
    parser.add_argument("--batch", type=int, help=f"B (default {DEFAULTS['batch']})")
    parser.add_argument("--heads", type=int, help=f"H (default {DEFAULTS['heads']})")
    parser.add_argument("--head-dim", type=int, help=f"dh (default {DEFAULTS['head_dim']})")
    parser.add_argument("--max-rel", type=int, help=f"Shaw's k (default {DEFAULTS['max_rel']})")
    parser.add_argument("--repeats", type=int, help=f"timed repetitions per path (default {DEFAULTS['repeats']})")
    parser.add_argument("--warmup", type=int, help=f"untimed calls per path first (default {DEFAULTS['warmup']})")
    parser.add_argument("--loop-max-length", type=int,
                        help=f"the loop paths only up to this L (default {DEFAULTS['loop_max_length']})")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--memory-jobs", type=int, default=2, help="CPU memory processes at once (default 2)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="auto: the CPU, plus CUDA when available (default)")
    parser.add_argument("--group", choices=["all", *GROUPS], default="all", help="which score path (default all)")
    parser.add_argument("--quick", action="store_true", help=f"tiny sizes for a smoke test: {QUICK}")
    parser.add_argument("--allocators", nargs="+", choices=ALLOCATORS,
                        help="run the CPU benchmark once per allocator, each in a process of its own, and end with "
                             "the reference's x bare under each side by side (default: this process's allocator)")
    parser.add_argument("--measure-memory", nargs=3, metavar=("GROUP", "PATH", "L"), help=argparse.SUPPRESS)
    parser.add_argument("--ratios-to", help=argparse.SUPPRESS)  # a child of --allocators writes its x bare here
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


# How each allocator of --allocators is set up: environment variables, read once when its process starts.
ALLOCATORS = {
    "default": {},  # glibc's malloc as it comes: a block of 32 MiB or more is a fresh mapping, each 4 KiB page faulted
    "thp": {"THP_MEM_ALLOC_ENABLE": "1"},  # PyTorch's switch for transparent huge pages on large CPU allocations
    # glibc keeps what is freed (no block of its own mapping, the heap never trimmed) and hands it out again, as a
    # caching allocator does (PyTorch's on CUDA; jemalloc or tcmalloc on a CPU): after the warm-up no page faults.
    "reuse": {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(2**60)},
}
ALLOCATOR_WORDS = {"default": "default allocator (4 KiB pages)",
                   "thp": "transparent huge pages (THP_MEM_ALLOC_ENABLE=1)",
                   "reuse": "freed memory reused (MALLOC_MMAP_MAX_=0, heap never trimmed)"}


def without_allocator(environment):
    """``environment`` less every allocator's settings."""
    settings = {key for values in ALLOCATORS.values() for key in values}
    return {key: value for key, value in environment.items() if key not in settings}


def allocator_words():
    """How this process allocates large CPU tensors, in words for a table's title."""
    for name, values in ALLOCATORS.items():
        if values and all(os.environ.get(key) == value for key, value in values.items()):
            return ALLOCATOR_WORDS[name]
    return ALLOCATOR_WORDS["default"]


def compare_allocators(argv, allocators):
    """This benchmark once per allocator, each in a child process (its tables printed as they come), then a table
    of the reference's time over the bare product's, per group and L, under each allocator side by side."""
    rest, skipping = [], False  # this run's flags for each child, less --allocators and its values
    for arg in (sys.argv[1:] if argv is None else argv):
        if arg == "--allocators" or arg.startswith("--allocators="):
            skipping = arg == "--allocators"
        elif not (skipping and arg in ALLOCATORS):
            skipping = False
            rest.append(arg)
    ratios = {}
    for allocator in allocators:
        environment = {**without_allocator(os.environ), **ALLOCATORS[allocator]}
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "ratios.json"
            subprocess.run([sys.executable, __file__, *rest, "--device", "cpu", "--ratios-to", str(out)],
                           env=environment, check=True)
            ratios[allocator] = {(group, length): ratio for group, length, ratio in json.loads(out.read_text())}
    keys = sorted(set().union(*ratios.values()), key=lambda key: (GROUPS.index(key[0]), key[1]))
    print("\nThe reference's time over the bare product's (x bare), by allocator, from the runs above")
    header = f"{'path':>6} {'L':>6} | " + " ".join(f"{allocator:>9}" for allocator in allocators)
    print(header)
    print("-" * len(header))
    for group, length in keys:
        print(f"{group:>6} {length:>6} | " + " ".join(
            f"{ratios[allocator][(group, length)]:>8.2f}x" if (group, length) in ratios[allocator] else f"{'-':>9}"
            for allocator in allocators))
    return ratios


def main(argv=None):
    args = parse_args(argv)
    if args.measure_memory:
        measure_memory_child(args)
        return None
    if args.allocators:
        return compare_allocators(argv, args.allocators)
    torch.set_num_threads(args.threads)
    devices = (["cpu"] + (["cuda"] if torch.cuda.is_available() else [])) if args.device == "auto" else [args.device]
    if "cuda" in devices and not torch.cuda.is_available():
        raise SystemExit("--device cuda asked for, but torch.cuda.is_available() is False")
    results = {}
    for device in devices:
        for group in (GROUPS if args.group == "all" else (args.group,)):
            names, rows = run(device, group, args)
            print_table(device, group, names, rows, args)
            results[(device, group)] = rows
    if args.ratios_to:
        Path(args.ratios_to).write_text(json.dumps([
            [group, row["length"], row["times"]["reference"] / row["times"]["bare"]]
            for (device, group), rows in results.items() if device == "cpu" for row in rows]))
    return results


if __name__ == "__main__":
    main()
