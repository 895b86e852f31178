# YaRN's scale computed in torch float64 as the expanded square 1 + 0.2 m ln s + 0.01 m^2 ln^2 s, accepting Python numbers or 0-d tensors, returned with .item()
import torch


def yarn_attention_scale(factor, *, mscale=1.0):
    s = torch.as_tensor(factor, dtype=torch.float64)
    m = torch.as_tensor(mscale, dtype=torch.float64)
    if not bool(torch.isfinite(s)) or bool(s < 1):
        raise ValueError(f"factor must be finite and at least 1, got {factor}")
    if not bool(torch.isfinite(m)):
        raise ValueError(f"mscale must be finite, got {mscale}")
    x = m * torch.log(s)
    return float((1 + 0.2 * x + 0.01 * x * x).item())
