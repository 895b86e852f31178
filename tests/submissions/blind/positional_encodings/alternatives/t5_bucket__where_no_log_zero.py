"""t5_bucket: torch.where for the direction offset, distances clamped to max_exact before the log (no log(0)), clamp_max at the end."""
import math

import torch


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    rp = relative_position.long()
    if bidirectional:
        n = num_buckets // 2
        offset = torch.where(rp > 0, torch.full_like(rp, n), torch.zeros_like(rp))
        d = rp.abs()
    else:
        n = num_buckets
        offset = torch.zeros_like(rp)
        d = torch.clamp(-rp, min=0)
    max_exact = n // 2
    if max_exact < 1 or max_distance <= max_exact:
        raise ValueError(
            f"invalid settings: num_buckets={num_buckets}, max_distance={max_distance} give max_exact={max_exact}"
        )
    safe = d.clamp(min=max_exact).to(torch.float32)  # only used where d >= max_exact
    log_part = (torch.log(safe / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)).to(torch.int64)
    large = torch.clamp_max(max_exact + log_part, n - 1)
    return offset + torch.where(d < max_exact, d, large)
