"""The static loop check of the timing tier follows how a name comes to be bound, and fails closed.

A Python loop over positions loses the timing points however the timed name reaches it: through an alias,
a lambda, functools.partial, a decorator, a callable object, a container, an attribute, a factory, another
cell. A binding the check cannot read (exec, globals(), sys.modules...) is a finding too, said in words a
student understands. Honest code, written in any of the usual ways, gives no finding.
"""

import sys
import types
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.course.build import strip_markers
from autograder.core.compare import assert_no_loops, loops_in
from autograder.core.loop_check import findings
from conftest import REFERENCE, UNIT

ALTERNATIVES = sorted((Path(__file__).parents[1] / "submissions" / "alternatives").glob("*.py"))
SHAW_PATH = ["shaw_scores", "clipped_relative_positions"]
T5_PATH = ["biased_scores", "t5_bias", "t5_relative_position_bucket"]
HEADER = "import functools\nimport sys\nimport types\n\nimport torch\n\n"

# The function at the end of every binding chain: doubles a 1-d tensor, with or without a loop over positions.
LOOP_BASES = {
    "for": ("def _base(q):\n    out = []\n    for i in range(q.shape[0]):\n        out.append(q[i] * 2)\n"
            "    return torch.stack(out)\n", "for i in range(q.shape[0]):"),
    "while": ("def _base(q):\n    out, i = [], 0\n    while i < q.shape[0]:\n        out.append(q[i] * 2)\n"
              "        i += 1\n    return torch.stack(out)\n", "while i < q.shape[0]:"),
    "comprehension": ("def _base(q):\n    return torch.stack([q[i] * 2 for i in range(q.shape[0])])\n",
                      "[q[i] * 2 for i in range(q.shape[0])]"),
    "generator": ("def _base(q):\n    return torch.stack(tuple(q[i] * 2 for i in range(q.shape[0])))\n",
                  "tuple(q[i] * 2 for i in range(q.shape[0]))"),
    "recursion": ("def _base(q, i=0):\n    if i == q.shape[0]:\n        return q.new_zeros(0)\n"
                  "    return torch.cat((q[i:i + 1] * 2, _base(q, i + 1)))\n", "recursion in _base"),
}
LOOP_FREE_BASE = "def _base(q):\n    return q * 2\n"

# One step of a binding chain: binds {new} to something that calls {cur}. {n} keeps helper names apart.
STEPS = {
    "alias": "{new} = {cur}\n",
    "tuple": "_unused{n}, {new} = None, {cur}\n",
    "lambda": "{new} = lambda *args, **kwargs: {cur}(*args, **kwargs)\n",
    "partial": "{new} = functools.partial({cur})\n",
    "lru_cache": "{new} = functools.lru_cache(maxsize=None)({cur})\n",
    "decorator": "@functools.wraps({cur})\ndef {new}(*args, **kwargs):\n    return {cur}(*args, **kwargs)\n",
    "memoizing_decorator": (
        "def memo{n}(function):\n    cache = {{}}\n\n    @functools.wraps(function)\n    def wrapper(*args):\n"
        "        if args not in cache:\n            cache[args] = function(*args)\n        return cache[args]\n"
        "    return wrapper\n\n\n@memo{n}\ndef {new}(*args):\n    return {cur}(*args)\n"),
    "instance": "class Call{n}:\n    def __call__(self, *args, **kwargs):\n        return {cur}(*args, **kwargs)\n\n\n"
                "{new} = Call{n}()\n",
    "instance_attribute": "class Hold{n}:\n    def __init__(self, function):\n        self.function = function\n\n"
                          "    def __call__(self, *args):\n        return self.function(*args)\n\n\n"
                          "{new} = Hold{n}({cur})\n",
    "dict": "table{n} = {{'impl': {cur}}}\n{new} = table{n}['impl']\n",
    "filled_dict": "table{n} = {{}}\ntable{n}['impl'] = {cur}\n{new} = table{n}['impl']\n",
    "namespace": "space{n} = types.SimpleNamespace(impl={cur})\n{new} = space{n}.impl\n",
    "namespace_attribute": "space{n} = types.SimpleNamespace()\nspace{n}.impl = {cur}\n{new} = space{n}.impl\n",
    "staticmethod": "class Box{n}:\n    impl = staticmethod({cur})\n\n\n{new} = Box{n}.impl\n",
    "factory": "def make{n}():\n    def inner(*args, **kwargs):\n        return {cur}(*args, **kwargs)\n"
               "    return inner\n\n\n{new} = make{n}()\n",
    "walrus": "({new} := {cur})\n",
    "for_target": "for {new} in ({cur},):\n    pass\n",
    "with_target": "import contextlib\nwith contextlib.nullcontext({cur}) as {new}:\n    pass\n",
    "global_write": "def install{n}(function):\n    global {new}\n    {new} = function\n\n\ninstall{n}({cur})\n",
    "default_value": "def {new}(*args, _impl={cur}):\n    return _impl(*args)\n",
}
# Steps the check must refuse: the binding is made where it cannot look.
REFUSED_STEPS = {
    "exec": "exec('{new} = {cur}')\n",
    "eval": "{new} = eval('{cur}')\n",
    "globals": "globals()['{new}'] = {cur}\n",
    "sys_modules": "setattr(sys.modules[__name__], '{new}', {cur})\n",
}


