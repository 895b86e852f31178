"""Every parse the grader makes while it grades goes through one lock (loop_check.parse): CPython's ast.parse keeps
one depth count for the whole interpreter, and a parse beside another thread's can raise SystemError in either
(gh-106905). A class is graded in threads, and the error model (core/mutants.py) builds a task's mutants in the
thread that first needs them, beside the other threads' loop checks and recognitions: a parse of its own outside
the lock made a whole submission a grader fault now and then.
"""

import gc
import threading
import time

from autograder.core import mutants, units
from autograder.core.loop_check import findings

UNIT = units.get("positional_encodings")
SHAW_PATH = ("shaw_scores",)


class _GilReleasingGarbage:
    """A cycle whose collection runs Python code that lets another thread in, as a grader's closed files and
    finished processes may when the collector runs in the middle of a parse."""

    def __init__(self):
        self.me = self

    def __del__(self):
        time.sleep(0.0001)


def test_the_error_model_builds_its_mutants_beside_other_threads_parses_without_failing_either():
    text = UNIT.finished_reference
    expected = findings(text, SHAW_PATH)
    counts = {}
    failures = []

    def build(task):
        for _ in range(6):
            for _ in range(3):
                _GilReleasingGarbage()
            try:
                mutants._mutants_cached.cache_clear()
                counts.setdefault(task, set()).add(len(mutants.mutants(UNIT, task)))
            except Exception as error:  # noqa: BLE001 -- what a grading thread would have died of
                failures.append(f"building {task}'s mutants: {error!r}")

    def check(number):
        for repeat in range(40):
            for _ in range(3):
                _GilReleasingGarbage()
            try:  # a text of its own each time: the check keeps the programs it read
                assert findings(f"{text}\n# {number}.{repeat}\n", SHAW_PATH) == expected
            except Exception as error:  # noqa: BLE001
                failures.append(f"the loop check: {error!r}")

    thresholds = gc.get_threshold()
    gc.set_threshold(100, 10, 10)
    try:
        threads = ([threading.Thread(target=build, args=(task,)) for task in ("shaw", "learned")]
                   + [threading.Thread(target=check, args=(number,)) for number in range(2)])
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.set_threshold(*thresholds)
        mutants._mutants_cached.cache_clear()
    assert failures == []
    assert all(len(sizes) == 1 and min(sizes) > 0 for sizes in counts.values()), counts  # the same mutants each time
