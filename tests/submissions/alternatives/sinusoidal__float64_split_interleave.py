"""sinusoidal: float64 angles, split layout [sin | cos] built with cat, interleaved by a view/transpose, then cast."""
import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if d_model <= 0 or d_model % 2:
        raise ValueError(f"d_model={d_model} is not a positive even number")
    if num_positions < 0:
        raise ValueError(f"num_positions={num_positions} is negative")
    half = d_model // 2
    exponent = torch.arange(half, device=device, dtype=torch.float64) * 2.0 / d_model
    freq = torch.pow(torch.tensor(float(base), device=device, dtype=torch.float64), -exponent)  # (d/2,)
    theta = torch.arange(num_positions, device=device, dtype=torch.float64)[:, None] * freq  # (T, d/2)
    split = torch.cat((theta.sin(), theta.cos()), dim=1)  # (T, d): sin... | cos...
    interleaved = split.view(num_positions, 2, half).transpose(1, 2).reshape(num_positions, d_model)
    return interleaved.to(dtype)
