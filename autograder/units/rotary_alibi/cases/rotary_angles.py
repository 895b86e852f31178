"""Hidden cases for ``rotary_angles``.

Tolerance: the reference computes the angles t * theta_i in float64 and rounds once. A float32 formulation
carries float32's relative error in the angle itself, about 6e-8 * t radians, so the tolerance grows with
the position: 1e-5 + 2e-7 * |t| (at t = 10^5 that is 0.02, still far below what any mistake changes).
"""

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_check, dtype_arg, passed, raises_check,
                                   tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import Contract, FLOAT_DTYPES, Factor, contract_cases, dtype_of
from solutions import rotary_alibi as ref

NAME = "rotary_angles"

HINTS = {
    ("dtype", "dtype float64"): "look at where cos and sin take their dtype: the dtype argument asks for it",
    ("base", "base passed"): "the base argument seems not to be used",
    ("positions", "float positions"): "integer positions work, fractional ones (from scaled_positions) do not: "
                                      "convert the positions to a float dtype before multiplying",
    ("dtype", "dtype float16"): "float16 goes wrong: compute the angles in float64 (or float32) and round to the "
                                "dtype asked for once, at the end",
    ("dtype", "dtype bfloat16"): "bfloat16 goes wrong: compute the angles in float64 (or float32) and round to the "
                                 "dtype asked for once, at the end",
    ("shape", "a scalar"): "a 0-d position goes wrong: cos and sin have shape positions.shape + (dh // 2,), so () "
                           "gives (dh // 2,)",
    ("base", "base by keyword"): "a call that names base= goes wrong: keep the parameter names of the signature",
}
ADVICE = (
    (r"from position \d{3,} on", "An error that appears only at large positions is one of precision: compute "
                                 "t * theta_i in float32 at least, better float64, before cos and sin."),
)


def _angles(positions, head_dim, base, exponent_of, first=0.0, whole=False):
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    t = positions.to(torch.float64).trunc() if whole else positions.to(torch.float64)
    return (t[..., None] + first) * base ** exponent_of(i, head_dim)


def _stacked(angle, dtype, swap=False):
    cos, sin = angle.cos().to(dtype), angle.sin().to(dtype)
    return torch.stack((sin, cos) if swap else (cos, sin))


def _mistakes(positions, head_dim, base, dtype):
    right = lambda i, d: -2 * i / d  # noqa: E731
    return [
        Mistake("cos and sin are swapped: the function returns (cos, sin), in that order.",
                lambda: _stacked(_angles(positions, head_dim, base, right), dtype, swap=True)),
        Mistake("the exponent uses i/dh where pair i needs 2i/dh: theta_i = base ** (-2i / head_dim).",
                lambda: _stacked(_angles(positions, head_dim, base, lambda i, d: -i / d), dtype)),
        Mistake("the frequencies grow instead of shrink: theta_i = base ** (-2i / head_dim), with the minus sign.",
                lambda: _stacked(_angles(positions, head_dim, base, lambda i, d: 2 * i / d), dtype)),
        Mistake("the positions are shifted by one: position t turns by t * theta_i, and position 0 not at all.",
                lambda: _stacked(_angles(positions, head_dim, base, right, first=1.0), dtype)),
    ] + ([Mistake("fractional positions are cut to whole numbers (an integer dtype on the way): position 0.25 "
                  "turns by 0.25 * theta_i, as scaled_positions' output needs.",
                  lambda: _stacked(_angles(positions, head_dim, base, right, whole=True), dtype))]
         if positions.is_floating_point() else [])


