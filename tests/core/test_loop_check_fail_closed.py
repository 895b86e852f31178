"""The loop check fails closed on code it cannot read: a timed path that reaches code outside the submission's text
earns no timing points (issue 23, point 3).

The check reads only the submission's own text. So every name that code which runs reaches must resolve either to
that text (which is then read) or to a trusted library the job cannot have written: the public modules of Python's
standard library, torch, numpy, einops and matplotlib. Anything else is a "refused" finding that says what the check could not
read: a module the submission writes while it runs and imports (however it is bound: by attribute, by name, with
``import *``), any other module, a change to where Python looks for modules (which could shadow a trusted one), and
the parts of the trusted libraries that make code, load it or fetch it by a name that is not written out. Honest code
that imports torch, numpy, math or einops in any of the usual ways gives no finding.
"""

import importlib.util
import sys
import textwrap
import uuid

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.core.loop_check import findings
from test_loop_check import STEPS as ALL_STEPS, bound_through, run_program

SHAW_PATH = ["shaw_scores", "clipped_relative_positions"]
HEADER = "import functools\nimport sys\nimport types\n\nimport torch\n\n"
OUTSIDE = "a module outside your submission"
ADVICE = "define the function in your submission with def and call it by its name"

# The module a submission writes: a loop over positions, in a file the check never sees.
HELPER = textwrap.dedent('''
    import torch


    def shaw_scores(q):
        out = []
        for i in range(q.shape[0]):
            out.append(q[i] * 2)
        return torch.stack(out)
''')


def _refused(found):
    return [text for kind, text in found if kind == "refused"]


@pytest.fixture
def isolated_imports():
    """Undo what a submission run here does to the interpreter: its sys.path entries and the modules it wrote."""
    path = list(sys.path)
    yield
    sys.path[:] = path
    for name in [name for name in sys.modules if name.startswith("helpers_")]:
        del sys.modules[name]


def writes_and_imports(how, module):
    """A submission that writes ``module``.py (HELPER) while it loads and binds shaw_scores from it, ``how``."""
    write = (f"import os, tempfile\n_folder = tempfile.mkdtemp()\n"
             f"with open(os.path.join(_folder, '{module}.py'), 'w') as _file:\n    _file.write({HELPER!r})\n")
    binds = {
        "sys_path_attribute": f"sys.path.insert(0, _folder)\nimport {module}\nshaw_scores = {module}.shaw_scores\n",
        "sys_path_alias": f"sys.path.append(_folder)\nimport {module} as helpers\nshaw_scores = helpers.shaw_scores\n",
        "sys_path_from": f"sys.path.insert(0, _folder)\nfrom {module} import shaw_scores\n",
        "sys_path_star": f"sys.path.insert(0, _folder)\nfrom {module} import *\n",
        "spec_from_file_location": (
            f"import importlib.util\n"
            f"_spec = importlib.util.spec_from_file_location('{module}', os.path.join(_folder, '{module}.py'))\n"
            f"helpers = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(helpers)\n"
            f"shaw_scores = helpers.shaw_scores\n"),
        "module_type_exec": (f"helpers = types.ModuleType('{module}')\n"
                             f"exec(open(os.path.join(_folder, '{module}.py')).read(), helpers.__dict__)\n"
                             f"shaw_scores = helpers.shaw_scores\n"),
    }
    return [("cell 1", HEADER + "def shaw_scores(q):\n    return q * 2\n"), ("cell 2", write + binds[how])]


@pytest.mark.parametrize("how", ["sys_path_attribute", "sys_path_alias", "sys_path_from", "sys_path_star",
                                 "spec_from_file_location", "module_type_exec"])
def test_a_loop_in_a_module_the_submission_writes_at_import_time_is_refused(how, isolated_imports):
    module = f"helpers_{uuid.uuid4().hex[:12]}"
    chunks = writes_and_imports(how, module)
    shaw_scores = run_program(chunks)
    assert shaw_scores.__module__ == module and torch.equal(shaw_scores(torch.arange(4.0)), torch.arange(4.0) * 2)
    found = findings(chunks, SHAW_PATH)
    assert found and found == [(kind, text) for kind, text in found if kind == "refused"], found
    assert all("which the loop check cannot follow" in text for _, text in found), found


