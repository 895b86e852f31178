"""Hidden cases for ``sinusoidal_table``.

Tolerance: the reference builds its angles in float64. A float32 formulation
drifts from it by about 6e-5 at t = 1000 and 4e-4 at t = 5000 (the angle
t * w_k carries float32's relative error, so the error grows with t), hence a
tolerance that grows with the row: 1e-5 + 2.5e-7 * t.

Half precision is not among the contract's dtypes: a formulation the kit accepts
(tests/alternatives: the angles computed in the dtype asked for) differs from the
reference by about eps * t in the angle, 0.04 at t = 36 in bfloat16, so a tolerance
that keeps it full would let most known mistakes through as well.
"""

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_arg, device_check, dtype_arg, passed,
                                   raises_check, tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import Contract, Factor, contract_cases, dtype_of
from solutions import positional_encodings as ref

NAME = "sinusoidal_table"

# What a condition of failure usually means (diagnosis.condition): pointers, never verdicts.
HINTS = {
    ("dtype", "dtype float64"): "look at where the table takes its dtype: build it in the dtype asked for, or cast "
                                "it to that dtype at the end",
    ("base", "base passed"): "the base argument seems not to be used",
    ("passing", "base by keyword"): "a call that names base= fails: keep the parameter names of the signature you "
                                    "were given",
}

# What a relation of the wrong output to the right one usually means (tensor_check's advice).
ADVICE = (
    (r"wrong at every odd column", "The odd columns are the cosines cos(t * w_k): look at how they are made."),
    (r"wrong at every even column", "The even columns are the sines sin(t * w_k): look at how they are made."),
    (r"from position \d{3,} on", "An error that appears only far into the table is usually one of precision: "
                                        "compute the angles t * w_k in float32 or better before sin and cos."),
    (r"right for column 0\.\.1, wrong from column 2 on", "The first pair (frequency 1) is right and the others are "
                                                       "not: look at the frequencies w_k = base ** (-2k / d_model)."),
)


def _angles(num_positions, d_model, base, exponent, first_position=0):
    position = torch.arange(first_position, first_position + num_positions, dtype=torch.float64)[:, None]
    return position * base ** (-exponent / d_model)


def _mistakes(num_positions, d_model, base, dtype):
    two_k = torch.arange(0, d_model, 2, dtype=torch.float64)
    table = lambda: ref.sinusoidal_table(num_positions, d_model, base, dtype=dtype)

    def interleave(even, odd):
        return torch.stack((even, odd), dim=-1).reshape(num_positions, d_model).to(dtype)

    return [
        Mistake("sin and cos are swapped: column 2k holds the sine, column 2k+1 the cosine.",
                lambda: table().reshape(num_positions, -1, 2).flip(-1).reshape(num_positions, d_model)),
        Mistake("the table is in halves [sin ... sin | cos ... cos]; the convention here interleaves the pairs "
                "(sin, cos, sin, cos, ...).",
                lambda: torch.cat((table()[:, 0::2], table()[:, 1::2]), dim=-1)),
        Mistake("the exponent uses k/d_model where the pair index k needs 2k/d_model (w_k = base ** (-2k / d_model)).",
                lambda: interleave(*(f(_angles(num_positions, d_model, base, two_k / 2)) for f in (torch.sin, torch.cos)))),
        Mistake("the cosine column 2k+1 uses the exponent (2k+1)/d_model; both members of a pair share 2k/d_model.",
                lambda: interleave(_angles(num_positions, d_model, base, two_k).sin(),
                                   _angles(num_positions, d_model, base, two_k + 1).cos())),
        Mistake("the frequencies grow instead of shrink: w_k = base ** (-2k / d_model), with the minus sign.",
                lambda: interleave(*(f(_angles(num_positions, d_model, base, -two_k)) for f in (torch.sin, torch.cos)))),
        Mistake("positions are counted from 1; row 0 is position 0 (sin 0 = 0, cos 0 = 1).",
                lambda: interleave(*(f(_angles(num_positions, d_model, base, two_k, 1)) for f in (torch.sin, torch.cos)))),
    ]


