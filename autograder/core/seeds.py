"""Hidden cases of one's own: each student's seed, from the course secret and the student's identity.

Every random part of the hidden cases (the tensors, the drawn sizes and settings) comes from one seed
(autograder/core/cases.py). With a course secret, each student's seed is HMAC-SHA256(secret, identity):
the same student gets the same cases on every regrade and resubmission, two students get different ones,
and nobody without the secret can tell which cases another student had. The feedback's expected values then
say nothing about a classmate's, and a list of answers collected from one's own feedback is no use to anyone.
Without a secret every student gets the rubric's shared seed, and the result says so.

The identity is the submission's name in a class run (its file or folder name), nbgrader's student id,
the Gradescope users' ids (sorted, for a group) and PrairieLearn's variant seed (PrairieLearn's own way of
giving each student inputs of their own). The seed is written in every result: ``python -m autograder grade
FILE --seed N`` grades a file again with exactly those cases, with or without the secret.

Trusted side only. The secret never reaches a job: jobs get no environment of the grader's
(sandbox.child_environment), and a secret file is one of the grader's ``secrets`` that no job may read.
"""

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path


SECRET_VARIABLE = "AUTOGRADER_COURSE_SECRET"  # the secret itself
SECRET_FILE_VARIABLE = "AUTOGRADER_COURSE_SECRET_FILE"  # or a file that holds it
MIN_SECRET_BYTES = 16
MAX_SECRET_BYTES = 4096
DOMAIN = b"positional-encodings-kit hidden cases v1\0"  # a change here gives every student new cases


class SecretProblem(ValueError):
    """The course secret could not be read, or is too short to keep anything secret."""


def new_secret():
    """A fresh course secret: 32 random bytes, as hex."""
    return secrets.token_hex(32)


def write_secret(path):
    """Write a new course secret to ``path``, readable by its owner only; refuses to overwrite one."""
    path = Path(path)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as file:
        file.write(new_secret() + "\n")
    return path


def read_secret_file(path):
    """The secret in ``path``: a regular file (no link followed), at most MAX_SECRET_BYTES."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise SecretProblem(f"cannot open the course secret {path}: {error.strerror}") from None
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise SecretProblem(f"the course secret {path} is not a regular file")
        data = file.read(MAX_SECRET_BYTES + 1)
    if len(data) > MAX_SECRET_BYTES:
        raise SecretProblem(f"the course secret {path} is longer than {MAX_SECRET_BYTES} bytes")
    return _checked(data.strip(), str(path))


def _checked(secret, where):
    if len(secret) < MIN_SECRET_BYTES:
        raise SecretProblem(f"the course secret ({where}) has {len(secret)} bytes; it needs at least "
                            f"{MIN_SECRET_BYTES} (python -m autograder course-secret FILE makes one)")
    return secret


def course_secret(path=None, environ=None):
    """The course secret: from ``path``, else $AUTOGRADER_COURSE_SECRET_FILE, else $AUTOGRADER_COURSE_SECRET;
    None where none is set (every student then gets the rubric's shared seed)."""
    environ = os.environ if environ is None else environ
    if path:
        return read_secret_file(path)
    if environ.get(SECRET_FILE_VARIABLE):
        return read_secret_file(environ[SECRET_FILE_VARIABLE])
    if environ.get(SECRET_VARIABLE):
        return _checked(environ[SECRET_VARIABLE].strip().encode(), f"${SECRET_VARIABLE}")
    return None


def student_seed(secret, identity):
    """The seed of ``identity``'s hidden cases under ``secret``: a number in 0 .. 2**31 - 1."""
    digest = hmac.new(secret, DOMAIN + str(identity).encode("utf-8", "surrogateescape"), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % 2**31


def secret_fingerprint(secret):
    """What a results folder records of the secret: enough to tell that it changed, nothing to recover it."""
    return hmac.new(secret, b"fingerprint", hashlib.sha256).hexdigest()[:16]


def for_student(unit, seed):
    """What a student is told of their hidden cases: whether they are their own, never the seed (with the kit, a
    seed gives the cases themselves), the course secret or how an instructor grades again."""
    if seed is None:
        return ""
    if seed == unit.rubric.SEED:
        return "Hidden cases: the same for the whole class."
    return "Hidden cases: drawn for you alone; a classmate's are different, so their outputs tell you nothing of yours."


def describe(unit, seed, identity=None, per_student=False):
    """The line of the result that says where its hidden cases came from, and how to grade it again."""
    again = f"python -m autograder grade <file> --unit {unit.name} --seed {seed} grades it again with the same cases."
    if per_student:
        return f"Hidden cases: seed {seed}, this student's own (from the course secret and {identity!r}); {again}"
    if seed == unit.rubric.SEED:
        return (f"Hidden cases: the shared seed {seed}, the same for every student (no course secret is set: "
                f"see docs/instructors.md, 'Hidden cases of one's own'); {again}")
    return f"Hidden cases: seed {seed}, given to the grader; {again}"
