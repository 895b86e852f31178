"""What a job may send back, and the checks that every message passes before the grader uses it.

A job runs the student's code, and that code can write anything to the same
pipes as the worker: a forged first frame, a reply that is not a dict, a
tensor header that claims more bytes than follow, a string full of terminal
escapes. So nothing from a job is used as it arrives. Each message is decoded
here, by code that builds only plain data and plain tensors (nothing is
unpickled, nothing is imported or called), and checked against the schema of
its kind; what fails is a ``ProtocolError`` for that submission, never an
exception anywhere else in the grader. Every string in it is made inert
(``autograder.intake.inert``) on the way in.

The wire format of a data frame (the worker's ``pack``): four bytes, the length
of a JSON header; the header, a tree of dicts, lists, strings, numbers, booleans
and nulls in which a tensor is ``{"$tensor": [dtype, shape, offset, nbytes]}``;
then the tensors' bytes, one after another, in native byte order.
"""

import json
import math
import struct

from autograder.intake.inert import inert
from autograder.intake.load import json_depth

MAX_HEADER_BYTES = 1024**2  # what the worker sends is a few kilobytes; the tensors' bytes come after it
MAX_DEPTH = 12
MAX_DIMENSIONS = 8
MAX_TEXT = 4000  # the worker cuts messages to 2000 characters; a longer one did not come from it
DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128")


class ProtocolError(ValueError):
    """A message from a job that the grader's protocol does not allow; the text says what, for the log."""


# --- decoding ---------------------------------------------------------------------------------

def unpack(payload, *, max_bytes=None):
    """The value packed in ``payload`` (bytes), or ProtocolError. Tensors come back as plain CPU tensors."""
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise ProtocolError("a frame that is not bytes")
    payload = memoryview(payload)
    if max_bytes is not None and len(payload) > max_bytes:
        raise ProtocolError(f"a frame of {len(payload)} bytes, more than {max_bytes}")
    if len(payload) < 4:
        raise ProtocolError("a frame too short to hold its header's length")
    (size,) = struct.unpack("<I", payload[:4])
    if size > MAX_HEADER_BYTES or 4 + size > len(payload):
        raise ProtocolError(f"a header of {size} bytes in a frame of {len(payload)}")
    header = _json(bytes(payload[4:4 + size]))
    blobs = payload[4 + size:]
    return _rebuild(header, blobs, 0)


def _json(data):
    if json_depth(data) > MAX_DEPTH + 4:
        raise ProtocolError(f"a header nested more than {MAX_DEPTH} levels deep")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_constant)
    except (ValueError, RecursionError, UnicodeDecodeError) as error:
        raise ProtocolError(f"a header that is not JSON ({type(error).__name__})") from None


def _constant(name):
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[name]


def _rebuild(node, blobs, depth):
    if depth > MAX_DEPTH:
        raise ProtocolError(f"data nested more than {MAX_DEPTH} levels deep")
    if isinstance(node, dict):
        if set(node) == {"$tensor"}:
            return _tensor(node["$tensor"], blobs)
        return {key: _rebuild(value, blobs, depth + 1) for key, value in node.items()}
    if isinstance(node, list):
        return [_rebuild(value, blobs, depth + 1) for value in node]
    if isinstance(node, str):
        return inert(node)
    return node  # int, float, bool, None: what json.loads makes


def _tensor(spec, blobs):
    if not (isinstance(spec, list) and len(spec) == 4):
        raise ProtocolError("a tensor described by something other than [dtype, shape, offset, nbytes]")
    dtype_name, shape, offset, nbytes = spec
    if type(dtype_name) is not str or dtype_name not in DTYPES:
        raise ProtocolError(f"a tensor of dtype {inert(str(dtype_name))[:40]!r}, which the protocol does not carry")
    if not (isinstance(shape, list) and len(shape) <= MAX_DIMENSIONS
            and all(type(size) is int and 0 <= size < 2**31 for size in shape)):
        raise ProtocolError("a tensor whose shape is not a short list of sizes")
    if not (type(offset) is int and type(nbytes) is int and 0 <= offset and 0 <= nbytes
            and offset + nbytes <= len(blobs)):
        raise ProtocolError("a tensor whose bytes lie outside the frame")
    import torch  # here, not at the top: the fork server starts before the grader has imported torch

    dtype = getattr(torch, dtype_name)
    numel = math.prod(shape)
    if numel * torch.empty((), dtype=dtype).element_size() != nbytes:
        raise ProtocolError(f"a tensor of shape {tuple(shape)} and dtype {dtype_name} in {nbytes} bytes")
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    raw = torch.frombuffer(bytearray(blobs[offset:offset + nbytes]), dtype=torch.uint8)
    return raw.view(dtype).reshape(shape)


