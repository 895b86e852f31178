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
