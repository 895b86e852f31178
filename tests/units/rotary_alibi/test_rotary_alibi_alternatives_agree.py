"""The second unit's submissions, checked against its reference (solutions/rotary_alibi.py) on fixed random inputs.

Each file in submissions/rotary_alibi/ defines one function, its task's; appended after the reference's text it
replaces the reference's version, and the reference's other functions call it. Every file in alternatives/ is a
correct formulation: it agrees with the reference within float32 tolerances on every case of its task, raises
ValueError where the reference does, and leaves its inputs unchanged. Every file in mistakes/ is a typical
mistake and none is right by accident: it differs from the reference on at least one case, or takes an argument
the contract refuses (no ValueError). The alibi_bias
mistakes listed in SAME_CAUSAL_SOFTMAX differ in value and still give the reference's attention under a causal
mask; the test checks that too, and that the other bias mistakes change the attention.

This is a standalone check of the files; the grader runs them through its own cases as well.
"""

import ast
import math
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from autograder.course.build import strip_markers
from autograder.core.loop_check import loops_in

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "solutions" / "rotary_alibi.py"
FOLDER = Path(__file__).parents[2] / "submissions" / "rotary_alibi"
ALTERNATIVES = sorted((FOLDER / "alternatives").glob("*.py"))
MISTAKES = sorted((FOLDER / "mistakes").glob("*.py"))
TASKS = ("rotary_angles", "apply_rotary", "rope_scores", "alibi_slopes", "alibi_bias", "scaled_positions")
SAME_CAUSAL_SOFTMAX = {"alibi_bias__key_position_form", "alibi_bias__symmetric_when_causal",
                       "alibi_bias__future_minus_inf", "alibi_bias__blind_bloom_key_position",
                       "alibi_bias__blind_abs_even_when_causal", "alibi_bias__blind_minus_inf_future",
                       "alibi_bias__blind_slopes_shape_not_checked"}  # the last: right values, no ValueError

# float32 angles t * theta: the rounding of theta (a float32 power) and of the product; measured below 4e-8 * |t|
# radians, and the first unit allows 2.5e-7 * |t| for its float32 sinusoidal tables.
ANGLE_ERROR_PER_POSITION = 2.5e-7


def load(path=None):
    """The reference's namespace, with ``path``'s function in place of the reference's own when given."""
    text = strip_markers(REFERENCE.read_text(encoding="utf-8"))
    if path is not None:
        text += "\n\n" + path.read_text(encoding="utf-8")
    namespace = {"__name__": f"rotary_alibi_{path.stem if path else 'reference'}"}
    exec(compile(text, str(path or REFERENCE), "exec"), namespace)
    return namespace


def task_of(path):
    return path.stem.split("__")[0]


@dataclass
class Case:
    """One call of a task's function: ``make()`` returns fresh (args, kwargs), so a call cannot see another's."""

    label: str
    make: object
    atol: float = 0.0
    rtol: float = 0.0
    compare_attention: bool = False  # an alibi_bias case whose attention under a causal mask is compared too


def generator(seed):
    return torch.Generator().manual_seed(seed)


def randn(seed, *shape, dtype=torch.float32):
    return torch.randn(*shape, generator=generator(seed), dtype=torch.float64).to(dtype)


def randint(seed, low, high, *shape):
    return torch.randint(low, high, shape, generator=generator(seed))


def angle_tolerance(largest_position):
    return 1e-6 + ANGLE_ERROR_PER_POSITION * largest_position


def rotary_angles_cases():
    cases = [
        ("positions 0..5, dh 8", lambda: ((torch.arange(6), 8), {}), 5),
        ("(2, 3) positions up to 4096, dh 24", lambda: ((randint(1, 0, 4096, 2, 3), 24), {}), 4096),
        ("a scalar position, dh 4", lambda: ((torch.tensor(7), 4), {}), 7),
        ("no positions, dh 6", lambda: ((torch.arange(0), 6), {}), 0),
        ("float positions, base 5e5, dh 16", lambda: ((torch.arange(10) / 3.0, 16, 500000.0), {}), 4),
        ("int32 positions -2000..2000 as float64, dh 64",
         lambda: ((randint(2, -2000, 2000, 9).int(), 64), {"dtype": torch.float64}), 2000),
        ("(2, 2, 2) positions, dh 2", lambda: ((randint(3, 0, 50, 2, 2, 2), 2), {}), 50),
    ]
    return [Case(label, make, atol=angle_tolerance(largest)) for label, make, largest in cases]


