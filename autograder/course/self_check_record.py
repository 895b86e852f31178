"""A pytest plugin the build loads (``-p``) to run a unit's self-checks on its reference and write down each call
they make of a graded function: the calls ``known_mistakes.json`` is made for (autograder/course/mistake_table.py).
Instructor-only: it is never copied into a student folder.

The self-checks' conftest keeps each check's calls (``_calls``: name, fingerprint, args, kwargs, returned); this
plugin takes them after each check, and at the end saves {check: calls} and the checks that failed to the file named
by the environment's ``KNOWN_MISTAKES_RECORD``.
"""

import os

import torch

_recorded, _failed = {}, []


def _conftest(config):
    return next(plugin for plugin in config.pluginmanager.get_plugins()
                if hasattr(plugin, "_calls") and hasattr(plugin, "named_mistakes"))


def pytest_runtest_teardown(item):
    calls = _conftest(item.config)._calls
    if calls:
        _recorded[item.nodeid] = [tuple(call) for call in calls]


def pytest_runtest_logreport(report):
    if report.failed:
        _failed.append(report.nodeid)


def pytest_sessionfinish(session):
    torch.save({"calls": _recorded, "failed": _failed}, os.environ["KNOWN_MISTAKES_RECORD"])
