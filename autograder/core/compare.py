"""Compare an output with what was expected and say what is wrong, in words.

Checks go type, then dtype, then shape, then values: the first problem found
is the one reported, since a wrong shape makes every value check noise. On a
value mismatch the message names the first wrong index, expected against got,
how many entries differ and the largest error.

This module holds no answers. The grader uses it on the trusted side, and the
student's self-check tests use a copy of it (``checks.py``, made by
``python -m autograder build``), the static loop check (loop_check.py) included.
"""

import itertools
import math
import re

import torch

from autograder.core.loop_check import assert_no_loops, loops_in  # noqa: F401  (part of this module's interface)


def _index(flat_index, shape):
    index = []
    for size in reversed(shape):
        index.append(flat_index % size)
        flat_index //= size
    return "[" + ", ".join(str(i) for i in reversed(index)) + "]"


def _number(value):
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:.6g}"


def _type_name(value):
    # The grader passes stand-ins for objects that stayed in the student's process, their type's name already in the
    # form it is shown in (cases.returned_value). This file is also the student's checks.py: it imports nothing of
    # the kit.
    return getattr(value, "type_name", None) or f"{type(value).__module__}.{type(value).__qualname__}".replace(
        "builtins.", ""
    )


def _agrees(got, expected, atol, rtol):
    """Entry by entry, whether ``got`` agrees with ``expected`` (float tensors of one shape).

    Where ``expected`` is finite: a finite value within ``atol + rtol * |expected|``. Where it is inf or -inf:
    the same infinity; where it is NaN: a NaN. The tolerance alone is infinite at an infinity and would take
    any value there: a -1e9 for a mask's -inf, or any number for a known mistake's -inf.
    """
    within = torch.isfinite(got) & ((got - expected).abs() <= atol + rtol * expected.abs())
    same = (got == expected) | (torch.isnan(got) & torch.isnan(expected))
    return torch.where(torch.isfinite(expected), within, same)


def _not_finite_notes(got, expected, wrong, shape, lead):
    """How many wrong entries are of another class than the expected value (inf, -inf, NaN, or finite where an
    infinity came), each class with its first entry unless that is the one the message leads with (``lead``)."""
    classes = (("should be -inf and {} not", expected == -float("inf")),
               ("should be inf and {} not", expected == float("inf")),
               ("should be nan and {} not", torch.isnan(expected)),
               ("{} infinite where a finite value is expected", torch.isinf(got) & torch.isfinite(expected)))
    notes = []
    for words, where in classes:
        these = (wrong & where).flatten()
        if not these.any():
            continue
        first, count = int(these.nonzero()[0]), int(these.sum())
        note = f"{count} " + words.format("is" if count == 1 else "are")
        if first != lead:
            shown = f"got {_number(got.flatten()[first].item())}"
            if torch.isfinite(expected.flatten()[first]):
                shown = f"expected {_number(expected.flatten()[first].item())}, {shown}"
            note += f", {'at' if count == 1 else 'the first at'} {_index(first, shape)} ({shown})"
        notes.append(note)
    return notes


def first_wrong(got, expected, *, atol=1e-5, rtol=1e-5):
    """The index of the first entry of ``got`` that ``expected`` does not accept (as ``mismatch`` reads it), as a
    tuple; None where the two are no tensors of one shape, or agree."""
    if not (isinstance(got, torch.Tensor) and isinstance(expected, torch.Tensor)) or got.shape != expected.shape \
            or not got.numel() or "meta" in (got.device.type, expected.device.type):
        return None
    got_cpu, expected_cpu = got.detach().to("cpu"), expected.detach().to("cpu")
    if expected_cpu.is_floating_point() or expected_cpu.is_complex():
        wrong = ~_agrees(got_cpu.to(torch.float64), expected_cpu.to(torch.float64),
                         torch.as_tensor(atol, dtype=torch.float64), rtol)
    else:
        wrong = got_cpu != expected_cpu
    if not wrong.any():
        return None
    flat = int(wrong.flatten().nonzero()[0])
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(got.shape))) if got.dim() else ()


def mismatch(got, expected, *, what="the output", atol=1e-5, rtol=1e-5, check_dtype=True):
    """Return None when ``got`` matches ``expected``, else a message saying how it does not.

    ``atol`` may be a tensor that broadcasts to the expected shape (a tolerance
    per entry); ``rtol`` is relative to the expected value. Integer and bool
    tensors must match exactly. An expected inf or -inf is matched only by the
    same infinity and an expected NaN only by a NaN, whatever the tolerance; a
    finite expected value only by a finite one.
    """
    if not isinstance(got, torch.Tensor):
        return f"{what} should be a torch.Tensor, but it is a {_type_name(got)}."
    if check_dtype and got.dtype != expected.dtype:
        return f"{what} has dtype {got.dtype}, expected {expected.dtype}."
    if tuple(got.shape) != tuple(expected.shape):
        return f"{what} has shape {tuple(got.shape)}, expected {tuple(expected.shape)}."
    if got.numel() == 0:
        return None
    got_cpu = got.detach().to("cpu")
    expected_cpu = expected.detach().to("cpu")
    exact = not (expected_cpu.is_floating_point() or expected_cpu.is_complex())
    notes, tail = [], ""
    if exact:
        wrong = got_cpu != expected_cpu
        error = (got_cpu.to(torch.float64) - expected_cpu.to(torch.float64)).abs()
    else:
        got64, expected64 = got_cpu.to(torch.float64), expected_cpu.to(torch.float64)
        stray = torch.isnan(got64) & ~torch.isnan(expected64)
        if stray.any() and got.numel() == 1:
            at = f" at {_index(0, got.shape)}" if got.dim() else ""
            return (f"{what} is NaN{at}: expected {_number(expected_cpu.item())}. "
                    "Look for a division by zero, log of 0, or 0 * inf.")
        if stray.any():
            first = int(stray.flatten().nonzero()[0])
            return (
                f"{what} contains NaN ({int(stray.sum())} entries, the first at {_index(first, got.shape)}): "
                f"expected {_number(expected_cpu.flatten()[first].item())} there. "
                "Look for a division by zero, log of 0, or 0 * inf."
            )
        wrong = ~_agrees(got64, expected64, torch.as_tensor(atol, dtype=torch.float64), rtol)
        if not wrong.any():
            return None
        # The largest error is read among the finite entries only: an infinity's error says nothing of size.
        measured = wrong & torch.isfinite(got64) & torch.isfinite(expected64)
        error = torch.where(measured, (got64 - expected64).abs(), torch.zeros_like(got64))
        first = int(wrong.flatten().nonzero()[0])
        notes = _not_finite_notes(got64, expected64, wrong, got.shape, first)
        if not measured.any():
            error = None
        finite_for_infinite = (wrong & torch.isinf(expected64) & torch.isfinite(got64)).flatten()
        if finite_for_infinite.any():
            sign = _number(expected64.flatten()[int(finite_for_infinite.nonzero()[0])].item())
            tail = f" A finite number, however large, is not {sign}: write float('{sign}') where {sign} is asked for."
    if not wrong.any():
        return None
    flat_wrong = wrong.flatten()
    first = int(flat_wrong.nonzero()[0])
    if error is not None:
        worst = int(error.flatten().argmax())
        notes.append(f"largest error {_number(error.flatten()[worst].item())} at {_index(worst, got.shape)}")
    expected_value = expected_cpu.flatten()[first].item()
    got_value = got_cpu.flatten()[first].item()
    if got.numel() == 1:  # one number: no entries to count, and a 0-d tensor has no index to name
        at = f" at {_index(0, got.shape)}" if got.dim() else ""
        return f"{what} is wrong{at}: expected {_number(expected_value)}, got {_number(got_value)}" + (
            f" (off by {got_value - expected_value:+.6g})." if error is not None and not isinstance(got_value, bool)
            else ".") + tail
    return (
        f"{what} is wrong at {_index(first, got.shape)}: expected {_number(expected_value)}, "
        f"got {_number(got_value)} ({int(flat_wrong.sum())} of {flat_wrong.numel()} entries differ"
        + "".join(f"; {note}" for note in notes) + ")." + tail
    )