# --- schemas ----------------------------------------------------------------------------------
# A schema is a function (value, where) -> value that raises ProtocolError when the value does not fit.

def text(limit=MAX_TEXT):
    def check(value, where):
        if type(value) is not str:
            raise ProtocolError(f"{where}: expected text, got {type(value).__name__}")
        if len(value) > limit:
            raise ProtocolError(f"{where}: text of {len(value)} characters, more than {limit}")
        return value
    return check


def integer(value, where):
    if type(value) is not int:
        raise ProtocolError(f"{where}: expected an integer, got {type(value).__name__}")
    return value


def number(value, where):
    if type(value) not in (int, float):
        raise ProtocolError(f"{where}: expected a number, got {type(value).__name__}")
    return float(value)


def boolean(value, where):
    if type(value) is not bool:
        raise ProtocolError(f"{where}: expected true or false, got {type(value).__name__}")
    return value


def either(*schemas):
    """A value that fits one of ``schemas`` (plain ones: an integer or a text, say)."""

    def check(value, where):
        for schema in schemas:
            try:
                return schema(value, where)
            except ProtocolError:
                pass
        raise ProtocolError(f"{where}: a {type(value).__name__}, which fits none of its forms")
    return check


def shape(value, where):
    """A tensor's shape: at most MAX_DIMENSIONS sizes, each an integer in [0, 2**31)."""
    if not (type(value) is list and len(value) <= MAX_DIMENSIONS
            and all(type(size) is int and 0 <= size < 2**31 for size in value)):
        raise ProtocolError(f"{where}: expected a shape, a list of at most {MAX_DIMENSIONS} sizes")
    return value


def dtype_name(value, where):
    if type(value) is not str or value not in DTYPES:
        raise ProtocolError(f"{where}: a dtype the protocol does not carry")
    return value


def null_or(schema):
    def check(value, where):
        return None if value is None else schema(value, where)
    return check


def tensor(value, where):
    import torch

    if type(value) is not torch.Tensor:
        raise ProtocolError(f"{where}: expected a tensor, got {type(value).__name__}")
    return value


def list_of(schema, limit):
    def check(value, where):
        if type(value) is not list:
            raise ProtocolError(f"{where}: expected a list, got {type(value).__name__}")
        if len(value) > limit:
            raise ProtocolError(f"{where}: a list of {len(value)} items, more than {limit}")
        return [schema(item, f"{where}[{index}]") for index, item in enumerate(value)]
    return check


def record(required, optional=None):
    """A dict with exactly the ``required`` keys, and any of the ``optional`` ones: no others."""
    optional = optional or {}

    def check(value, where):
        if type(value) is not dict:
            raise ProtocolError(f"{where}: expected a record, got {type(value).__name__}")
        missing = [key for key in required if key not in value]
        unknown = [key for key in value if key not in required and key not in optional]
        if missing or unknown:
            raise ProtocolError(f"{where}: " + "; ".join(
                ([f"missing {', '.join(missing)}"] if missing else [])
                + ([f"unexpected {', '.join(repr(inert(str(key))[:40]) for key in unknown[:3])}"] if unknown else [])))
        return {key: (required.get(key) or optional[key])(item, f"{where}.{key}") for key, item in value.items()}
    return check


def one_of(*choices):
    """One of several records, told apart by their keys (the first whose required keys are all there)."""

    def check(value, where):
        if type(value) is not dict:
            raise ProtocolError(f"{where}: expected a record, got {type(value).__name__}")
        errors = []
        for choice in choices:
            try:
                return choice(value, where)
            except ProtocolError as error:
                errors.append(str(error))
        raise ProtocolError(errors[0] if len(errors) == 1 else f"{where}: fits none of its forms ({errors[0]})")
    return check


def mapping(keys, schema_of):
    """A dict whose keys are among ``keys`` (each checked with ``schema_of(key)``)."""

    def check(value, where):
        if type(value) is not dict:
            raise ProtocolError(f"{where}: expected a record, got {type(value).__name__}")
        unknown = [key for key in value if key not in keys]
        if unknown:
            raise ProtocolError(f"{where}: unexpected {inert(str(unknown[0]))[:60]!r}")
        return {key: schema_of(key)(item, f"{where}[{key}]") for key, item in value.items()}
    return check


