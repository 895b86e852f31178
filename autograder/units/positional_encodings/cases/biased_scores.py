"""Hidden cases for ``biased_scores``."""

import math

import torch

from autograder.core.cases import (Case, Mistake, call_label, call_probe, lengths, score_factors, size_one,
                                     tensor_check)
from solutions import positional_encodings as ref

NAME = "biased_scores"

HINTS = {
    ("lengths", "Lq != Lk"): "a length taken from the other argument is the usual reason: the query axis has "
                             "length_q entries, the key axis length_k",
    ("bias", "bias (Lq, Lk)"): "a bias of shape (Lq, Lk) is added to every batch and head: let it broadcast",
    ("bias", "bias (B, 1, 1, Lk)"): "a bias of shape (B, 1, 1, Lk) (a padding mask) is added along the keys: let it "
                                    "broadcast",
    ("scale", "an explicit scale"): "look at how the scale argument is used",
    ("size 1", "a size of 1"): "the cases with an axis of length 1 fail: look for a squeeze(), or for an "
                               "axis that is dropped or mixed up when its length is 1",
}


def _case(test, generator, batch, heads, length_q, length_k, head_dim, bias_shape, scale=None, scored=True):
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
    check = tensor_check(label, expected, atol=5e-5, rtol=5e-5, mistakes=mistakes,
                         axes=("batch", "head", "query", "key"), factors=score_factors(head_dim, scale),
                         terms={"q @ k^T": (product, used), "bias": (bias, 1.0)}, inputs=("q", "k", "bias"))
    shape = {(batch, heads, length_q, length_k): "(B, H, Lq, Lk)", (1, heads, length_q, length_k): "(1, H, Lq, Lk)",
             (length_q, length_k): "(Lq, Lk)", (batch, 1, 1, length_k): "(B, 1, 1, Lk)"}.get(tuple(bias_shape), "other")
    return Case(test, label, call_probe(NAME, [q, k, bias], kwargs), check,
                features={"lengths": lengths(length_q, length_k), "bias": f"bias {shape}",
                          "size 1": size_one(batch, heads, length_q, length_k),
                          "scale": "the default scale" if scale is None else "an explicit scale"},
                sizes={"B": batch, "H": heads, "Lq": length_q, "Lk": length_k, "dh": head_dim}, scored=scored)


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
        # Probes for the diagnosis, worth nothing: square and not, the bias of the full shape.
        _case("biased_scores_values", generator, 1, 1, 4, 4, 4, (1, 1, 4, 4), scored=False),
        _case("biased_scores_values", generator, 1, 2, 3, 6, 4, (1, 2, 3, 6), scored=False),
    ]