def apply_rotary_cases():
    cases = []
    for interleaved in (True, False):
        layout = "interleaved" if interleaved else "half"
        specs = [
            ("(2, 3, 5, 8) float32 at 0..4", lambda: (randn(10, 2, 3, 5, 8), torch.arange(5)), 5, 1e-6),
            ("(3, 4, 6) float32 at 100..103", lambda: (randn(11, 3, 4, 6), torch.arange(100, 104)), 104, 1e-6),
            ("(2, 1, 5, 16) float64, positions (2, 1, 5) up to 3000",
             lambda: (randn(12, 2, 1, 5, 16, dtype=torch.float64), randint(13, 0, 3000, 2, 1, 5)), 3000, 1e-6),
            ("(4, 10) float16 at -500..500", lambda: (randn(14, 4, 10, dtype=torch.float16), randint(15, -500, 500, 4)),
             500, 4e-3),
            ("(2, 3, 7, 12) bfloat16 at 0..6", lambda: (randn(16, 2, 3, 7, 12, dtype=torch.bfloat16), torch.arange(7)),
             7, 2e-2),
            ("(1, 2, 3, 8) float32 at float positions near 400",
             lambda: (randn(17, 1, 2, 3, 8), (torch.arange(3) + 1000) / 2.5), 402, 1e-6),
        ]
        for label, make_inputs, largest, relative in specs:
            def make(make_inputs=make_inputs, interleaved=interleaved):
                x, positions = make_inputs()
                return (x, positions), {"interleaved": interleaved}
            # Two terms of |x| times an angle error each, and the rounding of the output's dtype.
            atol = 2 * 4.0 * angle_tolerance(largest) + relative * 4.0
            cases.append(Case(f"{label}, {layout}", make, atol=atol))
    return cases


def rope_scores_cases():
    specs = [
        ("Lq 4, Lk 6, dh 8, default positions", lambda: ((randn(20, 2, 3, 4, 8), randn(21, 2, 3, 6, 8)), {}), 6),
        ("float64, both at 50..54, scale 0.3",
         lambda: ((randn(22, 1, 2, 5, 16, dtype=torch.float64), randn(23, 1, 2, 5, 16, dtype=torch.float64)),
                  {"positions_q": torch.arange(50, 55), "positions_k": torch.arange(50, 55), "scale": 0.3}), 55),
        ("queries the last 3 of 7 keys, dh 12",
         lambda: ((randn(24, 2, 2, 3, 12), randn(25, 2, 2, 7, 12)),
                  {"positions_q": torch.arange(4, 7), "positions_k": torch.arange(7)}), 7),
        ("float64, positions -3000..3000, base 5e5",
         lambda: ((randn(26, 1, 1, 2, 4, dtype=torch.float64), randn(27, 1, 1, 9, 4, dtype=torch.float64)),
                  {"positions_q": randint(28, -3000, 3000, 2), "positions_k": randint(29, -3000, 3000, 9),
                   "base": 500000.0}), 3000),
        ("per-sequence positions (2, 1, 1) and (2, 1, 5)",
         lambda: ((randn(30, 2, 4, 1, 8), randn(31, 2, 4, 5, 8)),
                  {"positions_q": torch.tensor([10, 20]).view(2, 1, 1),
                   "positions_k": torch.arange(5) + torch.tensor([6, 16]).view(2, 1, 1)}), 21),
    ]
    cases = []
    for interleaved in (True, False):
        for label, make_inputs, largest in specs:
            def make(make_inputs=make_inputs, interleaved=interleaved):
                args, kwargs = make_inputs()
                return args, {**kwargs, "interleaved": interleaved}
            # Scores below about 5 in size; float32 rounding, and float32 angles off by up to 2.5e-7 * |t|.
            atol = 1e-4 + 8 * ANGLE_ERROR_PER_POSITION * largest
            cases.append(Case(f"{label}, {'interleaved' if interleaved else 'half'}", make, atol=atol, rtol=1e-5))
    cases.append(Case("bfloat16, Lq 3, Lk 4", lambda: ((randn(32, 1, 2, 3, 8, dtype=torch.bfloat16),
                                                       randn(33, 1, 2, 4, 8, dtype=torch.bfloat16)), {}),
                      atol=0.1, rtol=0.03))
    return cases