def _value_case(test, num_positions, d_model, base=10000.0, dtype=torch.float32, pass_base=True, device=None,
                scored=True, base_by_keyword=False):
    args = [num_positions, d_model] + ([base] if pass_base and not base_by_keyword else [])
    kwargs = {"base": base} if pass_base and base_by_keyword else {}
    if dtype != torch.float32:
        kwargs["dtype"] = dtype_arg(dtype)
    if device is not None:
        kwargs["device"] = device
    label = call_label(NAME, args, kwargs)
    expected = ref.sinusoidal_table(num_positions, d_model, base, dtype=dtype)
    atol = (1e-5 + 2.5e-7 * torch.arange(num_positions, dtype=torch.float64))[:, None]
    check = tensor_check(label, expected, atol=atol, rtol=0.0,
                         mistakes=_mistakes(num_positions, d_model, base, dtype), axes=("position", "column"),
                         advice=ADVICE)
    # A table of 0 or 1 rows is right for nearly any formula (row 0 is sin 0, cos 0): it tells no condition.
    features = {} if num_positions <= 1 else {
        "dtype": f"dtype {str(dtype).replace('torch.', '')}",
        "base": "base passed" if pass_base and base != 10000.0 else "the default base",
        "passing": "base left out" if not pass_base else "base by keyword" if base_by_keyword else "base by position"}
    return Case(test, label, call_probe(NAME, args, kwargs), check, features=features,
                sizes={"num_positions": num_positions, "d_model": d_model, "d_model // 2": d_model // 2},
                scored=scored)


def _meta_case(test, num_positions, d_model, dtype=torch.float32):
    """The table asked for on the meta device, which needs no GPU: it must be built there (shape and dtype are
    all a meta tensor has, so no values are compared)."""
    args, kwargs = [num_positions, d_model], {"device": device_arg("meta")}
    if dtype != torch.float32:
        kwargs["dtype"] = dtype_arg(dtype)
    label = call_label(NAME, args, kwargs)
    expected = computed_on_the_cpu(ref.sinusoidal_table, num_positions, d_model, dtype=dtype,
                                   device=torch.device("meta"))
    return Case(test, label, call_probe(NAME, args, kwargs), device_check(label, "meta", expected.shape, expected.dtype),
                sizes={"num_positions": num_positions, "d_model": d_model})


# The contract: what the docstring lets vary, each level sent by some case of sinusoidal_edge_cases, every pair of
# levels together in one (autograder/core/contracts.py). The device is checked apart (_meta_case); tables of 0 or 1
# rows are hand-written edge cases, since they are right for nearly any formula and tell no condition.
def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.sinusoidal_table, args, kwargs)
    return _value_case(NAME, given["num_positions"], given["d_model"], base=given.get("base", 10000.0),
                       dtype=given.get("dtype", torch.float32), pass_base="base" in given).check


def _from_contract(levels, rng, generator):
    base = 10000.0 if levels["base"] == "the default base" else float(rng.choice([100, 500, 2500]))
    return _value_case("sinusoidal_edge_cases", rng.randint(20, 200), 2 * rng.randint(2, 16), base=base,
                       dtype=dtype_of(levels["dtype"]),
                       base_by_keyword=levels["passing"] == "base by keyword")


CONTRACT = Contract(NAME, (
    Factor("dtype", ("dtype float32", "dtype float64")),
    Factor("base", ("the default base", "base passed")),
    Factor("passing", ("base by position", "base by keyword")),
), _from_contract)


def build(rng, generator):
    cases = [
        _value_case("sinusoidal_values", 50, 16, pass_base=False),
        _value_case("sinusoidal_values", 1000, 64),
        _value_case("sinusoidal_values", 5000, 8),
        _value_case("sinusoidal_values", rng.randint(20, 300), 2 * rng.randint(3, 40), base=float(rng.choice([100, 500, 2500]))),
        _value_case("sinusoidal_values", rng.randint(5, 60), 2 * rng.randint(1, 12), dtype=torch.float64),
        _value_case("sinusoidal_edge_cases", 1, 2),
        _value_case("sinusoidal_edge_cases", 0, 8),
        _value_case("sinusoidal_edge_cases", 7, 4, dtype=torch.float64, device="cpu"),
        _meta_case("sinusoidal_edge_cases", 9, 6, dtype=torch.float64),
        # Probes for the diagnosis, worth nothing: short tables in both dtypes, the default base.
        _value_case("sinusoidal_values", 6, 4, pass_base=False, scored=False),
        _value_case("sinusoidal_values", 9, 6, scored=False),
        _value_case("sinusoidal_values", 5, 8, dtype=torch.float64, scored=False),
    ]
    for num_positions, d_model, why in [
        (10, 7, " (d_model is odd: the table is made of sin/cos pairs)"),
        (10, 0, " (d_model must be positive)"),
        (10, -4, " (d_model must be positive)"),
        (-1, 8, " (a negative number of positions)"),
    ]:
        label = call_label(NAME, [num_positions, d_model])
        cases.append(Case("sinusoidal_invalid_args", label, call_probe(NAME, [num_positions, d_model]),
                          raises_check(label, "ValueError", why)))
    return cases + contract_cases(CONTRACT, rng, generator)

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("sinusoidal_edge_cases", lambda rng, g: ((rng.randint(5, 12), 2 * rng.randint(2, 8)), {}),
                      vary={"num_positions": (13,), "d_model": (18,), "base": (500.0,), "dtype": (torch.float64,)})
