"""learned: rows looked up with F.embedding on torch.arange(L), added or concatenated after expanding over the batch."""
import torch
from torch import nn
import torch.nn.functional as F


class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model, mode="add"):
        super().__init__()
        if mode not in {"add", "concat"}:
            raise ValueError(f"unknown mode {mode!r}; expected 'add' or 'concat'")
        self.max_len = max_len
        self.d_model = d_model
        self.mode = mode
        self.weight = nn.Parameter(torch.empty(max_len, d_model))
        nn.init.normal_(self.weight, mean=0.0, std=0.02)

    def forward(self, x):
        L = x.size(1)
        if L > self.max_len:
            raise ValueError(f"sequence too long: L={L} but max_len={self.max_len}")
        pos = F.embedding(torch.arange(L, device=x.device), self.weight)  # (L, d_model)
        if self.mode == "add":
            return x + pos
        return torch.cat([x, pos.to(x.dtype).expand(x.size(0), -1, -1)], dim=-1)
