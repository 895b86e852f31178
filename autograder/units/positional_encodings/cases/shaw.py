"""Hidden cases for ``shaw_scores``.

While ``shaw_scores`` runs, the student's ``clipped_relative_positions`` is
swapped for the grader's stand-in, which returns valid but scrambled indices.
A ``shaw_scores`` that calls the helper is then right when it gives the scores
for the stand-in's index; one that builds its own index must give the
reference. Either way a mistake in the helper is charged once, to its own task.
"""

import math

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_check, lengths, passed, score_factors,
                                   size_one, tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import (FLOAT_DTYPES, LENGTHS, Contract, Factor, contract_cases, dtype_of,
                                       lengths_of)
from autograder.units.positional_encodings.cases.relative_positions import distances
from autograder.units.positional_encodings.job import scrambled_relative_positions
from solutions import positional_encodings as ref

NAME = "shaw_scores"

HINTS = {
    ("lengths", ("Lq < Lk", "Lq > Lk")): "a length taken from the other argument is the usual reason: the query "
                                         "axis has length_q entries, the key axis length_k",
    ("heads", "several heads"): "with one head it works: look at how the head axis is handled (it must be kept "
                                "apart from the batch and the positions)",
    ("batch", "batch > 1"): "with one sequence it works: look at how the batch axis is handled",
    ("size 1", "a size of 1"): "the cases with an axis of length 1 fail: look for a squeeze(), or for an "
                               "axis that is dropped or mixed up when its length is 1",
    ("dtype", "dtype float64"): "look at where your scores take their dtype: keep q's dtype throughout",
    ("scale", "an explicit scale"): "look at how the scale argument is used",
    ("scale", "scale 0.0"): "0.0 is a scale like any other: test `scale is None`, not `if not scale` or "
                            "`scale or ...`, which take 0.0 for \"not given\"",
    ("dtype", "dtype float16"): "half precision goes wrong: keep q's dtype, and build nothing in float32 that the "
                                "result then mixes with",
    ("dtype", "dtype bfloat16"): "bfloat16 goes wrong: keep q's dtype, and build nothing in float32 that the "
                                 "result then mixes with",
    ("passing", "max_relative_position by keyword"): "a call that names max_relative_position= fails: keep the "
                                                     "parameter names of the signature you were given",
    ("clipping", "k = 0"): "with k = 0 every distance is clipped to 0 and rel_k has one row: look for a range or "
                           "a slice that comes out empty when k is 0",
    ("clipping", "distances clipped"): "the cases where some |j - i| exceeds k fail: look at how the relative "
                                       "vectors are picked for far keys",
}
# Said only where the right region reaches past the diagonal ("up to 0" is a table wrong everywhere off it).
ADVICE = ((r"\|j - i\| up to [1-9]", "Only the far keys are wrong: look at how their relative vectors are picked."),)


def _scores(q, k, rel_k, index, content_scale, relative_scale):
    """Shaw scores from a given (Lq, Lk) index into rel_k, each term with its own scale."""
    content = q @ k.transpose(-2, -1)  # (B, H, Lq, Lk)
    relative = torch.einsum("bhqd,qkd->bhqk", q, rel_k[index])  # (B, H, Lq, Lk); small sizes only
    return content_scale * content + relative_scale * relative


# Half precision: the reference's own rounding differs from any other correct order of operations by up to a
# dot product's rounding error, dh * eps * sum |q_i k_i| (and the same for rel_k), so each entry's tolerance is
# that bound, from the inputs; every known mistake changes entries by far more (a factor of sqrt(dh), a term).
HALF = (torch.float16, torch.bfloat16)


def _half_tolerance(q, key, rel_k, index, used, dtype):
    eps = torch.finfo(dtype).eps
    wide = [t.to(torch.float64).abs() for t in (q, key, rel_k)]
    products = wide[0] @ wide[1].transpose(-2, -1) + torch.einsum("bhqd,qkd->bhqk", wide[0], wide[2][index])
    return 2 * q.shape[-1] * eps * abs(used) * products + 1e-3


