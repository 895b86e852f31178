"""rotary_angles: LLaMA-style freqs_cis = torch.polar(1, t * inv_freq) in complex128, cos/sin read off .real/.imag."""
import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if head_dim <= 0 or head_dim & 1:
        raise ValueError("head_dim must be a positive even number")
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=positions.device).double() / head_dim))
    freqs = positions.double().unsqueeze(-1) * inv_freq
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex128
    return freqs_cis.real.to(dtype), freqs_cis.imag.to(dtype)
