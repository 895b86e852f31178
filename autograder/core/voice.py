"""Whose words are whose: the grader's verdict and diagnosis as typed parts, the student's text as quoted data.

A test's feedback mixes two voices. The grader's: what failed, the mistake it names, how and when the output goes
wrong. The student's: the message of an exception their code raised, the name of its class, what it printed.
A job runs the student's code, so every string it sends back is the student's, whatever it claims to be; and
while a hidden case runs, that string may quote the hidden case's inputs.

So the two are kept apart twice:

* **As data.** A ``TestResult`` carries its ``kind`` (what the grader decided), its ``diagnosis``
  (``Diagnosis``: the named mistakes, the relation, the condition, the sizes an error quotes, the first wrong
  index) and the student's ``error`` (``StudentError``) as fields. Every reader that needs the grader's parts
  (the class table's headline, the class summary, the feedback pages' "what to look at", the platforms'
  entries shown before release) takes them from these fields, never by reading the rendered text.
* **As text.** Where the student's text is shown at all, it is ``quote``-d: on one line, in quotes, every
  newline, carriage return, line separator and control escaped, so that no line it is on starts with it and
  nothing in it can close the quote. Output of several lines is a ``block``: each line behind a bar.

Before the hidden cases are released, a student reads ``before_release``: the grader's parts only, and of their
own error its class and their own line (read from their file by the grader, not from the job), never its message.
"""

import re
from dataclasses import dataclass

from autograder.intake.inert import inert, inert_line

# What the grader decided about a test: the ``kind`` of a TestResult.
PASSED = "passed"
WRONG = "wrong"  # the call returned, and its output is not the right one
RAISED = "raised"  # the call raised an exception (other than NotImplementedError)
NOT_IMPLEMENTED = "not implemented"  # the stub's NotImplementedError
MISSING = "missing"  # the function is not defined
DID_NOT_FINISH = "did not finish"  # the job stopped before the task's cases had run (a time limit, a crash)
NOT_RUN = "not run"  # no outcome came back for the case that failed
NOT_GRADED = "not graded"  # nothing of the submission could run (or it was refused): every test says why
HANDED_OUT = "handed out"  # the code another unit hands out finished, handed in as this task's answer
GRADER_FAULT = "grader fault"
TIMED = "timed"  # a test of the timing tier: its lines quote no hidden case

# The lines the grader starts with a name of its own: a line of the student's never starts with one of these.
LEADS = ("Likely mistake:", "Or, with exactly this output on every case that fails:", "How it goes wrong:",
         "When it goes wrong:", "The sizes in that message:", "Why it is missing:", "Also:", "Passed:", "Failed:")

_DECIMAL = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+)(?:e[-+]?\d+)?(?![\w.])|(?<![\w.])[-+]?\d+e[-+]?\d+(?![\w.])")
QUOTED_CHARACTERS = 400  # of one student text: a message longer than that is cut, and the cut is marked
BLOCK_LINE = "    | "  # the start of each line of a student's output shown as a block


@dataclass(frozen=True)
class Diagnosis:
    """The grader's reading of a failure. Each part is the grader's own sentence, or empty.

    ``mistakes``: the known mistakes that give exactly the student's output, the likely one first (where several
    do on every failing case, none is THE mistake). ``how``: how the output relates to the right one. ``when``:
    under which condition the cases fail. ``sizes``: which of the case's sizes an error message quotes (it quotes
    the hidden case: shown after release). ``first_wrong``: the index of the first wrong entry (likewise).
    """

    mistakes: tuple = ()
    how: str = ""
    when: str = ""
    sizes: str = ""
    first_wrong: tuple = None

    def told_at_once(self):
        """The lines of the diagnosis that quote no hidden case, as the grader writes them."""
        lines = []
        if self.mistakes:
            lines.append(f"Likely mistake: {self.mistakes[0]}")
            lines += [f"Or, with exactly this output on every case that fails: {other}" for other in self.mistakes[1:]]
        elif self.how:
            lines.append(f"How it goes wrong: {self.how}")
        if self.when:
            lines.append(f"When it goes wrong: {self.when}")
        return lines


@dataclass(frozen=True)
class StudentError:
    """An exception the student's code raised on a case. ``type`` and ``message`` are the student's text (a class
    may be named anything, and the message may quote the hidden inputs); ``line`` is "LABEL, line N: CODE" as the
    grader read it from the submission, or "" where the job named no line of it."""

    type: str
    message: str = ""
    line: str = ""
    lesson: str = ""  # the grader's sentence on what such an error usually means (cases.lesson_of)
    # The class's name where the grader knows it holds nothing of a hidden case: a built-in exception, one of
    # torch's, or a class the submission's own text names; else "" (a class can be made, and named, as it runs).
    known_type: str = ""

    def at_once(self):
        """What the student reads of it before release: the class and their own line, never the message."""
        where = f" at {inert_line(self.line)}" if self.line else ""
        kind = inert_line(self.known_type) if self.known_type else "an exception of a class your file does not name"
        return f"Your code raised {kind}{where}."


def quote(text, limit=QUOTED_CHARACTERS):
    """``text`` (the student's) on one line, between quotes, every character that could end the line, the quote or
    the reader's trust escaped: ``'shapes differ\\nLikely mistake: ...'``. Longer than ``limit``: cut, marked."""
    text = str(text)
    cut = len(text) > limit
    shown = repr(text[:limit])  # escapes \n, \r, \t, U+2028, U+2029, controls and the closing quote
    return inert(shown + (" [...]" if cut else ""))


