"""sinusoidal: frequency exponent uses the pair index k instead of 2k, w_k = base ** (-k / d_model)."""
import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if d_model <= 0 or d_model % 2 != 0:
        raise ValueError(f"d_model must be a positive even number, got d_model={d_model}")
    if num_positions < 0:
        raise ValueError(f"num_positions must be 0 or more, got num_positions={num_positions}")
    position = torch.arange(num_positions, device=device, dtype=torch.float64)
    k = torch.arange(d_model // 2, device=device, dtype=torch.float64)
    angle = position[:, None] * base ** (-k / d_model)
    return torch.stack((angle.sin(), angle.cos()), dim=-1).reshape(num_positions, d_model).to(dtype)
