"""How long each unit's lesson notebook takes, top to bottom, part by part (issue 25, point 1: at most 60 s, or the
``LESSON_SECONDS`` its rubric sets: the third unit's experiment trains five models, issue 26: 150 s).

Runs each unit's nbgrader source notebook (the lesson with its answers: what a student's finished notebook runs) in
a real Jupyter kernel, cell by cell, in a copy of its folder, and prints the seconds of each part (a part starts at
a markdown cell whose first line is a level-2 heading) and the whole, with the torch threads the kernel started
with. The capstone's training runs as a student's run does, not its grading run's shortcut.

    python benchmarks/lesson_time.py                       # every unit
    python benchmarks/lesson_time.py --units rotary_alibi
    python benchmarks/lesson_time.py --quick               # POSITIONAL_KIT_QUICK=1: the capstone trains 3 steps
    python benchmarks/lesson_time.py --threads             # also: the capstone's training on 2 threads and on 1,
                                                           # on a quiet machine and beside one busy process

Why the capstone trains on one thread (capstone.one_thread): its models are tiny, and torch's pool of threads waits
for every thread at each operation, so one busy process beside it (a Jupyter server, a second kernel, nbgrader
grading the next notebook) makes two threads several times slower than one; on a quiet machine they are equal.

Needs the course extra (nbclient and ipykernel come with nbgrader). Builds the notebooks first.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LIMIT_SECONDS = 60.0  # the target for a whole notebook on a 2-core machine


def limit_of(unit):
    """A unit's limit in seconds: its rubric's ``LESSON_SECONDS`` where it sets one (a lesson whose experiment
    trains more), else ``LIMIT_SECONDS``."""
    return float(getattr(unit.rubric, "LESSON_SECONDS", LIMIT_SECONDS))


def _parts(notebook):
    """[(part title, [cell indices])]: the cells before the first level-2 heading are the part "start"."""
    parts = [("start", [])]
    for index, cell in enumerate(notebook.cells):
        first = cell.source.lstrip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "markdown" and first.startswith("## "):
            parts.append((first[3:].strip(), []))
        parts[-1][1].append(index)
    return [(title, cells) for title, cells in parts if cells]


def time_notebook(path, quick=False):
    """[(part title, seconds)] of running the notebook at ``path`` top to bottom in a kernel of this Python."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    environment = dict(os.environ, POSITIONAL_KIT_QUICK="1" if quick else "0")
    environment.pop("NBGRADER_EXECUTION", None)
    from jupyter_client.manager import AsyncKernelManager

    # Unix sockets in a folder of this run's, as nbgrader's kernel uses here: a TCP kernel would make ipykernel warn
    # that its traffic is not encrypted, a warning nobody running the benchmark can act on.
    # The client makes the manager (so that it also shuts the kernel down: one handed in is left running).
    sockets = tempfile.mkdtemp(prefix="lesson-kernel-")

    class IpcKernelManager(AsyncKernelManager):
        def __init__(self, **settings):
            super().__init__(**settings)
            self.transport, self.ip = "ipc", os.path.join(sockets, "kernel")

    client = NotebookClient(notebook, kernel_manager_class=IpcKernelManager, kernel_name="python3", timeout=900,
                            resources={"metadata": {"path": str(path.parent)}})
    figures = []
    try:
        with client.setup_kernel(env=environment, cwd=str(path.parent)):
            for title, cells in _parts(notebook):
                started = time.perf_counter()
                for index in cells:
                    client.execute_cell(notebook.cells[index], index)
                figures.append((title, time.perf_counter() - started))
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    return figures


def capstone_threads(steps=40):
    """[(threads, load, seconds)]: the first unit's comparison (shortened) with the reference, on 2 threads and on 1,
    with the machine quiet and then beside one busy process."""
    import subprocess

    import torch

    from autograder.units.positional_encodings import capstone
    from solutions import positional_encodings as reference

    train = capstone.compare.__wrapped__  # without its one_thread: the threads are set here
    figures = []
    for load in ("quiet", "one busy process"):
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load != "quiet" else None
        try:
            for threads in (2, 1):
                torch.set_num_threads(threads)
                started = time.perf_counter()
                train(reference, steps=steps, classifier_steps=steps, stories_count=600)
                figures.append((threads, load, time.perf_counter() - started))
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
    return figures


def main(argv=None):
    from autograder.core import units
    from autograder.course.build import build
    from autograder.course.notebook import notebook_name, source_folder

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--units", nargs="*", default=None, help="the units to run (default: every unit)")
    parser.add_argument("--quick", action="store_true", help="POSITIONAL_KIT_QUICK=1: the capstone trains 3 steps")
    parser.add_argument("--threads", action="store_true",
                        help="also time the capstone's training on 2 threads and on 1, quiet and beside a busy process")
    args = parser.parse_args(argv)
    chosen = args.units or units.names()
    build(chosen=chosen)
    import torch

    print(f"{os.cpu_count()} CPUs; torch {torch.__version__}, {torch.get_num_threads()} threads by default; "
          f"{'quick capstone' if args.quick else 'full capstone'}")
    totals, limits = {}, {}
    for name in chosen:
        unit = units.get(name)
        with tempfile.TemporaryDirectory(prefix=f"lesson-{name}-") as folder:
            copy = Path(folder) / name
            shutil.copytree(source_folder(unit), copy)
            figures = time_notebook(copy / notebook_name(unit), quick=args.quick)
        total = sum(seconds for _, seconds in figures)
        totals[name] = total
        limits[name] = limit_of(unit)
        print(f"\n{name}: {total:.1f} s in all ({'within' if total <= limits[name] else 'OVER'} "
              f"{limits[name]:g} s)")
        for title, seconds in figures:
            print(f"  {seconds:7.1f} s  {title[:90]}")
    print("\n" + "  ".join(f"{name} {seconds:.1f} s" for name, seconds in totals.items()))
    if args.threads:
        print("\nThe first unit's comparison, 40 steps (capstone.compare without its one_thread):")
        for threads, load, seconds in capstone_threads():
            print(f"  {threads} thread{'s' if threads > 1 else ' '}, {load:<16} {seconds:6.1f} s")
    return 0 if all(seconds <= limits[name] for name, seconds in totals.items()) else 1


if __name__ == "__main__":
    sys.exit(main())
