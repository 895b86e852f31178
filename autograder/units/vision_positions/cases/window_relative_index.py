"""Hidden cases for ``window_relative_index``: Swin's relative position index, entry for entry.

What is checked: the (N, N) int64 index of a window of Wh x Ww patches, N = Wh * Ww, patch n = r * Ww + c,

    index[n1, n2] = (r1 - r2 + Wh - 1) * (2Ww - 1) + (c1 - c2 + Ww - 1)

on the docstring's worked example (1 x 2), Swin's own 7 x 7 window, Swin V2's larger ones, oblong windows both
ways (Wh < Ww and Wh > Ww), windows of one row, of one column and of one patch, and on the meta device.

Tolerance: none. The index is made of integers and nothing is rounded on the way, so every entry must be exactly the
reference's (atol = rtol = 0), as for the first unit's clipped_relative_positions and T5's buckets; the dtype must be
int64 (an index of another dtype with the right values is told as such, not as a mistake of value).

Which cases tell which mistake. In the oblong cases (Wh != Ww, both above 1, never Ww = 2Wh - 1: see below) every
mistake declared here gives an output of its own: only there does the row multiplier taken from the height (2Wh - 1
for 2Ww - 1) show, and only there is the swapped table told from the patches numbered column by column (on a square
window the two give the same output). On a window of one row the row offset and its shift are 0, so the 1D index
over the patch numbers, the swapped table, the column-by-column numbering and both wrong multipliers give the right
answer there; on a window of one column the first three do. A window of one patch ([[0]]) catches none of the slips
of the formula: it is there for the slips of form (a squeeze, an empty range, a scalar returned). Where Ww = 2Wh - 1
(2 x 3, 3 x 5, ...) the multiplier 2Wh - 1 and the 1D index give the same output, so the oblong windows drawn here
never have Ww = 2Wh - 1 (``_apart``): the cases that fail tell each mistake from every other.

The contract (``CONTRACT``): the window's shape (square, Wh < Ww, Wh > Ww, one row, one column, one patch), the
sides passed by position or by keyword, and the device left out, given as a string, or given as a torch.device.
Its cases count in window_relative_index_values, the task's one test of values. The meta device is checked apart
(``_meta_case``): a meta tensor holds no values to compare.

Decisions:
* The layout of the table is the contract's: rows of offsets before columns, row-major, as Swin's
  ``relative_position_index``. Another one-to-one numbering of the offsets (the table read column-major, say) would
  train as well from scratch, but a pretrained Swin's ``relative_position_bias_table`` is stored in this layout, and
  window_scores gathers the grader's table by this index: it fails, with the mistake named.
* The index is the query's patch minus the key's. Its transpose (the key's minus the query's) is the same set of
  numbers and fails for the same reason.
* ``BEHAVIOUR``: no tensor comes in, so no gradients and no layouts; the index is a buffer a model keeps (Swin
  registers it), and a function that caches it (functools.lru_cache) and hands the same tensor out twice, or keys its
  cache on one side only, fails the fresh-results or the independent-calls case.
"""

import torch

from autograder.core.behaviour import Behaviour
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_arg, device_check, passed,
                                   raises_check, tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import Contract, Factor, contract_cases
from solutions import vision_positions as ref

NAME = "window_relative_index"

