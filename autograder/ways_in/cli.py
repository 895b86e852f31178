"""The command line: python -m autograder COMMAND. Run "python -m autograder COMMAND --help" for a command's flags;
with no command, the demo runs. The same flag means the same thing in every command: --unit the unit (assignment),
--out where the command writes, --course-secret the course secret, --seed the seed of what is drawn.

Exit status 0 when every submission was graded, whatever the scores; 2 when the grader itself could not work
(bad arguments, missing files); check-unit exits 1 when the unit has problems.
"""

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from autograder.sandbox import limits
from autograder.core import units
from autograder.ways_in import arguments
from autograder.sandbox.server import Limits


def _limits(args):
    return Limits(wall_seconds=args.timeout, task_seconds=min(args.task_timeout, args.timeout),
                  memory_bytes=int(args.memory_gb * 1024**3))


def _add_grading_options(parser, unit_help):
    parser.add_argument("--unit", choices=units.folder_names(), default=None, help=unit_help)
    parser.add_argument("--timeout", type=arguments.seconds, default=limits.WALL_SECONDS, metavar="SECONDS",
                        help=f"wall-clock limit per submission (default {limits.WALL_SECONDS:g})")
    parser.add_argument("--task-timeout", type=arguments.seconds, default=limits.TASK_SECONDS, metavar="SECONDS",
                        help=f"wall-clock limit per task within a submission (default {limits.TASK_SECONDS:g})")
    parser.add_argument("--memory-gb", type=arguments.memory_gb, default=limits.MEMORY_BYTES / 1024**3,
                        metavar="GIB",
                        help="memory limit of each submission, in GiB: the address space of each of its processes, "
                             "and where the machine has cgroups also everything its job holds together (its "
                             "processes and its private /tmp, /work and /dev/shm) "
                             f"(default {limits.MEMORY_BYTES / 1024**3:g})")
    parser.add_argument("--jobs", "-j", type=arguments.jobs, default=min(os.cpu_count() or 1, arguments.MAX_JOBS),
                        help="submissions graded at once (default: the number of CPUs)")
    parser.add_argument("--seed", type=arguments.seed, default=None,
                        help="grade every submission with the hidden cases of this seed (a result says which seed "
                             "it was graded with: this grades it again the same way); by default each student's "
                             "own seed with a course secret, else the unit's shared seed")
    parser.add_argument("--course-secret", metavar="FILE",
                        help="the course secret (python -m autograder course-secret FILE makes one; or set "
                             "$AUTOGRADER_COURSE_SECRET_FILE): each student's hidden cases come from a seed of "
                             "their own, derived from it and the submission's name")
    parser.add_argument("--without-gpu", choices=("cpu", "give", "withhold"), default=limits.TIMING_WITHOUT_GPU,
                        help="the timing tier on a machine with no GPU: time it on the CPU, or skip it and give "
                             f"or withhold its points (default {limits.TIMING_WITHOUT_GPU})")


class UnitUnknown(Exception):
    """Which unit the submissions are of cannot be told from their names; the message says what to do."""


def unit_of_paths(paths, named=None):
    """The unit to grade ``paths`` as: ``named`` (--unit), else the only unit there is, else the one unit that the
    entries say they are (core/recognize.py: file names, nbgrader's grade ids, the functions defined); never a
    guess between two: entries of several units, or none that says, need --unit."""
    if named:
        return units.get(named)
    if len(units.names()) == 1:
        return units.get(units.names()[0])
    from autograder.core import recognize

    found = recognize.of_paths(paths)
    if len(found) == 1:
        return units.get(next(iter(found)))
    which = ("they hold entries of several units: " + ", ".join(f"{count} of {name}" for name, count in sorted(
        found.items())) if found else "no entry says which unit it is (by its name or the functions it defines)")
    raise UnitUnknown(f"say which unit these submissions are of with --unit ({', '.join(units.names())}): {which}")


