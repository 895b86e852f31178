"""Hidden cases for ``clipped_relative_positions``: integers, so exact equality (no tolerance to derive)."""

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_arg, device_check, lengths, passed,
                                   size_one, tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import Contract, Factor, LENGTHS, contract_cases, lengths_of
from solutions import positional_encodings as ref

NAME = "clipped_relative_positions"

HINTS = {
    ("lengths", ("Lq < Lk", "Lq > Lk")): "a length taken from the other argument is the usual reason: the query "
                                         "axis has length_q entries, the key axis length_k",
    ("clipping", "distances clipped"): "the cases where some |j - i| exceeds k fail: look at the clipping",
    ("clipping", "k = 0"): "with k = 0 every distance is clipped to 0 and the table holds only 0: look for a range or "
                           "a clamp that comes out wrong when k is 0",
    ("lengths", "Lq > Lk"): "only the cases with more queries than keys fail: look at which length makes which "
                                 "axis",
    ("lengths", "Lq < Lk"): "only the cases with more keys than queries fail: look at which length makes which "
                                 "axis",
    ("size 1", "a size of 1"): "the cases with a length of 1 fail: look for a squeeze(), or for an axis that is "
                               "dropped when its length is 1",
    ("passing", "max_relative_position by keyword"): "a call that names max_relative_position= fails: keep the "
                                                     "parameter names of the signature you were given",
}
ADVICE = ((r"\|j - i\| up to", "Only the distances beyond k are wrong: look at the clipping."),)


def distances(length_q, length_k):
    """j - i for query i and key j, (Lq, Lk); shared with the Shaw cases."""
    return torch.arange(length_k)[None, :] - torch.arange(length_q)[:, None]


def mistakes(length_q, length_k, k):
    d = distances(length_q, length_k)
    return [
        Mistake("the distance is i - j (query minus key); Shaw's convention here is j - i, key minus query.",
                lambda: (-d).clamp(-k, k) + k),
        Mistake("the + k shift is missing: clip(j - i, -k, k) lies in [-k, k]; add k to get row numbers 0..2k.",
                lambda: d.clamp(-k, k)),
        Mistake("the distance is not clipped: clip(j - i, -k, k) before adding k, so far keys share row 0 or 2k.",
                lambda: d + k),
        Mistake("the rows and columns are swapped: rows are queries (Lq), columns keys (Lk).",
                lambda: ref.clipped_relative_positions(length_k, length_q, k)),
    ]


def case(test, length_q, length_k, k, with_device=False, scored=True, k_by_keyword=False):
    kwargs = {"device": "cpu"} if with_device else {}
    args = [length_q, length_k, k]
    if k_by_keyword:
        args, kwargs = [length_q, length_k], {"max_relative_position": k, **kwargs}
    label = call_label(NAME, args, kwargs)
    expected = ref.clipped_relative_positions(length_q, length_k, k)
    check = tensor_check(label, expected, atol=0, rtol=0, mistakes=mistakes(length_q, length_k, k),
                         axes=("query", "key"), coordinates={"|j - i|": distances(length_q, length_k).abs()},
                         advice=ADVICE)
    clipped = max(length_q, length_k) - 1 > k
    return Case(test, label, call_probe(NAME, args, kwargs), check,
                features={"lengths": lengths(length_q, length_k),
                          "clipping": "k = 0" if k == 0 else "distances clipped" if clipped else "no distance beyond k", "size 1": size_one(length_q, length_k),
                          "passing": ("max_relative_position by keyword" if k_by_keyword
                                      else "max_relative_position by position")},
                sizes={"length_q": length_q, "length_k": length_k, "k": k, "2k + 1": 2 * k + 1}, scored=scored)


def meta_case(test, length_q, length_k, k):
    """The table asked for on the meta device, which needs no GPU: it must be built there (shape and dtype are
    all a meta tensor has, so no values are compared)."""
    args, kwargs = [length_q, length_k, k], {"device": device_arg("meta")}
    label = call_label(NAME, args, kwargs)
    expected = computed_on_the_cpu(ref.clipped_relative_positions, length_q, length_k, k, device=torch.device("meta"))
    return Case(test, label, call_probe(NAME, args, kwargs), device_check(label, "meta", expected.shape, expected.dtype),
                sizes={"length_q": length_q, "length_k": length_k, "k": k})


# The contract: what the docstring lets vary, each level sent by some case of relative_positions_edge_cases, every
# pair of levels together in one (autograder/core/contracts.py). The device is checked apart (meta_case).
def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.clipped_relative_positions, args, kwargs)
    return case(NAME, given["length_q"], given["length_k"], given["max_relative_position"]).check


def _from_contract(levels, rng, generator):
    # A length of 1 (drawn, not a factor: a factor of its own could not go with Lq == Lk and any clipping, and
    # a level that never meets another confounds them) comes with both unequal orders now and then.
    order, clipping, one = levels["lengths"], levels["clipping"], rng.random() < 1 / 3
    if clipping == "no distance beyond k":  # every |j - i| <= k: both lengths at most k + 1, two of them unequal
        k = rng.randint(2, 4)
        small, large = (1 if one else rng.randint(2, k)), k + 1
    else:  # some |j - i| > k (every one but 0, with k = 0)
        k = 0 if clipping == "k = 0" else rng.randint(1, 3)
        small, large = (1 if one else rng.randint(2, 4)), rng.randint(max(k + 2, 5), 9)
    length_q, length_k = lengths_of(order, small, large, large)
    return case("relative_positions_edge_cases", length_q, length_k, k,
                k_by_keyword=levels["passing"] == "max_relative_position by keyword")


CONTRACT = Contract(NAME, (
    LENGTHS,
    Factor("clipping", ("k = 0", "distances clipped", "no distance beyond k")),
    Factor("passing", ("max_relative_position by position", "max_relative_position by keyword")),
), _from_contract)


def build(rng, generator):
    return [
        case("relative_positions_values", 5, 5, 2),
        case("relative_positions_values", 7, 3, 2),
        case("relative_positions_values", 3, 9, 4, with_device=True),
        case("relative_positions_values", 16, 16, 3),
        case("relative_positions_values", rng.randint(20, 60), rng.randint(20, 60), rng.randint(2, 12)),
        case("relative_positions_edge_cases", 1, 1, 3),
        case("relative_positions_edge_cases", 4, 6, 0),
        case("relative_positions_edge_cases", 3, 3, 10),
        case("relative_positions_edge_cases", 1, 8, 2),
        meta_case("relative_positions_edge_cases", 4, 7, 2),
        # Probes for the diagnosis: square and not, with and without clipping.
        case("relative_positions_values", 4, 4, 5, scored=False),
        case("relative_positions_values", 4, 6, 9, scored=False),
        case("relative_positions_values", 6, 6, 1, scored=False),
    ] + contract_cases(CONTRACT, rng, generator)

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("relative_positions_edge_cases", lambda rng, g: ((rng.randint(3, 7), rng.randint(3, 7), 2), {}),
                      vary={"length_q": (9,), "length_k": (8,), "max_relative_position": (1, 4)})