HINTS = {
    ("window", ("Wh < Ww", "Wh > Ww")): "only oblong windows go wrong: look for a side taken for the other, in the "
                                        "shifts (Wh - 1 for the rows, Ww - 1 for the columns) or in the row "
                                        "multiplier (2Ww - 1, the number of column offsets)",
    ("window", "Wh < Ww"): "only windows with more columns than rows go wrong: look for a side taken for the other, "
                           "in the shifts (Wh - 1 for the rows, Ww - 1 for the columns) or in the row multiplier "
                           "(2Ww - 1)",
    ("window", "Wh > Ww"): "only windows with more rows than columns go wrong: look for a side taken for the other, "
                           "in the shifts (Wh - 1 for the rows, Ww - 1 for the columns) or in the row multiplier "
                           "(2Ww - 1)",
    ("window", ("Wh < Ww", "Wh > Ww", "square")): "windows of one row or one column are right and the others are "
                                                  "not: there one of the two offsets is always 0, so look at how "
                                                  "the two are combined, (r1 - r2 + Wh - 1) * (2Ww - 1) + "
                                                  "(c1 - c2 + Ww - 1), with patch n at row n // Ww, column n % Ww",
    ("window", "one row"): "a window of one row goes wrong: its index is c1 - c2 + Ww - 1 (the row offset and its "
                           "shift are 0); look for a side of 1 handled apart, or an axis squeezed away",
    ("window", "one column"): "a window of one column goes wrong: its index is r1 - r2 + Wh - 1 (the column offset "
                              "and its shift are 0); look for a side of 1 handled apart, or an axis squeezed away",
    ("window", "one patch"): "a window of one patch goes wrong: its index is [[0]], of shape (1, 1); look for a "
                             "squeeze() or a range that comes out empty when a side is 1",
    ("passing", "sides by keyword"): "a call that names window_h= and window_w= goes wrong: keep the parameter "
                                     "names of the signature you were given",
    ("device", ("device='cpu'", "device=torch.device('cpu')")): "a call that passes device= goes wrong: hand it on "
                                                                "to the tensors you make (torch.arange(n, "
                                                                "device=device)), as a string or a torch.device",
    ("device", "device='cpu'"): "a device given as a string goes wrong: torch takes device='cpu' as it takes "
                                "torch.device('cpu'), so hand it on as it came",
    ("device", "device=torch.device('cpu')"): "a device given as a torch.device goes wrong: hand it on to torch as "
                                              "it came, without turning it into something else",
}


