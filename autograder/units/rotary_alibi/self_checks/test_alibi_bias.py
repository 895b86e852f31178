"""Self-checks for task alibi_bias: alibi_bias. Run: pytest -k alibi_bias"""

import pytest
import torch

from checks import assert_close
from rotary_alibi import alibi_bias


def test_alibi_bias_has_shape_1_heads_lq_lk():
    got = alibi_bias(3, 5, torch.tensor([0.5, 0.25]))
    assert isinstance(got, torch.Tensor) and got.shape == (1, 2, 3, 5), \
        f"expected (1, H, Lq, Lk) = (1, 2, 3, 5), got {tuple(getattr(got, 'shape', ()))}"


def test_alibi_bias_matches_the_worked_example():
    slopes = torch.tensor([0.5])
    causal = torch.tensor([[[[0.0, 0.0, 0.0], [-0.5, 0.0, 0.0], [-1.0, -0.5, 0.0]]]])
    causes = [(-causal, "the sign is reversed: the bias is a penalty, -slope * (i - j).")]
    assert_close(alibi_bias(3, 3, slopes), causal, what="alibi_bias(3, 3, [0.5])", atol=1e-7, causes=causes,
                 hint="query i, key j <= i: -slope * (i - j); keys after the query get 0 (the mask removes them).")
    both = torch.tensor([[[[0.0, -0.5, -1.0], [-0.5, 0.0, -0.5], [-1.0, -0.5, 0.0]]]])
    assert_close(alibi_bias(3, 3, slopes, causal=False), both, what="alibi_bias(3, 3, [0.5], causal=False)",
                 atol=1e-7, hint="without the mask both directions cost: -slope * |i - j|.")


def test_alibi_bias_is_constant_along_each_diagonal():
    bias = alibi_bias(6, 6, torch.tensor([0.3, 0.7]), causal=False)[0]
    assert torch.equal(bias[:, 1:, 1:], bias[:, :-1, :-1]), "the bias must depend on i - j only"


def test_alibi_bias_rejects_slopes_that_are_not_one_per_head():
    with pytest.raises(ValueError):
        alibi_bias(3, 3, torch.tensor([[0.5], [0.25]]))  # (2, 1): slopes are (H,)
