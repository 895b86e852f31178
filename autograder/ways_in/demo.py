"""The sample class of a unit: the reference, the blank stubs and a dozen one-mistake submissions.

Each wrong submission is the reference with one line changed, written out at
demo time; no second copy of any answer is kept. The changes are the unit's
``samples.py`` (``MISTAKES``). A test checks that every change still applies to
the reference, so the samples cannot drift from it.
"""

import importlib
import shutil
from pathlib import Path

from autograder.core import units
from autograder.core.report import wrap
from autograder.core.rubric import SampleMistake  # noqa: F401  (a unit's samples.py declares them)
from autograder.course.build import make_stub


def mistakes_of(unit):
    """The unit's sample mistakes (its samples.py), or () where it has none."""
    try:
        return importlib.import_module(f"{unit.package}.samples").MISTAKES
    except ModuleNotFoundError:
        return ()


def introduction(unit, mistakes, width=None):
    """What the demo says before it grades: which unit's sample class, what is in it, and how to pick another;
    wrapped to ``width`` columns (the terminal's by default)."""
    others = [name for name in units.names() if name != unit.name]
    held = (f"the reference, the blank stubs and {mistakes} submissions with one typical mistake each" if mistakes
            else "the reference and the blank stubs (this unit declares no sample mistakes)")
    text = (f"Grading the sample class of the unit {unit.name} ({unit.title}): {held}."
            + (f" Another unit's: --unit {' or --unit '.join(others)}." if others else ""))
    return "\n".join(wrap(text, width or shutil.get_terminal_size().columns))


def apply(mistake, reference_text):
    if reference_text.count(mistake.old) != 1:
        raise ValueError(f"sample {mistake.name}: {mistake.old!r} is not found exactly once in the reference")
    return reference_text.replace(mistake.old, mistake.new)


def write_class(folder, unit):
    """Write the unit's sample class into ``folder``; returns the submission paths, reference first."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    source = unit.reference_path.read_text(encoding="utf-8")
    finished = unit.finished_reference  # markers gone, and the code it borrows from another unit written in
    files = {"reference": finished, "blank_stubs": make_stub(source, unit)}
    files.update({mistake.name: apply(mistake, finished) for mistake in mistakes_of(unit)})
    paths = []
    for name, text in files.items():
        path = folder / f"{name}.py"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths
