"""Hidden cases for ``t5_bias``.

While ``t5_bias`` runs, the student's ``t5_relative_position_bucket`` is
swapped for the grader's stand-in, which returns valid but scrambled buckets
that depend on every argument. A ``t5_bias`` that calls the helper is right
when it looks up the stand-in's buckets for the (j - i) grid with the settings
it was given; one that computes buckets itself must give the reference.

The contract's cases (``CONTRACT``) vary the table's dtype (float32, float64,
float16, bfloat16: a lookup, so exact in each), the length order (Lq < Lk, = and
>, now and then with a length of 1), one head or several, and whether the settings
are left out or passed by keyword (keyword-only in the signature). They count in
t5_bias_layout, with T5's default settings: a setting that does not reach the
buckets is t5_bias_values' to charge (its hand-chosen settings show it, and the
stand-in's buckets change with each of them), and every known mistake of the
layout is named there first, so the contract's cases, which show only that mistake,
are not charged for it again.

One case sends a meta table (``_meta_case``), which needs no GPU: the bias must be made on the table's device, of
its dtype; a grid of distances built on the CPU meets the meta table and fails. The table goes by keyword there, as
a meta tensor has no values that a tool reading positional arguments could compare.
"""

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_check, lengths, passed, size_one,
                                   tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import (FLOAT_DTYPES, LENGTHS, Contract, Factor, contract_cases, dtype_of,
                                       lengths_of)
from autograder.units.positional_encodings.cases.relative_positions import distances
from autograder.units.positional_encodings.job import scrambled_buckets
from solutions import positional_encodings as ref

NAME = "t5_bias"

HINTS = {
    ("lengths", ("Lq < Lk", "Lq > Lk")): "a length taken from the other argument is the usual reason: the query "
                                         "axis has length_q entries, the key axis length_k",
    ("settings", "settings passed"): "with the default settings it works: look at how bidirectional, num_buckets "
                                     "and max_distance reach t5_relative_position_bucket",
    ("heads", "one head"): "look at how the head axis is made",
    ("size 1", "a size of 1"): "the cases with an axis of length 1 fail: look for a squeeze(), or for an "
                               "axis that is dropped or mixed up when its length is 1",
    ("dtype", "dtype float64"): "the bias takes the dtype of bias_table: look at where yours takes another",
    ("dtype", "dtype float16"): "a float16 table goes wrong: the bias takes the dtype of bias_table; look at where "
                                "yours takes another (a buffer made in the default float32, say)",
    ("dtype", "dtype bfloat16"): "a bfloat16 table goes wrong: the bias takes the dtype of bias_table; look at "
                                 "where yours takes another (a buffer made in the default float32, say)",
    ("dtype", ("dtype bfloat16", "dtype float16", "dtype float64")): "only a float32 table works: a table of dtype "
                                                                    "float64, float16 or bfloat16 gives a bias of "
                                                                    "another dtype; the bias takes the dtype of "
                                                                    "bias_table (no .float(), no buffer made in the "
                                                                    "default dtype)",
    ("passing", "settings by keyword"): "a call that names bidirectional=, num_buckets= and max_distance= fails: keep "
                                        "the parameter names of the signature you were given",
    ("passing", "settings left out"): "a call that leaves the settings out fails: keep their defaults "
                                      "(bidirectional=True, num_buckets=32, max_distance=128)",
}


def _from_buckets(bias_table, buckets):
    return bias_table[buckets].permute(2, 0, 1).unsqueeze(0)  # (1, H, Lq, Lk)


def _case(test, generator, length_q, length_k, heads, bidirectional=True, num_buckets=32, max_distance=128,
          dtype=torch.float32, pass_all=True, scored=True, passing=None, inputs=None):
    bias_table = inputs if inputs is not None else torch.randn(num_buckets, heads, generator=generator,
                                                               dtype=torch.float64).to(dtype)
    settings = {"bidirectional": bidirectional, "num_buckets": num_buckets, "max_distance": max_distance}
    kwargs = settings if pass_all else {}
    args = [length_q, length_k, bias_table]
    label = call_label(NAME, args, kwargs)
    expected = ref.t5_bias(length_q, length_k, bias_table, **settings)
    grid = distances(length_q, length_k)
    buckets = ref.t5_relative_position_bucket(grid, **settings)
    key_ = (7 + 2 * heads, 3, 1 + length_q % 4)
    stand_in = scrambled_buckets(grid, **settings, key=key_)
    mistakes = []
    for table in (buckets, stand_in):
        per_position = bias_table[table]  # (Lq, Lk, H)
        mistakes += [
            Mistake("the bias is laid out (Lq, Lk, H), as bias_table[buckets] gives it; move the heads first: "
                    "permute(2, 0, 1), then unsqueeze(0) for (1, H, Lq, Lk).", lambda p=per_position: p.unsqueeze(0)),
            Mistake("the (Lq, Lk, H) lookup was reshaped, not permuted, to (1, H, Lq, Lk): reshape keeps the "
                    "memory order and mixes heads with positions; use permute(2, 0, 1).",
                    lambda p=per_position: p.reshape(1, heads, length_q, length_k)),
            Mistake("the leading batch axis of size 1 is missing: return (1, H, Lq, Lk) so it broadcasts over B.",
                    lambda p=per_position: p.permute(2, 0, 1)),
        ]
    mistakes += [
        Mistake("the relative position is i - j (query minus key); T5 uses key minus query, j - i.",
                lambda: _from_buckets(bias_table, ref.t5_relative_position_bucket(-grid, **settings))),
        Mistake("the relative position is i - j (query minus key); T5 uses key minus query, j - i.",
                lambda: _from_buckets(bias_table, scrambled_buckets(-grid, **settings, key=key_))),
        Mistake("the settings are not passed on to t5_relative_position_bucket: call it with bidirectional, "
                "num_buckets and max_distance, not its defaults.",
                lambda: _from_buckets(bias_table, scrambled_buckets(grid, key=key_) % num_buckets)),
    ]
    substitute = {"name": "t5_relative_position_bucket", "stand_in": "scrambled_buckets", "key": list(key_)}
    check = tensor_check(label, expected, atol=0, rtol=0, mistakes=mistakes,
                         also_accept=_from_buckets(bias_table, stand_in), axes=("batch", "head", "query", "key"),
                         inputs=("length_q", "length_k", "bias_table"))
    default = bidirectional and num_buckets == 32 and max_distance == 128
    features = {"lengths": lengths(length_q, length_k), "size 1": size_one(length_q, length_k, heads),
                "settings": "the default settings" if default else "settings passed",
                "heads": "one head" if heads == 1 else "several heads", "dtype": f"dtype {str(dtype)[6:]}",
                "passing": passing or ("settings by keyword" if pass_all else "settings left out")}
    return Case(test, label, call_probe(NAME, args, kwargs, substitute=substitute),
                check, features=features, scored=scored,
                sizes={"length_q": length_q, "length_k": length_k, "H": heads, "num_buckets": num_buckets})