def chain_program(base, steps, cells, refused=None, refused_at=0):
    """Chunks (label, text) binding shaw_scores through ``steps`` to ``_base``; a cell break before step i where
    cells[i]. A loop-free shaw_scores comes first (the chain replaces it) and a loop no one reaches."""
    chunks = [HEADER + "def shaw_scores(q):\n    return q\n\n\n"
              + "def _unused_loop(q):\n    for i in q:\n        pass\n\n\n" + base]
    kinds = list(steps)
    if refused is not None:
        kinds.insert(min(refused_at, len(kinds)), refused)
    return bound_through(chunks, "_base", [REFUSED_STEPS.get(kind) or STEPS[kind] for kind in kinds], cells)


def bound_through(chunks, current, templates, cells):
    """``chunks`` (texts) with ``current`` bound to shaw_scores through the step ``templates`` in turn (each
    formatted with cur, new and n), a cell break before step i where cells[i]; as (label, text) pairs."""
    chunks = list(chunks)
    for number, template in enumerate(templates):
        new = "shaw_scores" if number == len(templates) - 1 else f"f{number}"
        code = template.format(cur=current, new=new, n=number)
        if number < len(cells) and cells[number]:
            chunks.append(code)
        else:
            chunks[-1] += "\n\n" + code
        current = new
    return [(f"cell {number + 1}", text) for number, text in enumerate(chunks)]


def run_program(chunks):
    """Run the chunks as the worker does (one module, cell after cell) and return its shaw_scores."""
    name = f"_loop_check_program_{id(chunks)}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        for label, text in chunks:
            exec(compile(text, label, "exec"), module.__dict__)
        return module.shaw_scores
    finally:
        del sys.modules[name]


chains = st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=6)
cell_breaks = st.lists(st.booleans(), max_size=7)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(sorted(LOOP_BASES)), steps=chains, cells=cell_breaks)
def test_a_loop_at_the_end_of_any_binding_chain_is_found(base, steps, cells):
    text, loop_line = LOOP_BASES[base]
    chunks = chain_program(text, steps, cells)
    assert torch.equal(run_program(chunks)(torch.arange(4.0)), torch.arange(4.0) * 2)  # the chain really binds it
    found = loops_in(chunks, ["shaw_scores"])
    assert any(item.startswith("_base, line ") and loop_line in item for item in found), (steps, found)
    assert not any("_unused_loop" in item for item in found)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=chains, cells=cell_breaks)
def test_a_loop_free_function_at_the_end_of_any_binding_chain_gives_no_finding(steps, cells):
    chunks = chain_program(LOOP_FREE_BASE, steps, cells)
    assert torch.equal(run_program(chunks)(torch.arange(4.0)), torch.arange(4.0) * 2)
    assert loops_in(chunks, ["shaw_scores"]) == []


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(["loop free", *sorted(LOOP_BASES)]), steps=chains, cells=cell_breaks,
       refused=st.sampled_from(sorted(REFUSED_STEPS)), refused_at=st.integers(0, 6))
