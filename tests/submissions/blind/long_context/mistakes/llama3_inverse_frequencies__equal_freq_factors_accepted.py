# high_freq_factor == low_freq_factor not rejected (checked with < instead of <=), so the blend divides by zero instead of ValueError
import math

import torch


def llama3_inverse_frequencies(head_dim, *, base=500000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                               trained_length=8192):
    if head_dim <= 0 or head_dim % 2 != 0:
        raise ValueError(f"head_dim must be even and positive, got head_dim={head_dim}")
    if not 1.0 < base < math.inf:
        raise ValueError(f"base must be a finite number above 1, got base={base}")
    if not 1.0 <= factor < math.inf:
        raise ValueError(f"factor must be finite and at least 1, got factor={factor}")
    if not 0.0 < low_freq_factor < math.inf:
        raise ValueError(f"low_freq_factor must be finite and above 0, got {low_freq_factor}")
    if not math.isfinite(high_freq_factor) or high_freq_factor < low_freq_factor:
        raise ValueError(f"high_freq_factor must be finite and not below low_freq_factor, got {high_freq_factor}")
    if trained_length < 1:
        raise ValueError(f"trained_length must be at least 1, got {trained_length}")
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    wavelength = 2 * math.pi / theta
    smooth = (trained_length / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
    blended = (1 - smooth) * theta / factor + smooth * theta
    out = torch.where(wavelength < trained_length / high_freq_factor, theta,
                      torch.where(wavelength > trained_length / low_freq_factor, theta / factor, blended))
    return out.float()


# differs: llama3_inverse_frequencies(64, low_freq_factor=4.0, high_freq_factor=4.0) -> expected ValueError, got float32(32,)
