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


def test_t5_bias_passes_its_bucket_settings_on():
    table = torch.arange(10.0)[:, None]  # one head, bias_table[b, 0] = b
    got = t5_bias(1, 12, table, bidirectional=False, num_buckets=10, max_distance=20)
    assert_close(got, torch.zeros(1, 1, 1, 12), what="t5_bias(1, 12, table, bidirectional=False, num_buckets=10, "
                 "max_distance=20)", hint="causal: every key after the query is bucket 0; pass bidirectional, "
                                          "num_buckets and max_distance on to t5_relative_position_bucket.")
    got = t5_bias(12, 1, table, bidirectional=False, num_buckets=10, max_distance=20)[0, 0, :, 0]
    assert_close(got, torch.tensor([0.0, 1, 2, 3, 4, 5, 5, 6, 6, 7, 7, 7]),
                 what="t5_bias(12, 1, table, bidirectional=False, num_buckets=10, max_distance=20)[0, 0, :, 0]",
                 hint="10 causal buckets, 5 exact, max_distance 20: the settings must reach the buckets.")


def test_t5_bias_takes_the_dtype_of_the_table():
    for dtype in (torch.float64, torch.float16):
        got = t5_bias(3, 4, torch.randn(32, 2).to(dtype))
        assert got.dtype == dtype, f"a {dtype} bias_table should give a {dtype} bias, got {got.dtype}"


def test_t5_bias_of_key_after_query_and_before_it_when_lq_differs_from_lk():
    table = torch.arange(32.0)[:, None]
    got = t5_bias(2, 4, table)
    assert_close(got, torch.tensor([[[[0.0, 17, 18, 19], [1, 0, 17, 18]]]]), what="t5_bias(2, 4, table)",
                 axes=("batch", "head", "query", "key"),
                 hint="entry [0, h, i, j] is bias_table[bucket(j - i), h]: key minus query, both from 0.")
