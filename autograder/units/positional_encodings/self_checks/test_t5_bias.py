"""Self-checks for task t5_bias: t5_bias. Run: pytest -k t5_bias"""

import torch

from checks import assert_close
from positional_encodings import t5_bias


def test_t5_bias_has_shape_1_heads_lq_lk():
    got = t5_bias(5, 7, torch.randn(32, 3))
    assert isinstance(got, torch.Tensor), f"expected a torch.Tensor, got {type(got).__name__}"
    assert got.shape == (1, 3, 5, 7), (f"expected (1, H, Lq, Lk) = (1, 3, 5, 7), got {tuple(got.shape)}"
                                       + (": move the heads first with permute" if got.shape[-1] == 3 else ""))


def test_t5_bias_matches_the_worked_example():
    table = torch.arange(32.0)[:, None]  # one head, bias_table[b, 0] = b
    assert_close(t5_bias(2, 2, table), torch.tensor([[[[0.0, 17.0], [1.0, 0.0]]]]), what="t5_bias(2, 2, table)",
                 hint="entry [0, h, i, j] is bias_table[bucket(j - i), h]: key minus query.")


def test_t5_bias_is_constant_along_each_diagonal():
    bias = t5_bias(9, 9, torch.randn(32, 2))[0]
    assert torch.equal(bias[:, 1:, 1:], bias[:, :-1, :-1]), "the bias must depend on j - i only"