def test_a_chain_with_a_step_the_check_cannot_read_is_reported_as_such(base, steps, cells, refused, refused_at):
    chunks = chain_program(LOOP_FREE_BASE if base == "loop free" else LOOP_BASES[base][0], steps, cells,
                           refused, refused_at)
    assert torch.equal(run_program(chunks)(torch.arange(4.0)), torch.arange(4.0) * 2)
    found = loops_in(chunks, ["shaw_scores"])
    assert any("which the loop check cannot follow" in item for item in found), (steps, refused, found)


@pytest.mark.parametrize("step", sorted(STEPS))
def test_each_binding_step_alone_leads_to_the_loop(step):
    chunks = chain_program(LOOP_BASES["for"][0], [step], [])
    assert [item.split(":")[0] for item in loops_in(chunks, ["shaw_scores"])] == ["_base, line 3"]
    assert loops_in(chain_program(LOOP_FREE_BASE, [step], []), ["shaw_scores"]) == []


# What the check cannot follow: each is a finding that says so, even when every function is loop-free.
FAST = "def _fast(q):\n    return q * 2\n\n\n"
DYNAMIC = {
    "exec": "exec('def shaw_scores(q):\\n    return q')\n",
    "exec_of_a_file": "exec(open('elsewhere.py').read())\n",
    "eval": "shaw_scores = eval('lambda q: q')\n",
    "compile": "shaw_scores = _fast\ncode = compile('shaw_scores = 1', 'x', 'exec')\n",
    "globals_write": FAST + "globals()['shaw_scores'] = _fast\n",
    "globals_update": FAST + "globals().update(shaw_scores=_fast)\n",
    "vars_write": FAST + "vars()['shaw_scores'] = _fast\n",
    "locals_write": FAST + "locals()['shaw_scores'] = _fast\n",
    "setattr_on_module": "import sys\n" + FAST + "setattr(sys.modules[__name__], 'shaw_scores', _fast)\n",
    "dunder_setattr": "import sys\n" + FAST + "def shaw_scores(q):\n    return q\n"
                      "object.__setattr__(shaw_scores, 'x', _fast)\n",
    "dict_write_on_function": FAST + "def shaw_scores(q):\n    return q\n\n\nshaw_scores.__dict__['impl'] = _fast\n",
    "code_assignment": FAST + "def shaw_scores(q):\n    return q\n\n\nshaw_scores.__code__ = _fast.__code__\n",
    "call_assignment": FAST + "class Scorer:\n    pass\n\n\nScorer.__call__ = _fast\nshaw_scores = Scorer()\n",
    "wrapped_assignment": FAST + "def shaw_scores(q):\n    return q\n\n\nshaw_scores.__wrapped__ = _fast\n",
    "sys_modules": "import sys\nshaw_scores = sys.modules['builtins'].abs\n",
    "importlib": "import importlib\nshaw_scores = importlib.import_module('math').fabs\n",
    "dunder_import": "shaw_scores = __import__('math').fabs\n",
    "import_own_module": FAST + "import positional_encodings\npositional_encodings.shaw_scores = _fast\n",
    "from_own_module": "from positional_encodings import _fast as shaw_scores\n",
    "function_type": "import types\n" + FAST + "shaw_scores = types.FunctionType(_fast.__code__, {})\n",
    "method_type": "import types\n" + FAST + "shaw_scores = types.MethodType(_fast, 1)\n",
    "lambda_type": "from types import LambdaType\n" + FAST + "shaw_scores = LambdaType(_fast.__code__, {})\n",
    "marshal": "import marshal\nshaw_scores = marshal.loads(b'')\n",
    "pickle": "import pickle\nshaw_scores = pickle.loads(b'')\n",
    "dill": "import dill\nshaw_scores = dill.loads(b'')\n",
    "torch_load": "import torch\nshaw_scores = torch.load('scorer.pt')\n",
    "ctypes": "import ctypes\n" + FAST + "shaw_scores = _fast\n",
    "runpy": "import runpy\nshaw_scores = runpy.run_path('elsewhere.py')['shaw_scores']\n",
    "frame_globals": "import sys\n" + FAST + "def shaw_scores(q):\n    sys._getframe().f_globals['helper'] = _fast\n"
                     "    return helper(q)\n",
    "builtins_dict": "__builtins__['shaw_scores'] = abs\n",
    "module_getattr": FAST + "def __getattr__(name):\n    return _fast\n",
    "relative_import": "from .elsewhere import shaw_scores\n",
    "computed_setattr": "import types\n" + FAST + "space = types.SimpleNamespace()\n"
                        "setattr(space, 'im' + 'pl', _fast)\nshaw_scores = space.impl\n",
    "in_a_reached_helper": "def helper():\n    exec('x = 1')\n\n\ndef shaw_scores(q):\n    helper()\n    return q\n",
}


