# Llama 3 by turns within L (r = L theta / 2 pi) with smooth clamped to [0, 1] and one blend for every pair, no torch.where
import math

import torch


def llama3_inverse_frequencies(head_dim, *, base=500000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                               trained_length=8192):
    if head_dim <= 0 or head_dim % 2 == 1:
        raise ValueError("head_dim must be even and positive")
    if not (math.isfinite(base) and base > 1):
        raise ValueError("base must be a finite number above 1")
    if not (math.isfinite(factor) and factor >= 1):
        raise ValueError("factor must be finite and at least 1")
    if not (math.isfinite(low_freq_factor) and low_freq_factor > 0):
        raise ValueError("low_freq_factor must be finite and above 0")
    if not (math.isfinite(high_freq_factor) and high_freq_factor > low_freq_factor):
        raise ValueError("high_freq_factor must be finite and above low_freq_factor")
    if trained_length < 1:
        raise ValueError("trained_length must be at least 1")
    theta = torch.tensor(float(base), dtype=torch.float64) ** (
        -torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    turns = trained_length * theta / (2 * math.pi)  # L / wavelength
    # below low_freq_factor turns: smooth < 0, clamped to 0 (theta / factor); above high: clamped to 1 (theta)
    smooth = ((turns - low_freq_factor) / (high_freq_factor - low_freq_factor)).clamp(0.0, 1.0)
    return ((1 - smooth) * theta / factor + smooth * theta).to(torch.float32)
