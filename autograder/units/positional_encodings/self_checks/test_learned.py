"""Self-checks for task learned: LearnedPositionalEmbedding. Run: pytest -k learned"""

import pytest
import torch
from torch import nn

from checks import assert_close
from positional_encodings import LearnedPositionalEmbedding


def _with_weight(max_len, d_model, mode="add"):
    module = LearnedPositionalEmbedding(max_len, d_model, mode)
    with torch.no_grad():  # row t holds t, t, t, ... so a wrong row shows at once
        module.weight.copy_(torch.arange(max_len, dtype=torch.float32)[:, None].expand(max_len, d_model))
    return module


def test_learned_weight_is_a_parameter_of_shape_max_len_by_d_model():
    module = LearnedPositionalEmbedding(100, 16)
    assert isinstance(module.weight, nn.Parameter), "self.weight should be an nn.Parameter (so it is learned)"
    assert module.weight.shape == (100, 16), f"weight should be (max_len, d_model) = (100, 16), got {tuple(module.weight.shape)}"
    assert any(p is module.weight for p in module.parameters()), "weight is not registered: assign it after super().__init__()"
    std = module.weight.std().item()
    assert 0.015 < std < 0.025, f"weight should be drawn from N(0, 0.02**2); its standard deviation is {std:.3f}"


def test_learned_add_adds_row_t_to_position_t():
    x = torch.zeros(2, 3, 4)
    assert_close(_with_weight(5, 4)(x), torch.tensor([0.0, 1.0, 2.0])[None, :, None].expand(2, 3, 4),
                 what="forward(zeros of shape (2, 3, 4))", hint="rows 0..L-1 of weight, weight[:L], added to every sequence.")


def test_learned_concat_appends_the_position_vector():
    x = torch.full((2, 3, 2), -1.0)
    out = _with_weight(5, 4, "concat")(x)
    expected = torch.cat((x, torch.tensor([0.0, 1.0, 2.0])[None, :, None].expand(2, 3, 4)), dim=-1)
    assert_close(out, expected, what="concat forward(x of shape (2, 3, 2))",
                 hint="x first, then weight[:L], joined on the last axis: (B, L, d + d_model).")


def test_learned_accepts_a_sequence_as_long_as_the_table():
    try:
        out = _with_weight(4, 2)(torch.zeros(1, 4, 2))
    except ValueError as error:
        pytest.fail(f"L == max_len should work: max_len rows cover positions 0..max_len-1, so reject only "
                    f"L > max_len (it raised ValueError: {error})")
    assert out.shape == (1, 4, 2), f"L == max_len should work, got shape {tuple(out.shape)}"


def test_learned_rejects_a_sequence_longer_than_the_table():
    with pytest.raises(ValueError) as raised:
        LearnedPositionalEmbedding(4, 2)(torch.zeros(1, 7, 2))
    message = str(raised.value)
    assert "7" in message and "4" in message, f"the message should name L=7 and max_len=4, got {message!r}"


def test_learned_rejects_an_unknown_mode():
    with pytest.raises(ValueError):
        LearnedPositionalEmbedding(4, 2, mode="multiply")


def test_learned_gradient_reaches_only_the_rows_used():
    module = LearnedPositionalEmbedding(6, 3)
    module(torch.zeros(2, 4, 3)).sum().backward()
    assert module.weight.grad is not None, "no gradient reached weight: use self.weight itself, not a copy"
    expected = torch.zeros(6, 3)
    expected[:4] = 2.0  # two sequences in the batch, each using rows 0..3 once
    assert_close(module.weight.grad, expected, what="weight.grad after forward(zeros (2, 4, 3)).sum().backward()")


def test_learned_add_leaves_the_callers_x_alone():
    x = torch.ones(2, 3, 4)
    _with_weight(5, 4)(x)
    assert torch.equal(x, torch.ones(2, 3, 4)), "x was changed in place (x += ...): return x + rows, a new tensor"