def alibi_slopes_cases():
    # float32's last few bits, as the grader allows (autograder/units/rotary_alibi/cases/alibi_slopes.py): BLOOM's
    # powers of a rounded ratio, the exact 2^(-8(h+1)/n) rounded once, a running product, all land within them.
    # Beyond 128 heads BLOOM's rounded ratio, raised to powers above 128, drifts further (2.3e-6 at 256).
    return [Case(f"{n} heads", lambda n=n: ((n,), {}), rtol=1e-6 if n <= 128 else 4e-6)
            for n in (1, 2, 3, 5, 6, 7, 8, 11, 12, 16, 17, 24, 25, 31, 32, 33, 48, 63, 64, 100, 128, 255)]


def alibi_bias_cases():
    specs = [
        ("4 x 4, 8 BLOOM slopes", 4, 4, lambda: alibi_slopes(8), 1e-6),
        ("3 x 6, float64 slopes", 3, 6, lambda: randn(40, 3, dtype=torch.float64).abs(), 1e-12),
        ("6 x 3, float16 slopes", 6, 3, lambda: alibi_slopes(4).half(), 3e-3),
        ("5 x 2, 4 BLOOM slopes", 5, 2, lambda: alibi_slopes(4), 1e-6),
        ("1 x 7, 5 slopes", 1, 7, lambda: alibi_slopes(5), 1e-6),
        ("7 x 7, one head", 7, 7, lambda: torch.tensor([0.75]), 1e-6),
        ("0 x 3, 2 heads", 0, 3, lambda: alibi_slopes(2), 1e-6),
    ]
    cases = []
    for causal in (True, False):
        for label, length_q, length_k, slopes, relative in specs:
            atol = relative * 7 * 1.0  # distances up to 7 times slopes up to 1
            cases.append(Case(f"{label}, causal={causal}",
                              lambda q=length_q, k=length_k, s=slopes, c=causal: ((q, k, s()), {"causal": c}),
                              atol=atol, compare_attention=causal and length_q > 0))
    return cases


def scaled_positions_cases():
    float32_ulps = 2.0**-22  # two float32 ulps: a division against a multiplication by the reciprocal
    return [
        Case("int64 up to 1e5, factor 3", lambda: ((torch.arange(0, 100_000, 37),), {"factor": 3.0}), rtol=float32_ulps),
        Case("int32, factor 1.1", lambda: ((randint(50, 0, 20_000, 40).int(),), {"factor": 1.1}), rtol=float32_ulps),
        Case("float32, factor 7.3", lambda: ((randn(51, 30) * 1000,), {"factor": 7.3}), rtol=float32_ulps),
        Case("float64, factor 0.5", lambda: ((randn(52, 30, dtype=torch.float64) * 1e4,), {"factor": 0.5}),
             rtol=1e-15),
        Case("(2, 3) int64, factor 4", lambda: ((randint(53, 0, 9000, 2, 3),), {"factor": 4}), rtol=0),
        Case("float16, factor 2.5", lambda: ((torch.arange(0, 2000, 7).half(),), {"factor": 2.5}), rtol=float32_ulps),
    ]


