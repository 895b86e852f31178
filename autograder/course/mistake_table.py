"""The self-checks' table of known mistakes: ``known_mistakes.json`` in each student folder. Instructor-only.

A task's known mistakes are declared once, in its cases module (``autograder/units/<unit>/cases/<task>.py``): each a
``Mistake``, the words the grade says and the output it gives at a call's inputs. The hidden cases name them at the
hidden inputs; ``check_at(args, kwargs)``, where the module has it, gives the same check (and so the same mistakes)
at any call's inputs. This module runs the unit's self-checks on its reference, writes down every call they make of
a graded function (``self_check_record.py``) and, for each, stores what each declared mistake returns there, where
that differs from the right output. The student's conftest compares what their function returned with those outputs
and names a mistake that explains them in the grade's own words.

So a student receives the mistakes' words and their outputs on the self-checks' own inputs only: never a hidden
input (the calls are those of the released checks), never the reference's code, never the right output (a mistake
whose output is right on a call is left out, and nothing else is stored).

Running the checks takes seconds a unit, so the table is kept in ``assignments/.known_mistakes/``, under a digest of
everything it is made from; a build with nothing changed reads it from there.
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILE_NAME = "known_mistakes.json"
CACHE = ROOT / "assignments" / ".known_mistakes"
# What the table is made from, besides the unit's student files: the grader's code and every reference and unit.
SOURCES = ("autograder/core", "autograder/course", "autograder/units", "solutions")


def _digest(unit, files):
    from importlib.metadata import version

    digest = hashlib.sha256(f"{sys.version} torch {version('torch')}".encode())  # the outputs are torch's
    for name, text in sorted(files.items()):
        digest.update(f"{name}\0{text}\0".encode())
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            digest.update(f"{path.relative_to(ROOT)}\0".encode() + path.read_bytes())
    return digest.hexdigest()[:20]


def table_text(unit, files):
    """The text of ``known_mistakes.json`` for ``unit``, whose student folder holds ``files`` ({name: text}: the
    self-checks, their conftest and the modules they import; the student's own module is the finished reference)."""
    cached = CACHE / f"{unit.name}-{_digest(unit, files)}.json"
    if cached.is_file():
        return cached.read_text(encoding="utf-8")
    named = any(hasattr(unit.cases_module(task), "check_at") for task in unit.rubric.TASK_NAMES)
    made = table(unit, recorded_calls(unit, files)) if named else {}  # a unit that declares none: nothing to run
    text = json.dumps(made, sort_keys=True, separators=(",", ":")) + "\n"
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f".{cached.name}.{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, cached)
    for stale in CACHE.glob(f"{unit.name}-*.json"):  # made from sources as they were before: never read again
        if stale != cached:
            stale.unlink(missing_ok=True)
    return text


def recorded_calls(unit, files):
    """{check: [(function, fingerprint, args, kwargs, returned), ...]}: every call of a graded function that the
    unit's self-checks make, run on its finished reference. A check that fails there is left out (check-unit says
    so, in its own words); raises only where pytest could not run at all."""
    import torch

    with tempfile.TemporaryDirectory(prefix=f"known-mistakes-{unit.name}-") as folder:
        folder = Path(folder)
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        (folder / f"{unit.module_name}.py").write_text(unit.finished_reference, encoding="utf-8")
        record = folder / "record.pt"
        environment = dict(os.environ, KNOWN_MISTAKES_RECORD=str(record), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
                           PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p",
                              "autograder.course.self_check_record"], cwd=folder, env=environment,
                             capture_output=True, text=True, timeout=600)
        if not record.is_file():
            raise RuntimeError(f"the self-checks of {unit.name} did not run on its reference:\n{run.stdout[-3000:]}"
                               f"\n{run.stderr[-2000:]}")
        made = torch.load(record, weights_only=False)
    return {check: calls for check, calls in made["calls"].items() if check not in made["failed"]}


def _stored(output):
    """A tensor as the table keeps it: its shape and values, those of a float32 or half tensor to 9 digits (enough
    to give back the same float32 value, and half the text of a float64's 17)."""
    import torch

    values = output.detach().double().flatten().tolist()
    if output.dtype in (torch.float32, torch.float16, torch.bfloat16):
        values = [float(f"{value:.9g}") for value in values]
    return {"shape": list(output.shape), "values": values}


def _tolerance(value):
    """A check's atol or rtol as the table keeps it: a number, or a tensor of them (a half-precision check's)."""
    return _stored(value) if hasattr(value, "shape") and value.dim() else float(value)


def known_at(unit, name, args, kwargs):
    """(check, [Mistake, ...]) of a call of ``unit``'s function ``name``: its task's check at these inputs and the
    declared mistakes there; (None, []) where the task has no ``check_at`` or the call is one the reference refuses."""
    task = unit.rubric.TASK_OF_FUNCTION.get(name)
    check_at = getattr(unit.cases_module(task), "check_at", None) if task else None
    if check_at is None:
        return None, []
    try:
        check = check_at(list(args), dict(kwargs))
    except Exception:  # noqa: BLE001  (an invalid call: the reference raises, and no mistake is about its value)
        return None, []
    return check, list(getattr(check, "mistakes", ()))


def table(unit, calls):
    """{check: [{function, arguments, label, atol, rtol, mistakes: [[words, [output, ...]]]}]}: for each call, the
    declared mistakes whose output there is not the right one."""
    import torch

    from autograder.core.cases import call_label
    from autograder.core.compare import mismatch

    found = {}
    for check_id, made in sorted(calls.items()):
        entries = []
        for name, arguments, args, kwargs, _ in made:
            check, mistakes = known_at(unit, name, args, kwargs)
            listed = {}
            expected = getattr(check, "expected", None)
            for mistake in mistakes:
                try:
                    output = mistake.output()
                except Exception:  # noqa: BLE001  (a mistake that cannot be made at these inputs)
                    continue
                if not (isinstance(output, torch.Tensor) and isinstance(expected, torch.Tensor)
                        and output.device.type == "cpu" == expected.device.type):
                    continue
                if output.shape == expected.shape and mismatch(output.to(expected.dtype), expected, atol=check.atol,
                                                               rtol=check.rtol, check_dtype=False) is None:
                    continue  # right at these inputs: it explains nothing here
                # Two mistakes may share their words (made through a helper's stand-in, or computed in place)
                listed.setdefault(mistake.explain, []).append(_stored(output))
            # The tolerances, where outputs are listed to be compared under them: a call that lists none (one on the
            # meta device, whose tolerance per entry has no values to read) keeps None.
            entries.append({"function": name, "arguments": arguments, "label": call_label(name, args, kwargs),
                            "atol": _tolerance(getattr(check, "atol", 0.0)) if listed else None,
                            "rtol": _tolerance(getattr(check, "rtol", 0.0)) if listed else None,
                            "mistakes": [[words, outputs] for words, outputs in listed.items()]})
        if any(entry["mistakes"] for entry in entries):
            found[check_id] = entries
    return found