def _on_the_path(tmp_path, module):
    """HELPER as ``module``.py in a folder where Python already looks: nothing in the submission says where."""
    (tmp_path / f"{module}.py").write_text(HELPER)
    sys.path.insert(0, str(tmp_path))


# Where Python already looks for modules, a submission need not change sys.path: the import alone brings the code in.
IMPORTED = {
    "attribute": "import {m}\nshaw_scores = {m}.shaw_scores\n",
    "alias_attribute": "import {m} as helpers\nscores = helpers.shaw_scores\nshaw_scores = scores\n",
    "from_import": "from {m} import shaw_scores\n",
    "from_import_alias": "from {m} import shaw_scores as _impl\n\n\ndef shaw_scores(q):\n    return _impl(q)\n",
    "star_import": "from {m} import *\n",
    "star_import_after_a_def": "def shaw_scores(q):\n    return q * 2\n\n\nfrom {m} import *\n",
    "star_import_of_a_helper": "from {m} import *\n\n\ndef shaw_scores(q):\n    return helper_of_{m}(q)\n",
    "import_inside_the_function": "def shaw_scores(q):\n    import {m}\n    return {m}.shaw_scores(q)\n",
    "import_in_a_try": ("try:\n    from {m} import shaw_scores\nexcept ImportError:\n    def shaw_scores(q):\n"
                        "        return q * 2\n"),
}


@pytest.mark.parametrize("way", sorted(IMPORTED))
def test_a_name_from_a_module_outside_the_submission_is_refused_with_a_message_that_says_so(way, tmp_path,
                                                                                           isolated_imports):
    module = f"helpers_{uuid.uuid4().hex[:12]}"
    _on_the_path(tmp_path, module)
    if way == "star_import_of_a_helper":
        (tmp_path / f"{module}.py").write_text(HELPER.replace("def shaw_scores", f"def helper_of_{module}"))
    chunks = [("cell 1", HEADER), ("cell 2", IMPORTED[way].format(m=module))]
    result = run_program(chunks)(torch.arange(4.0))
    assert torch.equal(result, torch.arange(4.0) * 2)
    refused = _refused(findings(chunks, SHAW_PATH))
    assert any(module in text and OUTSIDE in text and ADVICE in text for text in refused), refused


def test_the_message_names_the_line_the_module_and_what_to_do():
    found = findings([("cell 4", "import helpers\n\n\nshaw_scores = helpers.shaw_scores\n")], ["shaw_scores"])
    assert found == [("refused", "shaw_scores, line 4: shaw_scores = helpers.shaw_scores (cell 4): uses helpers, a "
                                 "module outside your submission, which the loop check cannot follow; the check reads "
                                 "only your submission's own code: define the function in your submission with def "
                                 "and call it by its name, and use no module but torch, numpy, einops, matplotlib and Python's "
                                 "standard library")]


# A trusted name can be shadowed only by changing where Python looks for modules: that is refused wherever it runs.
SHADOWS = {
    "sys_path": "import sys\nsys.path.insert(0, '/tmp/written')\nimport einops\n",
    "sys_path_from": "from sys import path\npath.insert(0, '/tmp/written')\nimport einops\n",
    "site": "import site\nsite.addsitedir('/tmp/written')\nimport einops\n",
    "meta_path": "import sys\nsys.meta_path.insert(0, object())\nimport einops\n",
    "path_hooks": "import sys\nsys.path_hooks.insert(0, object())\nimport einops\n",
    "sys_modules": "import sys, types\nsys.modules['einops'] = types.ModuleType('einops')\nimport einops\n",
    "in_a_function_run_at_load": "import sys\n\n\ndef _setup():\n    sys.path.insert(0, '/tmp/written')\n\n\n"
                                 "_setup()\nimport einops\n",
}


@pytest.mark.parametrize("way", sorted(SHADOWS))
def test_changing_where_python_looks_for_modules_is_refused(way):
    source = SHADOWS[way] + "\n\ndef shaw_scores(q):\n    return einops.rearrange(q, 'a -> a') * 2\n"
    assert _refused(findings(source, ["shaw_scores"])), way


