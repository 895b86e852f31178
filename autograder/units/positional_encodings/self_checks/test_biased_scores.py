"""Self-checks for task biased_scores: biased_scores. Run: pytest -k biased_scores"""

import math

import torch

from checks import assert_close
from positional_encodings import biased_scores


def test_biased_scores_match_the_worked_example():
    q = torch.tensor([[[[1.0, 0.0]]]])
    k = torch.tensor([[[[2.0, 0.0], [0.0, 1.0]]]])
    bias = torch.tensor([[0.5, -0.5]])
    assert_close(biased_scores(q, k, bias, scale=1.0), torch.tensor([[[[2.5, -0.5]]]]),
                 what="biased_scores(q, k, bias, scale=1.0)")


def test_biased_scores_scale_leaves_the_bias_alone():
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 3, 4, 16, generator=generator), torch.randn(2, 3, 5, 16, generator=generator)
    bias = torch.randn(1, 3, 4, 5, generator=generator)
    expected = q @ k.transpose(-2, -1) / math.sqrt(16) + bias
    scaled_bias = (q @ k.transpose(-2, -1) + bias) / math.sqrt(16)
    assert_close(biased_scores(q, k, bias), expected, what="biased_scores(q, k, bias)", atol=1e-5,
                 causes=[(scaled_bias, "the scale multiplies the bias too; only q @ k^T is scaled.")],
                 hint="scale (1/sqrt(dh) by default) multiplies q @ k^T only, never the bias.")


def test_biased_scores_multiply_by_an_explicit_scale():
    generator = torch.Generator().manual_seed(1)
    q, k = torch.randn(1, 2, 3, 4, generator=generator), torch.randn(1, 2, 6, 4, generator=generator)
    bias = torch.randn(3, 6, generator=generator)  # (Lq, Lk): broadcasts over batch and heads
    content = q @ k.transpose(-2, -1)
    assert_close(biased_scores(q, k, bias, scale=0.3), 0.3 * content + bias, what="biased_scores(q, k, bias, scale=0.3)",
                 atol=1e-5, causes=[(content / 0.3 + bias, "the scale divides q @ k^T; it multiplies it."),
                                    (content / 2 + bias, "the scale argument is ignored: 1/sqrt(dh) is used.")],
                 hint="scores = scale * q @ k^T + bias; the default 1/sqrt(dh) applies only when scale is None.")


def test_biased_scores_leave_q_k_and_bias_alone():
    generator = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, 2, 3, 4, generator=generator), torch.randn(2, 2, 3, 4, generator=generator)
    bias = torch.randn(1, 2, 3, 3, generator=generator)
    before = [t.clone() for t in (q, k, bias)]
    biased_scores(q, k, bias, scale=0.5)
    for name, tensor, old in zip(("q", "k", "bias"), (q, k, bias), before):
        assert torch.equal(tensor, old), f"{name} was changed in place: compute into a new tensor"


def test_biased_scores_broadcast_a_bias_of_one_head_over_several_batches_and_heads():
    generator = torch.Generator().manual_seed(4)
    q, k = torch.randn(3, 2, 4, 8, generator=generator), torch.randn(3, 2, 5, 8, generator=generator)
    bias = torch.randn(1, 2, 4, 5, generator=generator)  # (1, H, Lq, Lk), as t5_bias gives it
    assert_close(biased_scores(q, k, bias), q @ k.transpose(-2, -1) / math.sqrt(8) + bias,
                 what="biased_scores with B = 3, H = 2 and a (1, H, Lq, Lk) bias", atol=1e-5,
                 axes=("batch", "head", "query", "key"), hint="the bias broadcasts to (B, H, Lq, Lk) as + would.")


def test_biased_scores_keep_float64():
    q, k = torch.randn(1, 1, 2, 4, dtype=torch.float64), torch.randn(1, 1, 3, 4, dtype=torch.float64)
    got = biased_scores(q, k, torch.zeros(2, 3, dtype=torch.float64))
    assert got.dtype == torch.float64, f"float64 inputs should give float64 scores, got {got.dtype}"
