"""What the command line and the guides say: every command's --help gives each flag and positional a line of its
own, in plain words; the student guide covers every unit, the instructor guide every unit and every command; the
package's description names every unit.

The commands are read from `python -m autograder --help` itself, and each from its own `--help`, so that a command
or a flag added later is held to the same rule.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.core import units

ROOT = Path(__file__).resolve().parents[2]


def _help(*command):
    shown = subprocess.run([sys.executable, "-m", "autograder", *command, "--help"], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    return shown.stdout


def _commands():
    listed = _help().split("\ncommands:", 1)[1]
    return [line.split()[0] for line in listed.splitlines() if line.startswith("    ") and line.split()]


COMMANDS = _commands()


def entries(text):
    """{invocation: help text} of every option and positional a --help lists (argparse's layout: an entry starts
    two spaces in, its help follows after two spaces or more, or on the lines below, indented further)."""
    found, current = {}, None
    section = False
    for line in text.splitlines():
        if re.fullmatch(r"[A-Za-z][\w ]*:", line):  # "options:", "positional arguments:", "commands:"
            section, current = True, None
            continue
        if not section or not line.strip():
            continue
        if re.match(r"  \S", line):
            current, _, said = line.strip().partition("  ")
            found[current] = said.strip()
        elif current and line.startswith("    "):
            found[current] = (found[current] + " " + line.strip()).strip()
    return found


def test_the_list_of_commands_is_read_from_the_help():
    assert {"grade", "demo", "capstone", "build", "release", "new-unit", "check-unit", "lms-export",
            "similarity"} <= set(COMMANDS)


def test_the_top_level_help_is_plain_text():
    shown = _help()
    assert "``" not in shown and not re.search(r"`[^`\s]+`", shown), shown
    assert "python -m autograder COMMAND" in shown


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_and_positional_of_every_command_has_a_help_line(command):
    shown = _help(command)
    assert "``" not in shown, shown  # no reST left in what a terminal shows
    listed = entries(shown)
    usage = shown.split("\n\n", 1)[0]
    flags = set(re.findall(r"\[?(--[a-z][\w-]*)", usage))
    described = {flag for invocation in listed for flag in re.findall(r"--[a-z][\w-]*", invocation)}
    assert flags <= described | {"--help"}, (flags - described, shown)  # every flag of the usage is listed
    missing = [invocation for invocation, said in listed.items() if not said]
    assert not missing, f"{command}: no help for {missing}\n{shown}"


def test_the_entries_parser_sees_a_missing_help():
    """The check above can fail: an entry with no help, as argparse prints it, is found."""
    shown = "usage: x [-h] PATH\n\npositional arguments:\n  PATH\n\noptions:\n  -h, --help  show this help\n"
    assert entries(shown) == {"PATH": "", "-h, --help": "show this help"}


def test_each_commands_unit_flag_says_what_it_means_there():
    helps = {command: said for command in COMMANDS for invocation, said in entries(_help(command)).items()
             if invocation.startswith("--unit")}
    assert {"grade", "demo", "capstone", "release", "gradescope-bundle", "similarity"} <= set(helps)
    assert "demo" in helps["demo"] or "sample class" in helps["demo"], helps["demo"]
    assert "experiment" in helps["capstone"] and "release" in helps["release"]
    # no two commands share one copied line: --unit is the submissions' unit in one, the sample's or the
    # experiment's in another
    assert len(set(helps.values())) == len(helps), helps


@pytest.mark.parametrize("command, flag, words", [
    ("grade", "PATH", ("submission", "folder")), ("capstone", "--seed", ("seed", "same")),
    ("capstone", "--longer", ("longer", "trained")),
])
def test_the_flags_that_had_no_usable_help_say_what_they_do(command, flag, words):
    said = next(said for invocation, said in entries(_help(command)).items() if invocation.split()[0] == flag)
    assert all(word in said for word in words), said
    assert "first unit" not in said and "second unit" not in said  # a unit's place is no description


# --- the guides -------------------------------------------------------------------------------------------------

def _page(name):
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("command", COMMANDS)
def test_the_instructor_guide_shows_every_command(command):
    assert re.search(rf"python -m autograder {re.escape(command)}\b", _page("instructors.md")), command


@pytest.mark.parametrize("page", ["students.md", "instructors.md"])
def test_the_guides_cover_every_unit(page):
    text = _page(page)
    for unit in units.all_units():
        assert f"`{unit.name}" in text and f"units/{unit.name}.md" in text, (page, unit.name)


def test_the_instructor_guide_says_nothing_will_be_described_later():
    assert not re.search(r"\bwill describe\b", _page("instructors.md"))


def test_the_package_description_names_every_unit():
    toml = pytest.importorskip("tomllib", reason="Python 3.10 has no tomllib")
    description = toml.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["description"]
    for unit in units.all_units():
        assert unit.rubric.TITLE.lower() in description.lower(), (unit.rubric.TITLE, description)