def likely_cause(got, expected, causes, *, atol=1e-5, rtol=1e-5):
    """What went wrong, in a sentence, when it can be told from ``got`` alone; else None.

    ``causes`` are ``(output, words)`` pairs: what a known mistake returns on these inputs, and what to say of
    it. A cause is named only when ``got`` equals its output (in any dtype) and that output is not the right
    one here. Failing that, a ``got`` whose values are right in another dtype or shape is told so.
    """
    if not isinstance(got, torch.Tensor) or not isinstance(expected, torch.Tensor):
        return None
    for output, words in causes:
        output = torch.as_tensor(output)
        if tuple(output.shape) != tuple(got.shape):
            continue
        if tuple(output.shape) == tuple(expected.shape) and mismatch(
                output, expected, atol=atol, rtol=rtol, check_dtype=False) is None:
            continue  # that mistake looks right on these inputs: it explains nothing
        if mismatch(got, output.to(got.dtype), atol=atol, rtol=rtol, check_dtype=False) is None:
            return words
    if got.numel() == expected.numel() and got.numel() and mismatch(
            got.detach().reshape(expected.shape), expected, atol=atol, rtol=rtol, check_dtype=False) is None:
        return ("the values are right: only the dtype differs" if tuple(got.shape) == tuple(expected.shape)
                else "the values are right, in the right order: only the shape differs")
    return None


def assert_close(got, expected, *, what="the output", atol=1e-5, rtol=1e-5, check_dtype=True, hint=None,
                 causes=(), axes=None):
    """``mismatch`` as an assertion for pytest.

    It fails with the message (type, dtype, shape, or the first wrong value), then the likely cause when
    ``likely_cause`` can tell it from the output (``causes``: what known mistakes return here), or else how
    the output relates to the expected one when ``relation`` can tell (``axes``: the axes' names), then
    ``hint``, the convention the check holds the output to, which is no diagnosis and is said as such.
    """
    __tracebackhide__ = True  # pytest shows the check's line that called this, with the message, not this frame
    message = mismatch(got, expected, what=what, atol=atol, rtol=rtol, check_dtype=check_dtype)
    if message is None:
        return
    cause = likely_cause(got, expected, causes, atol=atol, rtol=rtol)
    how = None if cause else relation(got, expected, atol=atol, rtol=rtol, axes=axes)
    raise AssertionError(message + (f"\nLikely cause: {cause.rstrip('.')}." if cause else "")
                         + (f"\nHow it goes wrong: {how}" if how else "")
                         + (f"\nWhat this check expects: {hint}" if hint else ""))


def assert_raises(exception, function, *args, hint=None, **kwargs):
    """Fail unless ``function(*args, **kwargs)`` raises ``exception`` (a subclass counts).

    A NotImplementedError goes through untouched: the function is not written yet.
    """
    __tracebackhide__ = True  # (pytest shows the check's line and, below it, the frames of the student's function)
    shown = [repr(arg) for arg in args] + [f"{key}={value!r}" for key, value in kwargs.items()]
    what = f"{getattr(function, '__name__', 'the call')}({', '.join(shown)})"
    likely = f"\nWhy: {hint}" if hint else ""
    try:
        function(*args, **kwargs)
    except exception:
        return
    except NotImplementedError:
        raise
    except Exception as error:
        raise AssertionError(f"{what} raised {type(error).__name__} ({error}); expected {exception.__name__}."
                             + likely) from None
    raise AssertionError(f"{what} returned without raising {exception.__name__}." + likely)


# --- how a wrong output relates to the right one ----------------------------------------------------------
# These read only the two tensors, so they hold no answer: the grader runs them on its side, and the self-checks
# run them on what the student's function returned. Each sentence states a fact about the output (never a
# cause), so it cannot name a wrong mistake; the caller adds what the fact usually means.

_MAX_PERMUTED_AXIS = 64  # slices compared one against another along an axis up to this long


def _scalar_tolerance(atol):
    return float(torch.as_tensor(atol, dtype=torch.float64).max()) if torch.is_tensor(atol) else float(atol)


def _axis_names(shape, axes):
    names = list(axes or ())
    if len(names) != len(shape):
        names = [f"axis {a}" for a in range(len(shape))]
    return names


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")