# The messages themselves.

ERROR = record({"type": text(200), "mro": list_of(text(200), 64), "message": text(), "where": text()})
LOAD_ERROR = record({"type": text(200), "mro": list_of(text(200), 64), "message": text(), "where": text(),
                     "chunk": text()})
# A tensor without data (on the meta device) comes as its dtype, shape and device, with a type name and text that
# stand for it where a check wants values (worker._described).
VALUE = one_of(record({"tensor": tensor, "device": text(64)}), record({"type_name": text(400), "repr": text(400)}),
               record({"type_name": text(400), "repr": text(400), "device": text(64), "shape": shape,
                       "dtype": dtype_name}))
# "changed": where the tensors are that the call changed in place (worker._changed): a positional argument by its
# position, a keyword argument by its name, a tensor inside an argument by its path ("args[1][0]", "slopes[2]").
# The behaviour contracts' parts (worker._call, autograder/core/behaviour.py): "state", the global settings the call
# changed; "grads", the gradient reaching each trained input; "aliased", the inputs a change to the result reached;
# "again", the second call's value.
PLACES = list_of(either(integer, text(200)), 64)
STATE = list_of(text(40), 8)
VALUE_OR_ERROR = one_of(record({"value": VALUE}), record({"error": ERROR}))
OUTCOME = one_of(record({"missing": text(200)}), record({"error": ERROR}),
                 record({"value": VALUE}, {"changed": PLACES, "state": STATE, "aliased": PLACES, "again": VALUE_OR_ERROR,
                                           "grads": one_of(record({"value": list_of(VALUE, 16)}),
                                                           record({"error": ERROR}))}))
MODULE_OUTCOME = one_of(
    record({"missing": text(200)}),
    record({"init": OUTCOME}, {"weight": OUTCOME, "weight_is_parameter": boolean, "weight_registered": boolean,
                               "forward": OUTCOME, "grad": OUTCOME, "x_grad": OUTCOME, "state": STATE,
                               "again": VALUE_OR_ERROR}))
# A sequence of calls made one after another (the contract that calls are independent): each one's outcome.
SEQUENCE_OUTCOME = record({"calls": list_of(either(OUTCOME, MODULE_OUTCOME), 64)})
LOADED = record({"errors": list_of(LOAD_ERROR, 10000), "defined": list_of(text(400), 500)})

# The timing tier's replies, by the command they answer.
TIMING_REPLIES = {
    "setup": one_of(record({"ok": boolean}), record({"error": ERROR})),
    "call": one_of(record({"done": integer, "cuda_baseline": null_or(integer)}), record({"error": ERROR})),
    "count": one_of(record({"steps": integer, "operations": integer, "intact": boolean}), record({"error": ERROR})),
    "sample": one_of(record({"values": list_of(number, 1 << 16), "shape": list_of(integer, MAX_DIMENSIONS),
                             "dtype": text(40), "device": text(64), "cuda_peak": null_or(integer)}),
                     record({"value": VALUE}), record({"error": ERROR})),
}

# What the job's keeper says on its lifeline (it runs no student code, but is checked all the same).
KEEPER = one_of(record({"pid": integer}), record({"exit": integer}), record({"failed": text()}))


def loaded(payload):
    """The job's first frame: which chunks failed to load, and the names defined."""
    return LOADED(unpack(payload), "the load report")


def outcome_form(op):
    """The form of one outcome of a probe of ``op``."""
    return {"module": MODULE_OUTCOME, "sequence": SEQUENCE_OUTCOME}.get(op, OUTCOME)


def task_results(payload, probes):
    """A task's results: {probe id: outcome} for some of ``probes`` ({id: op}), each in its op's form."""
    return mapping(probes, lambda key: outcome_form(probes[key]))(unpack(payload), "the results")


def json_line(line, schema, what):
    """One JSON line from a job, checked with ``schema``."""
    try:
        value = json.loads(line.decode("utf-8") if isinstance(line, (bytes, bytearray)) else line,
                           parse_constant=_constant)
    except (ValueError, RecursionError, UnicodeDecodeError) as error:
        raise ProtocolError(f"{what} that is not JSON ({type(error).__name__})") from None
    return schema(_rebuild(value, b"", 0), what)
