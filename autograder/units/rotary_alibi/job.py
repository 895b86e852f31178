"""The second unit's code that runs in a job, beside the student's: a stand-in, a view, the timed paths.

It imports torch and nothing of the grader (see autograder/core/units.py).
"""

import math

import torch


def plain_slopes(num_heads, *, device=None):
    """Stand-in for alibi_slopes on the timed path: valid slopes in (0, 1), not the paper's."""
    return torch.linspace(0.9, 0.1, num_heads, device=device)


def pair(value):
    """rotary_angles returns (cos, sin): both stacked on a new first axis, so the grader reads one tensor."""
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(part, torch.Tensor) for part in value) \
            and value[0].shape == value[1].shape and value[0].dtype == value[1].dtype:
        return torch.stack(tuple(value))
    return value


VIEWS = {"pair": pair}


def timing_inputs(spec, draw):
    """q and k of the timed path (and for ALiBi a factor per head): ``draw(*shape)`` gives a tensor of the spec's
    dtype on its device, in fresh storage, with values of its own for each call (the worker's Draw, from the
    grader's seed for the call, at the length the grader drew for it)."""
    batch, heads, length, head_dim = spec["batch"], spec["heads"], spec["length"], spec["head_dim"]
    q, k = draw(batch, heads, length, head_dim), draw(batch, heads, length, head_dim)  # (B, H, L, dh) each
    if spec["path"] == "alibi":  # each call's slopes its own: the student's slopes, each head's scaled anew
        return q, k, 0.75 + 0.25 * draw(heads, dtype=torch.float32).tanh()  # (H,), in (0.5, 1)
    return q, k


def score_path(namespace, spec):
    """A function of (q, k) that runs the spec's path once, as the code of ``namespace`` wrote it."""
    heads, head_dim = spec["heads"], spec["head_dim"]
    if spec["path"] == "rope":
        rope_scores = namespace["rope_scores"]
        return lambda q, k: rope_scores(q, k)
    alibi_bias, alibi_slopes = namespace["alibi_bias"], namespace["alibi_slopes"]
    scale = 1.0 / math.sqrt(head_dim)

    def alibi_path(q, k, factor):
        # The slopes are made where alibi_slopes makes them by default (the CPU) and taken to the inputs' device
        # before they meet the factor, which is there already: (H,), new values every call.
        slopes = (alibi_slopes(heads).to(q.device) * factor).to(dtype=q.dtype)
        length = q.shape[-2]  # drawn by the grader for this call
        bias = alibi_bias(length, length, slopes)  # (1, H, L, L): the student's part of the path
        batch = q.shape[0]
        # The bias broadcast once into the scores' own storage, then scale * q @ k^T added there in the product's
        # kernel (beta = 1): no (B, H, L, L) tensor but the scores, at any batch, and the same work in both jobs.
        scores = torch.empty(batch, heads, length, length, dtype=q.dtype, device=q.device)  # (B, H, L, L)
        scores.copy_(bias)
        scores.view(batch * heads, length, length).baddbmm_(q.reshape(batch * heads, length, head_dim),
                                                            k.reshape(batch * heads, length, head_dim).transpose(1, 2),
                                                            alpha=scale)
        return scores

    return alibi_path


# Stand-ins for the helper tasks, so that a task that calls another is graded on its own (as in the first
# unit): valid but scrambled values, which the grader knows what the calling task should make of.

def scrambled_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32, key=(3, 5, 1)):
    """Stand-in for rotary_angles: (cos, sin) of t * w_i with frequencies w_i that are not base ** (-2i / dh),
    depending on head_dim and base (a caller that drops one shows). Linear in t, as the real angles are, so
    every correct formulation of the callers (rotating q and k, or turning k by the relative angle) agrees."""
    if head_dim <= 0 or head_dim % 2:  # the helper's contract, kept: only its values are scrambled
        raise ValueError(f"head_dim must be a positive even number, got head_dim={head_dim}")
    a, b, c = key
    pair = torch.arange(head_dim // 2, device=positions.device, dtype=torch.float64)  # (dh/2,)
    mixed = 1.0 + (math.log(float(base)) * 7.0 + head_dim * 0.13 + c) % 1.0
    frequency = (0.05 + ((pair * b + a) % 7) * 0.11) * mixed  # (dh/2,)
    angle = positions.to(torch.float64)[..., None] * frequency  # (..., dh/2)
    return angle.cos().to(dtype), angle.sin().to(dtype)  # (..., dh/2) each


def scrambled_rotation(x, positions, base=10000.0, *, interleaved=True, key=(3, 5, 1)):
    """Stand-in for apply_rotary: x turned pair by pair by the scrambled angles, in the layout asked for."""
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = scrambled_angles(positions, x.shape[-1], base, dtype=compute, key=key)  # (..., L, dh/2)
    wide = x.to(compute)
    if interleaved:
        a, b = wide[..., 0::2], wide[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)
    a, b = wide.chunk(2, dim=-1)
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1).to(x.dtype)


STAND_INS = {"plain_slopes": plain_slopes, "scrambled_angles": scrambled_angles, "scrambled_rotation": scrambled_rotation}