def _the_axis(names, axis):
    """How a sentence names an axis: "the query axis" where the check named it, else by its place ("the last
    axis"), never "axis 1", which reads as a name the student never gave it."""
    axis %= len(names)
    if names[axis] != f"axis {axis}":
        return f"the {names[axis]} axis"
    if axis == len(names) - 1:
        return "the last axis" if axis else "the only axis"
    return f"the {_ORDINALS[axis]} axis" if axis < len(_ORDINALS) else f"the axis at place {axis + 1}"


def _slice_of(names, axis, index):
    """How a sentence names one slice, once it has said along which axis: "query 3" where the axis is named,
    "entry [3]" of a vector, else "slice 3"."""
    if names[axis] != f"axis {axis}":
        return f"{names[axis]} {index}"
    return f"entry [{index}]" if len(names) == 1 else f"slice {index}"


def _close(a, b, atol, rtol):
    return tuple(a.shape) == tuple(b.shape) and bool(_agrees(a, b, atol, rtol).all())


def _runs(indices):
    """[0, 1, 2, 5] -> "0..2 and 5"."""
    indices = sorted(indices)
    parts, start = [], None
    for position, value in enumerate(indices):
        if start is None:
            start = value
        if position + 1 == len(indices) or indices[position + 1] != value + 1:
            parts.append(str(start) if start == value else f"{start}..{value}")
            start = None
    shown = parts[:4] + (["..."] if len(parts) > 4 else [])
    return ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]


def _named_factor(c, factors):
    for name, value in (factors or {}).items():
        if value and abs(c - value) <= 1e-3 * abs(value):
            return f"{name} = {value:.4g}"
    return f"{c:.4g}"


def _whole(g, e, atol, rtol, names, factors, exact):
    """A relation that holds on every entry, or None."""
    if not _close(g, e, atol, rtol) and _close(g, -e, atol, rtol) and bool((e != 0).any()):
        return "every entry has the opposite sign of the expected one (a sign flipped, or the difference taken the other way round)"
    if g.dim() >= 2 and g.shape[-1] == g.shape[-2] > 1 and _close(g, e.transpose(-1, -2), atol, rtol):
        last = g.dim() - 1
        pair = f"the {names[-2]} and {names[-1]} axes" if names[last] != f"axis {last}" else "the last two axes"
        return f"it is the expected output transposed: {pair} are swapped"
    if g.dim() >= 1 and g.shape[-1] > 1 and _close(g, e.softmax(-1), atol, rtol):
        return (f"it is the softmax of the expected output over {_the_axis(names, g.dim() - 1)}: the values asked for are "
                "the scores before any softmax")
    offset = float((g - e).mean())
    if abs(offset) > atol and _close(g, e + offset, atol, rtol) and (exact or e.numel() == 1):
        if exact and offset == round(offset):
            return f"every entry is {abs(int(offset))} {'too high' if offset > 0 else 'too low'}"
        return f"every entry is off by the same constant, {offset:+.4g}"
    energy = float((e * e).sum())
    if energy > 0:
        c = float((g * e).sum()) / energy
        if abs(c - 1) > 1e-3 and abs(c) > 1e-12 and _close(g, c * e, atol, rtol):
            return f"every entry is the expected one times a constant factor {_named_factor(c, factors)}"
    if abs(offset) > atol and _close(g, e + offset, atol, rtol):
        return f"every entry is off by the same constant, {offset:+.4g}"
    if e.numel() > 2 and float(e.var()) > 0:
        flat_e, flat_g = e.flatten(), g.flatten()
        a = float(((flat_e - flat_e.mean()) * (flat_g - flat_g.mean())).sum() / ((flat_e - flat_e.mean()) ** 2).sum())
        b = float(flat_g.mean() - a * flat_e.mean())
        if abs(a) > 1e-12 and _close(g, a * e + b, atol, rtol):
            return f"every entry is {_named_factor(a, factors)} times the expected one, plus {b:+.4g}"
    for axis, size in enumerate(g.shape):
        if size > 1 and _close(g, e.flip(axis), atol, rtol):
            return f"it is the expected output reversed along {_the_axis(names, axis)}"
    for axis, size in enumerate(g.shape):
        if size > 2:
            ahead, behind = g.narrow(axis, 1, size - 1), e.narrow(axis, 0, size - 1)
            if _close(ahead, behind, atol, rtol):
                return (f"it is the expected output shifted by one along {_the_axis(names, axis)}: your entry at "
                        f"index i is the expected entry at i - 1 (something counted from 1 instead of 0?)")
            if _close(g.narrow(axis, 0, size - 1), e.narrow(axis, 1, size - 1), atol, rtol):
                return (f"it is the expected output shifted by one along {_the_axis(names, axis)}: your entry at "
                        f"index i is the expected entry at i + 1")
    if g.numel() > 1 and _close(g.flatten().sort().values, e.flatten().sort().values, atol, rtol):
        moved = None
        for axis, size in enumerate(g.shape):  # a permutation of slices along one axis is said below
            if size > 1 and _close(g.sum(axis), e.sum(axis), atol, rtol * size):
                moved = axis
        if moved is None:
            return ("the output holds exactly the expected values, but in another order: look at how the parts "
                    "are stacked, concatenated or reshaped (a reshape keeps the memory order)")
    for axis, size in enumerate(g.shape):
        if 1 < size <= _MAX_PERMUTED_AXIS:
            order = _first_matches(g, e, axis, atol, rtol)
            if order is not None and sorted(order) == list(range(size)) and order != list(range(size)):
                first = next(i for i in range(size) if order[i] != i)
                parts = "entries" if g.dim() == 1 else f"slices along {_the_axis(names, axis)}"
                return (f"the {parts} are the expected ones in another order (your "
                        f"{_slice_of(names, axis, first)} is the expected {_slice_of(names, axis, order[first])})")
    return None


