"""Every input a call is given, positional or keyword, top level or inside a list, tuple or dict, is checked for
in-place changes, and the feedback names it (issue 24, item 3).

The job (autograder/sandbox/worker.py) copies every tensor it can reach in a probe's args and kwargs before the
call and compares them after it; it says where each changed one is: a positional argument by its position (an
integer, as before), a keyword argument by its name ("positions_q"), a tensor inside a container by its path
("args[1][0]", "slopes['a'][2]"). The grader's side (core/cases.changed_inputs) turns that into a sentence.
"""

import re
import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.core import units
from autograder.core.cases import changed_inputs
from autograder.course.build import ROOT
from autograder.sandbox import protocol

sys.path.insert(0, str(ROOT / "autograder" / "sandbox"))
from conftest import correctness_grader, graded_with  # noqa: E402
import worker  # noqa: E402  (the job's side, as the sandbox runs it: a file of its own)

ROTARY = units.get("rotary_alibi")

# The right scores, but the caller's positions_q moved on in place (as a KV cache's bookkeeping might do).
POSITIONS_Q_ADVANCED = '''

_reference_rope_scores = rope_scores


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    scores = _reference_rope_scores(q, k, base=base, scale=scale, positions_q=positions_q, positions_k=positions_k,
                                    interleaved=interleaved)
    if positions_q is not None:
        positions_q += q.shape[-2]  # in place: the caller's positions are lost
    return scores
'''


def _call(function, args=(), kwargs=None):
    """What the job sends back for one call of ``function``, through the protocol's schema as the grader reads it."""
    outcome = worker._call({"f": function}, {"name": "f", "args": list(args), "kwargs": dict(kwargs or {})}, [])
    return protocol.task_results(worker.pack({"p": outcome}), {"p": "call"})["p"]


# --- the job's side ---------------------------------------------------------------------------------------------

def test_a_keyword_argument_changed_in_place_is_reported_by_its_name():
    def alibi_bias(length_q, length_k, slopes):
        slopes.mul_(2)
        return torch.zeros(length_q, length_k)

    outcome = _call(alibi_bias, (3, 4), {"slopes": torch.tensor([0.5, 0.25])})
    assert outcome["changed"] == ["slopes"]


def test_a_tensor_inside_a_list_argument_changed_in_place_is_reported_by_its_path():
    def total(scale, tensors):
        tensors[0].add_(1)
        return sum(tensors) * scale

    outcome = _call(total, (2.0, [torch.zeros(3), torch.ones(3)]))
    assert outcome["changed"] == ["args[1][0]"]


def test_positional_tensors_are_still_reported_by_position():
    def scores(q, k):
        k.zero_()
        return q @ k.T

    outcome = _call(scores, (torch.ones(2, 3), torch.ones(4, 3)))
    assert outcome["changed"] == [1]


def test_a_keyword_tensor_nested_in_a_dict_is_reported_by_its_path():
    def f(*, tables):
        tables["b"][1].neg_()
        return torch.zeros(1)

    outcome = _call(f, kwargs={"tables": {"a": torch.ones(2), "b": (torch.ones(2), torch.ones(2))}})
    assert outcome["changed"] == ["tables['b'][1]"]


def test_a_tensor_the_call_made_unreadable_counts_as_changed():
    def f(x):
        x.resize_(0)
        return torch.zeros(1)

    assert _call(f, (torch.ones(5),))["changed"] == [0]


def test_inputs_holding_nan_left_alone_are_not_reported():
    def f(x, *, y):
        return x + y

    outcome = _call(f, (torch.tensor([float("nan"), 1.0]),), {"y": [torch.tensor([2.0, float("nan")])]})
    assert "changed" not in outcome


def test_the_module_probe_still_reports_its_input_changed_in_place():
    class Adds(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(n))

        def forward(self, x):
            x += self.weight.detach() + 1
            return x

    probe = {"op": "module", "name": "Adds", "init": [3], "x": torch.zeros(3), "weight": None, "grad_out": None}
    out = worker._run_module_probe({"Adds": Adds}, probe, [])
    assert out["forward"]["changed"] == [0]
    checked = protocol.task_results(worker.pack({"m": out}), {"m": "module"})["m"]
    assert checked["forward"]["changed"] == [0]


# --- the protocol -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("changed", [["x" * 201], [1.5], [True], [None], [[0]], [{"a": 0}], list(range(65))])
def test_the_protocol_refuses_a_changed_list_out_of_its_schema(changed):
    reply = {"p": {"value": {"type_name": "int", "repr": "1"}, "changed": changed}}
    with pytest.raises(protocol.ProtocolError):
        protocol.task_results(worker.pack(reply), {"p": "call"})


