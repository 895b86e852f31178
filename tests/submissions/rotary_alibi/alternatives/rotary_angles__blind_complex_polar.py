"""rotary_angles: the unit complex numbers e^{i t theta} via torch.polar in complex128 (as in Meta's LLaMA freqs_cis), real part = cos, imaginary part = sin."""
import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if head_dim < 1 or head_dim % 2 == 1:
        raise ValueError(f"odd or non-positive head_dim {head_dim}")
    freqs = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=positions.device)[: head_dim // 2].double() / head_dim))
    angle = positions.double().unsqueeze(-1) * freqs
    freqs_cis = torch.polar(torch.ones_like(angle), angle)  # complex128
    return freqs_cis.real.to(dtype), freqs_cis.imag.to(dtype)
