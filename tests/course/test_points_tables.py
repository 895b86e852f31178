"""Each unit page's points tables are written from its rubric when the site is built (issue 38, point 5): no page
copies them by hand, and what the build writes holds every test with its points, the tasks summing to the unit's
total."""

import importlib.util
import re
from pathlib import Path

import pytest

from autograder.core import units

ROOT = Path(__file__).resolve().parents[2]


def _hook():
    spec = importlib.util.spec_from_file_location("docs_points_hook", ROOT / "docs" / "hooks" / "points.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _unit_names():
    return sorted(path.parent.name for path in (ROOT / "autograder" / "units").glob("*/rubric.py"))


class _Page:
    def __init__(self, name):
        self.file = type("File", (), {"src_uri": f"units/{name}.md"})()


def _rows(table):
    """The body rows of a Markdown table, as lists of cells (a ``\\|`` inside a cell kept in it)."""
    lines = table.splitlines()[2:]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]


@pytest.mark.parametrize("name", _unit_names())
def test_a_unit_page_holds_the_markers_and_no_table_of_points_by_hand(name):
    page = (ROOT / "docs" / "units" / f"{name}.md").read_text(encoding="utf-8")
    assert f"<!-- rubric tasks: {name} -->" in page and f"<!-- rubric tests: {name} -->" in page
    assert "| test | points |" not in page and "| task (`pytest -k` word) |" not in page


@pytest.mark.parametrize("name", _unit_names())
def test_the_tables_the_build_writes_are_the_rubric_s(name):
    rubric = units.get(name).rubric
    page = (ROOT / "docs" / "units" / f"{name}.md").read_text(encoding="utf-8")
    built = _hook().on_page_markdown(page, _Page(name), None, None)
    assert "<!-- rubric" not in built
    tables = [block for block in built.split("\n\n") if block.startswith("| ")]
    tasks = next(table for table in tables if table.startswith("| task"))
    tests = next(table for table in tables if table.startswith("| test |"))
    # Every task once, then the timing tier; their points are the unit's total (100: rubric.py says so too).
    task_rows = _rows(tasks)
    assert [row[0].strip("`") for row in task_rows[:len(rubric.TASKS)]] == [task.name for task in rubric.TASKS]
    assert sum(float(row[2]) for row in task_rows) == rubric.MAX_SCORE == 100
    # Every test once, in the rubric's order, with its points and its words.
    test_rows = _rows(tests)
    assert [row[0].strip("`") for row in test_rows] == [test.id for test in rubric.TESTS]
    for row, test in zip(test_rows, rubric.TESTS):
        assert float(row[1]) == test.points, (test.id, row)
        assert row[2].replace("\\|", "|").startswith(test.checks), (test.id, row)


def test_a_marker_that_names_no_unit_fails_the_build():
    with pytest.raises(ValueError, match="no_such_unit"):
        _hook().on_page_markdown("<!-- rubric tests: no_such_unit -->\n", _Page("no_such_unit"), None, None)