def invalid_calls(task):
    """Calls that must raise ValueError, for every correct version of ``task``."""
    return {
        "rotary_angles": [((torch.arange(3), 5), {}), ((torch.arange(3), 0), {}), ((torch.arange(3), -4), {})],
        "apply_rotary": [((torch.randn(2, 3, 7), torch.arange(3)), {}), ((torch.randn(2, 3, 8), torch.arange(4)), {})],
        "rope_scores": [((torch.randn(1, 1, 3, 8), torch.randn(1, 1, 3, 8)), {"positions_k": torch.arange(2)}),
                        ((torch.randn(1, 1, 3, 7), torch.randn(1, 1, 3, 7)), {})],
        "alibi_slopes": [((0,), {}), ((-2,), {})],
        "alibi_bias": [((3, 3, torch.ones(2, 2)), {})],
        "scaled_positions": [((torch.arange(3),), {"factor": f}) for f in (0, -1.5, float("nan"), float("inf"))],
    }[task]


REFERENCE_NAMESPACE = load()
alibi_slopes = REFERENCE_NAMESPACE["alibi_slopes"]
CASES = {task: globals()[f"{task}_cases"]() for task in TASKS}


def difference(got, expected, atol, rtol):
    """None when ``got`` agrees with ``expected``, else what differs: type, shape, dtype, then the first wrong value."""
    if isinstance(expected, tuple):
        if not isinstance(got, tuple) or len(got) != len(expected):
            return f"a {type(got).__name__}, not a tuple of {len(expected)} tensors"
        return next(filter(None, (difference(g, e, atol, rtol) for g, e in zip(got, expected))), None)
    if not isinstance(got, torch.Tensor):
        return f"a {type(got).__name__}, not a tensor"
    if got.shape != expected.shape:
        return f"shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype}, expected {expected.dtype}"
    got64, expected64 = got.double(), expected.double()
    error = (got64 - expected64).abs()
    wrong = ~((error <= atol + rtol * expected64.abs()) | (got64 == expected64))  # == lets equal infinities agree
    if not wrong.any():
        return None
    first = tuple(int(i) for i in wrong.nonzero()[0])
    largest = float(error[~torch.isnan(error)].max()) if (~torch.isnan(error)).any() else float("nan")
    return f"at {first}: got {float(got64[first])!r}, expected {float(expected64[first])!r}; largest error {largest:.3g}"