@pytest.mark.parametrize("construct", sorted(DYNAMIC))
def test_a_binding_the_check_cannot_read_is_a_finding_that_says_so(construct):
    found = loops_in([("cell 1", DYNAMIC[construct])], ["shaw_scores"])
    assert found and all("which the loop check cannot follow" in item for item in found), found
    assert all(item.split(", line ")[0] and " (cell 1): " in item for item in found), found


def test_a_refusal_names_the_line_and_the_construct_in_words():
    found = loops_in([("cell 3", "import math\n\n\nshaw_scores = eval('lambda q: q')\n")], ["shaw_scores"])
    assert found == ["shaw_scores, line 4: shaw_scores = eval('lambda q: q') (cell 3): runs text as code with "
                     "eval(...), which the loop check cannot follow; define the function with def and call it by "
                     "its name"]
    helper = loops_in(DYNAMIC["in_a_reached_helper"], ["shaw_scores"])
    assert [item.split(":")[0] for item in helper] == ["helper, line 2"]


def test_code_that_never_runs_cannot_bind_anything_and_is_not_reported():
    source = "def never_called():\n    exec('shaw_scores = None')\n\n\ndef shaw_scores(q):\n    return q\n"
    assert loops_in(source, ["shaw_scores"]) == []


def test_the_submissions_own_module_name_is_refused_as_the_worker_names_it():
    import autograder.core.timing  # noqa: F401  (the timing tier registers every unit's module name with the check)
    from autograder.core import units

    for name in units.module_names():  # the name the job gives the student's code (sandbox.Plan.module)
        for line in (f"import {name}", f"from {name} import shaw_scores", f"import {name} as me"):
            found = loops_in(line + "\n\n\ndef shaw_scores(q):\n    return q\n", ["shaw_scores"])
            assert found and f"imports {name}" in found[0], found


# Less common ways in, each followed to the loop (or, for a closure cell written from outside, refused).
REACHED = {
    "custom_op": ("import torch\n\n\n@torch.library.custom_op('kit::slow', mutates_args=())\n"
                  "def _slow(q: torch.Tensor) -> torch.Tensor:\n    return torch.stack([x for x in q])\n\n\n"
                  "def shaw_scores(q):\n    return torch.ops.kit.slow(q)\n", "_slow, line 2"),
    "torch_function_mode": ("import torch\n\n\nclass Mode(torch.overrides.TorchFunctionMode):\n"
                            "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
                            "        return [a for a in args]\n\n\nMode().__enter__()\n\n\n"
                            "def shaw_scores(q):\n    return torch.add(q, q)\n", "Mode.__torch_function__, line 2"),
    "forward_hook": ("import torch\n\n\nclass Scorer(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
                     "\n\ndef hook(module, args, out):\n    return [x for x in out]\n\n\nshaw_scores = Scorer()\n"
                     "shaw_scores.register_forward_hook(hook)\n", "hook, line 2"),
    "builtins_injection": ("import builtins\n\n\ndef _slow(q):\n    return [x for x in q]\n\n\n"
                           "builtins.helper = _slow\n\n\ndef shaw_scores(q):\n    return helper(q)\n", "_slow, line 2"),
    "type_with_three_arguments": ("shaw_scores = type('Scorer', (), {'__call__': lambda self, q: [x for x in q]})()\n",
                                  "lambda in shaw_scores, line 1"),
    "registered_by_a_helper": ("def _slow(q):\n    return [x for x in q]\n\n\nimpls = {}\n\n\n"
                               "def register(table, function):\n    table['slow'] = function\n\n\n"
                               "register(impls, _slow)\nshaw_scores = impls['slow']\n", "_slow, line 2"),
    "changed_through_a_local_alias": ("def _slow(q):\n    return [x for x in q]\n\n\nimpls = {}\n\n\n"
                                      "def setup():\n    table = impls\n    table['slow'] = _slow\n\n\nsetup()\n"
                                      "shaw_scores = lambda q: impls['slow'](q)\n", "_slow, line 2"),
    "global_read_by_a_factory_while_loading": (
        "def shaw_scores(q):\n    return [x for x in q]\n\n\ndef make():\n    base = shaw_scores\n"
        "    return lambda q: base(q)\n\n\nshaw_scores = make()\n", "shaw_scores, line 2"),
    "decorator_that_calls_while_loading": (
        "def helper(q):\n    return [x for x in q]\n\n\ndef call(function):\n    return function()\n\n\n"
        "@call\ndef shaw_scores():\n    return helper\n\n\ndef helper(q):\n    return q\n", "helper, line 2"),
    "closure_cell_written_from_outside": (
        "def _slow(q):\n    return [x for x in q]\n\n\ndef make():\n    impl = None\n    return lambda q: impl(q)\n"
        "\n\nshaw_scores = make()\nshaw_scores.__closure__[0].cell_contents = _slow\n", "assigns cell_contents"),
}