def _meta_case(test, length_q, length_k, heads):
    """The table on the meta device, by keyword, the settings left out: the bias must be made there, of shape
    (1, H, Lq, Lk) and the table's dtype. The stand-in takes the helper's place, as in every case."""
    bias_table = torch.empty(32, heads, device="meta")
    kwargs = {"bias_table": bias_table}
    label = call_label(NAME, [length_q, length_k], kwargs) + " on the meta device"
    expected = computed_on_the_cpu(ref.t5_bias, length_q, length_k, bias_table=bias_table)
    substitute = {"name": "t5_relative_position_bucket", "stand_in": "scrambled_buckets",
                  "key": [7 + 2 * heads, 3, 1 + length_q % 4]}
    return Case(test, label, call_probe(NAME, [length_q, length_k], kwargs, substitute=substitute),
                device_check(label, "meta", expected.shape, expected.dtype,
                             inputs=("length_q", "length_k", "bias_table")),
                sizes={"length_q": length_q, "length_k": length_k, "H": heads, "num_buckets": 32})


# The contract: what the docstring lets vary, each level sent by some case of t5_bias_layout, every pair of levels
# together in one (autograder/core/contracts.py). The settings are T5's defaults, left out or given by keyword (see
# the module's docstring).
def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.t5_bias, args, kwargs)
    table = given["bias_table"]
    settings = {name: given.get(name, default) for name, default in (
        ("bidirectional", True), ("num_buckets", 32), ("max_distance", 128))}
    return _case(NAME, None, given["length_q"], given["length_k"], table.shape[-1], **settings, dtype=table.dtype,
                 inputs=table).check


def _from_contract(levels, rng, generator):
    order = levels["lengths"]
    one = rng.random() < 1 / 3  # a length of 1, drawn (not a factor: with Lq == Lk it would make both 1)
    small, large = (1 if one else rng.randint(2, 4)), rng.randint(5, 9)
    length_q, length_k = lengths_of(order, small, large, large)
    heads = 1 if levels["heads"] == "one head" else rng.randint(2, 4)
    return _case("t5_bias_layout", generator, length_q, length_k, heads,
                 dtype=dtype_of(levels["dtype"]), pass_all=levels["passing"] == "settings by keyword",
                 passing=levels["passing"])


CONTRACT = Contract(NAME, (
    FLOAT_DTYPES,
    LENGTHS,
    Factor("heads", ("one head", "several heads")),
    Factor("passing", ("settings left out", "settings by keyword")),
), _from_contract)


def build(rng, generator):
    return [
        _case("t5_bias_values", generator, 6, 6, 4, pass_all=False),
        _case("t5_bias_values", generator, 40, 40, 2, bidirectional=False),
        # More buckets than the default: a t5_bias that drops the settings indexes the table without an error,
        # so its output is the named mistake's (charged here, once; the layout cases use the defaults).
        _case("t5_bias_values", generator, 150, 150, 3, num_buckets=64, max_distance=64),
        _case("t5_bias_values", generator, rng.randint(20, 90), rng.randint(20, 90), rng.randint(2, 6)),
        _case("t5_bias_layout", generator, 5, 9, 3),
        # The layout cases use the default settings: a setting that does not reach the buckets is charged in
        # t5_bias_values, once, not again here (one mistake, one charge).
        _case("t5_bias_layout", generator, 9, 5, 1),
        _case("t5_bias_layout", generator, 1, 1, 2),
        _case("t5_bias_layout", generator, 7, 7, 2, dtype=torch.float64),
        # Probes for the diagnosis, worth nothing.
        _case("t5_bias_values", generator, 4, 4, 2, scored=False),
        _case("t5_bias_values", generator, 3, 6, 3, scored=False),
        _case("t5_bias_values", generator, 5, 5, 2, bidirectional=False, num_buckets=40, max_distance=80, scored=False),
    ] + contract_cases(CONTRACT, rng, generator) + [  # drawn after the hand-written cases: theirs stay as they were
        _meta_case("t5_bias_layout", 5, 9, 3)]

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("t5_bias_layout", lambda rng, g: ((rng.randint(4, 9), rng.randint(4, 9), draw(g, 32, 3)), {}),
                      trained=("bias_table",), layouts=("bias_table",),
                      vary={"length_q": (11,), "length_k": (10,), "bidirectional": (False,)},
                      stand_ins=(("t5_relative_position_bucket", "scrambled_buckets", (7, 3, 1)),))
