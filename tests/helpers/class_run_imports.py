"""``python tests/helpers/class_run_imports.py GRADE-ARGUMENTS...``: a class run (``python -m autograder grade ...``) in this
process, from a fresh interpreter, listing each module imported while a thread besides the main one is alive.

Prints, as the last line of stdout, JSON: {"status": the command's exit status, "late": [[module, importing thread,
[the other threads alive]], ...]}. The audit hook ("import" events are raised where a module is loaded, not where
one already loaded is looked up) is installed before the kit is imported, so nothing escapes it.
"""

import json
import sys
import threading

late = []


def _hook(event, args):
    if event == "import":
        others = [thread.name for thread in threading.enumerate() if thread is not threading.main_thread()]
        if others:
            late.append([str(args[0]), threading.current_thread().name, others])


sys.addaudithook(_hook)

from autograder.ways_in import cli  # noqa: E402  (after the hook, so that every import is seen)

try:
    status = cli.main(["grade", *sys.argv[1:]])
except SystemExit as stop:
    status = stop.code
print(json.dumps({"status": status, "late": late}))