def _case(test, positions, head_dim, base=None, dtype=None, scored=True, base_by_keyword=False):
    args = [positions, head_dim] + ([base] if base is not None and not base_by_keyword else [])
    kwargs = {} if dtype is None else {"dtype": dtype_arg(dtype)}
    if base is not None and base_by_keyword:
        kwargs = {"base": base, **kwargs}
    label = call_label(NAME, args, kwargs)
    used_base, used_dtype = 10000.0 if base is None else base, dtype or torch.float32
    cos, sin = ref.rotary_angles(positions, head_dim, used_base, dtype=used_dtype)
    expected = torch.stack((cos, sin))  # (2, ..., dh/2): the pair as the grader reads it
    # A half dtype: cos and sin rounded once from the exact angle; another correct order of rounding is one unit
    # in the last place away.
    floor = torch.finfo(used_dtype).eps if used_dtype in (torch.float16, torch.bfloat16) else 1e-5
    atol = (floor + 2e-7 * positions.to(torch.float64).abs())[..., None] if positions.numel() else floor
    check = tensor_check(label + " as (cos, sin), stacked", expected, atol=atol, rtol=0.0,
                         mistakes=_mistakes(positions, head_dim, used_base, used_dtype),
                         axes=("cos/sin",) + ("position",) * positions.dim() + ("pair",), advice=ADVICE)
    features = {
        "dtype": f"dtype {str(used_dtype).replace('torch.', '')}",
        "base": ("the default base" if base is None or base == 10000.0 else "base by keyword" if base_by_keyword
                 else "base passed"),
        "positions": "float positions" if positions.is_floating_point() else "integer positions",
        "positions dtype": f"{str(positions.dtype).replace('torch.', '')} positions",
        "shape": {0: "a scalar", 1: "a line"}.get(positions.dim(), "a grid"),
        "head_dim": "head_dim 2" if head_dim == 2 else "head_dim > 2"}
    return Case(test, label, call_probe(NAME, args, kwargs, view="pair"), check, features=features,
                sizes={"head_dim": head_dim, "head_dim // 2": head_dim // 2}, scored=scored)


def _meta_case(test, shape, head_dim):
    """Positions on the meta device (no values, no GPU needed): cos and sin must be made there, of shape
    positions.shape + (dh/2,) and float32; speeds or angles built on the CPU meet the meta positions and fail. By
    keyword: a meta tensor has no values for tools that read positional ones. Float positions (scaled_positions'):
    a table of angles looked up by whole positions may read them (int(positions.max()), a wait on a GPU, not a
    mistake), and such a function computes float positions' angles directly."""
    kwargs = {"positions": torch.empty(shape, dtype=torch.float32, device="meta"), "head_dim": head_dim}
    label = call_label(NAME, [], kwargs) + " on the meta device"
    # (2, ..., dh/2): the pair as the grader reads it
    expected = torch.stack(computed_on_the_cpu(ref.rotary_angles, **kwargs))
    return Case(test, label, call_probe(NAME, [], kwargs, view="pair"),
                device_check(label + " as (cos, sin), stacked", "meta", expected.shape, expected.dtype,
                             inputs=("positions",)), sizes={"head_dim": head_dim, "head_dim // 2": head_dim // 2})


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.rotary_angles, args, kwargs)
    return _case(NAME, given["positions"], given["head_dim"], base=given.get("base"), dtype=given.get("dtype")).check


def _from_contract(levels, rng, generator):
    """A call of rotary_angles_edge_cases at one row of the contract's design."""
    shape = {"a scalar": (), "a line": (rng.randint(5, 60),), "a grid": (rng.randint(2, 5), rng.randint(3, 9))}[
        levels["shape"]]
    kind = getattr(torch, levels["positions dtype"].split()[0])
    positions = torch.randint(0, 3000, shape, generator=generator)
    if kind.is_floating_point:  # fractional positions, as scaled_positions makes them
        positions = positions.to(torch.float64) / rng.choice([2, 4, 8])
    positions = positions.to(kind)
    head_dim = 2 if levels["head_dim"] == "head_dim 2" else 2 * rng.randint(2, 16)
    base = None if levels["base"] == "the default base" else float(rng.choice([500.0, 1000.0, 50000.0]))
    dtype = dtype_of(levels["dtype"])
    return _case("rotary_angles_edge_cases", positions, head_dim, base=base,
                 dtype=None if dtype == torch.float32 and rng.random() < 0.5 else dtype,
                 base_by_keyword=levels["base"] == "base by keyword")


# The contract: what the docstring lets vary, each level sent by some case of rotary_angles_edge_cases, every pair of
# levels together in one (autograder/core/contracts.py). "positions" (float or integer) follows from their dtype.
CONTRACT = Contract(NAME, (
    Factor("positions dtype", ("int64 positions", "int32 positions", "float32 positions", "float64 positions")),
    Factor("shape", ("a scalar", "a line", "a grid")),
    FLOAT_DTYPES,
    Factor("base", ("the default base", "base passed", "base by keyword")),
    Factor("head_dim", ("head_dim 2", "head_dim > 2")),
), _from_contract)


def build(rng, generator):
    far = torch.randint(0, 100_000, (40,), generator=generator)
    grid = torch.randint(0, 300, (3, 7), generator=generator)
    cases = [
        _case("rotary_angles_values", torch.arange(16), 8),
        _case("rotary_angles_values", torch.arange(rng.randint(30, 200)), 2 * rng.randint(4, 64)),
        _case("rotary_angles_values", far, 64),
        _case("rotary_angles_values", grid, 2 * rng.randint(2, 16), base=float(rng.choice([500.0, 50000.0]))),
        _case("rotary_angles_values", torch.arange(rng.randint(5, 40)), 2 * rng.randint(1, 8), dtype=torch.float64),
        _case("rotary_angles_edge_cases", torch.arange(0, 10, dtype=torch.float64) / 4, 6, dtype=torch.float64),
        _case("rotary_angles_edge_cases", torch.arange(0), 8),
        _case("rotary_angles_edge_cases", torch.tensor(7), 2),
        # Probes, worth nothing: small tables, both dtypes, integer and float positions.
        _case("rotary_angles_values", torch.arange(6), 4, scored=False),
        _case("rotary_angles_values", torch.arange(9).float() / 2, 6, scored=False),
        _case("rotary_angles_values", torch.arange(5), 8, dtype=torch.float64, scored=False),
    ] + contract_cases(CONTRACT, rng, generator)
    for head_dim, why in [(7, " (head_dim is odd: RoPE turns coordinates in pairs)"),
                          (0, " (head_dim must be positive)"), (-4, " (head_dim must be positive)")]:
        label = call_label(NAME, [torch.arange(4), head_dim])
        cases.append(Case("rotary_angles_invalid_args", label, call_probe(NAME, [torch.arange(4), head_dim]),
                          raises_check(label, "ValueError", why)))
    return cases + [_meta_case("rotary_angles_edge_cases", (2, 7), 8)]

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("rotary_angles_edge_cases", lambda rng, g: ((rng.randint(0, 50) + torch.arange(6), 8), {}),
                      layouts=("positions",), view="pair",
                      vary={"head_dim": (12,), "base": (500.0,), "dtype": (torch.float64,)})
