"""learned: weight[:L].unsqueeze(0) broadcast for add, expanded to (B, L, d_model) and torch.cat for concat."""
import torch
from torch import nn


class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model, mode="add"):
        super().__init__()
        if mode != "add" and mode != "concat":
            raise ValueError("mode must be 'add' or 'concat', not %r" % (mode,))
        self.max_len, self.d_model, self.mode = max_len, d_model, mode
        w = torch.empty(max_len, d_model)
        w.normal_(0.0, 0.02)
        self.weight = nn.Parameter(w)

    def forward(self, x):
        B, L = x.shape[:2]
        if L > self.weight.shape[0]:
            raise ValueError("L=%d positions requested, max_len=%d available" % (L, self.weight.shape[0]))
        rows = self.weight[:L].unsqueeze(0)  # (1, L, d_model)
        if self.mode == "concat":
            return torch.cat((x, rows.expand(B, L, rows.shape[-1]).type_as(x)), dim=-1)
        return x + rows