def _grade(paths, args, show_feedback, sandbox, unit, skipped=()):
    from autograder.sandbox.server import ForkServer, resolve_sandbox

    started = time.monotonic()
    # The sandbox's server imports torch in its own process while this one does (the imports below).
    server = ForkServer(resolve_sandbox(sandbox), ready=False)
    from autograder.core import report
    from autograder.ways_in.batch import Progress, grade_class, unique_names, write_class_files
    from autograder.core.grade import Grader, grading_process_threads

    from autograder.core import seeds

    grading_process_threads()

    out = getattr(args, "out", None)
    if out:  # the results quote the hidden cases: nobody but this user reads them
        Path(out).mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        secret_file = args.course_secret or os.environ.get(seeds.SECRET_FILE_VARIABLE)
        secret = None if args.seed is not None else seeds.course_secret(args.course_secret)
        # Where jobs run as users of their own (tier C), none may read a classmate's submission, a result or
        # the course secret.
        grader = Grader(unit, seed=args.seed, limits=_limits(args),
                        timing_mode=args.without_gpu, server=server, course_secret=secret,
                        secrets=[*paths, *([out] if out else []), *([secret_file] if secret_file else [])])
    except BaseException:
        server.close()
        raise
    # An entry that says another unit scores nothing, and its row says what it was graded as (core/recognize.py).
    grader.graded_as = f"the class is graded as {unit.name}" if len(paths) > 1 else f"it is graded as {unit.name}"
    progress = Progress(len(paths)) if len(paths) > 1 and not args.json else None
    # (The summary's picture needs matplotlib: grade_class imports it before the grading threads start, never
    # beside them; see autograder/core/threads.py.)
    try:
        if out:
            drawn = f"per-student {seeds.secret_fingerprint(secret)}" if secret else grader.seed
            results, resumed = grade_class(grader, paths, out, jobs=args.jobs, force=args.force, progress=progress,
                                           seed=drawn, timing_mode=args.without_gpu)
        else:
            results, resumed = grader.grade_many(paths, jobs=args.jobs, on_result=progress and (
                lambda index, result: progress.step(result.name, result.score, result.max_score))), 0
            if progress:
                progress.close()
            for result, name in zip(results, unique_names(paths)):
                result.name = name
    finally:
        grader.close()
    # the class's files first: nothing printed below can keep them from being written
    written = write_class_files(results, out, skipped) if out else []
    from autograder.intake.inert import inert_line

    for path, reason in skipped:  # every entry of a class folder: a row, or here with its reason
        print(f"Not graded: {inert_line(str(path))}: {reason}", file=sys.stderr)
    if args.json:
        for result in results:
            print(json.dumps(result.to_gradescope()))
    else:
        if show_feedback:
            for result in results:
                print(report.feedback(result), end="\n\n")
        print(report.table(results))
        graded = len(results) - resumed
        faults = sum(1 for result in results if result.grader_fault)
        print(f"\n{graded} submission(s) graded in {time.monotonic() - started:.1f} s with {args.jobs} job(s)"
              + (f"; {resumed} already graded in {out} were kept (--force grades them again)" if resumed else "")
              + ".", file=sys.stderr)
        if results:
            print(f"Sandbox: {results[0].sandbox or 'none'}.", file=sys.stderr)
        if faults:
            from autograder.ways_in.batch import FAULT_LOG

            incidents = [incident for result in results for incident, _ in result.incidents]
            print(f"{faults} submission(s) were not fully graded through a fault of the grader's (their rows say "
                  "so, with an incident id)" + ("; run the same command again to grade them" if out else "")
                  + f". Incidents {', '.join(incidents) or 'none recorded'}: their tracebacks are above"
                  + (f" and in {out}/{FAULT_LOG}" if out else "") + ", for you only.", file=sys.stderr)
        if skipped:
            print(f"{len(skipped)} entr{'y' if len(skipped) == 1 else 'ies'} of the class folder not graded: "
                  "listed above" + (" and in skipped.txt" if out else "") + ", each with why.", file=sys.stderr)
        if out:
            print(f"Wrote {out}/: a JSON per student, grades.csv, skipped.txt, "
                  + ", ".join(path.name for path in written) + ".", file=sys.stderr)
    return results