def name_of(text):
    """A name the student's code gave (a class's, an argument's): as it is where it is a dotted Python name, else
    quoted (a class can be named ``"x\\nLikely mistake: y"``)."""
    text = str(text)
    if len(text) <= 200 and text and all(part.isidentifier() for part in text.split(".")):
        return inert_line(text)
    return quote(text, limit=200)


def _known_classes():
    import builtins

    import torch

    return frozenset(name for module in (builtins, torch, getattr(torch, "_C", None)) if module is not None
                     for name, value in vars(module).items() if isinstance(value, type))


KNOWN_CLASSES = _known_classes()  # Python's and torch's classes, by the bare names a job reports


def class_name(text, also=()):
    """The name of a class a job reports (an exception's, a returned object's): as it is where it names one of
    Python's or torch's classes (or one of ``also``, names the grader read in the submission's own text), else
    quoted: a class made while the code runs can be given any name, a hidden value's digits or a line of text."""
    text = str(text)
    if text in KNOWN_CLASSES or text in also:
        return text
    if text.startswith("torch.") and _torch_has(text):
        return text
    return quote(text, limit=200)


def _torch_has(dotted):
    import torch

    value = torch
    for part in dotted.split(".")[1:]:
        if not part.isidentifier() or not hasattr(value, part):
            return False
        value = getattr(value, part)
    return isinstance(value, type)


def block(text, limit=1500):
    """Several lines of the student's output, each behind a bar (``    | ...``): none of them starts a line of the
    grader's. The last ``limit`` characters, the cut marked."""
    text = str(text)
    if len(text) > limit:
        text = text[-limit:]
    return "\n".join(f"{BLOCK_LINE}{line}" for line in inert(text).split("\n"))


def before_release(test, checks="", when_shown="shown once the hidden cases are released"):
    """A failed test's feedback as a student may read it before the hidden cases are released: what failed, the
    diagnosis that quotes no case, of their own exception its class and line, and when the rest is shown.
    ``test``: a TestResult; ``checks``: what its rubric test checks."""
    if test is not None and test.kind in (NOT_GRADED, GRADER_FAULT, TIMED, MISSING, DID_NOT_FINISH, HANDED_OUT):
        return test.output  # the grader's words, naming no hidden case (see grade.score_tests and grade._all_failed)
    what = f" ({checks})" if checks else ""
    lines = [f"Failed: a hidden case of this test{what} does not pass."]
    if test is None:
        return "\n".join(lines + [f"Which case, and expected against got, is {when_shown}."])
    if test.kind == NOT_IMPLEMENTED:  # its text names the call, which is the hidden case
        return f"Failed: the function is not implemented yet (it raised NotImplementedError){what}."
    if test.error is not None:
        lines.append(test.error.at_once() + " Its message may quote the hidden case's values, so it is "
                     f"{when_shown}, with the case; your self-checks (pytest -k {test.task}) show what it says on "
                     "inputs of their own.")
        if test.error.lesson:
            lines.append(test.error.lesson)
    # A relation's constants are read off the student's output ("off by the same constant, +0.3683"), which the
    # job made while the hidden case ran: before release they are shown as #.
    lines += [_DECIMAL.sub("#", line) for line in test.diagnosis.told_at_once()]
    lines.append(f"Which case, and expected against got, is {when_shown}.")
    return "\n".join(lines)



def parts_of(test):
    """A test's typed parts as JSON data (a class run's saved results keep them: see ways_in/batch.py)."""
    diagnosis = test.diagnosis
    return {"kind": test.kind,
            "diagnosis": {"mistakes": list(diagnosis.mistakes), "how": diagnosis.how, "when": diagnosis.when,
                          "sizes": diagnosis.sizes,
                          "first_wrong": None if diagnosis.first_wrong is None else list(diagnosis.first_wrong)},
            "error": None if test.error is None else {"type": test.error.type, "message": test.error.message,
                                                      "line": test.error.line, "lesson": test.error.lesson,
                                                      "known_type": test.error.known_type}}


def parts_from(saved):
    """The keyword arguments of a TestResult's typed parts, from ``parts_of``'s data (strings only; anything else
    is dropped)."""
    def text(value):
        return value if isinstance(value, str) else ""

    diagnosis = saved.get("diagnosis") if isinstance(saved.get("diagnosis"), dict) else {}
    error = saved.get("error") if isinstance(saved.get("error"), dict) else None
    first = diagnosis.get("first_wrong")
    return {"kind": text(saved.get("kind")),
            "diagnosis": Diagnosis(tuple(text(m) for m in diagnosis.get("mistakes") or () if text(m)),
                                   text(diagnosis.get("how")), text(diagnosis.get("when")),
                                   text(diagnosis.get("sizes")),
                                   tuple(first) if isinstance(first, list) and all(type(i) is int for i in first)
                                   else None),
            "error": None if error is None else StudentError(text(error.get("type")), text(error.get("message")),
                                                             text(error.get("line")), text(error.get("lesson")),
                                                             text(error.get("known_type")))}


HIDDEN_FROM_STUDENTS = "hidden"  # a rubric test's ``details`` that only the instructor ever sees


def as_released(test, rubric_test):
    """What a student reads of ``test`` once the instructor releases feedback (the class run's feedback pages,
    nbgrader's feedback): all of it, the case and their own exception's message included, unless the rubric keeps
    the test's details from students altogether (``details="hidden"``): then what they read before release."""
    if test.passed or rubric_test is None or rubric_test.details != HIDDEN_FROM_STUDENTS:
        return test.output
    return before_release(test, rubric_test.checks, "shown to your instructor only")


def verdict_text(test, rubric_test):
    """A test's verdict as a student reads it in released feedback: its id, its points, then ``as_released``."""
    return f"{test.id} ({test.score:g} of {test.max_score:g} points): {as_released(test, rubric_test)}"
