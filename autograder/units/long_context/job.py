"""The third unit's code that runs in a job, beside the student's: a stand-in, a view, the timed path.

It imports torch and nothing of the grader (see autograder/core/units.py).
"""

import math

import torch


def number(value):
    """yarn_attention_scale returns a Python float: as a float64 tensor of no axes, so the grader reads one tensor.
    Anything else (a tensor, None) goes back as it is, and the grader says what it was."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return torch.tensor(float(value), dtype=torch.float64)
    return value


VIEWS = {"number": number}


def scrambled_ntk(head_dim, *, base=10000.0, factor, key=(3, 5, 1)):
    """Stand-in for ntk_inverse_frequencies while dynamic_ntk_inverse_frequencies is graded: valid frequencies in
    (0, 1] that are not NTK's, depending on head_dim, base and factor (a caller that passes the wrong factor, or
    drops the base, shows). Its contract is the helper's, but for any factor above 0 (the caller's to check)."""
    if head_dim < 4 or head_dim % 2:
        raise ValueError(f"head_dim must be even and at least 4, got head_dim={head_dim}")
    if not 1 < base < math.inf:
        raise ValueError(f"base must be a finite number above 1, got base={base}")
    if not 0 < factor < math.inf:
        raise ValueError(f"factor must be a finite number above 0, got factor={factor}")
    a, b, c = key
    pair = torch.arange(head_dim // 2, dtype=torch.float64)  # (dh/2,)
    exponent = (0.05 + ((pair * b + a) % 7) * 0.11) / 4  # (dh/2,): in (0.01, 0.2), no order
    stretch = 0.7 + (c % 5) * 0.1
    return ((base * factor ** stretch) ** (-exponent)).to(torch.float32)  # (dh/2,)


STAND_INS = {"scrambled_ntk": scrambled_ntk}


def timing_inputs(spec, draw):
    """q and k of the timed path: ``draw(*shape)`` gives a tensor of the spec's dtype on its device, in fresh
    storage, with values of its own for each call (the worker's Draw, at the length the grader drew)."""
    batch, heads, length, head_dim = spec["batch"], spec["heads"], spec["length"], spec["head_dim"]
    return draw(batch, heads, length, head_dim), draw(batch, heads, length, head_dim)  # (B, H, L, dh) each


def _frequencies(head_dim):
    """YaRN-like frequencies for the timed path (a ramp from theta_i to theta_i / 8 over the middle pairs: not the
    paper's bounds), the same for both jobs. (dh/2,) float32."""
    pair = torch.arange(head_dim // 2, dtype=torch.float64)  # (dh/2,)
    theta = 10000.0 ** (-2 * pair / head_dim)  # (dh/2,)
    ramp = ((pair - head_dim // 8) / max(head_dim // 4, 1)).clamp(0, 1)  # (dh/2,)
    return ((1 - ramp) * theta + ramp * theta / 8).to(torch.float32)  # (dh/2,)


def score_path(namespace, spec):
    """A function of (q, k) that runs the spec's path once, as the code of ``namespace`` wrote it."""
    scaled_rope_scores = namespace["scaled_rope_scores"]
    frequencies = _frequencies(spec["head_dim"])
    on_device = {}  # the frequencies moved to the inputs' device once, outside the calls that count

    def path(q, k):
        if q.device not in on_device:
            on_device[q.device] = frequencies.to(q.device)
        return scaled_rope_scores(q, k, on_device[q.device], attention_scale=1.25)

    return path
