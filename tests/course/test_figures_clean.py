"""Every picture of every lesson is drawn cleanly, whatever the student's functions do (issue 25, point 2).

Each unit's nbgrader source notebook (built from its lesson.py) is run cell by cell, without its graded cells, in
a process of its own with matplotlib's Agg backend, as a kernel shows it: what ``plt.show()`` draws, and what a
cell leaves open when it ends (the inline backend draws that too, even after an error). It runs several ways:

* ``reference``: the answers, with POSITIONAL_KIT_QUICK=1 (the capstone trains 3 steps, so its curves exist);
* ``grading``: the answers, as nbgrader's autograde runs them (NBGRADER_EXECUTION=autograde: nothing trained);
* ``blank``: every function still a stub, as autograde runs the release handed back untouched;
* ``without <task>``: one task a stub, the rest answered: a submission with one failing task.

Every figure shown must have axes (no "<Figure size ... with 0 Axes>"), data in each of its plots (not only a
dashed line, or nothing), its titles and legends and every other text inside the figure and titles apart from
each other, and text no smaller than 7 pt when the figure is shown at a notebook's width (8 in); no cell may
print a warning or anything on stderr. A cell that raises must leave no figure behind: the inline backend would
show it empty, or half drawn, under the error.
"""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from autograder.core import units
from autograder.course.notebook import notebook_name, source_folder, grade_id as _grade_id

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_WIDTH_INCHES = 8.0  # a notebook's output column, about 800 px at matplotlib's 100 dpi
SMALLEST_POINTS = 7.0  # the smallest text that reads at that width
UNITS = [unit for unit in units.all_units() if unit.lesson_path.is_file()]  # a unit with a lesson has a notebook


# --------------------------------------------------------------------------------------------------------------
# What runs in the child process (``python tests/course/test_figures_clean.py FOLDER NOTEBOOK UNIT``).



def _drawn_in_data(artist, axis):
    """Whether ``artist`` shows data: a dashed line or a shaded span across the axes (axvline, axvspan) does not."""
    import matplotlib.transforms as transforms

    return not isinstance(artist.get_transform(), (transforms.BlendedGenericTransform, transforms.BlendedAffine2D))


def figure_problems(figure):
    """What is wrong with ``figure`` as shown in a notebook: [sentence]."""
    import matplotlib.text

    if not figure.axes:
        return ["a figure with no axes: the notebook shows '<Figure size ... with 0 Axes>'"]
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    width, height = figure.get_size_inches()
    problems = []
    for axis in figure.axes:
        if getattr(axis, "_colorbar", None) is not None or not axis.get_visible():
            continue
        artists = [*axis.images, *axis.lines, *axis.patches, *axis.collections]
        if not any(_drawn_in_data(artist, axis) for artist in artists):
            problems.append(f"an empty plot: {axis.get_title()!r} has nothing drawn from data")
    tight = figure.get_tightbbox(renderer)  # in inches: everything drawn
    slack = 0.02
    if tight.x0 < -slack or tight.y0 < -slack or tight.x1 > width + slack or tight.y1 > height + slack:
        problems.append(f"text or a legend outside the figure: drawn in {tuple(round(v, 2) for v in tight.extents)}, "
                        f"the figure is {width:g} x {height:g} in")
    box = figure.bbox
    labelled = [(f"the title {axis.get_title()!r}", axis.title) for axis in figure.axes if axis.get_title()]
    labelled += [(f"the legend of {axis.get_title()!r}", axis.get_legend())
                 for axis in figure.axes if axis.get_legend()]
    labelled += [("a figure legend", legend) for legend in figure.legends]
    if figure._suptitle is not None:
        labelled.append((f"the title {figure._suptitle.get_text()!r}", figure._suptitle))
    extents = {}
    for name, artist in labelled:
        extent = artist.get_window_extent(renderer)
        extents[name] = extent
        if extent.x0 < box.x0 - 1 or extent.y0 < box.y0 - 1 or extent.x1 > box.x1 + 1 or extent.y1 > box.y1 + 1:
            problems.append(f"{name} is clipped: it reaches outside the figure")
    titles = [(name, extent) for name, extent in extents.items() if name.startswith("the title")]
    for at, (name, extent) in enumerate(titles):
        problems += [f"{name} runs into {other}" for other, beside in titles[at + 1:] if extent.overlaps(beside)]
    sizes = [text.get_fontsize() for text in figure.findobj(matplotlib.text.Text)
             if text.get_visible() and text.get_text().strip()]
    shown = min(sizes) * min(1.0, NOTEBOOK_WIDTH_INCHES / width)
    if shown < SMALLEST_POINTS:
        problems.append(f"text of {shown:.1f} pt at a notebook's width: the figure is {width:g} in wide and its "
                        f"smallest text {min(sizes):g} pt")
    return problems