@pytest.mark.parametrize("way", sorted(REACHED))
def test_less_common_ways_in_are_followed(way):
    source, expected = REACHED[way]
    found = loops_in(source, ["shaw_scores"])
    assert any(expected in item for item in found), found


def test_code_too_deep_for_the_check_is_refused_not_a_crash():
    source = "def f0(q):\n    return f0(q)\n" + "".join(f"f{i + 1} = f{i}\n" for i in range(3000)) + \
             "def shaw_scores(q):\n    return f3000(q)\n"
    found = loops_in(source, ["shaw_scores"])
    assert found and "cannot follow" in found[0], found
    long_alias_chain = "def f0(q):\n    return [x for x in q]\n" + "".join(
        f"f{i + 1} = f{i}\n" for i in range(3000)) + "shaw_scores = f3000\n"
    assert loops_in(long_alias_chain, ["shaw_scores"]) == ["f0, line 2: return [x for x in q]"]


def test_library_imports_are_not_read_but_changes_to_a_library_are_followed():
    honest = "import math\nimport numpy as np\nfrom einops import rearrange\nimport torch\n\n\n" \
             "def shaw_scores(q):\n    return rearrange(torch.as_tensor(np.asarray(q)), 'a -> a') * math.pi\n"
    assert loops_in(honest, ["shaw_scores"]) == []
    patched = honest + "\n\ndef _slow_matmul(a, b):\n    return sum(a[i] * b[i] for i in range(len(a)))\n\n\n" \
                       "torch.Tensor.__matmul__ = _slow_matmul\n"
    # shaw_scores never names it: the operator on its tensors runs it.
    assert [item.split(":")[0] for item in loops_in(patched, ["shaw_scores"])] == ["_slow_matmul, line 2"]


def test_while_comprehensions_map_and_recursion_count_and_a_loop_over_constants_does_not():
    source = '''
def shaw_scores(q):
    for mode in ("add", "concat"):
        pass
    total = sum(x for x in (1, 2, 3))
    return helper(q) + list(map(abs, q)) + walk(q, 0)

def helper(q):
    i = 0
    while i < 3:
        i += 1
    return i

def walk(q, i):
    return q if i > 3 else walk(q, i + 1)
'''
    assert loops_in(source, ["shaw_scores"]) == [
        "shaw_scores, line 5: return helper(q) + list(map(abs, q)) + walk(q, 0)",
        "helper, line 3: while i < 3:",
        "walk, line 2: return q if i > 3 else walk(q, i + 1) (recursion in walk)",
    ]


def test_mutual_recursion_is_named_with_its_cycle():
    source = "def shaw_scores(q, i=0):\n    return other(q, i)\n\n\ndef other(q, i):\n" \
             "    return q if i > 2 else shaw_scores(q, i + 1)\n"
    assert loops_in(source, ["shaw_scores"]) == [
        "shaw_scores, line 2: return other(q, i) (recursion in shaw_scores → other → shaw_scores)"]


