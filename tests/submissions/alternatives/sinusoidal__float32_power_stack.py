"""sinusoidal: float32 power base ** (-2k/d), sin and cos stacked on a new last axis then flattened."""
import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if not d_model > 0 or d_model % 2 != 0:
        raise ValueError(f"need an even, positive d_model; got {d_model}")
    if num_positions < 0:
        raise ValueError(f"need num_positions >= 0; got {num_positions}")
    two_k = torch.arange(0, d_model, 2, device=device, dtype=torch.float32)
    inv_freq = base ** (-two_k / d_model)  # (d/2,) float32
    t = torch.arange(num_positions, device=device, dtype=torch.float32)
    angles = t.unsqueeze(-1) * inv_freq.unsqueeze(0)  # (T, d/2)
    table = torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1)  # (T, d/2, 2)
    return table.flatten(start_dim=1).to(dtype=dtype)
