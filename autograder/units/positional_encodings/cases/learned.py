"""Hidden cases for ``LearnedPositionalEmbedding``.

The grader loads its own weight into the student's module (``module.weight``)
before calling forward, so the values are checked exactly, whatever the
random initialisation drew.

The contract's cases (``CONTRACT``) vary the mode (left out, so "add" by default, or
given), the batch (1 or more), the length (1 or more, always below max_len: L == max_len
is learned_length_check's, so an off-by-one check is charged there, once) and x's dtype.
They count in the test of their mode, learned_add or learned_concat, as the hand-written
cases do, so a mistake of one mode is charged once, in its own test.

Left out of the contract, and why:
* float16 and bfloat16 x: the weight is float32, and the docstring does not say which
  dtype the output takes; x + weight[:L] promotes to float32, while a cast of the rows to
  x's dtype keeps half precision. Both are defensible, so no dtype tells them apart from
  a mistake. float64 x has one answer (every correct form keeps float64): it is a level.
* mode by keyword: the module probe builds the module with positional arguments only.
* the device: the module has no device argument and its weight is made on the CPU. It is
  moved as a model is, module.to("meta") (the module probe's "device"), and then given x on
  the meta device (``_meta_case``): the output must be made there, which no GPU is needed to
  see; a tensor built on the CPU in forward (a zeros, a table) meets them and fails.
"""

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, Verdict, device_arg, device_check, failure_of, likely, raises_check,
                                   returned_value, tensor_check)
from autograder.core.compare import mismatch
from autograder.core.contracts import Contract, Factor, contract_cases, dtype_of

NAME = "LearnedPositionalEmbedding"

HINTS = {
    ("batch", "batch > 1"): "with one sequence it works: look at how the position rows meet the batch axis "
                            "(they broadcast in add; in concat they must be expanded to (B, L, d_model))",
    ("length", "L = 1"): "with one position it goes wrong: look for a squeeze(), or for an axis that is dropped "
                         "when L is 1",
    ("dtype", "dtype float64"): "look at where the output takes its dtype: float64 word vectors must stay float64 "
                                "(x + weight[:L] promotes; do not narrow x to the weight's float32)",
    ("mode", "mode left out"): "a module built without a mode fails: mode defaults to \"add\" "
                               "(def __init__(self, max_len, d_model, mode=\"add\"))",
}


def _module_probe(init, x=None, weight=None, grad_out=None, seed=0):
    return {"op": "module", "name": NAME, "init": list(init), "x": x, "weight": weight, "grad_out": grad_out,
            "seed": seed}


def _label(init, x=None):
    made = f"{NAME}({', '.join(repr(a) for a in init)})"
    if x is None:
        return made
    dtype = "" if x.dtype == torch.float32 else f", {str(x.dtype)[6:]}"
    return f"{made}(x of shape {tuple(x.shape)}{dtype})"


def _stage(outcome, stage):
    """The part of a module probe's outcome that a check is about: the failed init, or ``stage``."""
    if outcome is None or "missing" in outcome:
        return outcome
    if "error" in outcome["init"]:
        return outcome["init"]
    return outcome.get(stage)


def _at_stage(raises, stage):
    """``raises`` (a raises_check) read at one stage of a module probe's outcome, saying what it wants as it does."""
    def check(outcome):
        return raises(_stage(outcome, stage))

    check.raises = raises.raises
    return check


def _forward_check(label, expected, mistakes=(), terms=None):
    tensor = tensor_check(label, expected, atol=1e-6, rtol=1e-6, mistakes=mistakes,
                          axes=("batch", "position", "feature"), terms=terms, inputs=("x",))

    def check(outcome):
        if outcome is None or "missing" in outcome:
            return Verdict(False, failure_of(outcome, NAME))
        if "error" in outcome["init"]:
            return Verdict(False, failure_of(outcome["init"], f"{NAME}.__init__"))
        return tensor(outcome.get("forward"))

    return check


VARIANCE_FOR_STD = ("the variance was given where the standard deviation belongs: N(0, 0.02**2) has standard "
                    "deviation 0.02, so nn.init.normal_(w, std=0.02).")


STD_ONE = ("the weight is drawn from N(0, 1), the default of nn.init.normal_ and of nn.Embedding: the table starts "
           "from N(0, 0.02**2), nn.init.normal_(w, std=0.02).")