def _run_variant(cells, namespace_env, replaced):
    """Run ``cells`` (the notebook's code cells, graded ones left out) with ``replaced`` ({grade id: source});
    returns {"figures": count, "problems": [(cell, sentence)], "errors": [(cell, exception)]}."""
    import matplotlib.pyplot as plt

    os.environ.pop("NBGRADER_EXECUTION", None)
    os.environ.pop("POSITIONAL_KIT_QUICK", None)
    os.environ.update(namespace_env)
    report = {"figures": 0, "problems": [], "errors": []}
    current = {"cell": None}

    def shown(*args, **kwargs):  # the inline backend's show: every open figure drawn, then closed
        for number in plt.get_fignums():
            report["figures"] += 1
            report["problems"] += [(current["cell"], problem) for problem in figure_problems(plt.figure(number))]
        plt.close("all")

    plt.show = shown
    namespace = {"__name__": "__main__"}
    for index, cell in enumerate(cells):
        name = current["cell"] = _grade_id(cell) or f"cell {index}"
        source = replaced.get(_grade_id(cell), cell["source"])
        source = "".join(source) if isinstance(source, list) else source
        errors = io.StringIO()
        failed = None
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(errors), \
                contextlib.redirect_stdout(io.StringIO()):
            # What a kernel shows: every warning once per place, a deprecation only where the cell's own code
            # meets it (ipykernel's filter for __main__), not one from inside numpy or torch.
            warnings.simplefilter("default")
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
            warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
            try:
                exec(compile(source, f"<{name}>", "exec"), namespace)
            except Exception as error:  # noqa: BLE001  (a stub raises; nbgrader runs on, and so does this)
                failed = f"{type(error).__name__}: {error}"
        if failed:
            report["errors"].append((name, failed))
            if plt.get_fignums():
                report["problems"].append((name, f"a figure is left open by the error ({failed}): the notebook "
                                                 "shows it empty or half drawn under the error"))
                plt.close("all")
        elif plt.get_fignums():  # shown at the end of the cell by the inline backend
            shown()
        report["problems"] += [(name, f"a warning: {warning.category.__name__}: {warning.message}")
                               for warning in caught]
        if errors.getvalue().strip():
            report["problems"].append((name, f"stderr: {errors.getvalue().strip()[:300]}"))
    return report


