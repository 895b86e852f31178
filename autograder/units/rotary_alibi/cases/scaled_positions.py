"""Hidden cases for ``scaled_positions``. Tolerance: float32's rounding of t / factor (rtol 1e-6); float64's
(1e-12) for float64 positions."""

import math

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_check, passed, raises_check,
                                   tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import Contract, Factor, contract_cases
from solutions import rotary_alibi as ref

NAME = "scaled_positions"

HINTS = {("dtype", "dtype float64"): "float64 positions stay float64: a long context needs their precision",
         ("positions", "float16 positions"): "float16 positions come back float32 (every dtype but float64 does): "
                                             "divide in float64 and round once",
         ("factor", "an integer factor above 1"): "an integer factor goes wrong: factor=4 means the same as factor=4.0 "
                                          "(the contract asks for a positive number)",
         ("shape", "a scalar"): "a 0-d tensor of positions goes wrong: the result has the positions' shape, ()",
         ("factor", "a float factor below 1"): "a factor below 1 is valid (it spreads the positions out): only "
                                               "0, negative, infinite and NaN factors are refused"}


def _case(test, positions, factor, scored=True):
    kwargs = {"factor": factor}
    label = call_label(NAME, [positions], kwargs)
    expected = ref.scaled_positions(positions, factor=factor)
    out = torch.float64 if positions.dtype == torch.float64 else torch.float32
    wide = positions.to(torch.float64)
    mistakes = [
        Mistake("the positions are multiplied by the factor; interpolation divides them, to squeeze a longer "
                "context into the trained range.", lambda: (wide * factor).to(out)),
        Mistake("the float64 positions are divided in float32 (a float32 step on the way): float64 positions keep "
                "float64's precision, which a long context needs.",
                lambda: (positions.float() / factor).to(out)),
        Mistake("an integer division (//): interpolation needs the fractional positions in between.",
                lambda: torch.div(wide, factor, rounding_mode="floor").to(out)),
    ]
    check = tensor_check(label, expected, atol=0.0, rtol=1e-12 if out == torch.float64 else 1e-6, mistakes=mistakes,
                         axes=("position",) * max(positions.dim(), 1), inputs=("positions",))
    return Case(test, label, call_probe(NAME, [positions], kwargs), check, scored=scored,
                features={"dtype": f"dtype {str(out).replace('torch.', '')}",
                          "positions": f"{str(positions.dtype).replace('torch.', '')} positions",
                          "factor": _factor_level(factor),
                          "shape": {0: "a scalar", 1: "a line"}.get(positions.dim(), "a grid")})


def _factor_level(factor):
    kind = "an integer factor" if isinstance(factor, int) else "a float factor"
    return f"{kind} 1" if factor == 1 else f"{kind} below 1" if factor < 1 else f"{kind} above 1"


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.scaled_positions, args, kwargs)
    return _case(NAME, given["positions"], given["factor"]).check


def _from_contract(levels, rng, generator):
    """A call of scaled_positions_values at one row of the contract's design."""
    shape = {"a scalar": (), "a line": (rng.randint(5, 300),), "a grid": (rng.randint(2, 6), rng.randint(3, 9))}[
        levels["shape"]]
    kind = getattr(torch, levels["positions"].split()[0])
    top = 2000 if kind == torch.float16 else 30_000  # float16 holds whole numbers exactly up to 2048
    positions = torch.randint(0, top, shape, generator=generator)
    if kind.is_floating_point and kind != torch.float16:
        positions = positions.to(torch.float64) / rng.choice([3, 7])
    positions = positions.to(kind)
    factor = {"an integer factor 1": 1, "a float factor 1": 1.0, "an integer factor above 1": rng.choice([2, 3, 8]),
              "a float factor above 1": rng.choice([2.5, 3.0, 16.0]),
              "a float factor below 1": rng.choice([0.5, 0.25])}[levels["factor"]]
    return _case("scaled_positions_values", positions, factor)


# The contract: what the docstring lets vary, each level sent by some case of scaled_positions_values, every pair of
# levels together in one (autograder/core/contracts.py). The result's dtype follows from the positions'.
CONTRACT = Contract(NAME, (
    Factor("positions", ("int64 positions", "int32 positions", "float16 positions", "float32 positions",
                         "float64 positions")),
    Factor("shape", ("a scalar", "a line", "a grid")),
    # One factor, not a type and a size: no whole number lies between 0 and 1, and two factors would then confound.
    Factor("factor", ("a float factor 1", "a float factor above 1", "a float factor below 1", "an integer factor 1",
                      "an integer factor above 1")),
), _from_contract)


def _meta_case(test, shape):
    """Positions on the meta device (no values, no GPU needed): the result must be made there, of their shape and
    float32; a division that goes through the CPU (.cpu(), .numpy(), .tolist()) fails, as it would copy a GPU's
    positions to the CPU and back. By keyword: a meta tensor has no values for tools that read positional ones."""
    kwargs = {"positions": torch.empty(shape, dtype=torch.long, device="meta"), "factor": 4.0}
    label = call_label(NAME, [], kwargs) + " on the meta device"
    expected = computed_on_the_cpu(ref.scaled_positions, **kwargs)
    return Case(test, label, call_probe(NAME, [], kwargs),
                device_check(label, "meta", expected.shape, expected.dtype, inputs=("positions",)))


def build(rng, generator):
    cases = [
        _case("scaled_positions_values", torch.arange(10), 4.0),
        _case("scaled_positions_values", torch.arange(rng.randint(100, 5000)), float(rng.choice([2, 3, 8, 16]))),
        _case("scaled_positions_values", torch.randint(0, 10_000, (3, 5), generator=generator), 2.5),
        _case("scaled_positions_values", torch.arange(8192, dtype=torch.float64), 4.0),
        _case("scaled_positions_values", torch.arange(6), 1.0),
        # A factor below 1 spreads the positions out (valid, if unusual); float16 and int32 positions give float32.
        _case("scaled_positions_values", torch.arange(9), 0.5),
        _case("scaled_positions_values", torch.arange(0, 2000, 7).to(torch.float16), 3.0),
        _case("scaled_positions_values", torch.arange(0, 600, 3, dtype=torch.int32), 6.0),
        # float32 positions (a function that divides them in place changes its caller's), and float64 ones far from
        # 0 with fractions, where a float32 step on the way shows.
        _case("scaled_positions_values", torch.arange(0, 3000, 11, dtype=torch.float32) / 3, 2.0),
        _case("scaled_positions_values", torch.arange(60, dtype=torch.float64) * 1000.37 + 123456.789, 3.0),
        _case("scaled_positions_values", torch.arange(7), 2.0, scored=False),
    ] + contract_cases(CONTRACT, rng, generator)
    for factor in (0.0, -2.0, math.inf, math.nan):
        label = call_label(NAME, [torch.arange(4)], {"factor": factor})
        cases.append(Case("scaled_positions_invalid_args", label,
                          call_probe(NAME, [torch.arange(4)], {"factor": factor}),
                          raises_check(label, "ValueError", " (the factor must be a positive, finite number)")))
    return cases + [_meta_case("scaled_positions_values", (3, 5))]

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("scaled_positions_values", lambda rng, g: ((rng.randint(0, 50) + torch.arange(7),), {"factor": 4.0}),
                      layouts=("positions",), vary={"factor": (2.5, 0.5)})