class _OneLineEach(argparse.RawDescriptionHelpFormatter):
    """The commands' list with each command's help on its own line: argparse measures the subcommands two columns
    less indented than it prints them, so the longest one's help would start on the next line."""

    def __init__(self, prog):
        super().__init__(prog, max_help_position=32)

    def add_argument(self, action):
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):
            self._action_max_length += 2


OWN_PARSERS = {"lms-export": "write grades.csv as a file Canvas or Moodle imports",
               "similarity": "rank pairs of submissions by how alike their code is"}
OWN_PARSER_MODULES = {"lms-export": "autograder.ways_in.lms_export", "similarity": "autograder.course.similarity"}


def _capstone(parser, args):
    """A unit's experiment: the module its rubric's ``CAPSTONE`` names (under autograder/units, then its
    arguments), whose ``main(argv, references)`` runs on the kit's references. An option the experiment does not
    take is refused by its own parser (exit status 2)."""
    with_experiments = [unit.name for unit in units.all_units() if getattr(unit.rubric, "CAPSTONE", None)]
    name = args.unit or (with_experiments or [None])[0]
    if name not in with_experiments:
        parser.exit(2, f"python -m autograder capstone: {f'the unit {name} has' if name else 'no unit has'} no "
                       f"experiment (its rubric's CAPSTONE); units with one: {', '.join(with_experiments) or 'none'}\n")
    module, *arguments = units.get(name).rubric.CAPSTONE
    argv = ["--seed", str(args.seed), *arguments]
    if args.steps is not None:
        argv += ["--steps", str(args.steps)]
    if args.classifier_steps is not None:
        argv += ["--classifier-steps", str(args.classifier_steps)]
    if args.longer and "--longer" not in argv:
        argv.append("--longer")
    experiment = importlib.import_module(f"autograder.units.{module}")
    return experiment.main(argv, references={unit.name: unit.reference for unit in units.all_units()})


def _nothing_to_grade(paths):
    return f"nothing to grade in {' and '.join(map(str, paths))}: no .py or .ipynb file and no student's folder there"


def _nothing_read(paths):
    """Why no unit could be told from ``paths`` where the reason is that nothing in them can be read: they hold no
    submission ("nothing to grade in empty/"), or load() refuses every one (in its words: a file that is not UTF-8,
    a folder with no file to grade); None where one submission at least can be read."""
    from autograder.intake.inert import inert_line
    from autograder.intake.load import LoadError, class_entries, load

    found, skipped = class_entries(paths)
    if not found:
        return _nothing_to_grade(paths) + "".join(f"\n  {inert_line(path.name)}: {reason}" for path, reason in skipped)
    any_unit = [name for folder in units.folder_names() for name in (f"{folder}.py", f"{folder}.ipynb")]
    refusals = []
    for path in found:
        try:
            load(path, any_unit)
        except (LoadError, OSError, ValueError) as error:  # load() says why in its words; the others, as of_definitions
            refusals.append(str(error))
        else:
            return None
    shown = 10  # a class of unreadable files: the first few say what is wrong
    return ("nothing could be read in the paths given, so which unit they are of cannot be told:"
            + "".join(f"\n  {refusal}" for refusal in refusals[:shown])
            + (f"\n  and {len(refusals) - shown} more" if len(refusals) > shown else "")
            + f"\nWith --unit ({', '.join(units.folder_names())}) each is graded all the same, its row saying "
              "why it scores nothing.")