def test_the_protocol_takes_positions_names_and_paths_together():
    reply = {"p": {"value": {"type_name": "int", "repr": "1"}, "changed": [0, "slopes", "args[1][0]"]}}
    assert protocol.task_results(worker.pack(reply), {"p": "call"})["p"]["changed"] == [0, "slopes", "args[1][0]"]


# --- the grader's sentence --------------------------------------------------------------------------------------

def test_the_sentence_names_a_keyword_argument_by_its_name():
    said = changed_inputs({"changed": ["positions_q"]}, "rope_scores(q, k, positions_q=p)", ("q", "k"))
    assert "changed its keyword argument positions_q in place" in said
    assert "A function must leave its inputs as they were" in said


def test_the_sentence_names_positions_as_before_and_paths_inside_arguments():
    said = changed_inputs({"changed": [0, "args[1][0]", "slopes[2]"]}, "f(...)", ("q", "k"))
    assert said.startswith("f(...) changed its first argument (q), the tensor at [0] in its second argument (k) "
                           "and the tensor at [2] in its keyword argument slopes in place.")
    assert changed_inputs({"changed": []}, "f(...)") == "" and changed_inputs(None, "f(...)") == ""


# --- a whole submission, graded -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rotary_grader():
    yield from correctness_grader(ROTARY)  # the timing tier has tests of its own


def test_a_keyword_argument_changed_in_place_costs_its_test_with_a_message_naming_it(rotary_grader, tmp_path):
    by_id = graded_with(rotary_grader, ROTARY, POSITIONS_Q_ADVANCED, tmp_path)
    charged = by_id["rope_scores_positions"]
    assert charged.score == 0, charged.output
    assert re.search(r"changed its keyword argument positions_q in place", charged.output), charged.output
    assert "returns the right values" in charged.output
    # The other tests of the task never pass positions_q: they keep their points (charged once).
    for test in by_id.values():
        if test.id != "rope_scores_positions" and test.task != "timing":
            assert test.score == test.max_score, (test.id, test.output)


# --- properties -----------------------------------------------------------------------------------------------------

leaves = st.one_of(st.integers(0, 50), st.none(), st.text("ab", max_size=3),
                   st.builds(lambda n, dtype, nan: _tensor(n, dtype, nan), st.integers(1, 4),
                             st.sampled_from([torch.float32, torch.float64, torch.int64]), st.booleans()))


def _tensor(n, dtype, nan):
    tensor = torch.arange(n, dtype=dtype)
    if nan and dtype.is_floating_point:
        tensor[0] = float("nan")  # a NaN left alone is not a change (NaN != NaN)
    return tensor


keys = st.sampled_from(["a", "b", "c", "d"])
trees = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.lists(inner, max_size=3).map(tuple),
                                                     st.dictionaries(keys, inner, max_size=3)), max_leaves=10)
arguments = st.tuples(st.lists(trees, max_size=3),
                      st.dictionaries(st.sampled_from(["slopes", "positions_q", "tables", "x"]), trees, max_size=3))


def _tensors_with_paths(args, kwargs):
    """(path as the worker says it, tensor) for every tensor in args and kwargs."""
    found = []

    def walk(value, path):
        if isinstance(value, torch.Tensor):
            found.append((path, value))
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                walk(item, f"{path}[{index}]")
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}[{key!r}]")

    for index, value in enumerate(args):
        if isinstance(value, torch.Tensor):
            found.append((index, value))
        else:
            walk(value, f"args[{index}]")
    for name, value in kwargs.items():
        walk(value, name)
    return found


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments, st.data())
def test_exactly_the_tensors_changed_in_place_are_reported(arguments, data):
    args, kwargs = arguments
    tensors = _tensors_with_paths(args, kwargs)
    chosen = data.draw(st.lists(st.sampled_from(range(len(tensors))), unique=True) if tensors else st.just([]))

    def f(*args, **kwargs):
        for at in chosen:
            tensors[at][1][0] = 100  # entry 0 is 0 or NaN: a change either way
        return torch.zeros(1)

    outcome = _call(f, args, kwargs)
    expected = [tensors[at][0] for at in sorted(chosen)]
    assert outcome.get("changed", []) == expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments)
def test_nothing_changed_nothing_reported(arguments):
    args, kwargs = arguments

    def f(*args, **kwargs):
        return torch.zeros(1)

    assert "changed" not in _call(f, args, kwargs)
