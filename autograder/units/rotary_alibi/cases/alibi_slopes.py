"""Hidden cases for ``alibi_slopes``: float32, as the models that use ALiBi compute them.

Tolerance: float32's last few bits (rtol 1e-6, about 8 ulps). BLOOM rounds the ratio 2^(-8/c) to float32 and
raises it to integer powers, so from 11 heads on its slopes are up to 6 ulps from the exact 2^(-8(h+1)/n), and
torch.pow's last bit depends on how it is called (a vector kernel from 32 elements on); every formulation of
the formula lands within that, and every mistake far outside it.

The contract (``CONTRACT``): whether n is a power of two, how large it is (up to 10; from 11 on, where BLOOM's
float32 powers leave the exact slopes; above 32, where torch.pow takes its vector kernel), and num_heads passed by
position or by keyword. Its cases count in alibi_slopes_other_counts (with the meta case, and for the same reason:
alibi_slopes_invalid_args needs the power-of-two test, and a corner mistake would be charged twice there). The
device is not a factor: the meta case checks it.
"""

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_arg, device_check, passed,
                                   raises_check, tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import Contract, Factor, contract_cases
from solutions import rotary_alibi as ref

NAME = "alibi_slopes"

HINTS = {
    ("heads", "n not a power of two"): "powers of two work and other head counts do not: take the slopes of the "
                                       "largest power of two below n, then every other slope of twice that power",
    ("passing", "num_heads by keyword"): "a call that names num_heads= goes wrong: keep the parameter names of the "
                                         "signature",
}


def _geometric(count, first_exponent, step_exponent=None):
    step = first_exponent if step_exponent is None else step_exponent
    return torch.tensor([2.0 ** (first_exponent + step * h) for h in range(count)], dtype=torch.float64)


def _mistakes(num_heads):
    closest = 1 << (num_heads.bit_length() - 1)
    above = 2 * closest
    return [
        Mistake("the power-of-two formula 2^(-8h/n) is used for every n; for other head counts the paper takes the "
                "slopes of the largest power of two below n, then every other slope of twice that power.",
                lambda: _geometric(num_heads, -8.0 / num_heads).float()),
        Mistake("the slopes of the next power of two, cut to n; the paper takes the slopes of the largest power of "
                "two below n, then every other slope of twice that power.",
                lambda: _geometric(above, -8.0 / above)[:num_heads].float()),
        Mistake("the powers start at 0 (a first slope of 1): slope h = 2^(-8(h+1)/n) for h = 0 .. n-1.",
                lambda: _geometric(num_heads, 0.0, -8.0 / closest).float() if num_heads == closest else
                torch.cat((_geometric(closest, 0.0, -8.0 / closest),
                           _geometric(2 * closest, 0.0, -8.0 / (2 * closest))[1::2][:num_heads - closest])).float()),
    ] + ([Mistake("the extra slopes are every other slope of twice the power of two starting from the second "
                  "([1::2]): they repeat slopes the first heads have; the paper starts from the first ([0::2]).",
                  lambda: torch.cat((_geometric(closest, -8.0 / closest),
                                     _geometric(above, -8.0 / above)[1::2][:num_heads - closest])).float())]
         if num_heads != closest else [])


def _case(test, num_heads, scored=True, by_keyword=False):
    args, kwargs = ([], {"num_heads": num_heads}) if by_keyword else ([num_heads], {})
    label = call_label(NAME, args, kwargs)
    expected = ref.alibi_slopes(num_heads)
    check = tensor_check(label, expected, atol=0.0, rtol=1e-6, mistakes=_mistakes(num_heads), axes=("head",))
    power = num_heads & (num_heads - 1) == 0
    return Case(test, label, call_probe(NAME, args, kwargs), check, scored=scored,
                features={"heads": "n a power of two" if power else "n not a power of two",
                          "size": "n up to 10" if num_heads <= 10 else "n from 11 to 32" if num_heads <= 32
                          else "n above 32",
                          "passing": "num_heads by keyword" if by_keyword else "num_heads by position"},
                sizes={"num_heads": num_heads})


def _meta_case(test, num_heads):
    """The slopes asked for on the meta device, which needs no GPU: they must be made there (shape and dtype are
    all a meta tensor has, so no values are compared)."""
    kwargs = {"device": device_arg("meta")}
    label = call_label(NAME, [num_heads], kwargs)
    expected = computed_on_the_cpu(ref.alibi_slopes, num_heads, device=torch.device("meta"))
    return Case(test, label, call_probe(NAME, [num_heads], kwargs),
                device_check(label, "meta", expected.shape, expected.dtype), sizes={"num_heads": num_heads})


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.alibi_slopes, args, kwargs)
    return _case(NAME, given["num_heads"]).check


def _from_contract(levels, rng, generator):
    """A call of alibi_slopes_other_counts at one row of the contract's design."""
    choices = {("n a power of two", "n up to 10"): [1, 2, 4, 8], ("n a power of two", "n from 11 to 32"): [16, 32],
               ("n a power of two", "n above 32"): [64],  # the docstring's bound on BLOOM's ulps holds to 64
               ("n not a power of two", "n up to 10"): [3, 5, 6, 7, 9, 10],
               ("n not a power of two", "n from 11 to 32"): [11, 12, 20, 24, 31],
               ("n not a power of two", "n above 32"): [40, 48, 63]}
    num_heads = rng.choice(choices[levels["heads"], levels["size"]])
    return _case("alibi_slopes_other_counts", num_heads, by_keyword=levels["passing"] == "num_heads by keyword")


# The contract: what the docstring lets vary, each level sent by some case of alibi_slopes_other_counts, every pair
# of levels together in one (autograder/core/contracts.py).
CONTRACT = Contract(NAME, (
    Factor("heads", ("n a power of two", "n not a power of two")),
    Factor("size", ("n up to 10", "n from 11 to 32", "n above 32")),
    Factor("passing", ("num_heads by position", "num_heads by keyword")),
), _from_contract)


def build(rng, generator):
    cases = [_case("alibi_slopes_power_of_two", n) for n in (1, 2, 4, 8, 16, 32, 64)]
    others = sorted({3, 6, 12, rng.choice([5, 7, 10, 20]), rng.choice([24, 40, 48, 96])})
    cases += [_case("alibi_slopes_other_counts", n) for n in others]
    # On meta in this test, not the power-of-two one: alibi_slopes_invalid_args needs that one, and a slope made
    # on the CPU would cost both (charged twice). Six heads build both parts of the slopes (c = 4, then 2 more).
    cases.append(_meta_case("alibi_slopes_other_counts", 6))
    cases += [_case("alibi_slopes_other_counts", n, scored=False) for n in (9, 14)]
    for num_heads in (0, -3):
        label = call_label(NAME, [num_heads])
        cases.append(Case("alibi_slopes_invalid_args", label, call_probe(NAME, [num_heads]),
                          raises_check(label, "ValueError", " (a model has one head or more)")))
    return cases + contract_cases(CONTRACT, rng, generator)

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
# Calls are independent trivially: the slopes depend on num_heads alone, so no cache can key on part of it.
BEHAVIOUR = Behaviour("alibi_slopes_other_counts", lambda rng, g: ((rng.choice([3, 5, 6, 12]),), {}), independent=False)