PLAIN_TENSOR = ("self.weight is a plain tensor, not an nn.Parameter: the module's parameters() leave it out, so no "
                "optimiser ever changes it and the positions are never learned. Wrap it: nn.Parameter(...).")
NOT_REGISTERED = ("self.weight is assigned where the module cannot register it (before super().__init__(), or "
                  "through another name): assign self.weight = nn.Parameter(...) after super().__init__().")


def _parameter_check(label, max_len, d_model):
    def check(outcome):
        if outcome is None or "missing" in outcome:
            return Verdict(False, failure_of(outcome, NAME))
        if "error" in outcome["init"]:
            return Verdict(False, failure_of(outcome["init"], f"{NAME}.__init__"))
        if "weight" not in outcome:  # never from the worker once __init__ returned: the job's doing
            return Verdict(False, f"{label}: self.weight could not be read back from the module.")
        weight = returned_value(outcome["weight"])
        if not isinstance(weight, torch.Tensor):
            return Verdict(False, f"{label}: self.weight should be an nn.Parameter, but it is a "
                                  f"{weight.type_name}.")
        if not outcome.get("weight_is_parameter"):
            return Verdict(False, f"{label}: self.weight is a plain tensor; wrap it in nn.Parameter so the "
                                  f"optimiser can learn it.\n{likely((PLAIN_TENSOR,))}", mistake=PLAIN_TENSOR)
        if not outcome.get("weight_registered"):
            return Verdict(False, f"{label}: self.weight is not among the module's parameters(); assign it as "
                                  f"self.weight = nn.Parameter(...) after super().__init__().\n"
                                  f"{likely((NOT_REGISTERED,))}", mistake=NOT_REGISTERED)
        problem = mismatch(weight, torch.empty(max_len, d_model), what=f"{label}.weight")
        if problem and "wrong at" not in problem:
            return Verdict(False, problem)
        mean, std = weight.double().mean().item(), weight.double().std().item()
        if abs(std - 0.02**2) < 0.0001:
            return Verdict(False, f"{label}.weight has standard deviation {std:.5f}, that is 0.02**2.\n"
                                  f"{likely((VARIANCE_FOR_STD,))}", mistake=VARIANCE_FOR_STD)
        if abs(std - 1.0) < 0.05:
            return Verdict(False, f"{label}.weight has standard deviation {std:.3f}: that is N(0, 1), the default "
                                  "of nn.Embedding. Draw it from N(0, 0.02**2): nn.init.normal_(w, std=0.02).\n"
                                  f"{likely((STD_ONE,))}", mistake=STD_ONE)
        if not (abs(mean) < 0.002 and 0.018 < std < 0.022):
            return Verdict(False, f"{label}.weight should be drawn from N(0, 0.02**2), but its entries have mean "
                                  f"{mean:.4f} and standard deviation {std:.4f}.")
        return Verdict(True)

    return check


# The concat order's mistake, by the words learned_concat names it with: learned_gradients' concat case knows it
# too, so that a gradient that shows it (and nothing else) is charged in learned_concat, once.
POSITIONS_FIRST = "the position vector comes first; append it after x: cat((x, rows), dim=-1)."


def _features(batch, init, length, dtype=torch.float32):
    mode = "mode left out" if len(init) < 3 else f"mode {init[2]!r}"
    return {"batch": "batch 1" if batch == 1 else "batch > 1", "mode": mode,
            "length": "L = 1" if length == 1 else "L > 1", "dtype": f"dtype {str(dtype)[6:]}"}


def _add_case(batch, length, max_len, d_model, weight, x, init=None):
    init = init or (max_len, d_model, "add")
    label = _label(init, x)
    expected = x + weight[:length]  # promoted: float64 x stays float64
    from_one = [Mistake("positions are counted from 1: position t uses row t of weight, so weight[0:L].",
                        lambda w=weight, x=x, n=length: x + w[1:n + 1])] if length < max_len else []
    return Case("learned_add", label, _module_probe(init, x, weight),
                _forward_check(label, expected, from_one,
                               terms={"x": (x, 1.0), "weight[:L]": (weight[:length], 1.0)}),
                features=_features(batch, init, length, x.dtype),
                sizes={"B": batch, "L": length, "max_len": max_len, "d_model": d_model})