def _first_matches(g, e, axis, atol, rtol):
    """For each slice i of ``g`` along ``axis``, the first slice j of ``e`` it agrees with entry by entry, as a list;
    None where some slice of ``g`` agrees with none. Every pair is compared in one broadcast (a few slices of
    ``g`` at a time, to keep the pairs' memory near 2**22 entries) rather than one comparison a pair."""
    size = g.shape[axis]
    mine, theirs = g.movedim(axis, 0).reshape(size, -1), e.movedim(axis, 0).reshape(size, -1)
    step = max(1, (1 << 22) // max(1, size * mine.shape[1]))
    order = []
    for start in range(0, size, step):
        pairs = _agrees(mine[start:start + step, None, :], theirs[None, :, :], atol, rtol).all(-1)
        found = pairs.any(-1)
        if not bool(found.all()):
            return None
        order.extend(int(j) for j in pairs.to(torch.int8).argmax(-1))
    return order


def _span(name, first, last):
    return f"{name} {first}" if first == last else f"{name} {first}..{last}"


def _where_wrong(wrong, names, coordinates, e, exact):
    """Where the wrong entries lie, when they lie somewhere one can name (at most two facts); else []."""
    facts = []
    if bool(wrong.any()) and not bool(wrong.all()):
        for name, values in (coordinates or {}).items():
            values = torch.as_tensor(values, dtype=torch.float64).expand(wrong.shape)
            if values[wrong].min() > values[~wrong].max():
                facts.append(f"right for {name} up to {_number(values[~wrong].max().item())}, wrong from "
                             f"{_number(values[wrong].min().item())} on")
                break
            if values[wrong].max() < values[~wrong].min():
                facts.append(f"wrong for {name} up to {_number(values[wrong].max().item())}, right from "
                             f"{_number(values[~wrong].min().item())} on")
                break
            low, high = values[wrong].min(), values[wrong].max()
            if not bool(((values >= low) & (values <= high) & ~wrong).any()):
                facts.append(f"wrong only for {name} from {_number(low.item())} to {_number(high.item())}, right "
                             "below and above")
                break
    if tuple(names[-2:]) == ("query", "key") and wrong.shape[-1] > 1 and wrong.shape[-2] > 1 \
            and not bool(wrong.all()):
        i = torch.arange(wrong.shape[-2])[:, None]
        j = torch.arange(wrong.shape[-1])[None, :]
        anywhere = wrong.reshape(-1, wrong.shape[-2], wrong.shape[-1]).any(0)
        q, k = names[-2], names[-1]
        for region, words in (((j > i), f"where the {k} index is above the {q} index (j > i)"),
                              ((j < i), f"where the {k} index is below the {q} index (j < i)"),
                              ((j == i), "on the diagonal (j == i)"), ((j != i), "off the diagonal (j != i)")):
            if bool(anywhere.any()) and not bool((anywhere & ~region).any()):
                facts.append(f"wrong only {words}" + ("" if bool(anywhere[region].all()) else ", not everywhere there"))
                break
    named = not all(name == f"axis {a}" for a, name in enumerate(names))
    for axis, size in enumerate(wrong.shape):
        if not named or size < 2 or len(facts) >= 2:  # an unnamed axis's indices tell nothing ("axis 0 0..1")
            continue
        bad = [i for i in range(size) if bool(wrong.select(axis, i).any())]
        if len(bad) == size:
            continue
        name = names[axis]
        if bad == list(range(bad[0], size)):
            facts.append(f"right for {_span(name, 0, bad[0] - 1)}, wrong from {name} {bad[0]} on")
        elif bad == list(range(0, bad[-1] + 1)):
            facts.append(f"wrong for {_span(name, 0, bad[-1])}, right from {name} {bad[-1] + 1} on")
        elif size >= 4 and bad == list(range(1, size, 2)):
            facts.append(f"wrong at every odd {name} (1, 3, 5, ...), right at the even ones")
        elif size >= 4 and bad == list(range(0, size, 2)):
            facts.append(f"wrong at every even {name} (0, 2, 4, ...), right at the odd ones")
        elif bad[0] > 0 and len(_runs(bad).split(", ")) > 3:  # scattered, all from some index on
            facts.append(f"right for {_span(name, 0, bad[0] - 1)}, wrong at {len(bad)} of the {size - bad[0]} "
                         f"from {name} {bad[0]} on")
        elif size - len(bad) == 1:
            facts.append(f"right only at {name} {next(i for i in range(size) if i not in bad)}")
        else:
            facts.append(f"wrong only at {name} {_runs(bad)}")
    if exact and not facts and bool(wrong.any()) and not bool(wrong.all()):
        low_wrong, high_right = e[wrong].min(), e[~wrong].max()
        if low_wrong > high_right:
            facts.append(f"right where the expected value is below {_number(low_wrong.item())}, wrong from "
                         "there on")
    return facts[:2]


def _term_relation(g, e, atol, rtol, terms, factors):
    """"the bias enters with factor -1 where 1 is expected": the difference is a multiple of one term."""
    d = g - e
    for name, (term, coefficient) in (terms or {}).items():
        t = torch.as_tensor(term).detach().to("cpu", torch.float64)
        try:
            t = t.expand(d.shape)
        except RuntimeError:
            continue
        energy = float((t * t).sum())
        if energy == 0:
            continue
        c = float((d * t).sum()) / energy
        if abs(c) > 1e-9 and _close(d, c * t, atol, rtol):
            yours = coefficient + c
            if abs(yours) <= 1e-4 * abs(coefficient):
                return f"the term {name} is missing: the rest of the output is right"
            return (f"the term {name} enters with the factor {_named_factor(yours, factors)} where "
                    f"{_named_factor(coefficient, factors) if coefficient != 1 else '1'} is expected; the rest of "
                    "the output is right")
    return None


def relation(got, expected, *, atol=1e-5, rtol=1e-5, axes=None, factors=None, coordinates=None, terms=None):
    """How ``got`` goes wrong against ``expected``, in one sentence, when a simple relation or place says it.

    ``axes`` names the expected output's axes (``("batch", "head", "query", "key")``); ``factors`` names
    constants a factor may be (``{"1/sqrt(dh)": 0.354}``); ``coordinates`` gives, for named quantities, their
    value at each entry (``{"|j - i|": tensor}``), to say "right up to 15, wrong from 16 on"; ``terms`` the
    parts the right output is a sum of, each with its factor there (``{"bias": (bias, 1.0)}``), to say
    "the bias enters with the factor -1 where 1 is expected". None when
    nothing simple holds: then the first wrong entry and the largest error are all there is to say.
    """
    if not isinstance(got, torch.Tensor) or not isinstance(expected, torch.Tensor) or got.is_complex() \
            or expected.is_complex() or not expected.numel():
        return None
    # A tolerance given entry by entry is read as its largest entry, except where the entries are counted below.
    (per_entry, atol), (per_entry_rtol, rtol) = (atol, _scalar_tolerance(atol)), (rtol, _scalar_tolerance(rtol))
    exact = not expected.is_floating_point()
    g, e = got.detach().to("cpu", torch.float64), expected.detach().to("cpu", torch.float64)
    names = _axis_names(e.shape, axes)
    if tuple(g.shape) != tuple(e.shape):
        return None if not bool(torch.isfinite(g).all()) else _shape_relation(g, e, atol, rtol, names)
    if bool(torch.isnan(g).any()):
        return None  # mismatch says where the first NaN is
    if e.numel() == 1:
        return None if _close(g, e, atol, rtol) else _one_value(float(g.flatten()[0]), float(e.flatten()[0]), factors)
    infinite = torch.isinf(g) & torch.isfinite(e)
    if bool(infinite.any()):
        rest = _close(g[~infinite], e[~infinite], atol, rtol)
        facts = _where_wrong(infinite, names, coordinates, e, exact)
        sign = "-inf" if bool((g[infinite] < 0).all()) else "inf" if bool((g[infinite] > 0).all()) else "infinite"
        where = facts[0].replace("wrong only ", "", 1) if facts and facts[0].startswith("wrong only ") else (
            f"at {int(infinite.sum())} of {infinite.numel()} entries")
        return (f"the output is {sign} {where}"
                + (", and right everywhere else" if rest else "")
                + (" (a mask applied that the function was not asked for?)." if rest and sign == "-inf" else "."))
    if _close(g, e, atol, rtol):
        return None
    whole = _whole(g, e, atol, rtol, names, factors, exact) or _term_relation(g, e, atol, rtol, terms, factors)
    if whole:
        return whole + "."
    try:  # where the entries are wrong, with the tolerance of each entry, as mismatch counts them
        wrong = ~_agrees(g, e, torch.as_tensor(per_entry, dtype=torch.float64),
                         torch.as_tensor(per_entry_rtol, dtype=torch.float64))
    except RuntimeError:
        wrong = ~_agrees(g, e, atol, rtol)
    facts = _where_wrong(wrong, names, coordinates, e, exact)
    d = (g - e)[wrong]
    if not facts and exact and bool((d.abs() == 1).all()):
        return (f"the output is off by one at {int(wrong.sum())} of {wrong.numel()} entries, each one "
                + ("too high" if bool((d > 0).all()) else "too low" if bool((d < 0).all()) else "off, either way")
                + ", and right elsewhere.")
    if not facts:
        if g.dim() >= 1 and g.shape[-1] > 1:
            d = g - e
            if _close(d, d[..., :1].expand_as(d), atol, rtol):
                last = "last axis" if names[-1] == f"axis {g.dim() - 1}" else f"{names[-1]} axis"
                return (f"the output differs from the expected one by a constant along each row of the {last} "
                        "(a different constant per row): a softmax over that axis would not see it, but the "
                        "values asked for are the ones without it.")
        return None
    if exact and bool((d.abs() == 1).all()):
        facts.append("each wrong entry one " + ("too high" if bool((d > 0).all()) else
                                                 "too low" if bool((d < 0).all()) else "off, either way"))
    elif bool((e[wrong] != 0).all()) and _close(g[wrong], -e[wrong], atol, rtol):
        facts.append("with the opposite sign there")
    share = f"{int(wrong.sum())} of {wrong.numel()} entries wrong"
    return f"the output is {'; '.join(facts)} ({share})."


def _one_value(got, expected, factors):
    """How one wrong number relates to the right one, where that says more than the two numbers do: every pair of
    numbers is "off by a constant" and "a constant factor" apart, so only a sign or a named factor is told."""
    if not (math.isfinite(got) and math.isfinite(expected)):
        return None  # the mismatch's own words say inf where a number is expected
    if expected and math.isclose(got, -expected, rel_tol=1e-6):
        return "it has the opposite sign of the expected value (a sign flipped, or a difference taken the other way)."
    if expected and got:
        named = _named_factor(got / expected, factors)
        if named != f"{got / expected:.4g}":
            return f"it is the expected value times {named}."
    return None


def _shape_relation(g, e, atol, rtol, names):
    if g.numel() == e.numel() and g.dim() == e.dim() and g.dim() <= 5:
        for order in itertools.permutations(range(e.dim())):
            if list(order) == list(range(e.dim())):
                continue
            moved = e.permute(order)
            if tuple(moved.shape) == tuple(g.shape) and _close(g, moved, atol, rtol):
                return (f"your output holds the expected values with its axes in another order: it is laid out "
                        f"({', '.join(names[a] for a in order)}) where ({', '.join(names)}) is expected; "
                        "move the axes with permute (or transpose).")
            if _close(g.reshape(-1), moved.reshape(-1), atol, rtol):
                return (f"your output holds the expected values in the memory order of ({', '.join(names[a] for a in order)}) "
                        f"reshaped to {tuple(g.shape)}: a reshape keeps the memory order; to move axes use permute.")
    if g.dim() == e.dim():
        differs = [a for a in range(e.dim()) if g.shape[a] != e.shape[a]]
        common = [min(a, b) for a, b in zip(g.shape, e.shape)]
        if all(common):
            gg, ee = g, e
            for axis, size in enumerate(common):
                gg, ee = gg.narrow(axis, 0, size), ee.narrow(axis, 0, size)
            if _close(gg, ee, atol, rtol):
                what = "; ".join(f"along {_the_axis(names, a)} it has {g.shape[a]} entries where {e.shape[a]} are "
                                 "expected" for a in differs)
                return (f"your output agrees with the expected one where both have entries, but {what} (a length "
                        "taken from the wrong argument?).")
    return None


# --- what a torch error means -----------------------------------------------------------------------------
# Torch's messages name what it checked ("mat1 and mat2 shapes cannot be multiplied (4x8 and 16x4)"), not what that
# means for the line that called it. Each entry: (a pattern of a message, what it means, with the sizes the message
# quotes). The self-checks print it under the student's own line and torch's own message; the grader can use it
# on the message a job sends back, as it holds no answer.

_DTYPES = {"float": "float32", "Float": "float32", "double": "float64", "Double": "float64", "Half": "float16",
           "c10::Half": "float16", "BFloat16": "bfloat16", "c10::BFloat16": "bfloat16", "Long": "int64",
           "long int": "int64", "Int": "int32", "int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
           "Bool": "bool", "bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128"}
_INTEGER_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "bool")


