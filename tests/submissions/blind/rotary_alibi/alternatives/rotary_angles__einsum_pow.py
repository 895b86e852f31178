"""rotary_angles: theta from torch.pow(base, -linspace) in float64 and the angles from an einsum with '...'."""
import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if head_dim % 2 != 0 or head_dim < 1:
        raise ValueError("rotary embeddings need an even, positive head_dim")
    n = head_dim // 2
    exponents = torch.linspace(0.0, -(2.0 * (n - 1)) / head_dim, n, dtype=torch.float64, device=positions.device)
    theta = torch.pow(torch.tensor(float(base), dtype=torch.float64, device=positions.device), exponents)
    angle = torch.einsum("...,i->...i", positions.to(torch.float64), theta)
    return angle.cos().to(dtype=dtype), angle.sin().to(dtype=dtype)
