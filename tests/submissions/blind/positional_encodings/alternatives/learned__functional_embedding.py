"""learned: weight drawn as randn * 0.02 into an nn.Parameter; forward looks rows up with F.embedding and expands them for concat."""
import torch
import torch.nn.functional as F
from torch import nn


class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model, mode="add"):
        super().__init__()
        if mode != "add" and mode != "concat":
            raise ValueError(f"unknown mode {mode!r}: expected 'add' or 'concat'")
        self.max_len, self.d_model, self.mode = max_len, d_model, mode
        self.weight = nn.Parameter(torch.randn(max_len, d_model) * 0.02)

    def forward(self, x):
        L = x.size(1)
        if L > self.max_len:
            raise ValueError(f"sequence length {L} exceeds max_len {self.max_len}")
        pos = F.embedding(torch.arange(L, device=x.device), self.weight)  # (L, d_model)
        if self.mode == "add":
            return x + pos.unsqueeze(0)
        return torch.cat([x, pos.unsqueeze(0).expand(x.size(0), -1, -1)], dim=2)
