"""alibi_bias: |i - j| from torch.cdist of float64 position columns, zeroed above the diagonal with torch.where when causal."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError(f"slopes must be 1-D, got {slopes.dim()}-D")
    pq = torch.arange(length_q, dtype=torch.float64, device=slopes.device).unsqueeze(1)
    pk = torch.arange(length_k, dtype=torch.float64, device=slopes.device).unsqueeze(1)
    dist = torch.cdist(pq, pk, p=1.0)  # (Lq, Lk): |i - j|
    if causal:
        dist = torch.where(pk.T > pq, torch.zeros_like(dist), dist)
    return torch.einsum("h,ij->hij", slopes, -dist.to(slopes.dtype)).unsqueeze(0)