def _case(test, generator, batch, heads, length_q, length_k, head_dim, k, scale=None, dtype=torch.float32,
          scored=True, k_by_keyword=False, rel_k_dtype=None, inputs=None):
    """A call with q and k of ``dtype``; rel_k of ``rel_k_dtype`` where given (the scores keep q's dtype: the
    docstring's "same dtype as q"), otherwise of ``dtype`` too. ``inputs``: (q, k, rel_k) given (check_at's), not
    drawn."""
    def randn(*shape, dtype=dtype):
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)

    if inputs:
        q, key, sent_rel_k = inputs
    else:
        q, key = randn(batch, heads, length_q, head_dim), randn(batch, heads, length_k, head_dim)
        sent_rel_k = randn(2 * k + 1, head_dim, dtype=rel_k_dtype or dtype)
    rel_k = sent_rel_k.to(dtype)  # what the scores are made of, in q's dtype
    kwargs = {} if scale is None else {"scale": scale}
    args = [q, key, sent_rel_k]
    if k_by_keyword:
        kwargs = {"max_relative_position": k, **kwargs}
    else:
        args.append(k)
    label = call_label(NAME, args, kwargs)
    if dtype in HALF:  # the exact scores of the half inputs, rounded once
        expected = ref.shaw_scores(q.double(), key.double(), rel_k.double(), k, scale=scale).to(dtype)
    else:
        expected = ref.shaw_scores(q, key, sent_rel_k, k, scale=scale)
    used = 1 / math.sqrt(head_dim) if scale is None else scale
    default = 1 / math.sqrt(head_dim)
    index = ref.clipped_relative_positions(length_q, length_k, k)
    key_ = (3 + 2 * length_k % 5, 5, 1 + k)
    stand_in = scrambled_relative_positions(length_q, length_k, k, key=key_)
    transposed = (-distances(length_q, length_k)).clamp(-k, k) + k
    mistakes = []
    for idx in (index, stand_in):
        mistakes += [
            Mistake("the scale multiplies only q . k; it multiplies the relative term q . rel_k too: "
                    "scale * (q . k + q . rel_k).", lambda idx=idx: _scores(q, key, rel_k, idx, used, 1.0)),
            Mistake("the scale multiplies only the relative term; it multiplies q . k too.",
                    lambda idx=idx: _scores(q, key, rel_k, idx, 1.0, used)),
            Mistake("no scale at all: multiply both terms by scale (default 1/sqrt(dh)).",
                    lambda idx=idx: _scores(q, key, rel_k, idx, 1.0, 1.0)),
        ]
        if scale is not None:
            mistakes.insert(0, Mistake("the scale argument is ignored: the default 1/sqrt(dh) is used instead.",
                                       lambda idx=idx: _scores(q, key, rel_k, idx, default, default)))
    mistakes.append(Mistake("the relative vectors are picked by i - j; use the index of clipped_relative_positions, "
                            "built from j - i.", lambda: _scores(q, key, rel_k, transposed, used, used)))
    tolerance = 1e-10 if dtype == torch.float64 else 5e-5
    rtol = tolerance
    if dtype in HALF:  # one bound per entry for either index the call may use (its own, or the stand-in's)
        tolerance = torch.maximum(_half_tolerance(q, key, rel_k, index, used, dtype),
                                  _half_tolerance(q, key, rel_k, stand_in, used, dtype))
        rtol = torch.finfo(dtype).eps
        wide = q.double(), key.double(), rel_k.double()
        mistakes = [Mistake(mistake.explain, lambda mistake=mistake: mistake.output().double()) for mistake in mistakes]
    key_scores = q @ key.transpose(-2, -1)  # (B, H, Lq, Lk), unscaled
    substitute = {"name": "clipped_relative_positions", "stand_in": "scrambled_relative_positions", "key": list(key_)}
    also = (_scores(*wide, stand_in, used, used) if dtype in HALF else _scores(q, key, rel_k, stand_in, used, used))
    check = tensor_check(label, expected, atol=tolerance, rtol=rtol, mistakes=mistakes,
                         also_accept=also.to(dtype),
                         axes=("batch", "head", "query", "key"),
                         factors=score_factors(head_dim, scale if scale else None),
                         coordinates={"|j - i|": distances(length_q, length_k).abs()}, advice=ADVICE,
                         inputs=("q", "k", "rel_k"),
                         terms={"q . k": (key_scores, used), "q . rel_k": (_scores(q, key, rel_k, index, 0, 1), used)},
                         also_terms={"q . k": (key_scores, used),
                                     "q . rel_k": (_scores(q, key, rel_k, stand_in, 0, 1), used)})
    features = {"lengths": lengths(length_q, length_k), "heads": "one head" if heads == 1 else "several heads",
                "batch": "batch 1" if batch == 1 else "batch > 1",
                "size 1": size_one(batch, heads, length_q, length_k), "dtype": f"dtype {str(dtype)[6:]}",
                "scale": "the default scale" if scale is None else "scale 0.0" if scale == 0 else "an explicit scale",
                "clipping": ("k = 0" if k == 0 else "distances clipped" if max(length_q, length_k) - 1 > k
                             else "no distance beyond k"),
                "passing": "max_relative_position by keyword" if k_by_keyword else "max_relative_position by position"}
    sizes = {"B": batch, "H": heads, "Lq": length_q, "Lk": length_k, "dh": head_dim, "k": k, "2k + 1": 2 * k + 1}
    return Case(test, label, call_probe(NAME, args, kwargs, substitute=substitute), check,
                features=features, sizes=sizes, scored=scored)


# The contract: what the docstring lets vary, each level sent by some case of shaw_edge_cases, every pair of levels
# together in one (autograder/core/contracts.py).
def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.shaw_scores, args, kwargs)
    q, key, rel_k = given["q"], given["k"], given["rel_k"]
    return _case(NAME, None, *q.shape[:-2], q.shape[-2], key.shape[-2], q.shape[-1], given["max_relative_position"],
                 scale=given.get("scale"), dtype=q.dtype, inputs=(q, key, rel_k)).check