def _dtype(name):
    """A dtype as torch's C++ messages name it ("Float", "c10::Half"), in Python's words (float32, float16)."""
    name = name.strip().removeprefix("torch.")
    return _DTYPES.get(name, name)


def _sizes(text):
    return [int(size) for size in re.findall(r"-?\d+", text)]


_TRANSPOSE_ADVICE = ("Write each operand's shape beside the line ((B, H, Lq, dh) and so on) and check which one you "
                     "meant to transpose (.transpose(-2, -1)), or which axis came from the wrong tensor.")
_BROADCAST_ADVICE = ("Write the two shapes one above the other, lined up at the right, and find the axis out of place: "
                     "one that needs a new axis of size 1 (x[:, None], unsqueeze), or Lq where Lk belongs.")
_NEW_TENSOR_ADVICE = ("make each tensor your function creates (torch.arange, torch.zeros, torch.tensor...) on the "
                      "inputs' device, torch.arange(n, device=q.device), or on the device= you are given")
_META_ADVICE = ("Your code reads a tensor's values into Python (.item(), .tolist(), int(t), float(t), if t:, "
                ".numpy()), and a tensor on the meta device has a shape but no values: the grader calls your "
                "function on meta tensors too. Keep the work in tensor operations, and take sizes from .shape.")