def run(function, case):
    """(output or the exception raised, whether the inputs were left unchanged)."""
    args, kwargs = case.make()
    tensors = [value for value in (*args, *kwargs.values()) if isinstance(value, torch.Tensor)]
    before = [tensor.clone() for tensor in tensors]
    try:
        out = function(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 (a mistake may raise anything)
        out = error
    unchanged = all(a.shape == b.shape and torch.isclose(a, b, rtol=0, atol=0, equal_nan=True).all()
                    for a, b in zip(tensors, before))
    return out, unchanged


def disagreement(function, reference, case):
    expected, _ = run(reference, case)
    got, unchanged = run(function, case)
    if isinstance(got, Exception):
        return f"raised {type(got).__name__}: {got}"
    if not unchanged:
        return "changed its inputs in place"
    return difference(got, expected, case.atol, case.rtol)


@pytest.mark.parametrize("path", ALTERNATIVES, ids=[path.stem for path in ALTERNATIVES])
def test_alternative_agrees_with_the_reference_on_every_case(path):
    task = task_of(path)
    function, reference = load(path)[task], REFERENCE_NAMESPACE[task]
    problems = {case.label: problem for case in CASES[task] if (problem := disagreement(function, reference, case))}
    assert problems == {}


@pytest.mark.parametrize("path", ALTERNATIVES, ids=[path.stem for path in ALTERNATIVES])
def test_alternative_raises_value_error_where_the_reference_does(path):
    task = task_of(path)
    function = load(path)[task]
    for args, kwargs in invalid_calls(task):
        with pytest.raises(ValueError):
            REFERENCE_NAMESPACE[task](*args, **kwargs)
        with pytest.raises(ValueError):
            function(*args, **kwargs)


@pytest.mark.parametrize("path", ALTERNATIVES, ids=[path.stem for path in ALTERNATIVES])
def test_alternative_has_no_python_loop(path):
    reference = strip_markers(REFERENCE.read_text(encoding="utf-8"))
    assert loops_in([("reference", reference), (path.name, path.read_text(encoding="utf-8"))], [task_of(path)]) == []


@pytest.mark.parametrize("path", MISTAKES, ids=[path.stem for path in MISTAKES])
def test_mistake_differs_from_the_reference_on_some_case(path):
    task = task_of(path)
    function, reference = load(path)[task], REFERENCE_NAMESPACE[task]
    found = [case.label for case in CASES[task] if disagreement(function, reference, case)]
    for args, kwargs in invalid_calls(task):  # or it takes arguments the contract refuses
        try:
            function(*args, **kwargs)
            found.append(f"no ValueError for {args}")
        except ValueError:
            pass
        except Exception as error:  # noqa: BLE001 (a mistake may raise anything)
            found.append(f"{type(error).__name__}, not ValueError, for {args}")
    assert found, f"{path.stem} agrees with the reference on every case: it is not a mistake, or the cases miss it"


def causal_attention(bias, length_q, length_k, seed):
    scores = randn(seed, 2, bias.shape[1], length_q, length_k, dtype=torch.float64)
    future = torch.arange(length_k)[None, :] > torch.arange(length_q)[:, None]  # (Lq, Lk): j > i
    return (scores + bias.double()).masked_fill(future, float("-inf")).softmax(-1)


@pytest.mark.parametrize("path", [path for path in MISTAKES if task_of(path) == "alibi_bias"],
                         ids=[path.stem for path in MISTAKES if task_of(path) == "alibi_bias"])
def test_which_bias_mistakes_keep_the_attention_under_a_causal_mask(path):
    function, reference = load(path)["alibi_bias"], REFERENCE_NAMESPACE["alibi_bias"]
    same = []
    for case in (case for case in CASES["alibi_bias"] if case.compare_attention):
        args, kwargs = case.make()
        ours, theirs = reference(*args, **kwargs), function(*args, **kwargs)
        if theirs.shape != ours.shape:
            same.append(False)
            continue
        length_q, length_k = args[0], args[1]
        tolerance = 10 * case.atol + 1e-12
        same.append(torch.allclose(causal_attention(theirs, length_q, length_k, 60),
                                   causal_attention(ours, length_q, length_k, 60), atol=tolerance, rtol=0))
    if path.stem in SAME_CAUSAL_SOFTMAX:
        assert all(same), "expected the reference's attention under a causal mask"
    else:
        assert not all(same), "this mistake leaves the attention unchanged: list it in SAME_CAUSAL_SOFTMAX"


def test_every_task_has_alternatives_and_mistakes():
    assert {task_of(path) for path in ALTERNATIVES} == set(TASKS)
    assert {task_of(path) for path in MISTAKES} == set(TASKS)


@pytest.mark.parametrize("path", ALTERNATIVES + MISTAKES, ids=[path.stem for path in ALTERNATIVES + MISTAKES])
def test_each_file_defines_its_tasks_function_only_and_says_what_it_is(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstring = ast.get_docstring(tree)
    assert docstring and "\n" not in docstring.strip() and docstring.startswith(task_of(path) + ":")
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert functions == [task_of(path)]


def test_the_reference_agrees_with_itself_on_every_case():
    # The cases themselves are sound: deterministic inputs, no tolerance needed between two runs.
    for task in TASKS:
        for case in CASES[task]:
            assert disagreement(REFERENCE_NAMESPACE[task], REFERENCE_NAMESPACE[task], Case(case.label, case.make)) is None


def test_float32_division_and_reciprocal_are_within_one_ulp_of_the_reference():
    # Why the scaled_positions alternatives need a tolerance at all: float32(factor) and 1 / factor are rounded.
    positions = torch.arange(0, 1 << 20)
    for factor in (1.1, 1.5, 3.0, 7.3, 2.048):
        expected = REFERENCE_NAMESPACE["scaled_positions"](positions, factor=factor)
        ulp = (torch.nextafter(expected, torch.tensor(math.inf)) - expected).double()
        for got in (positions.float() / factor, positions.float() * (1.0 / factor)):
            assert float(((got.double() - expected.double()).abs() / ulp).max()) <= 1.0