def test_a_later_cell_replaces_an_earlier_definition():
    loop = "import torch\n\n\ndef clipped_relative_positions(lq, lk, k, *, device=None):\n" \
           "    return torch.tensor([[min(max(j - i, -k), k) + k for j in range(lk)] for i in range(lq)])\n"
    vectorized = "def clipped_relative_positions(lq, lk, k, *, device=None):\n" \
                 "    return (torch.arange(lk)[None] - torch.arange(lq)[:, None]).clamp(-k, k) + k\n"
    caller = "def shaw_scores(q, k, rel_k, m, *, scale=None):\n" \
             "    return q @ k.transpose(-2, -1) + clipped_relative_positions(q.shape[-2], k.shape[-2], m)\n"
    check = "print(shaw_scores(torch.ones(1, 1, 2, 2), torch.ones(1, 1, 2, 2), torch.ones(3, 2), 1))\n"
    assert loops_in([("cell 1", loop), ("cell 2", caller), ("cell 3", check), ("cell 4", vectorized)],
                    SHAW_PATH) == []
    assert loops_in([("cell 1", vectorized), ("cell 2", caller), ("cell 3", loop)], SHAW_PATH)[0].endswith("(cell 3)")


def test_a_cell_that_raises_before_a_redefinition_leaves_the_earlier_binding_in_place():
    # The worker goes on with the next cell after an exception: the definition after it never ran.
    slow = "def _slow(q):\n    return [x for x in q]\n\n\nshaw_scores = _slow\n"
    for stopper in ("import module_that_is_not_installed", "x = 1 / 0", "raise SystemExit"):
        found = loops_in([("cell 1", slow), ("cell 2", stopper + "\n\n\ndef shaw_scores(q):\n    return q\n")],
                         ["shaw_scores"])
        assert found == ["_slow, line 2: return [x for x in q] (cell 1)"], stopper


def test_a_wrapper_of_the_earlier_definition_is_not_recursion():
    reference = strip_markers(REFERENCE.read_text(encoding="utf-8"))
    wrapper = ("\n\n_vectorized = shaw_scores\n\n\n"
               "def shaw_scores(*args, **kwargs):\n    return _vectorized(*args, **kwargs)\n")
    assert loops_in(reference + wrapper, SHAW_PATH) == []


# Honest code: no finding, however it is written.
HONEST_SHAW = '''import math
from typing import Optional

import torch


@torch.no_grad()
def shaw_scores(q: torch.Tensor, k: torch.Tensor, rel_k: torch.Tensor, max_relative_position: int, *,
                scale: Optional[float] = None) -> torch.Tensor:
    """Scores with relative keys."""
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])

    def relative_term(index):
        return (q @ rel_k.to(q.dtype).T).gather(-1, index.expand(*q.shape[:-1], -1))

    index: torch.Tensor = clipped_relative_positions(q.shape[-2], k.shape[-2], max_relative_position,
                                                     device=q.device)
    return scale * (q @ k.transpose(-2, -1) + relative_term(index))


def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
    distance = torch.arange(length_k, device=device)[None, :] - torch.arange(length_q, device=device)[:, None]
    return distance.clamp(-max_relative_position, max_relative_position) + max_relative_position
'''


@pytest.mark.parametrize("path", ALTERNATIVES, ids=[path.stem for path in ALTERNATIVES])
def test_every_alternative_formulation_gives_no_finding(path, reference_text):
    text = path.read_text(encoding="utf-8")
    for names in (SHAW_PATH, T5_PATH):
        assert loops_in(text, names) == []
        assert loops_in(reference_text + "\n\n" + text, names) == []


def test_the_reference_and_its_notebook_give_no_finding(reference_text):
    from autograder.intake.load import load

    assert loops_in(reference_text, SHAW_PATH) == [] and loops_in(reference_text, T5_PATH) == []
    notebook = load(Path(__file__).parents[2] / "assignments" / "source" / "positional_encodings"
                    / "positional_encodings.ipynb")
    chunks = [(chunk["label"], chunk["source"]) for chunk in notebook.chunks]
    assert len(chunks) > 1 and loops_in(chunks, SHAW_PATH) == [] and loops_in(chunks, T5_PATH) == []