_META_COPY_ADVICE = ("A tensor on the meta device (which has a shape but no values: the grader calls your function on "
                     "meta tensors too) was copied off it: moved to another device (.cpu(), .to(t.device) of a tensor "
                     "t made on the CPU, such as a default torch.arange(L)) or read out (.tolist()). "
                     + _NEW_TENSOR_ADVICE[0].upper() + _NEW_TENSOR_ADVICE[1:]
                     + ", and move the other arguments to it, never an input away from it.")


def _matmul(left_rows, left, right, right_columns):
    return (f"A matrix product (@, torch.matmul, F.linear) got a left operand of {left_rows}x{left} and a right one "
            f"of {right}x{right_columns}, as torch reports them (the leading axes folded into the rows): it pairs "
            f"the last axis of the left one, of size {left}, with the second-to-last axis of the right one, of size "
            f"{right}, and these must be equal. " + _TRANSPOSE_ADVICE)


def _batched_matmul(match):
    batch, left = _sizes(match["expected"])
    _, right = _sizes(match["got"])
    return (f"A batched matrix product (@ or torch.matmul on tensors of 3 or more axes, bmm) pairs the last axis of "
            f"its left operand, of size {left} here, with the second-to-last axis of its right one, of size {right}: "
            f"they must be equal ({batch} is the batch axes multiplied together). " + _TRANSPOSE_ADVICE)


def _broadcast(match):
    return (f"Two tensors met in an elementwise operation (+, -, *, /, torch.where, an assignment) or as the batch "
            f"axes of a matrix product: torch lines their shapes up from the right, and at axis {match['axis']} (of "
            f"the longer shape, counted from the left) one has size {match['a']} and the other {match['b']}. Lined-up "
            f"sizes must be equal, or one of them 1. " + _BROADCAST_ADVICE)


def _expand(match):
    return (f"A tensor of shape [{match['have']}] was asked to take the shape [{match['want']}] (by expand, or by an "
            f"assignment x[...] = y, which expands y to the shape of the slice it fills): at axis {match['axis']} its "
            f"size is {match['existing']}, and only an axis of size 1 can become {match['target']}. Check the shape "
            "of what is assigned against the slice it goes into.")


def _reshape(match):
    wanted, total = _sizes(match["shape"]), int(match["total"])
    known = math.prod(size for size in wanted if size != -1)
    if -1 in wanted:
        holds = f"with -1 in it, the other sizes (their product {known}) must divide {total}"
    else:
        holds = f"[{match['shape']}] holds {known}"
    return (f"A view or reshape to [{match['shape']}] was asked of a tensor of {total} entries, and the new shape must "
            f"hold exactly {total} entries: {holds}. Take each size you pass from the tensor's own shape "
            "(B, H, L = x.shape[:3]) and check that their product is the number of entries.")


def _two_dtypes(first, second):
    first, second = _dtype(first), _dtype(second)
    return (f"Tensors of two dtypes, {first} and {second}, met in an operation that needs one: make each tensor "
            "your function creates in the inputs' dtype (torch.arange(n, dtype=q.dtype)), or convert with "
            ".to(q.dtype) before they meet; the output keeps the dtype the docstring names.")


def _not_for_dtype(match):
    dtype = _dtype(match["dtype"])
    if dtype in _INTEGER_DTYPES:
        advice = (f"an integer tensor ({dtype}; torch.arange gives int64) reached an operation on real numbers "
                  "(exp, log, sin, softmax, randn...): convert it first, e.g. .to(dtype) or .float().")
    else:
        advice = (f"on this device torch cannot do it in {dtype}: compute in float32 (x.float()) and convert the "
                  "result back with .to(dtype).")
    return f"Torch has no kernel {match['kernel']} for {dtype} tensors: " + advice


def _index_out_of_bounds(match):
    index, axis, size = int(match["index"]), match["axis"], int(match["size"])
    valid = f"valid indices there are 0 to {size - 1} (or -{size} to -1)" if size else "that axis is empty"
    return (f"An index of {index} was used on axis {axis} of a tensor, which has size {size} there: {valid}. Check "
            "the largest (and smallest) index your code computes (the last position, distance or bucket), and "
            "whether the axis is the one you meant.")


