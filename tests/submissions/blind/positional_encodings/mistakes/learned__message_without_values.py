"""learned: raises ValueError for L > max_len but the message names neither L nor max_len."""
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
        self.weight = nn.Parameter(torch.empty(max_len, d_model))
        nn.init.normal_(self.weight, mean=0.0, std=0.02)

    def forward(self, x):
        batch, length = x.shape[0], x.shape[1]
        if length > self.max_len:
            raise ValueError("sequence is longer than the position table")
        rows = self.weight[:length]
        if self.mode == "add":
            return x + rows
        rows = rows.unsqueeze(0).expand(batch, length, self.d_model)
        return torch.cat((x, rows), dim=-1)
