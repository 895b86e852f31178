"""Compare an output with what was expected and say what is wrong, in words.

Checks go type, then dtype, then shape, then values: the first problem found
is the one reported, since a wrong shape makes every value check noise. On a
value mismatch the message names the first wrong index, expected against got,
how many entries differ and the largest error.

This module holds no answers. The grader uses it on the trusted side, and the
student's self-check tests use a copy of it (``checks.py``, made by
``python -m autograder build``), the static loop check (loop_check.py) included.
"""

import torch

from autograder.loop_check import assert_no_loops, loops_in  # noqa: F401  (part of this module's interface)


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
    # The grader passes stand-ins for objects that stayed in the student's process.
    return getattr(value, "type_name", None) or f"{type(value).__module__}.{type(value).__qualname__}".replace(
        "builtins.", ""
    )


def mismatch(got, expected, *, what="the output", atol=1e-5, rtol=1e-5, check_dtype=True):
    """Return None when ``got`` matches ``expected``, else a message saying how it does not.

    ``atol`` may be a tensor that broadcasts to the expected shape (a tolerance
    per entry); ``rtol`` is relative to the expected value. Integer and bool
    tensors must match exactly.
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
    if exact:
        wrong = got_cpu != expected_cpu
        error = (got_cpu.to(torch.float64) - expected_cpu.to(torch.float64)).abs()
    else:
        got64, expected64 = got_cpu.to(torch.float64), expected_cpu.to(torch.float64)
        if torch.isnan(got64).any() and not torch.isnan(expected64).any():
            first = int(torch.isnan(got64).flatten().nonzero()[0])
            count = int(torch.isnan(got64).sum())
            return (
                f"{what} contains NaN ({count} entries, the first at {_index(first, got.shape)}). "
                "Look for a division by zero, log of 0, or 0 * inf."
            )
        error = (got64 - expected64).abs()
        limit = torch.as_tensor(atol, dtype=torch.float64) + rtol * expected64.abs()
        wrong = ~(error <= limit)  # NaN or inf in the error counts as wrong
        error = torch.nan_to_num(error, nan=float("inf"))
    if not wrong.any():
        return None
    flat_wrong = wrong.flatten()
    first = int(flat_wrong.nonzero()[0])
    worst = int(error.flatten().argmax())
    expected_value = expected_cpu.flatten()[first].item()
    got_value = got_cpu.flatten()[first].item()
    return (
        f"{what} is wrong at {_index(first, got.shape)}: expected {_number(expected_value)}, "
        f"got {_number(got_value)} ({int(flat_wrong.sum())} of {flat_wrong.numel()} entries differ; "
        f"largest error {_number(error.flatten()[worst].item())} at {_index(worst, got.shape)})."
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
                 causes=()):
    """``mismatch`` as an assertion for pytest.

    It fails with the message (type, dtype, shape, or the first wrong value), then the likely cause when
    ``likely_cause`` can tell it from the output (``causes``: what known mistakes return here), then
    ``hint``, the convention the check holds the output to, which is no diagnosis and is said as such.
    """
    message = mismatch(got, expected, what=what, atol=atol, rtol=rtol, check_dtype=check_dtype)
    if message is None:
        return
    cause = likely_cause(got, expected, causes, atol=atol, rtol=rtol)
    raise AssertionError(message + (f"\nLikely cause: {cause.rstrip('.')}." if cause else "")
                         + (f"\nWhat this check expects: {hint}" if hint else ""))


def assert_raises(exception, function, *args, hint=None, **kwargs):
    """Fail unless ``function(*args, **kwargs)`` raises ``exception`` (a subclass counts).

    A NotImplementedError goes through untouched: the function is not written yet.
    """
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
