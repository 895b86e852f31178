"""learned: weight is a plain tensor (randn * 0.02), not an nn.Parameter, so it is not learned and gets no gradient."""
import torch
from torch import nn


class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model, mode="add"):
        super().__init__()
        if mode not in ("add", "concat"):
            raise ValueError(f'mode must be "add" or "concat", got mode={mode!r}')
        self.max_len = max_len
        self.d_model = d_model
        self.mode = mode
        self.weight = torch.randn(max_len, d_model) * 0.02

    def forward(self, x):
        batch, length = x.shape[0], x.shape[1]
        if length > self.max_len:
            raise ValueError(f"sequence length L={length} is longer than max_len={self.max_len}")
        rows = self.weight[:length]
        if self.mode == "add":
            return x + rows
        rows = rows.unsqueeze(0).expand(batch, length, self.d_model)
        return torch.cat((x, rows), dim=-1)
