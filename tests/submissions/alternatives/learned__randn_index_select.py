"""learned: weight = nn.Parameter(torch.randn(max_len, d_model) * 0.02), rows taken with index_select, batch via repeat."""
import torch
from torch import nn


class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model, mode="add"):
        super().__init__()
        if mode not in ("add", "concat"):
            raise ValueError(f"mode={mode!r} is not supported (use 'add' or 'concat')")
        self.max_len = max_len
        self.d_model = d_model
        self.mode = mode
        self.weight = nn.Parameter(torch.randn(max_len, d_model) * 0.02)

    def forward(self, x):
        batch, length = x.shape[0], x.shape[1]
        if length > self.max_len:
            raise ValueError(f"L={length} is larger than max_len={self.max_len}")
        idx = torch.arange(length, device=self.weight.device)
        pos = self.weight.index_select(0, idx)  # (L, d_model)
        if self.mode == "add":
            return x + pos[None]
        pos = pos.to(dtype=x.dtype)[None].repeat(batch, 1, 1)  # (B, L, d_model)
        return torch.cat([x, pos], dim=2)
