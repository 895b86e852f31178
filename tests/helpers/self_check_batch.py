"""Runs ``pytest -k TASK`` in many student folders from one process, as a student runs it in each: the driver of
tests/course/test_self_checks_name_mistakes.py.

Each run is pytest's own (``pytest.main``, the folder's conftest and checks, its output as the terminal shows it);
only the import of torch and the kit is shared. Between runs the modules loaded from the last folder (its conftest,
checks, notebook loader, the submission) are forgotten and the working folder and path put back, so no run sees
another's.

    python tests/helpers/self_check_batch.py RUNS.json

RUNS.json lists [folder, task, output file]; each run's output goes to its file, and its exit code to the file's
name with ``.rc`` added.
"""

import contextlib
import json
import os
import sys
from pathlib import Path


def _forget(folder):
    """Drop every module loaded from ``folder``, so the next run imports its own."""
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().is_relative_to(folder):
            del sys.modules[name]


def main(runs_file):
    import pytest
    import torch  # noqa: F401  (imported once, for every run)

    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    start_dir, start_path = os.getcwd(), list(sys.path)
    for folder, task, output in json.loads(Path(runs_file).read_text(encoding="utf-8")):
        folder = Path(folder).resolve()
        os.chdir(folder)
        with open(output, "w", encoding="utf-8") as out, contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(out):
            try:
                code = int(pytest.main(["-p", "no:cacheprovider", "-k", task]))
            except BaseException as error:  # noqa: BLE001  (a run that breaks is reported, and the next runs)
                print(f"the run raised {error!r}")
                code = 99
        Path(output + ".rc").write_text(str(code), encoding="utf-8")
        _forget(folder)
        os.chdir(start_dir)
        sys.path[:] = start_path


if __name__ == "__main__":
    main(sys.argv[1])