def test_honest_variants_give_no_finding():
    assert loops_in(HONEST_SHAW, SHAW_PATH) == []
    # A helper below its caller, and a notebook whose cells check the function and keep a slow reference.
    cells = [("cell 1", HONEST_SHAW),
             ("cell 2", "def slow_reference(q, k):\n"
                        "    out = torch.zeros(q.shape[-2], k.shape[-2], dtype=torch.float32)\n"
                        "    for i in range(q.shape[-2]):\n        for j in range(k.shape[-2]):\n"
                        "            out[i, j] = q[0, 0, i] @ k[0, 0, j]\n    return out\n"),
             ("cell 3", "q = torch.randn(1, 1, 4, 8)\nexpected = slow_reference(q, q)\nexpected[0] = 1\n"
                        "print(shaw_scores(q, q, torch.randn(5, 8), 2), torch.float32)\n")]
    assert loops_in(cells, SHAW_PATH) == []
    module_class = "import torch\nfrom torch import nn\n\n\nclass Table(nn.Module):\n    def __init__(self):\n" \
                   "        super().__init__()\n        self.weight = nn.Parameter(torch.zeros(3))\n" \
                   "        setattr(self, 'mode', 'add')\n\n    def forward(self, x):\n        for i in range(3):\n" \
                   "            pass\n        return x\n\n\n" + HONEST_SHAW.split("\n\n\n", 1)[1]
    assert loops_in("import math\nfrom typing import Optional\n" + module_class, SHAW_PATH) == []


# assert_no_loops: the notebook's visible check, on live functions.
@pytest.fixture
def module_from(tmp_path):
    """Import a module written from text, as a student's positional_encodings.py is."""
    names = []

    def make(name, text):
        (tmp_path / f"{name}.py").write_text(text)
        sys.path.insert(0, str(tmp_path))
        try:
            __import__(name)
        finally:
            sys.path.remove(str(tmp_path))
        names.append(name)
        return sys.modules[name]

    yield make
    for name in names:
        sys.modules.pop(name, None)


def test_assert_no_loops_follows_a_memoized_or_lambda_binding_in_a_module(module_from):
    module = module_from("student_functions", (
        "import functools\nimport torch\n\n\ndef _slow(q):\n    return torch.stack([x for x in q])\n\n\n"
        "shaw_scores = functools.lru_cache(maxsize=None)(_slow)\nfast = lambda q: q * 2\n"
        "slow = functools.partial(_slow)\n"))
    assert_no_loops(module.fast)
    for function in (module.shaw_scores, module.slow):
        with pytest.raises(AssertionError, match=r"has a Python loop: _slow, line 2: return torch.stack"):
            assert_no_loops(function)
    refused = module_from("student_exec", "exec('def shaw_scores(q):\\n    return q')\n")
    with pytest.raises(AssertionError, match="cannot be checked for loops.*exec"):
        assert_no_loops(refused.shaw_scores)
    made_from_text = {}
    exec("def shaw_scores(q):\n    return q", made_from_text)
    with pytest.raises(AssertionError, match="its source text cannot be found"):
        assert_no_loops(made_from_text["shaw_scores"])


def test_assert_no_loops_reads_the_notebook_cells_run_so_far():
    # In Jupyter the module has no file; IPython's _ih holds each cell's text in the order they ran.
    namespace = {"__name__": "kernel_without_a_module"}
    cells = ["", "def helper(q):\n    return [x for x in q]\n", "def shaw_scores(q):\n    return helper(q)\n"]
    namespace["_ih"] = cells
    for number, cell in enumerate(cells):
        exec(compile(cell, f"<cell {number}>", "exec"), namespace)
    with pytest.raises(AssertionError, match=r"helper, line 2: return \[x for x in q\] \(cell 1\)"):
        assert_no_loops(namespace["shaw_scores"])
    cells.append("def helper(q):\n    return q\n")
    exec(cells[-1], namespace)
    assert_no_loops(namespace["shaw_scores"])


