"""rotary_angles: Hugging Face LLaMA style: inv_freq = 1 / base ** (arange(0, dh, 2) / dh) and an outer product, in float32 (float64 only when dtype is float64); less exact than the reference at large positions (angle error about 1e-7 * t, e.g. 1e-3 at t = 8192)."""
import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if head_dim <= 0 or head_dim % 2 != 0:
        raise ValueError(f"head_dim must be positive and even, got {head_dim}")
    work = torch.float64 if dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64, device=positions.device).to(work) / head_dim))
    t = positions.reshape(-1).to(work)
    freqs = torch.outer(t, inv_freq)  # (N, dh/2)
    freqs = freqs.reshape(*positions.shape, head_dim // 2)
    return freqs.cos().to(dtype), freqs.sin().to(dtype)