# The trusted libraries' own ways of making code, loading it, or fetching a name that is not written out.
LOADERS = {
    "getattr_computed": "import torch\n\n\ndef shaw_scores(q):\n    return getattr(torch, 'lo' + 'ad')(q)\n",
    "getattr_of_a_variable": "import math\nname = 'fabs'\n\n\ndef shaw_scores(q):\n    return getattr(math, name)(q)\n",
    "getattr_written_out_of_a_loader": "import torch\n\n\ndef shaw_scores(q):\n    return getattr(torch, 'load')(q)\n",
    "getattr_passed_on": ("import functools, torch\nfetch = functools.partial(getattr, torch)\n"
                          "shaw_scores = fetch('x')\n"),
    "attrgetter": "import operator, torch\nshaw_scores = operator.attrgetter('matmul')(torch)\n",
    "getattribute": "import torch\nshaw_scores = object.__getattribute__(torch, 'mat' + 'mul')\n",
    "inspect_getmembers": "import inspect, torch\nshaw_scores = dict(inspect.getmembers(torch))['matmul']\n",
    "trusted_star_loader": "from torch import *\nshaw_scores = load('scorer.pt')\n",
    "pickle_star": "from pickle import *\nshaw_scores = loads(b'')\n",
    "private_part": "import torch\nshaw_scores = torch._C._nn.gelu\n",
    "private_loader": "import torch\nshaw_scores = torch._utils._import_dotted_name('helpers.shaw_scores')\n",
    "private_module": "import _imp\nshaw_scores = _imp.create_dynamic\n",
    "local_import_of_a_loader": "def shaw_scores(q):\n    import torch as t\n    return t.load(q)(q)\n",
    "installed_loader_at_import": ("from _pytest.pathlib import import_path\n"
                                   "import_path('/tmp/patches_torch.py', root='/tmp')\n\n\n"
                                   "def shaw_scores(q):\n    return q @ q\n"),
    "timeit_with_text": "import timeit\ntimeit.timeit('import sys')\n\n\ndef shaw_scores(q):\n    return q * 2\n",
    "torch_library_impl": ("import torch\n_lib = torch.library.Library('aten', 'IMPL')\n"
                           "_lib.impl('index_select', lambda self, dim, index: self, 'CPU')\n\n\n"
                           "def shaw_scores(q):\n    return q * 2\n"),
    "torch_library_register_kernel": ("import torch\n\n\n@torch.library.register_kernel('aten::mm', 'cpu')\n"
                                      "def _mm(a, b):\n    return a\n\n\ndef shaw_scores(q):\n    return q @ q\n"),
    "from_torch_library": ("from torch.library import Library as _Kernels\n_Kernels('aten', 'IMPL')\n\n\n"
                           "def shaw_scores(q):\n    return q * 2\n"),
    "torch_fx": "import torch.fx\nshaw_scores = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph())\n",
    "compilation_unit": "import torch\nshaw_scores = torch.jit.CompilationUnit('def f(q):\\n    return q\\n').f\n",
    "type_hints": ("import typing\n\n\ndef shaw_scores(q: 'exec(\"\")'):\n    return q\n\n\n"
                   "typing.get_type_hints(shaw_scores)\n"),
    "unittest_mock_patch": "import torch\nfrom unittest import mock\n\n\ndef _slow(a, b):\n    return a\n\n\n"
                           "mock.patch('torch.matmul', _slow).start()\n\n\ndef shaw_scores(q):\n"
                           "    return torch.matmul(q, q)\n",
    "breakpoint": "import os\nos.environ['PYTHONBREAKPOINT'] = 'runpy.run_path'\nbreakpoint('/tmp/x.py')\n\n\n"
                  "def shaw_scores(q):\n    return q\n",
}


@pytest.mark.parametrize("way", sorted(LOADERS))
def test_code_made_loaded_or_fetched_by_name_through_a_trusted_library_is_refused(way):
    found = findings([("cell 1", LOADERS[way])], ["shaw_scores"])
    assert _refused(found) and all("which the loop check cannot follow" in t for t in _refused(found)), found


def test_a_hidden_loop_imported_inside_a_function_is_found():
    source = "def shaw_scores(q):\n    from functools import reduce\n    return reduce(lambda a, b: a + b, q)\n"
    assert [kind for kind, _ in findings(source, ["shaw_scores"])] == ["loop"]


def test_timeit_with_a_function_and_an_unused_outside_import_are_fine():
    source = ("import timeit\nimport matplotlib.pyplot as plt\nimport torch\n\n\ndef shaw_scores(q):\n"
              "    return q * 2\n\n\ntimeit.timeit(lambda: shaw_scores(torch.ones(3)), number=3)\n"
              "timeit.timeit(shaw_scores, number=1)\n")
    assert findings(source, ["shaw_scores"]) == []