def _from_contract(levels, rng, generator):
    order, clipping = levels["lengths"], levels["clipping"]
    k = 0 if clipping == "k = 0" else rng.randint(1, 3)
    if clipping == "no distance beyond k":  # every |j - i| <= k: both lengths at most k + 1
        small, large = rng.randint(1, k), k + 1
    else:  # some |j - i| > k
        small, large = rng.randint(2, 4), rng.randint(max(k + 2, 5), 9)
    length_q, length_k = lengths_of(order, small, large, large)
    dtype = dtype_of(levels["dtype"])
    scale = {"the default scale": None, "an explicit scale": rng.choice([0.25, 0.5, 2.0]), "scale 0.0": 0.0}[
        levels["scale"]]
    return _case("shaw_edge_cases", generator, 1 if levels["batch"] == "batch 1" else 2,
                 1 if levels["heads"] == "one head" else rng.randint(2, 3), length_q, length_k,
                 2 * rng.randint(2, 6), k, scale=scale, dtype=dtype,
                 k_by_keyword=levels["passing"] == "max_relative_position by keyword")


CONTRACT = Contract(NAME, (
    FLOAT_DTYPES,
    LENGTHS,
    Factor("heads", ("one head", "several heads")),
    Factor("batch", ("batch 1", "batch > 1")),
    Factor("scale", ("the default scale", "an explicit scale", "scale 0.0")),
    Factor("clipping", ("k = 0", "distances clipped", "no distance beyond k")),
    Factor("passing", ("max_relative_position by position", "max_relative_position by keyword")),
), _from_contract)


def _meta_case(test, batch, heads, length_q, length_k, head_dim, k):
    """q, k and rel_k on the meta device (no values, no GPU needed), by keyword, the helper the stand-in: the scores
    must be made there, (B, H, Lq, Lk) in q's dtype. The stand-in refuses to build its index anywhere but on the
    meta device (job.relative_positions_on_meta): the helper called without device=q.device fails, as an index on
    the CPU would be copied to a GPU's inputs at every call."""
    kwargs = {"q": torch.empty(batch, heads, length_q, head_dim, device="meta"),
              "k": torch.empty(batch, heads, length_k, head_dim, device="meta"),
              "rel_k": torch.empty(2 * k + 1, head_dim, device="meta"), "max_relative_position": k}
    label = call_label(NAME, [], kwargs) + " on the meta device"
    substitute = {"name": "clipped_relative_positions", "stand_in": "relative_positions_on_meta", "key": [3, 5, 1]}
    expected = computed_on_the_cpu(ref.shaw_scores, **kwargs)
    return Case(test, label, call_probe(NAME, [], kwargs, substitute=substitute),
                device_check(label, "meta", expected.shape, expected.dtype, inputs=("q", "k", "rel_k")),
                sizes={"B": batch, "H": heads, "Lq": length_q, "Lk": length_k, "dh": head_dim, "k": k})


def build(rng, generator):
    return contract_cases(CONTRACT, rng, generator) + [
        _case("shaw_values", generator, 2, 3, 7, 7, 8, 2),
        _case("shaw_values", generator, 1, 4, 5, 9, 16, 3),
        _case("shaw_values", generator, 3, 2, 12, 4, 4, 1),
        _case("shaw_values", generator, 2, 2, 33, 33, 8, 8),
        _case("shaw_values", generator, 2, 2, rng.randint(10, 40), rng.randint(10, 40), 8, rng.randint(1, 6)),
        _case("shaw_scale", generator, 2, 2, 6, 6, 8, 2, scale=0.5),
        _case("shaw_scale", generator, 1, 3, 5, 7, 4, 3, scale=1.0),
        _case("shaw_edge_cases", generator, 1, 1, 1, 1, 4, 2),
        _case("shaw_edge_cases", generator, 1, 1, 1, 6, 8, 3),
        _case("shaw_edge_cases", generator, 2, 1, 6, 1, 8, 2),
        _case("shaw_edge_cases", generator, 2, 3, 9, 5, 8, 2, dtype=torch.float64),
        # Probes for the diagnosis, worth nothing: one head and one sequence, square, no clipping, and apart.
        _case("shaw_values", generator, 1, 1, 4, 4, 4, 5, scored=False),
        _case("shaw_values", generator, 1, 1, 3, 5, 4, 6, scored=False),
        _case("shaw_values", generator, 2, 3, 4, 4, 4, 5, scored=False),
        # Drawn last, so that the cases above keep their inputs: the device, and rel_k in another dtype than q's.
        _meta_case("shaw_edge_cases", 2, 3, 5, 7, 8, 2),
        _case("shaw_edge_cases", generator, 2, 2, 6, 8, 8, 2, dtype=torch.float64, rel_k_dtype=torch.float32),
    ]

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour(
    "shaw_edge_cases", lambda rng, g: ((draw(g, 2, 3, 5, 8), draw(g, 2, 3, 7, 8), draw(g, 5, 8), 2), {}),
    trained=("q", "k", "rel_k"), layouts=("q", "k", "rel_k"), vary={"scale": (0.5,)},
    stand_ins=(("clipped_relative_positions", "scrambled_relative_positions", (3, 5, 1)),))