def _offsets(window_h, window_w, column_major=False):
    """(r1 - r2, c1 - c2), each (N, N): the offsets between query patch n1 and key patch n2, with the patches
    numbered row by row (the contract), or column by column (``column_major``, a slip)."""
    n = torch.arange(window_h * window_w)
    rows, columns = (n % window_h, n // window_h) if column_major else (n // window_w, n % window_w)
    return rows[:, None] - rows[None, :], columns[:, None] - columns[None, :]


def _mistakes(window_h, window_w):
    """The usual slips, each as the output it gives for this window."""
    h, w = window_h, window_w
    dr, dc = _offsets(h, w)  # (N, N) each: r1 - r2, c1 - c2
    found = [
        Mistake("the offsets are shifted by W, not W - 1: r1 - r2 runs from -(Wh - 1) to Wh - 1, so adding Wh - 1 "
                "makes it count from 0 (and Ww - 1 for the columns); the diagonal is then the table's middle entry, "
                "(Wh - 1)(2Ww - 1) + Ww - 1.",
                lambda: (dr + h) * (2 * w - 1) + (dc + w)),
        Mistake("the row offset is multiplied by 2Ww, not 2Ww - 1: a row of the table holds the 2Ww - 1 column "
                "offsets, -(Ww - 1) .. Ww - 1, so the next row of offsets starts 2Ww - 1 entries on.",
                lambda: (dr + h - 1) * (2 * w) + (dc + w - 1)),
        Mistake("the index is the key's patch minus the query's (r2 - r1, c2 - c1), the transpose of the right one: "
                "Swin's offset is the query's minus the key's, r1 - r2 and c1 - c2, for index[n1, n2] with n1 the "
                "query.",
                lambda: (-dr + h - 1) * (2 * w - 1) + (-dc + w - 1)),
        Mistake("rows and columns are swapped in the table: the column offset is multiplied (by 2Wh - 1) and the "
                "row offset added; the table is row-major over the row offsets, (r1 - r2 + Wh - 1) * (2Ww - 1) "
                "+ (c1 - c2 + Ww - 1), as a pretrained Swin's bias table is stored.",
                lambda: (dc + w - 1) * (2 * h - 1) + (dr + h - 1)),
        Mistake("the patches are numbered column by column (n = c * Wh + r); the contract numbers them row by row, "
                "n = r * Ww + c, so patch n lies at row n // Ww and column n % Ww (torch.arange(Wh) "
                "repeat_interleave'd Ww times gives the rows, torch.arange(Ww) repeated Wh times the columns).",
                lambda: _column_major(h, w)),
        Mistake("the index is 1D over the patch numbers, n1 - n2 + N - 1: two patches one row apart are Ww numbers "
                "apart but not Ww columns apart, so the offset must be taken on each axis, (r1 - r2, c1 - c2), and "
                "read into the (2Wh - 1) x (2Ww - 1) table.",
                lambda: _patch_numbers(h, w)),
        Mistake("the offsets are not shifted: r1 - r2 and c1 - c2 can be negative, and so can the index; add Wh - 1 "
                "to the row offset and Ww - 1 to the column offset before combining them, so every entry lies in "
                "0 .. (2Wh - 1)(2Ww - 1) - 1.",
                lambda: dr * (2 * w - 1) + dc),
    ]
    if h != w:  # on a square window the two multipliers are one
        found.insert(2, Mistake("the row offset is multiplied by 2Wh - 1, the count of row offsets; it takes the "
                                "count of column offsets, 2Ww - 1, since each row of the (2Wh - 1) x (2Ww - 1) "
                                "table holds one entry per column offset.",
                                lambda: (dr + h - 1) * (2 * h - 1) + (dc + w - 1)))
    return found


def _column_major(window_h, window_w):
    dr, dc = _offsets(window_h, window_w, column_major=True)
    return (dr + window_h - 1) * (2 * window_w - 1) + (dc + window_w - 1)


def _patch_numbers(window_h, window_w):
    n = torch.arange(window_h * window_w)
    return n[:, None] - n[None, :] + window_h * window_w - 1


def window_of(window_h, window_w):
    """The feature that tells the window's shape."""
    if window_h == window_w == 1:
        return "one patch"
    if window_h == 1:
        return "one row"
    if window_w == 1:
        return "one column"
    return "square" if window_h == window_w else "Wh < Ww" if window_h < window_w else "Wh > Ww"


DEVICES = {None: "device left out", "cpu": "device='cpu'", "torch.device": "device=torch.device('cpu')"}


def _case(test, window_h, window_w, device=None, by_keyword=False, scored=True):
    """``device``: None (left out), "cpu" (a string) or "torch.device" (torch.device("cpu"), as a probe carries it)."""
    args, kwargs = [window_h, window_w], {}
    if by_keyword:
        args, kwargs = [], {"window_h": window_h, "window_w": window_w}
    if device is not None:
        kwargs["device"] = device_arg("cpu") if device == "torch.device" else device
    label = call_label(NAME, args, kwargs)
    expected = ref.window_relative_index(window_h, window_w)
    dr, dc = _offsets(window_h, window_w)
    check = tensor_check(label, expected, atol=0, rtol=0, mistakes=_mistakes(window_h, window_w),
                         axes=("query", "key"), coordinates={"r1 - r2": dr, "c1 - c2": dc})
    offsets = (2 * window_h - 1) * (2 * window_w - 1)
    return Case(test, label, call_probe(NAME, args, kwargs), check,
                features={"window": window_of(window_h, window_w), "passing": ("sides by keyword" if by_keyword
                                                                               else "sides by position"),
                          "device": DEVICES[device]},
                sizes={"Wh": window_h, "Ww": window_w, "N": window_h * window_w, "2Wh - 1": 2 * window_h - 1,
                       "2Ww - 1": 2 * window_w - 1, "(2Wh - 1)(2Ww - 1)": offsets}, scored=scored)


def _meta_case(test, window_h, window_w):
    """The index asked for on the meta device, which needs no GPU: it must be made there, (N, N) int64 (a meta tensor
    has no values to compare). An index made on the CPU, or read back with .tolist() or .item(), fails there."""
    args, kwargs = [window_h, window_w], {"device": device_arg("meta")}
    label = call_label(NAME, args, kwargs)
    expected = computed_on_the_cpu(ref.window_relative_index, window_h, window_w, device=torch.device("meta"))
    return Case(test, label, call_probe(NAME, args, kwargs),
                device_check(label, "meta", expected.shape, expected.dtype),
                sizes={"Wh": window_h, "Ww": window_w, "N": window_h * window_w})


def _invalid(window_h, window_w, by_keyword=False):
    """A side below 1: the contract's ValueError, not an empty index."""
    args, kwargs = ([], {"window_h": window_h, "window_w": window_w}) if by_keyword else ([window_h, window_w], {})
    label = call_label(NAME, args, kwargs)
    bad = [f"{name} = {side}" for name, side in (("window_h", window_h), ("window_w", window_w)) if side < 1]
    return Case("window_relative_index_invalid_args", label, call_probe(NAME, args, kwargs),
                raises_check(label, "ValueError", f" ({' and '.join(bad)}: a window needs at least one row and one "
                                                  "column)"))


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.window_relative_index, args, kwargs)
    window_h, window_w = given["window_h"], given["window_w"]
    if window_h < 1 or window_w < 1:
        raise ValueError("a window side below 1: the reference refuses the call")
    if given.get("device") is not None and torch.device(given["device"]).type == "meta":
        return _meta_case(NAME, window_h, window_w).check  # no values there, and so no mistake to tell
    return _case(NAME, window_h, window_w).check


