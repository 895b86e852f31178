"""rotary_angles: LLaMA's float32 inverse frequencies and a float32 outer product of the flattened positions."""
import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if not (head_dim > 0 and head_dim % 2 == 0):
        raise ValueError(f"bad head_dim={head_dim}: must be a positive even int")
    exponent = torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float32) / head_dim
    inv_freq = 1.0 / (base ** exponent)  # (dh/2,)
    freqs = torch.outer(positions.reshape(-1).to(torch.float32), inv_freq)  # (N, dh/2)
    freqs = freqs.reshape(*positions.shape, head_dim // 2)
    return freqs.cos().to(dtype), freqs.sin().to(dtype)
