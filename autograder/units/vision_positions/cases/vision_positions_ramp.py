"""Hidden cases for ``vision_positions_ramp``. Tolerance: float32's rounding of the sum (rtol 1e-6), float64's (1e-12).

TODO: replace these with the cases of the unit's tasks, a module each, named after its task. ``build(rng,
generator)`` returns the task's cases; it draws sizes from ``rng`` (a random.Random) and tensors from
``generator`` (a torch.Generator), both seeded from the rubric's SEED, so every run grades with the same cases.
Give every axis a size of its own, so that a swapped axis shows. A case is the call sent to the student's code
(call_probe), the call as the student reads it (call_label) and a check run on the grader's side: tensor_check
compares with the reference's output, raises_check expects an error. A Mistake is a known wrong formulation:
the output it computes, and what to tell the student when theirs is that one. `check-unit` makes sure that each
is caught by at least one scored case of its task.
"""

import torch

from autograder.core.cases import Case, Mistake, call_label, call_probe, raises_check, tensor_check
from autograder.core.contracts import Contract, Factor, contract_cases
from solutions import vision_positions as ref

NAME = "vision_positions_ramp"

# What a condition of failure usually means ({(feature, value): words}, from the cases' features): said when no
# known mistake explains a wrong output.
HINTS = {
    ("scale", "scale != 1"): "with scale = 1 it works: look at where scale enters the formula",
    ("scale", "scale 0.0"): "0.0 is a scale like any other: test `scale is None`, not `if not scale`",
}


def _mistakes(x, scale):
    """The usual slips, each as the output it gives on these inputs."""
    ramp = torch.arange(x.shape[1], dtype=x.dtype)  # (L,)
    return [
        Mistake("the positions are counted from 1: the first row gets scale * 1; count them from 0, so that the "
                "first row of each sequence comes back unchanged.",
                lambda: x + scale * (ramp + 1)[:, None]),
        Mistake("the ramp runs along the features (index i), not the positions (index t): every feature of a row "
                "gets the same scale * t.",
                lambda: x + scale * torch.arange(x.shape[2], dtype=x.dtype)),
        Mistake("scale is left out: the ramp rises by 1 a position, not by scale.",
                lambda: x + ramp[:, None]),
    ]


def _case(test, x, scale):
    kwargs = {"scale": scale}
    label = call_label(NAME, [x], kwargs)
    expected = ref.vision_positions_ramp(x, scale=scale)
    rtol = 1e-12 if x.dtype == torch.float64 else 1e-6
    atol = rtol * (1 + abs(scale) * x.shape[1])  # the rounding of the ramp's largest value
    check = tensor_check(label, expected, atol=atol, rtol=rtol, mistakes=_mistakes(x, scale),
                         axes=("batch", "position", "feature"), inputs=("x",))
    return Case(test, label, call_probe(NAME, [x], kwargs), check,
                features={"scale": "scale 1" if scale == 1 else "scale 0.0" if scale == 0 else "scale != 1",
                          "dtype": f"dtype {str(x.dtype).replace('torch.', '')}",
                          "positions": "one position" if x.shape[1] == 1 else "several positions"},
                sizes={"B": x.shape[0], "L": x.shape[1], "d": x.shape[2]})


# The contract: each way the docstring lets a call vary, as factors with levels named as the cases' features
# name them. contract_cases sends one case per row of a covering design: every level, and every pair of levels of
# two factors, in some case (tests/core/test_contracts.py holds every unit's contracts to it). TODO: your function's.
def _from_contract(levels, rng, generator):
    dtype = getattr(torch, levels["dtype"].split()[-1])
    length = 1 if levels["positions"] == "one position" else rng.randint(2, 9)
    scale = {"scale 1": 1.0, "scale 0.0": 0.0, "scale != 1": rng.choice([0.5, -2.0, 3.0])}[levels["scale"]]
    x = torch.randn(rng.randint(1, 3), length, rng.randint(2, 5), generator=generator, dtype=torch.float64)
    return _case("vision_positions_ramp_values", x.to(dtype), scale)


CONTRACT = Contract(NAME, (
    Factor("dtype", ("dtype float32", "dtype float64")),
    Factor("scale", ("scale 1", "scale 0.0", "scale != 1")),
    Factor("positions", ("one position", "several positions")),
), _from_contract)


def build(rng, generator):
    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=generator).to(dtype)

    cases = contract_cases(CONTRACT, rng, generator) + [
        _case("vision_positions_ramp_values", randn(2, 3, 4), 1.0),
        _case("vision_positions_ramp_values", randn(3, rng.randint(5, 40), 5), 0.5),
        _case("vision_positions_ramp_values", randn(1, 7, 2), -2.0),
        _case("vision_positions_ramp_values", randn(2, 6, 3, dtype=torch.float64), rng.choice([0.25, 3.0])),
        _case("vision_positions_ramp_values", randn(4, 1, 3), 2.0),  # one position: its row is x itself
    ]
    for shape in ((4, 5), (2, 3, 4, 5)):
        x = randn(*shape)
        label = call_label(NAME, [x])
        cases.append(Case("vision_positions_ramp_invalid_args", label, call_probe(NAME, [x]),
                          raises_check(label, "ValueError", f" (x must be (B, L, d), not of shape {shape})")))
    return cases
