"""Hidden cases for ``shaw_scores``.

While ``shaw_scores`` runs, the student's ``clipped_relative_positions`` is
swapped for the grader's stand-in, which returns valid but scrambled indices.
A ``shaw_scores`` that calls the helper is then right when it gives the scores
for the stand-in's index; one that builds its own index must give the
reference. Either way a mistake in the helper is charged once, to its own task.
"""

import math

import torch

from autograder.cases.common import Case, Mistake, call_label, call_probe, tensor_check
from autograder.cases.relative_positions import distances
from autograder.worker import scrambled_relative_positions
from solutions import positional_encodings as ref

NAME = "shaw_scores"


def _scores(q, k, rel_k, index, content_scale, relative_scale):
    """Shaw scores from a given (Lq, Lk) index into rel_k, each term with its own scale."""
    content = q @ k.transpose(-2, -1)  # (B, H, Lq, Lk)
    relative = torch.einsum("bhqd,qkd->bhqk", q, rel_k[index])  # (B, H, Lq, Lk); small sizes only
    return content_scale * content + relative_scale * relative


def _case(test, generator, batch, heads, length_q, length_k, head_dim, k, scale=None, dtype=torch.float32):
    def randn(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)

    q, key, rel_k = randn(batch, heads, length_q, head_dim), randn(batch, heads, length_k, head_dim), randn(2 * k + 1, head_dim)
    kwargs = {} if scale is None else {"scale": scale}
    label = call_label(NAME, [q, key, rel_k, k], kwargs)
    expected = ref.shaw_scores(q, key, rel_k, k, scale=scale)
    used = 1 / math.sqrt(head_dim) if scale is None else scale
    default = 1 / math.sqrt(head_dim)
    index = ref.clipped_relative_positions(length_q, length_k, k)
    key_ = (3 + 2 * length_k % 5, 5, 1 + k)
    stand_in = scrambled_relative_positions(length_q, length_k, k, key=key_)
    transposed = (-distances(length_q, length_k)).clamp(-k, k) + k
    mistakes = []
    for idx in (index, stand_in):
        mistakes += [
            Mistake("the scale multiplies only q . k; it multiplies the relative term q . rel_k too: "
                    "scale * (q . k + q . rel_k).", lambda idx=idx: _scores(q, key, rel_k, idx, used, 1.0)),
            Mistake("the scale multiplies only the relative term; it multiplies q . k too.",
                    lambda idx=idx: _scores(q, key, rel_k, idx, 1.0, used)),
            Mistake("no scale at all: multiply both terms by scale (default 1/sqrt(dh)).",
                    lambda idx=idx: _scores(q, key, rel_k, idx, 1.0, 1.0)),
        ]
        if scale is not None:
            mistakes.insert(0, Mistake("the scale argument is ignored: the default 1/sqrt(dh) is used instead.",
                                       lambda idx=idx: _scores(q, key, rel_k, idx, default, default)))
    mistakes.append(Mistake("the relative vectors are picked by i - j; use the index of clipped_relative_positions, "
                            "built from j - i.", lambda: _scores(q, key, rel_k, transposed, used, used)))
    tolerance = 1e-10 if dtype == torch.float64 else 5e-5
    substitute = {"name": "clipped_relative_positions", "stand_in": "scrambled_relative_positions", "key": list(key_)}
    return Case(test, label, call_probe(NAME, [q, key, rel_k, k], kwargs, substitute=substitute),
                tensor_check(label, expected, atol=tolerance, rtol=tolerance, mistakes=mistakes,
                             also_accept=_scores(q, key, rel_k, stand_in, used, used).to(dtype)))


def build(rng, generator):
    return [
        _case("shaw_values", generator, 2, 3, 7, 7, 8, 2),
        _case("shaw_values", generator, 1, 4, 5, 9, 16, 3),
        _case("shaw_values", generator, 3, 2, 12, 4, 4, 1),
        _case("shaw_values", generator, 2, 2, 33, 33, 8, 8),
        _case("shaw_values", generator, 2, 2, rng.randint(10, 40), rng.randint(10, 40), 8, rng.randint(1, 6)),
        _case("shaw_scale", generator, 2, 2, 6, 6, 8, 2, scale=0.5),
        _case("shaw_scale", generator, 1, 3, 5, 7, 4, 3, scale=1.0),
        _case("shaw_edge_cases", generator, 1, 1, 1, 1, 4, 2),
        _case("shaw_edge_cases", generator, 1, 1, 1, 6, 8, 3),
        _case("shaw_edge_cases", generator, 2, 1, 6, 1, 8, 2),
        _case("shaw_edge_cases", generator, 2, 3, 9, 5, 8, 2, dtype=torch.float64),
    ]