# -- properties: every way in from outside, at the end of any chain of bindings, is found; honest code is not.

# The steps of a binding chain these properties draw: each binds {new} to something that calls {cur}
# (test_loop_check.py holds them all, and the properties of the others).
STEPS = {kind: ALL_STEPS[kind] for kind in ("alias", "tuple", "lambda", "partial", "lru_cache", "decorator", "instance",
                                            "instance_attribute", "dict", "namespace", "staticmethod", "factory",
                                            "walrus", "global_write", "default_value")}

# Ways of bringing code in from outside the submission's text, each binding {new}. {m}: a module name.
WAYS_IN = {
    "import_attribute": "import {m}\n{new} = {m}.shaw_scores\n",
    "import_as": "import {m} as _m{n}\n{new} = _m{n}.shaw_scores\n",
    "import_dotted": "import pkg_{m}.inner\n{new} = pkg_{m}.inner.shaw_scores\n",
    "from_import": "from {m} import shaw_scores as {new}\n",
    "from_package": "from pkg_{m}.inner import shaw_scores as {new}\n",
    "star_import": "from {m} import *\n{new} = scores_from_{m}\n",
    "star_import_over_a_def": "def {new}(q):\n    return q * 2\n\n\nfrom {m} import *\n",
    "import_in_a_try": ("try:\n    from {m} import shaw_scores as {new}\nexcept ImportError:\n    def {new}(q):\n"
                        "        return q * 2\n"),
    "import_in_a_factory": "def _load{n}():\n    import {m}\n    return {m}.shaw_scores\n\n\n{new} = _load{n}()\n",
    "import_in_the_body": "def {new}(q):\n    import {m}\n    return {m}.shaw_scores(q)\n",
    "global_import": "def _load{n}():\n    global {new}\n    from {m} import shaw_scores as {new}\n\n\n_load{n}()\n",
    "importlib": "import importlib\n{new} = importlib.import_module('{m}').shaw_scores\n",
    "importlib_alias": "from importlib import import_module as _im{n}\n{new} = _im{n}('{m}').shaw_scores\n",
    "spec_from_file": ("import importlib.util\n"
                       "_spec{n} = importlib.util.spec_from_file_location('{m}', '/tmp/{m}.py')\n"
                       "_m{n} = importlib.util.module_from_spec(_spec{n})\n_spec{n}.loader.exec_module(_m{n})\n"
                       "{new} = _m{n}.shaw_scores\n"),
    "dunder_import": "{new} = __import__('{m}').shaw_scores\n",
    "sys_path_shadowing_a_trusted_name": "sys.path.insert(0, '/tmp/written')\nimport einops as _m{n}\n"
                                         "{new} = _m{n}.shaw_scores\n",
    "site_shadowing_a_trusted_name": "import site\nsite.addsitedir('/tmp/written')\nimport numpy as _m{n}\n"
                                     "{new} = _m{n}.shaw_scores\n",
    "sys_modules": "sys.modules['einops'] = types.ModuleType('einops')\nimport einops as _m{n}\n{new} = _m{n}.f\n",
    "module_type_exec": ("_m{n} = types.ModuleType('{m}')\nexec(open('/tmp/{m}.py').read(), _m{n}.__dict__)\n"
                         "{new} = _m{n}.shaw_scores\n"),
    "runpy": "import runpy\n{new} = runpy.run_path('/tmp/{m}.py')['shaw_scores']\n",
    "exec": "exec(open('/tmp/{m}.py').read())\n{new} = scores_from_{m}\n",
    "eval": "{new} = eval(open('/tmp/{m}.py').read())\n",
    "compile": "{new} = types.FunctionType(compile(open('/tmp/{m}.py').read(), 'x', 'exec').co_consts[0], {{}})\n",
    "marshal": "import marshal\n{new} = types.FunctionType(marshal.loads(b''), {{}})\n",
    "pickle": "import pickle\n{new} = pickle.loads(open('/tmp/{m}.pkl', 'rb').read())\n",
    "getattr_computed": "{new} = getattr(torch, 'shaw_' + 'scores')\n",
    "getattr_of_the_module": "{new} = getattr(sys.modules[__name__], '_hidden_' + 'scores')\n",
    "getattr_passed_on": "_get{n} = functools.partial(getattr, torch)\n{new} = _get{n}('shaw_scores')\n",
    "attrgetter": "import operator\n{new} = operator.attrgetter('shaw_scores')(torch)\n",
    "vars": "{new} = vars(torch)['shaw_' + 'scores']\n",
    "installed_loader": ("from _pytest.pathlib import import_path as _ip{n}\n"
                         "{new} = _ip{n}('/tmp/{m}.py', root='/tmp').shaw_scores\n"),
    "private_loader": "{new} = torch._utils._import_dotted_name('{m}.shaw_scores')\n",
}


