"""The layout is the architecture: the import graph read from the source keeps the trust boundary.

Every ``import`` of the grader and of ``solutions/`` is read from the syntax tree (the ones inside functions
too, since they run all the same), and the graph must hold:

* no cycle, between modules or between the grader's packages (intake, sandbox, core, course, ways_in, units);
* nothing the job runs (``sandbox/worker.py`` and each unit's ``job.py``) reaches the reference, a unit's
  hidden cases or rubric, or the seeds, however many imports away;
* the packages stay in their layers: the sandbox knows nothing of grading, the core nothing of the ways in;
* the ways in import the core, never each other (what the platforms share is ``ways_in/platform.py``).
"""

import ast
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("intake", "sandbox", "core", "course", "ways_in", "units")
# Which packages each may import (besides itself): a layer sees only those below it.
MAY_IMPORT = {
    "intake": set(),
    "sandbox": {"intake"},
    "core": {"intake", "sandbox"},
    "units": {"core", "sandbox"},
    "course": {"core", "intake", "sandbox"},
    "ways_in": {"core", "intake", "sandbox", "course"},
}
JOB_FORBIDDEN = ("solutions", "autograder.core.seeds", "autograder.core.cases")
WAYS_IN = ("cli", "batch", "demo", "nbgrader_bridge", "nbgrader_inert", "gradescope", "prairielearn", "lms_export")
SHARED_WAY_IN = "autograder.ways_in.platform"


def modules(root):
    """{dotted name: path} of every module of the grader and the reference under ``root``."""
    found = {}
    for top in ("autograder", "solutions"):
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(root):
    """{module: {modules it imports}}, inside the repository only, from every import statement."""
    known = modules(root)
    graph = {}
    for name, path in known.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                candidates = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
            else:
                continue
            for candidate in candidates:
                # the longest known module the name starts with (``from a.b import c``: a.b.c if a module, else a.b)
                while candidate and candidate not in known:
                    candidate = candidate.rpartition(".")[0]
                if candidate and candidate != name:
                    targets.add(candidate)
        # importing a.b.c runs a/__init__ and a/b/__init__ too; they are docstrings here, so not followed
        graph[name] = targets
    return graph


def cycles(graph):
    """Each cycle found, as a list of nodes (empty where the graph is acyclic)."""
    found, state = [], {}

    def visit(node, trail):
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                found.append(trail[trail.index(target):] + [target])
            elif target not in state:
                visit(target, trail + [target])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def reached(graph, start):
    seen, todo = set(), [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def package_of(module):
    parts = module.split(".")
    return parts[1] if parts[0] == "autograder" and len(parts) > 2 else None


def problems(root):
    """Every way the layout at ``root`` breaks the boundary; empty when it holds."""
    graph = import_graph(root)
    found = [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    package_graph = {}
    for module, targets in graph.items():
        for target in targets:
            if package_of(module) and package_of(target) and package_of(module) != package_of(target):
                package_graph.setdefault(package_of(module), set()).add(package_of(target))
                if package_of(target) not in MAY_IMPORT[package_of(module)]:
                    found.append(f"{module} imports {target}: {package_of(module)} may import only "
                                 f"{sorted(MAY_IMPORT[package_of(module)]) or 'nothing of the grader'}")
    found += [f"package cycle: {' -> '.join(cycle)}" for cycle in cycles(package_graph)]
    jobs = ["autograder.sandbox.worker"] + [name for name in graph if name.startswith("autograder.units.")
                                            and name.endswith(".job")]
    for job in jobs:
        for target in sorted(reached(graph, job)):
            if target.startswith(JOB_FORBIDDEN) or (target.startswith("autograder.units.")
                                                    and (".cases" in target or target.endswith(".rubric"))):
                found.append(f"the job's {job} reaches {target}")
    for way in WAYS_IN:
        module = f"autograder.ways_in.{way}"
        if way == "cli" or module not in graph:  # the command line dispatches to each way in: that is its job
            continue
        others = {f"autograder.ways_in.{other}" for other in WAYS_IN if other != way}
        for target in sorted(reached(graph, module) & others):
            found.append(f"the way in {module} imports another, {target}")
    return found


def test_the_layout_has_every_package_and_no_flat_module_left():
    assert {path.name for path in (ROOT / "autograder").iterdir() if path.is_dir() and path.name != "__pycache__"} \
        == set(PACKAGES)
    assert sorted(path.name for path in (ROOT / "autograder").glob("*.py")) == ["__init__.py", "__main__.py"]


def test_the_import_graph_keeps_the_trust_boundary():
    assert problems(ROOT) == []


def test_the_graph_sees_what_the_job_imports():
    graph = import_graph(ROOT)
    assert reached(graph, "autograder.sandbox.worker") == set()  # the standard library and torch only
    assert "autograder.core.units" in reached(graph, "autograder.ways_in.cli")
    assert "autograder.sandbox.server" in graph["autograder.core.grade"]


@pytest.mark.parametrize("file, line, complaint", [
    ("autograder/sandbox/worker.py", "import solutions.positional_encodings", "the job's autograder.sandbox.worker reaches"),
    ("autograder/units/rotary_alibi/job.py", "from autograder.core import seeds", "the job's autograder.units.rotary_alibi.job reaches"),
    ("autograder/intake/load.py", "from autograder.sandbox import protocol", "intake may import only"),
    ("autograder/core/grade.py", "from autograder.ways_in import batch", "import cycle"),
    ("autograder/ways_in/prairielearn.py", "from autograder.ways_in import gradescope", "imports another"),
    ("autograder/sandbox/limits.py", "def later():\n    from autograder.core import rubric", "sandbox may import only"),
])
def test_a_forbidden_import_added_anywhere_is_found(tmp_path, file, line, complaint):
    copy = tmp_path / "kit"
    for top in ("autograder", "solutions"):
        shutil.copytree(ROOT / top, copy / top, ignore=shutil.ignore_patterns("__pycache__"))
    assert problems(copy) == []
    with open(copy / file, "a", encoding="utf-8") as handle:
        handle.write("\n" + line + "\n")
    assert any(complaint in problem for problem in problems(copy)), problems(copy)
