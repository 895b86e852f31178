# Llama 3 with boolean masks: start from theta / factor, overwrite the kept and the blended pairs by indexing a float64 copy
import math

import torch


def llama3_inverse_frequencies(head_dim, *, base=500000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                               trained_length=8192):
    problems = []
    if head_dim % 2 or head_dim <= 0:
        problems.append("head_dim must be even and positive")
    if not 1 < base < math.inf:
        problems.append("base must be a finite number above 1")
    if not 1 <= factor < math.inf:
        problems.append("factor must be finite and at least 1")
    if not 0 < low_freq_factor < math.inf:
        problems.append("low_freq_factor must be finite and above 0")
    if not low_freq_factor < high_freq_factor < math.inf:
        problems.append("high_freq_factor must be finite and above low_freq_factor")
    if trained_length < 1:
        problems.append("trained_length must be at least 1")
    if problems:
        raise ValueError("; ".join(problems))
    exponents = torch.arange(head_dim // 2, dtype=torch.float64) * (2.0 / head_dim)
    theta = float(base) ** -exponents
    wavelength = 2 * math.pi / theta
    short_limit = trained_length / high_freq_factor
    long_limit = trained_length / low_freq_factor
    out = theta / factor  # the slow pairs
    kept = wavelength < short_limit
    middle = ~kept & ~(wavelength > long_limit)
    out[kept] = theta[kept]
    smooth = (trained_length / wavelength[middle] - low_freq_factor) / (high_freq_factor - low_freq_factor)
    out[middle] = (1 - smooth) * theta[middle] / factor + smooth * theta[middle]
    return out.float()
