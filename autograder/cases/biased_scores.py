"""Hidden cases for ``biased_scores``."""

import math

import torch

from autograder.cases.common import Case, Mistake, call_label, call_probe, tensor_check
from solutions import positional_encodings as ref

NAME = "biased_scores"


def _case(test, generator, batch, heads, length_q, length_k, head_dim, bias_shape, scale=None):
    def randn(*shape):
        return torch.randn(*shape, generator=generator)

    q, k = randn(batch, heads, length_q, head_dim), randn(batch, heads, length_k, head_dim)
    bias = randn(*bias_shape)
    kwargs = {} if scale is None else {"scale": scale}
    label = call_label(NAME, [q, k, bias], kwargs)
    expected = ref.biased_scores(q, k, bias, scale=scale)
    used = 1 / math.sqrt(head_dim) if scale is None else scale
    product = q @ k.transpose(-2, -1)  # (B, H, Lq, Lk)
    mistakes = [
        Mistake("the scale multiplies the bias too; only q @ k^T is scaled: scale * (q @ k^T) + bias.",
                lambda: used * (product + bias)),
        Mistake("the scale is missing: scale * q @ k^T + bias, with scale = 1/sqrt(dh) by default.",
                lambda: product + bias),
        Mistake("the scale is 1/dh; it is 1/sqrt(dh).", lambda: product / head_dim + bias),
    ]
    if scale is not None:
        mistakes.insert(0, Mistake("the scale argument is ignored: the default 1/sqrt(dh) is used instead.",
                                   lambda: product / math.sqrt(head_dim) + bias))
    return Case(test, label, call_probe(NAME, [q, k, bias], kwargs),
                tensor_check(label, expected, atol=5e-5, rtol=5e-5, mistakes=mistakes))


def build(rng, generator):
    length = rng.randint(10, 30)
    return [
        _case("biased_scores_values", generator, 2, 3, 7, 7, 8, (1, 3, 7, 7)),
        _case("biased_scores_values", generator, 1, 2, 5, 11, 16, (1, 2, 5, 11)),
        _case("biased_scores_values", generator, 3, 1, 1, 4, 4, (3, 1, 1, 4)),
        _case("biased_scores_values", generator, 2, 4, length, length, 8, (2, 4, length, length)),
        _case("biased_scores_scale", generator, 2, 2, 6, 6, 8, (1, 2, 6, 6), scale=1.0),
        _case("biased_scores_scale", generator, 1, 2, 4, 5, 16, (1, 2, 4, 5), scale=0.25),
        _case("biased_scores_broadcast", generator, 2, 3, 6, 6, 8, (6, 6)),
        _case("biased_scores_broadcast", generator, 2, 3, 5, 8, 8, (2, 1, 1, 8)),
    ]