def _concat_case(batch, length, max_len, d, d_model, weight, x):
    init = (max_len, d_model, "concat")
    label = _label(init, x)
    rows = weight[:length].expand(batch, length, d_model)
    mistakes = [Mistake(POSITIONS_FIRST, lambda x=x, rows=rows: torch.cat((rows, x), dim=-1))]
    return Case("learned_concat", label, _module_probe(init, x, weight),
                _forward_check(label, torch.cat((x, rows), dim=-1), mistakes),
                features=_features(batch, init, length, x.dtype),
                sizes={"B": batch, "L": length, "max_len": max_len, "d": d, "d_model": d_model,
                       "d + d_model": d + d_model})


def _meta_case(test, batch, length, max_len, d_model, mode):
    """The module moved to the meta device, then called on x there: the output must be made there too, of x's
    shape (with d_model more features in concat) and float32. No weight is loaded: a meta tensor holds no values."""
    init = (max_len, d_model, mode)
    x = torch.empty(batch, length, d_model, device="meta")
    label = f"{_label(init)}.to('meta')(x of shape {tuple(x.shape)} on the meta device)"
    width = d_model * (2 if mode == "concat" else 1)
    check = device_check(label, "meta", (batch, length, width), torch.float32, inputs=("x",))
    return Case(test, label, {**_module_probe(init, x), "device": device_arg("meta")},
                lambda outcome: check(_stage(outcome, "forward")),
                sizes={"B": batch, "L": length, "max_len": max_len, "d_model": d_model})


# The contract: what the docstring lets vary, each level sent by some case of the test of its mode (learned_add or
# learned_concat), every pair of levels together in one (autograder/core/contracts.py).
def _from_contract(levels, rng, generator):
    batch = 1 if levels["batch"] == "batch 1" else rng.randint(2, 4)
    length = 1 if levels["length"] == "L = 1" else rng.randint(2, 9)
    max_len = length + rng.randint(2, 6)  # above L: the rows from 1 (a known slip) differ, L == max_len is not here
    d_model = rng.randint(2, 8)
    dtype = dtype_of(levels["dtype"])
    weight = torch.randn(max_len, d_model, generator=generator)  # the module's own dtype, float32
    if levels["mode"] == "mode 'concat'":
        d = rng.choice([n for n in range(1, 9) if n != d_model])  # a width of its own: the two parts are told apart
        x = torch.randn(batch, length, d, generator=generator, dtype=torch.float64).to(dtype)
        return _concat_case(batch, length, max_len, d, d_model, weight, x)
    x = torch.randn(batch, length, d_model, generator=generator, dtype=torch.float64).to(dtype)
    init = (max_len, d_model) if levels["mode"] == "mode left out" else (max_len, d_model, "add")
    return _add_case(batch, length, max_len, d_model, weight, x, init)


CONTRACT = Contract(NAME, (
    Factor("mode", ("mode left out", "mode 'add'", "mode 'concat'")),
    Factor("batch", ("batch 1", "batch > 1")),
    Factor("length", ("L = 1", "L > 1")),
    Factor("dtype", ("dtype float32", "dtype float64")),
), _from_contract)