def _apart(rng, low, high, longer=0):
    """Two sides low <= short < long <= high + longer, drawn so that (short, long) is no window where two mistakes
    coincide (Ww = 2Wh - 1: the row multiplier 2Wh - 1 is then the 1D index's Ww)."""
    while True:
        short, long = sorted(rng.sample(range(low, high + 1), 2))
        long += longer
        if long != 2 * short - 1:
            return short, long


def _from_contract(levels, rng, generator):
    """A call of window_relative_index_values at one row of the contract's design."""
    small, large = _apart(rng, 2, 8)
    window_h, window_w = {"square": (small, small), "Wh < Ww": (small, large), "Wh > Ww": (large, small),
                          "one row": (1, large), "one column": (large, 1), "one patch": (1, 1)}[levels["window"]]
    device = {"device left out": None, "device='cpu'": "cpu", "device=torch.device('cpu')": "torch.device"}[
        levels["device"]]
    return _case("window_relative_index_values", window_h, window_w, device=device,
                 by_keyword=levels["passing"] == "sides by keyword")


# The contract: what the docstring lets vary, each level sent by some case of window_relative_index_values, every pair
# of levels together in one (autograder/core/contracts.py). The meta device is checked apart (_meta_case).
CONTRACT = Contract(NAME, (
    Factor("window", ("square", "Wh < Ww", "Wh > Ww", "one row", "one column", "one patch")),
    Factor("passing", ("sides by position", "sides by keyword")),
    Factor("device", ("device left out", "device='cpu'", "device=torch.device('cpu')")),
), _from_contract)


def build(rng, generator):
    short, long = _apart(rng, 2, 6, longer=1)
    cases = [
        _case("window_relative_index_values", 1, 2),  # the docstring's worked example: [[1, 0], [2, 1]]
        _case("window_relative_index_values", 7, 7),  # Swin's window
        _case("window_relative_index_values", 2, 5),
        _case("window_relative_index_values", 3, 2),
        _case("window_relative_index_values", short, long, device="cpu"),
        _case("window_relative_index_values", long, short),
        _case("window_relative_index_values", *_apart(rng, 8, 16)),  # Swin V2's larger windows (up to 16 x 16)
        _case("window_relative_index_values", 1, rng.randint(3, 9)),
        _case("window_relative_index_values", rng.randint(3, 9), 1, by_keyword=True),
        _case("window_relative_index_values", 1, 1),
        # Probes, worth nothing: a square window and both oblong ones, small.
        _case("window_relative_index_values", 2, 2, scored=False),
        _case("window_relative_index_values", 2, 4, scored=False),
        _case("window_relative_index_values", 4, 2, scored=False),
    ] + contract_cases(CONTRACT, rng, generator)
    cases += [_invalid(0, 3), _invalid(4, 0), _invalid(-1, 2), _invalid(0, 0), _invalid(2, -rng.randint(1, 5), True)]
    return cases + [_meta_case("window_relative_index_values", 3, 5)]

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds. No tensor
# comes in: nothing to train, no layout; the variants change one side at a time, each to a size the call has not.
BEHAVIOUR = Behaviour("window_relative_index_values", lambda rng, g: ((rng.randint(2, 4), rng.randint(5, 7)), {}),
                      vary={"window_h": (8,), "window_w": (3,)})
