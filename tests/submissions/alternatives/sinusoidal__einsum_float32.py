"""sinusoidal: einsum outer product in float32 with frequencies from a float32 linspace exponent, cast at the end."""
import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if not (d_model > 0 and d_model % 2 == 0):
        raise ValueError(f"bad d_model={d_model}: must be a positive even int")
    if num_positions < 0:
        raise ValueError(f"bad num_positions={num_positions}: must be >= 0")
    half = d_model // 2
    exponent = torch.linspace(0.0, (d_model - 2) / d_model, half, device=device, dtype=torch.float32)
    omega = torch.pow(float(base), -exponent)  # (d/2,)
    pos = torch.arange(num_positions, device=device).to(torch.float32)
    ang = torch.einsum("t,k->tk", pos, omega)  # (T, d/2)
    out = torch.stack((ang.sin(), ang.cos()), dim=2).reshape(num_positions, d_model)
    return out.to(dtype)
