"""Hidden cases for ``clipped_relative_positions``: integers, so exact equality."""

import torch

from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_arg, device_check, lengths,
                                   tensor_check)
from solutions import positional_encodings as ref

NAME = "clipped_relative_positions"

HINTS = {
    ("lengths", "Lq != Lk"): "a length taken from the other argument is the usual reason: the query axis has "
                             "length_q entries, the key axis length_k",
    ("clipping", "distances clipped"): "the cases where some |j - i| exceeds k fail: look at the clipping",
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


def case(test, length_q, length_k, k, with_device=False, scored=True):
    kwargs = {"device": "cpu"} if with_device else {}
    label = call_label(NAME, [length_q, length_k, k], kwargs)
    expected = ref.clipped_relative_positions(length_q, length_k, k)
    check = tensor_check(label, expected, atol=0, rtol=0, mistakes=mistakes(length_q, length_k, k),
                         axes=("query", "key"), coordinates={"|j - i|": distances(length_q, length_k).abs()},
                         advice=ADVICE)
    clipped = max(length_q, length_k) - 1 > k
    return Case(test, label, call_probe(NAME, [length_q, length_k, k], kwargs), check,
                features={"lengths": lengths(length_q, length_k),
                          "clipping": "distances clipped" if clipped else "no distance beyond k"},
                sizes={"length_q": length_q, "length_k": length_k, "k": k, "2k + 1": 2 * k + 1}, scored=scored)


def meta_case(test, length_q, length_k, k):
    """The table asked for on the meta device, which needs no GPU: it must be built there (shape and dtype are
    all a meta tensor has, so no values are compared)."""
    args, kwargs = [length_q, length_k, k], {"device": device_arg("meta")}
    label = call_label(NAME, args, kwargs)
    expected = ref.clipped_relative_positions(length_q, length_k, k, device=torch.device("meta"))
    return Case(test, label, call_probe(NAME, args, kwargs), device_check(label, "meta", expected.shape, expected.dtype),
                sizes={"length_q": length_q, "length_k": length_k, "k": k})


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
    ]
