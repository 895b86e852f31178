"""learned: rows picked with index_select, concat built with repeat, init with nn.init.normal_ on an empty Parameter."""
import torch
from torch import nn


class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model, mode="add"):
        super().__init__()
        if mode not in {"add", "concat"}:
            raise ValueError(f"mode={mode!r} is not one of 'add', 'concat'")
        self.max_len = max_len
        self.d_model = d_model
        self.mode = mode
        self.weight = nn.Parameter(torch.empty(max_len, d_model))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        B, L = x.shape[:2]
        if L > self.max_len:
            raise ValueError(f"L={L} is longer than max_len={self.max_len}")
        rows = self.weight.index_select(0, torch.arange(L, device=self.weight.device))
        if self.mode == "concat":
            return torch.cat((x, rows[None].repeat(B, 1, 1)), dim=-1)
        return torch.add(x, rows)
