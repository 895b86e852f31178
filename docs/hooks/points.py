"""A unit page's points tables, written from its rubric at build time, so that no page copies them by hand.

A page holds a marker on a line of its own, and the build puts the table in its place:

* ``<!-- rubric tasks: UNIT -->``: one row per task (its ``pytest -k`` word, its functions, its points, the sum of
  its tests'), then the timing tier (its timed tests and their points);
* ``<!-- rubric tests: UNIT -->``: one row per test, as the rubric declares it (its id, its points, what it
  checks, and the test it needs where it has one).

UNIT is a unit's name (``autograder/units/UNIT/rubric.py``). A marker that names no unit fails the build.
"""

import re

from autograder.core import units

_MARKER = re.compile(r"^<!-- rubric (?P<kind>tasks|tests): (?P<unit>\w+) -->[ \t]*$", re.MULTILINE)


def _cell(text):
    """Text for a table cell: a pipe would end the cell."""
    return str(text).replace("|", "\\|")


def tasks_table(rubric):
    rows = ["| task (`pytest -k` word) | function | points |", "| --- | --- | --- |"]
    for task in rubric.TASKS:
        points = sum(test.points for test in rubric.tests_of(task.name))
        functions = ", ".join(f"`{name}`" for name in task.functions)
        rows.append(f"| `{task.name}` | {_cell(functions)} | {points:g} |")
    timed = rubric.tests_of("timing")
    if timed:
        paths = ", ".join(f"`{test.id}`" for test in timed)
        rows.append(f"| timing tier | the timed paths: {paths} | {sum(test.points for test in timed):g} |")
    return "\n".join(rows)


def tests_table(rubric):
    rows = ["| test | points | what it checks |", "| --- | --- | --- |"]
    for test in rubric.TESTS:
        needs = f" (only once `{test.needs}` passes)" if test.needs and test.needs not in test.checks else ""
        rows.append(f"| `{test.id}` | {test.points:g} | {_cell(test.checks)}{needs} |")
    return "\n".join(rows)


def on_page_markdown(markdown, page, config, files):
    def table(match):
        try:
            rubric = units.get(match.group("unit")).rubric
        except KeyError as error:
            raise ValueError(f"{page.file.src_uri}: {error}") from None
        return tasks_table(rubric) if match.group("kind") == "tasks" else tests_table(rubric)

    return _MARKER.sub(table, markdown)