def build_parser():
    """The parser of every command (those with parsers of their own are listed, their arguments left to them)."""
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                     formatter_class=_OneLineEach)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    grade = commands.add_parser("grade", help="grade .py files, notebooks or student folders")
    grade.add_argument("paths", nargs="+", metavar="PATH",
                       help="what to grade: a submission (a .py file or a notebook), a student's folder holding "
                            "one, or a class folder holding such files and folders; several may be given")
    grade.add_argument("--json", action="store_true",
                       help="print one Gradescope results.json object per submission, one a line")
    grade.add_argument("--out", metavar="DIR",
                       help="write <name>.json per submission as each is graded, then grades.csv, the class "
                            "summary (summary.txt, summary.png) and each student's feedback "
                            "(feedback/<name>/<unit>.html and .md); a submission already graded there is not graded "
                            "again, so a run that was stopped goes on where it stopped")
    grade.add_argument("--force", action="store_true", help="with --out: grade again what is already graded there")
    grade.add_argument("--feedback", action="store_true",
                       help="print every test's feedback (the default for a single submission)")
    grade.add_argument("--unsandboxed", action="store_true",
                       help="grade without a sandbox, trusting the submissions (refused by default)")
    grade.add_argument("--sandbox", choices=("strongest", "bubblewrap", "users"), default="strongest",
                       help="the sandbox tier: the strongest this machine allows (the default: bubblewrap where it "
                            "can make namespaces, else, as root, an unprivileged user per job), or only the one "
                            "named (see docs/threat-model.md)")
    _add_grading_options(grade, "the unit (assignment) the submissions are of; by default the one whose module "
                                "the files are named after "
                                f"({', '.join(name + '.ipynb' for name in units.folder_names())})")

    demo = commands.add_parser("demo", help="grade the sample class (the default command)")
    demo.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    demo.add_argument("--feedback", action="store_true", help="also print each submission's feedback")
    _add_grading_options(demo, "the unit whose sample class the demo grades: its reference, its blank stubs and "
                               "a submission for each typical mistake (default: the course's first unit)")

    bundle = commands.add_parser("gradescope-bundle", help="write the autograder zip for Gradescope")
    bundle.add_argument("out_zip", metavar="OUT.zip", nargs="?", help="where to write the zip (or --out)")
    bundle.add_argument("--out", metavar="OUT.zip", dest="out_flag", help="where to write the zip")
    bundle.add_argument("--unsandboxed", action="store_true",
                        help="let the zip grade WITHOUT a sandbox where bubblewrap cannot run on Gradescope "
                             "(trusted code only)")
    bundle.add_argument("--course-secret", metavar="FILE",
                        help="ship this course secret in the zip: each student's hidden cases are then their own")
    bundle.add_argument("--unit", choices=units.folder_names(), default=None,
                        help="the unit (assignment) this zip grades, required: a Gradescope assignment grades one "
                             "unit, and an upload of another unit's file scores 0 and says so "
                             f"({', '.join(units.folder_names())})")

    prairie = commands.add_parser("prairielearn-bundle", help="write the image, files and questions for PrairieLearn")
    prairie.add_argument("out_dir", metavar="DIR", nargs="?", help="the folder to write them to (or --out)")
    prairie.add_argument("--out", metavar="DIR", dest="out_flag", help="the folder to write them to")
    prairie.add_argument("--image", default="YOUR_NAME/positional-encodings-grader",
                         help="the image name the question's info.json names (where you push the image)")
    prairie.add_argument("--course-secret", metavar="FILE",
                         help="copy this course secret into serverFilesCourse: each variant's hidden cases are then "
                              "its own")

    capstone = commands.add_parser("capstone", help="train a lesson's tiny models, print the comparison",
                                   description="Run a unit's experiment (its lesson's last part, which its rubric's "
                                               "CAPSTONE names) on the kit's references and print its tables.")
    capstone.add_argument("--unit", choices=units.folder_names(), default=None,
                          help="whose experiment (default: the course's first unit that has one)")
    capstone.add_argument("--seed", type=arguments.seed, default=0,
                          help="the seed of everything the experiment draws (its texts, its models' first weights): "
                               "the same seed prints the same tables (default 0)")
    capstone.add_argument("--steps", type=arguments.steps, default=None,
                          help="training steps of each model (default: the experiment's own, 200 for the language "
                               "models)")
    capstone.add_argument("--classifier-steps", type=arguments.steps, default=None,
                          help="training steps of each classifier, where the experiment trains classifiers "
                               "(default: the experiment's own)")
    capstone.add_argument("--longer", action="store_true",
                          help="run the experiment's longer variant instead, where it has one: models trained on "
                               "short texts and read past that length; an experiment without one refuses it")

    secret = commands.add_parser("course-secret", help="write a course secret: hidden cases per student")
    secret.add_argument("file", metavar="FILE", help="where to write it (it must not exist yet); keep it out of "
                                                     "anything students receive")

    commands.add_parser("build", help="write the generated student and source folders",
                        description="Write the generated files: each unit's student folder (assignments/student/) and "
                                    "nbgrader's source notebook (assignments/source/), from solutions/ and the units.")

    release = commands.add_parser("release", help="make the folder and zip students receive")
    release.add_argument("--unit", choices=units.folder_names(), default=None,
                         help="the unit (assignment) to release (default: the course's first unit)")
    release.add_argument("--out", default="dist", metavar="DIR",
                         help="where to put the folder and the zip (default: dist)")
    release.add_argument("--course", metavar="DIR", help="the nbgrader course folder (default: the kit's assignments/)")

    new_unit = commands.add_parser("new-unit", help="write the skeleton of a new unit of study",
                                   description="Write the skeleton of a unit: its reference in solutions/, and its "
                                               "rubric, cases, job, lesson and self-checks in autograder/units/NAME/.")
    new_unit.add_argument("name", metavar="NAME", help="the unit's name: the module its students write (a Python "
                                                       "identifier, lower case)")
    check_unit = commands.add_parser("check-unit", help="check that a unit is complete and grades right",
                                     description="Check a unit: the reference scores full and the stubs 0, every "
                                                 "declared mistake is caught by its own task's cases, every task has "
                                                 "cases, every timed path is declared, the release builds and "
                                                 "nbgrader generates it.")
    check_unit.add_argument("name", metavar="NAME", help="the unit to check")
    check_unit.add_argument("--without-nbgrader", action="store_true",
                            help="skip the release and nbgrader's generate_assignment (quicker)")

    # Commands with parsers of their own (their modules' ``main``): listed here, handed their arguments below.
    for name, help_text in OWN_PARSERS.items():
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv=None):
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in OWN_PARSERS:
        return importlib.import_module(OWN_PARSER_MODULES[argv[0]]).main(argv[1:])
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["demo"] + argv  # the demo is the default command
    args = parser.parse_args(argv)
    if args.command == "capstone":
        return _capstone(parser, args)
    if args.command == "course-secret":
        from autograder.core.seeds import write_secret

        try:
            path = write_secret(args.file)
        except FileExistsError:
            parser.exit(2, f"python -m autograder course-secret: {args.file} exists already; a new secret would "
                           "give every student new hidden cases, so remove it first if that is what you want\n")
        print(f"wrote {path} (readable by you only). Grade with --course-secret {path}, or set "
              f"AUTOGRADER_COURSE_SECRET_FILE={path}.")
        return 0
    if args.command in ("gradescope-bundle", "prairielearn-bundle"):
        chosen = args.out_flag or (args.out_zip if args.command == "gradescope-bundle" else args.out_dir)
        if not chosen:
            parser.exit(2, f"python -m autograder {args.command}: say where to write it with --out\n")
        if args.command == "gradescope-bundle":
            args.out_zip = chosen
            if not args.unit:  # never the upload's file name: the second unit's file would score in the first
                parser.exit(2, "python -m autograder gradescope-bundle: say which unit (assignment) the zip grades "
                               f"with --unit ({', '.join(units.folder_names())}); a Gradescope assignment grades "
                               "one unit, so make a zip per assignment\n")
        else:
            args.out_dir = chosen
    if args.command == "new-unit":
        from autograder.course.scaffold import ScaffoldError, new_unit

        try:
            written = new_unit(args.name)
        except ScaffoldError as error:
            parser.exit(2, f"python -m autograder new-unit: {error}\n")
        for path in written:
            print(f"wrote {path}")
        print(f"Fill in each TODO, then check the unit: python -m autograder check-unit {args.name}")
        return 0
    if args.command == "check-unit":
        from autograder.course.check_unit import ScaffoldError, check_unit

        try:
            found = check_unit(args.name, nbgrader=not args.without_nbgrader)
        except ScaffoldError as error:
            parser.exit(2, f"python -m autograder check-unit: {error}\n")
        for problem in found:
            print(f"PROBLEM: {problem}")
        print(f"{args.name}: " + (f"{len(found)} problem(s)." if found else "every check passes."))
        return 1 if found else 0
    if args.command == "build":
        from autograder.course.build import build

        for path in build():
            print(f"wrote {path}")
        return 0
    if args.command == "gradescope-bundle":
        from autograder.ways_in.gradescope import main_bundle

        print(f"wrote {main_bundle(args.out_zip, unsandboxed=args.unsandboxed, course_secret_file=args.course_secret, unit=args.unit)}")
        return 0
    if args.command == "prairielearn-bundle":
        from autograder.ways_in.prairielearn import main_bundle as prairielearn_bundle

        out = prairielearn_bundle(args.out_dir, image=args.image, course_secret_file=args.course_secret)
        print(f"wrote {out}/: image/ (build and push it), serverFilesCourse/ and questions/ (copy them into the course)")
        return 0
    if args.command == "release":
        from autograder.course.notebook import COURSE

        from autograder.course.release import CourseError, release
        try:
            unit = units.get(args.unit or units.names()[0])
            folder, archive = release(unit, args.out, course=args.course or COURSE)
        except CourseError as error:
            parser.exit(2, f"python -m autograder release: {error}\n")
        print(f"wrote {folder}/ and {archive}\nIn that folder a student runs: pytest -k {unit.rubric.TASK_NAMES[0]}")
        return 0
    if args.command == "demo":
        from autograder.ways_in.demo import introduction, write_class

        unit = units.get(args.unit or units.names()[0])
        with tempfile.TemporaryDirectory(prefix="sample-class-") as folder:
            paths = write_class(folder, unit)
            print(introduction(unit, len(paths) - 2) + "\n", file=sys.stderr)
            from autograder.sandbox.server import SandboxMissing

            try:
                _grade(paths, args, show_feedback=args.feedback, sandbox="auto", unit=unit)  # our own: safe either way
            except SandboxMissing as error:  # a tier that needs the kit unreadable by jobs: not the demo's business
                print(f"NOTE: {error}\nThe sample class is the kit's own code: it is graded without a sandbox.",
                      file=sys.stderr)
                _grade(paths, args, show_feedback=args.feedback, sandbox="off", unit=unit)
        return 0

    from autograder.intake.load import class_entries, expand

    try:
        expand(args.paths)  # a path that is not there is said first
        unit = unit_of_paths(args.paths, args.unit)
        paths, skipped = class_entries(args.paths, unit.file_names)
    except OSError as error:  # not there, or a class folder that cannot be listed
        parser.exit(2, f"python -m autograder grade: {error}\n")
    except UnitUnknown as error:  # where nothing could be read, that is what to say, not which unit to name
        parser.exit(2, f"python -m autograder grade: {_nothing_read(args.paths) or error}\n")
    if not paths:
        from autograder.intake.inert import inert_line

        listed = "".join(f"\n  {inert_line(path.name)}: {reason}" for path, reason in skipped)
        if skipped and args.out:  # each entry listed with why, there too
            from autograder.ways_in.batch import SKIPPED, skipped_text
            from autograder.core.report import write_atomically

            Path(args.out).mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomically(Path(args.out) / SKIPPED, skipped_text(skipped))
        parser.exit(2, f"python -m autograder grade: {_nothing_to_grade(args.paths)}{listed}\n")
    from autograder.core import seeds
    from autograder.sandbox.server import SandboxMissing

    if args.unsandboxed:
        print("WARNING: --unsandboxed: the submissions run WITHOUT a sandbox, able to read the reference and "
              "the hidden cases and to change files.", file=sys.stderr)
    try:
        from autograder.sandbox.server import BUBBLEWRAP, JOB_USERS

        choice = {"strongest": "required", "bubblewrap": BUBBLEWRAP, "users": JOB_USERS}[args.sandbox]
        _grade(paths, args, show_feedback=args.feedback or len(paths) == 1,
               sandbox="off" if args.unsandboxed else choice, unit=unit, skipped=skipped)
    except SandboxMissing as error:
        parser.exit(2, f"python -m autograder grade: {error}\n")
    except seeds.SecretProblem as error:
        parser.exit(2, f"python -m autograder grade: {error}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