# End to end, through the real grader: the memoized loop bound by an assignment loses the tier.
MEMOIZED_LOOP = '''

import functools


def _slow(q, k, rel_k, max_relative_position, *, scale=None):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    rel = rel_k.to(q.dtype)
    scores = q.new_zeros(*q.shape[:-1], k.shape[-2])
    for i in range(q.shape[-2]):
        for j in range(k.shape[-2]):  # the clipped distance in Python: no tensor's value is read (meta cases pass)
            clipped = max(-max_relative_position, min(max_relative_position, j - i))
            scores[..., i, j] = (q[..., i, :] * (k[..., j, :] + rel[clipped + max_relative_position])).sum(-1)
    return scores * scale


def _fresh(function):  # each caller gets a tensor of its own (a cached one handed out twice fails the contracts)
    def call(*args, **kwargs):
        return function(*args, **kwargs).clone()
    return call


shaw_scores = _fresh(functools.lru_cache(maxsize=None)(_slow))
'''


def test_a_memoized_loop_bound_by_assignment_gets_no_timing_points(tmp_path, reference_text):
    from autograder.core.grade import Grader

    path = tmp_path / "memoized_loop.py"
    path.write_text(reference_text + MEMOIZED_LOOP)
    grader = Grader(UNIT, sandbox="auto", timing_mode="cpu")
    try:
        result = grader.grade(path)
    finally:
        grader.close()
    tests = {test.id: test for test in result.tests}
    assert all(tests[test].passed for test in ("shaw_values", "shaw_scale", "shaw_edge_cases"))  # it is correct
    shaw = tests["shaw_speed"]
    assert shaw.score == 0, shaw.output
    assert "Python loop" in shaw.output and "_slow, line 6: for i in range(q.shape[-2]):" in shaw.output, shaw.output


def test_a_loop_whose_count_is_written_in_the_text_is_left_out_and_one_from_the_inputs_is_not():
    """A loop over a literal tuple (a fixed layout: q and k) or a small constant range runs the same number of
    times whatever the sequence length: it is not a loop over positions. A loop whose count comes from the inputs
    is a finding, whichever axis it runs over: the text does not say."""
    fixed = '''
def shaw_scores(q, k):
    out = []
    for t in (q, k):
        out.append(t * 2)
    for half in range(2):
        out.append(q[..., half::2])
    parts = [q[..., i::4] for i in range(-4, 0, 1)]
    return out, parts
'''
    assert loops_in(fixed, ["shaw_scores"]) == []
    from_inputs = '''
def shaw_scores(q, k, slopes):
    rows = [q[:, :, i] for i in range(q.shape[2])]
    for h in range(len(slopes)):
        rows.append(slopes[h])
    for t in (*rows,):
        pass
    for block in range(100):
        pass
    return rows
'''
    assert [item.split(":")[0] for item in loops_in(from_inputs, ["shaw_scores"])] == [
        "shaw_scores, line 2", "shaw_scores, line 3", "shaw_scores, line 5", "shaw_scores, line 7"]


def test_a_loop_inside_a_fixed_loop_is_still_found():
    source = '''
def shaw_scores(q, k):
    for t in (q, k):
        for i in range(t.shape[0]):
            t[i] = t[i] * 2
    return q
'''
    assert loops_in(source, ["shaw_scores"]) == ["shaw_scores, line 3: for i in range(t.shape[0]):"]


def test_the_words_for_a_loop_do_not_say_positions_when_it_may_run_over_heads(tmp_path, monkeypatch):
    """alibi_bias with a loop over its heads: a finding of the text (its count comes from the inputs), said without
    calling it a loop over positions; counted, it is not one (tests/core/test_loop_count.py)."""
    from autograder.core.timing import LOOP_ADVICE

    source = '''
import torch

def alibi_bias(length_q, length_k, slopes, *, causal=True):
    distance = torch.arange(length_q)[:, None] - torch.arange(length_k)[None, :]
    rows = [-slope * distance for slope in slopes]
    return torch.stack(rows).unsqueeze(0)
'''
    assert [item.split(":")[0] for item in loops_in(source, ["alibi_bias"])] == ["alibi_bias, line 3"]
    # Said only once a count has found a loop over positions, the advice says which loops are fine.
    assert "over the heads" in LOOP_ADVICE and "timed like any other code" in LOOP_ADVICE
    (tmp_path / "heads_loop.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    import heads_loop

    with pytest.raises(AssertionError) as error:
        assert_no_loops(heads_loop.alibi_bias)
    assert "has a Python loop" in str(error.value) and "over positions" not in str(error.value), str(error.value)
    assert_no_loops(heads_loop.alibi_bias, inputs=lambda length: (length, length, torch.rand(3)))