def build(rng, generator):
    def randn(*shape):
        return torch.randn(*shape, generator=generator)

    cases = []
    for init in [(300, 48, "add"), (400, 40, "concat")]:
        label = _label(init)
        cases.append(Case("learned_parameter", label, _module_probe(init, seed=rng.randint(0, 10**6)),
                          _parameter_check(label, init[0], init[1])))

    for batch, length, max_len, d_model in [(3, 5, 9, 4), (1, 1, 7, 6), (2, rng.randint(10, 40), 50, 16)]:
        weight, x = randn(max_len, d_model), randn(batch, length, d_model)
        cases.append(_add_case(batch, length, max_len, d_model, weight, x))

    for batch, length, max_len, d, d_model in [(2, 4, 6, 3, 5), (3, 7, 20, 8, 8), (1, 1, 3, 2, 4)]:
        weight, x = randn(max_len, d_model), randn(batch, length, d)
        cases.append(_concat_case(batch, length, max_len, d, d_model, weight, x))

    max_len, d_model = 13, 4
    weight, x = randn(max_len, d_model), randn(2, max_len, d_model)
    label = _label((max_len, d_model, "add"), x)
    off_by_one = ("raising ValueError when L == max_len is off by one: a table of max_len rows covers positions "
                  "0..max_len-1, so L == max_len fits; reject only L > max_len.")

    def fits(outcome, check=_forward_check(label, x + weight)):
        verdict = check(outcome)
        forward = (outcome or {}).get("forward") or {}
        if not verdict.passed and "ValueError" in forward.get("error", {}).get("mro", []):
            return Verdict(False, verdict.message + f"\n{likely((off_by_one,))}", mistake=off_by_one)
        return verdict

    cases.append(Case("learned_length_check", label, _module_probe((max_len, d_model, "add"), x, weight), fits))
    for length, mode in [(max_len + 4, "add"), (max_len + 1, "concat")]:
        x = randn(2, length, d_model)
        init = (max_len, d_model, mode)
        label = _label(init, x)
        raises = raises_check(label, "ValueError", f" (L={length} > max_len={max_len})", must_mention=(length, max_len))
        cases.append(Case("learned_length_check", label, _module_probe(init, x, weight),
                          _at_stage(raises, "forward")))
    for mode in ["sum", "Concat"]:
        init = (8, 4, mode)
        label = _label(init)
        raises = raises_check(label, "ValueError", f" in __init__ (mode {mode!r} is neither 'add' nor 'concat')")
        cases.append(Case("learned_length_check", label, _module_probe(init),
                          _at_stage(raises, "init")))

    for mode, d in [("add", 6), ("concat", 3)]:
        max_len, length = 10, 6
        weight, x = randn(max_len, 6), randn(2, length, d)
        grad_out = randn(2, length, d + 6 if mode == "concat" else d)
        expected = torch.zeros(max_len, 6)
        expected[:length] = grad_out[..., -6:].sum(0)
        # The gradient of the rows had they come first: the order is learned_concat's to charge, not this test's.
        first = None
        if mode == "concat":
            first = torch.zeros(max_len, 6)
            first[:length] = grad_out[..., :6].sum(0)
        init = (max_len, 6, mode)
        label = f"the gradient of weight after {_label(init, x)}"

        def grad_check(outcome, label=label, expected=expected, length=length, max_len=max_len, first=first,
                       forward=_forward_check(label, torch.empty(0))):
            if outcome is None or "missing" in outcome or "error" in outcome["init"]:
                return forward(outcome)
            if "grad" not in outcome:
                failed = failure_of(outcome.get("forward"), f"{NAME} forward or backward")
                how = ""
                if failed and "does not require grad" in failed:
                    how = ("the output is not connected to weight, so nothing can flow back to it: use self.weight "
                           "itself (slicing keeps the graph), never a detached copy (.detach(), .data, "
                           "torch.tensor(...)).")
                    failed += f"\nHow it goes wrong: {how}"
                return Verdict(False, failed or f"{label}: no gradient came back.", how=how)
            got = returned_value(outcome["grad"])
            if not isinstance(got, torch.Tensor):
                return Verdict(False, f"{label} is None: weight took no part in the output. Use self.weight "
                                      "itself (slices keep the graph); do not copy or detach it.")
            problem = mismatch(got, expected, what=label, atol=1e-5, rtol=1e-5)
            if problem and first is not None and mismatch(got, first, what=label, atol=1e-5, rtol=1e-5) is None:
                return Verdict(False, f"{problem}\n{likely((POSITIONS_FIRST,))}", mistake=POSITIONS_FIRST,
                               unnamed=problem)
            if problem and got.shape == expected.shape and (got[length:] != 0).any():
                problem += f"\nRows {length}..{max_len - 1} should get no gradient: only weight[:L] is used."
            return Verdict(problem is None, problem or "")

        cases.append(Case("learned_gradients", label, _module_probe(init, x, weight, grad_out), grad_check))
    # Drawn after the hand-written cases, so that theirs stay as they were.
    return cases + contract_cases(CONTRACT, rng, generator) + [
        _meta_case("learned_add", 2, 5, 9, 4, "add"), _meta_case("learned_concat", 2, 5, 9, 4, "concat")]

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("learned_gradients", lambda rng, g: (((rng.randint(6, 9), 6, "add"), draw(g, 2, 5, 6)), {}),
                      trained=("x",), layouts=("x",), vary={"mode": ("concat",), "max_len": (12,)})