def _axis_out_of_range(match):
    low, high, asked = int(match["low"]), int(match["high"]), int(match["asked"])
    return (f"Your code asked for axis {asked} of a tensor of {high + 1} axes (valid: {low} to {high}): the tensor "
            "has fewer axes than the line assumes. Check its shape there: a (Lq, Lk) table where a (B, H, Lq, Lk) "
            "one was meant, or an axis squeezed away.")


def _argument_type(match):
    function, argument, wanted, got = match["function"], match["argument"], match["wanted"], match["got"]
    if got == "NoneType":
        advice = "an optional argument left at None reached it: give it its default value first."
    elif got == "Tensor":
        advice = "pass a Python number (a size from x.shape is one), or build the result with tensor operations."
    else:
        advice = "check what the argument is at that line."
    return f"torch's {function}() takes {wanted} for its argument '{argument}', and got a {got}: " + advice


def _operand_types(match):
    operator, left, right = match["operator"], match["left"], match["right"]
    if "NoneType" in (left, right):
        return (f"One side of {operator} is None: an optional argument left at None (as scale=None) must be given "
                "its default value before it is used.")
    return f"{operator} is not defined between a {left} and a {right}: check what each side is at that line."


TORCH_ERRORS = (
    # matrix products
    (r"mat1 and mat2 shapes cannot be multiplied \((?P<a>\d+)x(?P<b>\d+) and (?P<c>\d+)x(?P<d>\d+)\)",
     lambda m: _matmul(m["a"], m["b"], m["c"], m["d"])),
    (r"Expected size for first two dimensions of batch2 tensor to be: \[(?P<expected>[-\d, ]+)\] but got: "
     r"\[(?P<got>[-\d, ]+)\]", _batched_matmul),
    (r"size mismatch, got input \((?P<out>\d+)\), mat \((?P<rows>\d+)x(?P<columns>\d+)\), vec \((?P<length>\d+)\)",
     lambda m: f"A matrix-vector product (@ of a {m['rows']}x{m['columns']} matrix and a vector, for {m['out']} "
               f"outputs) pairs the matrix's last axis, of size {m['columns']}, with the vector's length, "
               f"{m['length']}: they must be equal. " + _TRANSPOSE_ADVICE),
    (r"inconsistent tensor size, expected tensor \[(?P<a>\d+)\] and src \[(?P<b>\d+)\]",
     lambda m: f"A product of two vectors (@ or torch.dot of two 1-axis tensors) needs one length on both sides, and "
               f"got {m['a']} and {m['b']}. " + _TRANSPOSE_ADVICE),
    (r"both arguments to matmul need to be at least 1D, but they are (?P<a>\w+) and (?P<b>\w+)",
     lambda m: f"@ (matmul) got a tensor with no axes ({m['a']} and {m['b']}): multiply by a single number with *, "
               "not @."),
    (r"einsum\(\): subscript (?P<letter>\w) has size (?P<a>\d+) for operand (?P<operand>\d+) which does not broadcast "
     r"with previously seen size (?P<b>\d+)",
     lambda m: f"torch.einsum's letter {m['letter']} names axes of two sizes ({m['b']}, then {m['a']} in operand "
               f"{m['operand']}): each letter must name axes of one size. Check the letters of each operand against "
               "its shape, in order."),
    # shapes that do not line up
    (r"The size of tensor a \((?P<a>\d+)\) must match the size of tensor b \((?P<b>\d+)\) at non-singleton "
     r"dimension (?P<axis>\d+)", _broadcast),
    (r"output with shape \[(?P<have>[-\d, ]*)\] doesn't match the broadcast shape \[(?P<want>[-\d, ]*)\]",
     lambda m: f"An in-place operation (x += y, x.add_(y), x *= y) must write its result into x, of shape "
               f"[{m['have']}], but the operands broadcast to [{m['want']}]: write x = x + y, which makes a new "
               "tensor, or give x its full shape first."),
    (r"The expanded size of the tensor \((?P<target>\d+)\) must match the existing size \((?P<existing>\d+)\) at "
     r"non-singleton dimension (?P<axis>\d+)\.\s+Target sizes: \[(?P<want>[-\d, ]*)\]\.\s+Tensor sizes: "
     r"\[(?P<have>[-\d, ]*)\]", _expand),
    (r"Sizes of tensors must match except in dimension (?P<axis>\d+)\. Expected size (?P<a>\d+) but got size "
     r"(?P<b>\d+) for tensor number (?P<number>\d+)",
     lambda m: f"torch.cat joins tensors along axis {m['axis']} only, so every other axis must have one size, but "
               f"tensor number {m['number']} of the list has {m['b']} where the first has {m['a']}. Check the axis "
               "you join on (dim=) and each tensor's shape."),
    (r"Tensors must have same number of dimensions: got (?P<a>\d+) and (?P<b>\d+)",
     lambda m: f"torch.cat joins tensors of one number of axes, and these have {m['a']} and {m['b']}: add the "
               "missing axis first (x[None], unsqueeze)."),
    (r"stack expects each tensor to be equal size, but got \[(?P<a>[-\d, ]*)\] at entry (?P<i>\d+) and "
     r"\[(?P<b>[-\d, ]*)\] at entry (?P<j>\d+)",
     lambda m: f"torch.stack needs tensors of one shape, but entry {m['i']} is [{m['a']}] and entry {m['j']} is "
               f"[{m['b']}]."),
    (r"view size is not compatible with input tensor's size and stride",
     lambda m: ".view(...) reads the tensor's memory in place, so the tensor must be laid out contiguously for the "
               "new shape, and after .transpose, .permute, .T or .expand it is not: use .reshape(...), which copies "
               "when it must, or call .contiguous() before .view."),
    (r"shape '\[(?P<shape>[-\d, ]*)\]' is invalid for input of size (?P<total>\d+)", _reshape),
    (r"unflatten: Provided sizes \[(?P<shape>[-\d, ]*)\] don't multiply up to the size of dim (?P<axis>\d+) "
     r"\((?P<size>\d+)\)",
     lambda m: f"unflatten splits axis {m['axis']}, of size {m['size']}, into [{m['shape']}], whose sizes must "
               f"multiply to {m['size']}."),
    # devices
    (r"Expected all tensors to be on the same device, but (?:found at least two devices, (?P<a>[\w:]+) and "
     r"(?P<b>[\w:]+)|got \w+ is on (?P<c>[\w:]+), different from other tensors on (?P<d>[\w:]+))",
     lambda m: f"Tensors on two devices ({m['a'] or m['c']} and {m['b'] or m['d']}) met in one operation: "
               + _NEW_TENSOR_ADVICE + "."),
    (r"Tensor on device (?P<a>[\w:]+) is not on the expected device (?P<b>[\w:]+)",
     lambda m: f"A tensor on {m['a']} met one on {m['b']} in one operation: " + _NEW_TENSOR_ADVICE + "."),
    (r"indices should be either on (?P<a>\w+) or on the same device as the indexed tensor \((?P<b>[\w:]+)\)",
     lambda m: f"An index tensor is on another device than the tensor it indexes ({m['b']}): "
               + _NEW_TENSOR_ADVICE + "."),
    (r"Cannot copy out of meta tensor", lambda m: _META_COPY_ADVICE),
    (r"cannot be called on meta tensors|can't convert meta device type tensor", lambda m: _META_ADVICE),
    (r"Torch not compiled with CUDA enabled",
     lambda m: "Your code asks for the GPU (device='cuda', .cuda()), which this torch does not have: "
               + _NEW_TENSOR_ADVICE + ", never on a device named in your code."),
    # dtypes
    (r"expected scalar type (?P<a>\w+) but found (?P<b>\w+)", lambda m: _two_dtypes(m["a"], m["b"])),
    (r"expected m1 and m2 to have the same dtype, but got: (?P<a>[\w:]+) != (?P<b>[\w:]+)",
     lambda m: _two_dtypes(m["a"], m["b"])),
    (r"Index put requires the source and destination dtypes match, got (?P<a>\w+) for the destination and "
     r"(?P<b>\w+) for the source",
     lambda m: f"An assignment x[...] = y needs y in x's dtype, and x is {_dtype(m['a'])}, y {_dtype(m['b'])}: "
               "convert y with .to(x.dtype)."),
    (r"result type (?P<a>\w+) can't be cast to the desired output type (?P<b>\w+)",
     lambda m: f"An in-place operation would store a result of {_dtype(m['a'])} in a tensor of {_dtype(m['b'])}: "
               "write x = x + y (a new tensor), or convert x first."),
    (r"expected both vectors to have same dtype, but found (?P<a>\w+) and (?P<b>\w+)",
     lambda m: _two_dtypes(m["a"], m["b"])),
    (r"\"(?P<kernel>\w+)\" not implemented for '(?P<dtype>[\w:]+)'", _not_for_dtype),
    (r"tensors used as indices must be long, int, byte or bool tensors",
     lambda m: "A tensor used as an index (t[idx]) must be an integer (int64) or bool tensor, and this one is "
               "floating-point: build positions and buckets in an integer dtype (torch.arange(n) is int64; / and "
               "math.log make floats, so end with // or .long())."),
    (r"(?P<function>\w+)\(\): Expected dtype int(?:32/int64| or int64|64) for index",
     lambda m: f"The index given to {m['function']} must be an integer tensor (int64): build it in an integer dtype "
               "(torch.arange gives int64), or convert it with .long()."),
    (r"masked_fill_? only supports boolean masks, but got mask with dtype (?P<dtype>\w+)",
     lambda m: f"The mask given to masked_fill must be bool (a comparison such as j > i gives one), and this one is "
               f"{_dtype(m['dtype'])}."),
    (r"Integers to negative integer powers are not allowed",
     lambda m: "An integer tensor was raised to a negative power (n ** -1): make it a float first (n.float() ** -1, "
               "or 1.0 / n)."),
    # indices
    (r"index (?P<index>-?\d+) is out of bounds for dimension (?P<axis>\d+) with size (?P<size>\d+)",
     _index_out_of_bounds),
    (r"index out of range in self",
     lambda m: "An index given to an embedding, index_select or table lookup is past the table's first axis: check "
               "the largest index your code computes (a distance, a bucket, a position) against the number of rows "
               "of the table."),
    (r"Dimension out of range \(expected to be in range of \[(?P<low>-?\d+), (?P<high>-?\d+)\], but got "
     r"(?P<asked>-?\d+)\)", _axis_out_of_range),
    (r"too many indices for tensor of dimension (?P<axes>\d+)",
     lambda m: f"More indices than the tensor has axes ({m['axes']}): it has fewer axes than the line assumes; "
               "check its shape there."),
    (r"only integer tensors of a single element can be converted to an index",
     lambda m: "A tensor stood where Python needs one integer (a range(), a slice bound, a size): pass an int, such "
               "as x.shape[-1], or index with the tensor itself."),
    # Python's view of a tensor
    (r"Boolean value of Tensor with more than one value is ambiguous",
     lambda m: "An if, while, and, or, not or assert tested a tensor of several entries, where Python needs one True "
               "or False: use torch.where (or masked_fill) to choose entry by entry, or .all() / .any()."),
    (r"a Tensor with (?P<count>\d+) elements cannot be converted to Scalar",
     lambda m: f"A tensor of {m['count']} entries was turned into one number (.item(), float(t), int(t)): only a "
               "tensor of one entry can be."),
    (r"(?P<function>\w+)\(\): argument '(?P<argument>\w+)' (?:\(position \d+\) )?must be (?P<wanted>.+?), not "
     r"(?P<got>\w+)", _argument_type),
    (r"unsupported operand type\(s\) for (?P<operator>\S+): '(?P<left>\w+)' and '(?P<right>\w+)'", _operand_types),
)


def torch_error_meaning(message):
    """What a torch error's message means, in sentences that repeat the sizes it quotes; None for a message not
    known here. Never raises: a message is only read."""
    for pattern, meaning in TORCH_ERRORS:
        found = re.search(pattern, str(message))
        if found:
            try:
                return meaning(found)
            except Exception:  # noqa: BLE001  (a message of an unforeseen form: no meaning rather than a crash)
                return None
    return None