def main(folder, notebook, unit_name):
    """Run every variant of the notebook in ``folder``; print {variant: report} as JSON."""
    import matplotlib

    matplotlib.use("Agg")
    from autograder.course.build import make_stub
    from autograder.course.notebook import function_source

    unit = units.get(unit_name)
    os.chdir(folder)
    sys.path.insert(0, folder)  # checks.py and capstone.py, as beside the notebook
    cells = [cell for cell in json.loads(Path(notebook).read_text())["cells"] if cell["cell_type"] == "code"
             and not ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade")]
    stub = make_stub(unit.reference_path.read_text(encoding="utf-8"), unit)
    functions = [_grade_id(cell) for cell in cells
                 if ((cell.get("metadata") or {}).get("nbgrader") or {}).get("solution")]
    stubs = {function: function_source(stub, function) for function in functions}
    grading = {"NBGRADER_EXECUTION": "autograde"}
    variants = {"reference": ({"POSITIONAL_KIT_QUICK": "1"}, {}), "grading": (grading, {}), "blank": (grading, stubs)}
    for task in unit.rubric.TASK_NAMES:
        variants[f"without {task}"] = (grading, {function: stubs[function] for function in functions
                                                 if unit.rubric.TASK_OF_FUNCTION.get(function) == task})
    print(json.dumps({name: _run_variant(cells, env, replaced) for name, (env, replaced) in variants.items()}))


# --------------------------------------------------------------------------------------------------------------
# The tests.

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{unit name: {variant: report}}, each unit's notebook run in a process of its own, the units side by side."""
    processes = {}
    for unit in UNITS:
        folder = tmp_path_factory.mktemp(unit.name) / unit.name
        shutil.copytree(source_folder(unit), folder)
        environment = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
        processes[unit.name] = subprocess.Popen(
            [sys.executable, __file__, str(folder), str(folder / notebook_name(unit)), unit.name], cwd=folder,
            env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found = {}
    for name, process in processes.items():
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-3000:]
        found[name] = json.loads(out.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("unit", [unit.name for unit in UNITS])
def test_every_figure_of_the_lesson_is_drawn_cleanly_whatever_the_answers(runs, unit):
    problems = [f"{variant}, {cell}: {problem}" for variant, report in runs[unit].items()
                for cell, problem in report["problems"]]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("unit", [unit.name for unit in UNITS])
def test_the_lesson_runs_and_draws_with_the_answers(runs, unit):
    # The checks above looked at real figures: with the answers no cell fails and every picture is drawn, and
    # the grading run draws all but the capstone's curves.
    reference, grading = runs[unit]["reference"], runs[unit]["grading"]
    assert reference["errors"] == [] and grading["errors"] == [], (reference["errors"], grading["errors"])
    assert reference["figures"] >= 6 and grading["figures"] >= reference["figures"] - 3, (reference, grading)


@pytest.mark.parametrize("unit", [unit.name for unit in UNITS])
def test_every_variant_without_a_task_reaches_its_stub(runs, unit):
    # The clean pictures above are not for want of trying: each variant without a task raised somewhere (its stub
    # was reached), and drew no more pictures than the answers did.
    for variant, report in runs[unit].items():
        if variant.startswith("without ") or variant == "blank":
            assert report["errors"], variant
            assert report["figures"] <= runs[unit]["grading"]["figures"], variant


def test_the_checks_catch_what_they_are_for():
    # An empty figure, a plot with only a dashed line, a title pushed out of its figure, a figure too wide for
    # its small text: each is named.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        assert "0 Axes" in figure_problems(plt.figure())[0]
        figure, axis = plt.subplots()
        axis.axvline(3, linestyle="--", label="trained up to here")
        assert any("empty plot" in problem for problem in figure_problems(figure))
        figure, axis = plt.subplots(figsize=(4, 3))
        axis.plot([0, 1])
        axis.set_title("a title far too long to fit in a figure four inches wide, so it is clipped")
        assert any("clipped" in problem for problem in figure_problems(figure))
        figure, axes = plt.subplots(1, 4, figsize=(14, 3))
        for axis in axes:
            axis.plot([0, 1])
        assert any("at a notebook's width" in problem for problem in figure_problems(figure))
        figure, axis = plt.subplots(layout="constrained", figsize=(6, 3))
        axis.plot([0, 1], label="a line")
        axis.set_title("fine")
        axis.legend()
        assert figure_problems(figure) == []
    finally:
        plt.close("all")


if __name__ == "__main__":
    main(*sys.argv[1:4])