def outside_program(way, steps, cells):
    """Chunks binding shaw_scores through ``steps`` to a name that ``way`` brings in from outside the text; a cell
    break before step i where cells[i]. A loop-free shaw_scores comes first (the chain replaces it)."""
    module = "helpers_x"
    chunks = [HEADER + "def shaw_scores(q):\n    return q * 2\n"]
    new = "shaw_scores" if not steps else "_outside"
    chunks.append(WAYS_IN[way].format(m=module, new=new, n="w"))
    return bound_through(chunks, new, [STEPS[kind] for kind in steps], cells)


chains = st.lists(st.sampled_from(sorted(STEPS)), max_size=5)
cell_breaks = st.lists(st.booleans(), max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(way=st.sampled_from(sorted(WAYS_IN)), steps=chains, cells=cell_breaks)
def test_code_from_outside_the_submission_at_the_end_of_any_binding_chain_is_refused(way, steps, cells):
    chunks = outside_program(way, steps, cells)
    for _, text in chunks:
        compile(text, "chunk", "exec")  # each is real Python
    found = findings(chunks, SHAW_PATH)
    refused = _refused(found)
    assert refused and all("which the loop check cannot follow" in text for text in refused), (way, steps, found)


@pytest.mark.parametrize("way", sorted(WAYS_IN))
def test_each_way_in_alone_is_refused(way):
    assert _refused(findings(outside_program(way, [], []), SHAW_PATH)), way


# Honest code: trusted libraries imported in every usual way, helpers defined in the submission. Each helper returns
# its argument unchanged, using what the import brought in; {n} keeps names apart.
HONEST_IMPORTS = {
    "torch_as": ("import torch as T{n}\n", "T{n}.mul(q, 1)"),
    "torch_from": ("from torch import mul as times{n}\n", "times{n}(q, 1)"),
    "torch_star": ("from torch import *\n", "mul(q, 1)"),
    "torch_functional": ("import torch.nn.functional as F{n}\n", "F{n}.relu(q) - F{n}.relu(-q)"),
    "torch_submodule": ("from torch import nn as nn{n}\n", "nn{n}.Identity()(q)"),
    "math_as": ("import math as m{n}\n", "q * m{n}.sqrt(1.0)"),
    "math_from": ("from math import sqrt as root{n}\n", "q * root{n}(1.0)"),
    "math_star": ("from math import *\n", "q * factorial(1)"),
    "numpy_as": ("import numpy as np{n}\n", "q * np{n}.float64(1.0).item()"),
    "typing_cast": ("from typing import cast as cast{n}\n", "cast{n}(object, q)"),
    "functools_partial": ("import functools as ft{n}\n", "ft{n}.partial(torch.mul, q)(1)"),
    "einops": ("from einops import rearrange as re{n}\n", "re{n}(q, 'a -> a')"),
}


def honest_program(imports, local, steps, cells):
    """A loop-free shaw_scores (doubles a 1-d tensor) made of helpers that each use one import, bound through
    ``steps``; the helpers of ``local`` import what they use inside their own body."""
    header = HEADER + "".join(HONEST_IMPORTS[kind][0].format(n=n) for n, kind in enumerate(imports)
                              if not local[n % len(local)])
    helpers, calls = "", "q"
    for n, kind in enumerate(imports):
        statement, expression = HONEST_IMPORTS[kind]
        body = f"    return {expression.format(n=n)}\n"
        if local[n % len(local)]:
            body = "    " + statement.format(n=n).replace("\n", "\n    ").rstrip(" ") + body
        if kind.endswith("star") and local[n % len(local)]:  # import * is for the module's own level only
            header += statement
            body = f"    return {expression}\n"
        helpers += f"def helper{n}(q):\n{body}\n\n"
        calls = f"helper{n}({calls})"
    base = helpers + f"def _base(q):\n    return {calls} * 2\n"
    chunks = [header + "\n\ndef shaw_scores(q):\n    return q\n\n\n" + base]
    if not steps:
        chunks[-1] += "\n\nshaw_scores = _base\n"
    return bound_through(chunks, "_base", [STEPS[kind] for kind in steps], cells)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(imports=st.lists(st.sampled_from(sorted(HONEST_IMPORTS)), min_size=1, max_size=5),
       local=st.lists(st.booleans(), min_size=1, max_size=5), steps=chains, cells=cell_breaks)
def test_honest_loop_free_code_with_trusted_imports_gives_no_finding(imports, local, steps, cells):
    chunks = honest_program(imports, local, steps, cells)
    if "einops" not in imports or importlib.util.find_spec("einops") is not None:
        assert torch.equal(run_program(chunks)(torch.arange(4.0)), torch.arange(4.0) * 2)  # it is real code
    assert findings(chunks, SHAW_PATH) == [], (imports, local, steps)


# -- what runs while the submission loads, and the notebook's own cells

def test_code_of_an_outside_module_run_while_the_submission_loads_is_refused():
    """It could change what the path runs (torch's operators, say), though the path never names it."""
    for source in ("from _pytest.pathlib import import_path\nimport_path('/tmp/patches_torch.py', root='/tmp')\n",
                   "import helpers\nhelpers.patch_torch()\n",
                   "import seaborn\nseaborn.set_theme()\n"):
        found = findings([("cell 1", source), ("cell 2", "def shaw_scores(q):\n    return q @ q\n")], ["shaw_scores"])
        assert _refused(found) and OUTSIDE in _refused(found)[0], found


def _kernel_history(cells, name):
    """The sources the notebook's visible check (assert_no_loops) and nbgrader's in-kernel timing read: the cells
    the kernel ran so far, as IPython keeps them (``_ih``), the course's own cells among them."""
    from autograder.core.loop_check import _sources_of

    namespace = {"__name__": "kernel_without_a_module", "_ih": [""] + list(cells)}
    exec(f"def {name}(*args):\n    return None\n", namespace)
    return _sources_of(namespace[name])


COURSE_CELLS = ["import math\n\nimport torch\n\nimport matplotlib.pyplot as plt\n\n"
                "from checks import assert_close, assert_no_loops\nfrom capstone import compare\n",
                "def shaw_scores(q):\n    return q * 2\n",
                "assert_close(shaw_scores(torch.ones(3)), torch.ones(3) * 2, what='shaw_scores')\n"
                "plt.imshow(shaw_scores(torch.ones(3, 3)))\nplt.show()\n"
                "### BEGIN HIDDEN TESTS\nfrom autograder.ways_in.nbgrader_bridge import hidden_check\n\n"
                "hidden_check('shaw_values')\n### END HIDDEN TESTS\n"]


def test_in_a_kernels_history_the_courses_own_modules_are_trusted_and_no_other():
    assert findings(_kernel_history(COURSE_CELLS, "shaw_scores"), ["shaw_scores"]) == []
    # The submission's own cells, as the grader reads them, are held to every module outside them.
    assert _refused(findings([("cell 3", COURSE_CELLS[2])], ["shaw_scores"]))
    # A module of the student's own is outside the submission in the kernel too.
    student = COURSE_CELLS + ["import helpers\nshaw_scores = helpers.shaw_scores\n"]
    refused = _refused(findings(_kernel_history(student, "shaw_scores"), ["shaw_scores"]))
    assert any("uses helpers" in text for text in refused), refused


def test_the_lesson_notebooks_visible_loop_checks_pass_on_the_reference():
    """assert_no_loops in the lesson's own notebook, with the reference filled in: what the student runs."""
    import json
    import re

    from autograder.core import units
    from autograder.course.notebook import notebook_name, source_folder

    checked = 0
    for unit in units.all_units():
        notebook = json.loads((source_folder(unit) / notebook_name(unit)).read_text(encoding="utf-8"))
        cells = ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
        for number, cell in enumerate(cells):
            for name in re.findall(r"assert_no_loops\((\w+)[,)]", cell):
                assert findings(_kernel_history(cells[:number + 1], name), [name]) == [], (unit.name, name)
                checked += 1
    assert checked >= 9
