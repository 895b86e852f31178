"""The Gradescope bundle and the PrairieLearn entry point, each in a real Docker container with Docker's defaults.

No ``--privileged``, no added capability, Docker's default seccomp profile, ``--network none``: the setting of
both platforms, where the kernel refuses bubblewrap its namespaces. The grader falls back by itself to tier C
(a user of its own per job, a seccomp filter, rlimits; docs/threat-model.md). The image is built as Gradescope
builds one: Debian with Python 3 as root, the zip unpacked into /autograder/source, its setup.sh run once
(tests/helpers/docker_kit.py caches the result); each submission then gets a fresh container.

What is shown here, against the host's own grading of the same files (tier A, bubblewrap and cgroups):
the sample class gets the same scores; every attack of the red-team corpus scores 0 and is contained (no
ESCAPED in its feedback where the tier holds what the attack tries, nothing of its user left running or
on disk afterwards), those on the platform's layout through its entry point in a container each (the five that meet only the
grader's machinery through Gradescope's alone), the rest in one class run; results.json fits each platform's documented format; and in a container of half a
CPU (Gradescope's default) the timing verdicts stay the same, run after run.
"""

import json
import os
import uuid
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import docker_kit
from autograder.ways_in import gradescope, prairielearn
from autograder.units.positional_encodings import rubric
from autograder.ways_in.demo import write_class
from autograder.core.grade import Grader
from autograder.sandbox.users import JOB_UIDS
from conftest import UNIT, notebook
from red_team_corpus import corpus
from test_gradescope import assert_gradescope_schema
from test_timing_tier import ROW_LOOP
from timing_attacks import HOLDS_THEN_RESTARTS_THE_MARK, RESTARTS_THE_HIGH_WATER_MARK, SLOW_BUT_PRECOMPUTED, forged

SUBMISSION = "/autograder/submission/positional_encodings.py"
# Containers at once: two for honest submissions, whose timing verdicts are compared with the host's; more for
# the attacks, whose score is 0 whatever the clock, and many of which only wait out the time limit (tier C
# has no control group: the memory attacks hold up to about 2.5 GB each while they last). Eight at once were
# slower than four on two cores (each container imports torch).
HONEST_AT_ONCE, HOSTILE_AT_ONCE = 2, 4
# The honest members graded one container each, through each platform's entry point: the reference, the blank
# stubs, and mistakes that take each way through the grader (a named mistake with its hidden case kept out of
# sight; a wrong helper whose path is timed with the grader's stand-in; a wrong bias whose path is not timed).
# The whole sample class is graded test for test in one container by the class run below (the same grader in
# the same tier C), so that CI does not start a container per mistake.
ONE_BY_ONE = ("reference", "blank_stubs", "sin_cos_swapped", "i_minus_j", "scaled_bias")
# The attacks that wait out a time limit of the grader's (a hang, a process or child that sleeps): started
# first, so that the short ones fill the containers beside them rather than a long one ending the run alone.
WAITS = ("loop_at_import", "loop_in_a_call", "ignores_sigterm", "detached_daemon", "network_connection",
         "many_processes", "children_beyond_the_memory_limit", "allocates_far_beyond_the_limit")

# The attacks graded through each platform's entry point, each in a fresh container: those on what the entry point
# itself handles and what differs between the two platforms (the files of the layout, the results file and what
# reaches it, processes left behind, the other jobs). The others (time, memory, processes, the jobs' private
# folders, the comparisons) meet the same grader in the same tier C whichever command starts it: they are graded
# together in one container, by a class run (`python -m autograder grade --out`, CLASS_RUN), with the honest
# members of the sample class beside them, and what they left is looked for after the whole run.
ON_THE_LAYOUT = ("patched_comparisons", "exit_at_import", "os_exit_at_import", "forged_results", "reads_the_reference",
                 "floods_output", "detached_daemon", "escape_sequences_in_messages", "forges_the_first_frame",
                 "becomes_root_again", "reads_the_grader_s_memory", "writes_the_results", "runs_a_classmate_s_code",
                 "other_sockets")
# Of those, the attacks that meet only the grader's machinery, which both entry points reach through the same
# platform.grade_upload: the comparisons made in the grader's process, its reading of the job's frames, the job user's
# rights, /proc and the sockets a job may open. They are graded through Gradescope's entry point; PrairieLearn's
# container grades the rest of ON_THE_LAYOUT (its own files, results file and output).
GRADER_MACHINERY_ONLY = ("patched_comparisons", "forges_the_first_frame", "becomes_root_again",
                         "reads_the_grader_s_memory", "other_sockets")
ON_PRAIRIELEARN = tuple(name for name in ON_THE_LAYOUT if name not in GRADER_MACHINERY_ONLY)
# The hostile classmates the class run always holds, whatever else it grades: attacks on the other members of a class
# (a finished classmate's code run, the grader's memory read, forged frames and escape sequences in the class's
# table). Some are attacks on the layout as well, graded through each entry point too.
CLASS_ATTACKS = ("runs_a_classmate_s_code", "detached_daemon", "many_processes", "reads_the_grader_s_memory",
                 "fills_its_private_folders", "forges_the_first_frame", "escape_sequences_in_messages")
RESULTS = "/autograder/results/results.json"
PL_ROOT = "/grade"
PL_KIT = f"{PL_ROOT}/serverFilesCourse/{prairielearn.KIT_FOLDER}"
PL_RESULTS = f"{PL_ROOT}/results/results.json"
# After grading, in the same container: what the job users left running or on disk (there should be nothing).
LEFTOVERS = f"""
import os
uids = range({JOB_UIDS.start}, {JOB_UIDS.stop})
running = []
for entry in os.listdir("/proc"):
    try:
        status = dict(line.split(":", 1) for line in open(f"/proc/{{entry}}/status") if ":" in line)
    except OSError:
        continue
    if int(status["Uid"].split()[0]) in uids and status["State"].split()[0] not in ("Z", "X"):
        running.append(status["Name"].strip())
files = []
for top in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/autograder", "/grade"):
    for folder, folders, names in os.walk(top):
        for name in folders + names:
            if os.lstat(os.path.join(folder, name)).st_uid in uids:
                files.append(os.path.join(folder, name))
print("LEFTOVERS " + repr((running, files)))
"""


CLASS_RUN = ("chmod -R go-rwx /class /autograder/source && cd /autograder/source && PYTHONPATH=. "
             "PYTHONDONTWRITEBYTECODE=1 /autograder/venv/bin/python -m autograder grade /class --out /results "
             "-j {jobs}; echo EXIT $?; python3 /tmp/leftovers.py")


def longest_first(names):
    """Attack names (``attack_<name>``) with those that wait out a limit first, the order otherwise kept."""
    return sorted(names, key=lambda name: name.removeprefix("attack_") not in WAITS)


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """The Gradescope image: setup.sh run once in the base, run_autograder where Gradescope puts it. The same
    image serves PrairieLearn's layout, its venv where the PrairieLearn image keeps it."""
    docker_kit.require()
    base = docker_kit.base_image()
    folder = tmp_path_factory.mktemp("bundle")
    with zipfile.ZipFile(gradescope.main_bundle(folder / "autograder.zip", unit=UNIT.name)) as archive:
        archive.extractall(folder / "source")
    for name in ("setup.sh", "run_autograder"):
        (folder / "source" / name).chmod(0o755)
    # setup.sh on the bare base, as Gradescope runs it: the slow step (apt, the venv, torch), kept for later runs
    # while setup.sh is the same (docker_kit.build_image's keep)...
    setup = docker_kit.build_image(base, {"/autograder/source/setup.sh": folder / "source" / "setup.sh"},
                                   "set -e; cd /autograder/source && bash ./setup.sh", "gradescope-setup", keep=True)
    # ...then the whole bundle unpacked and setup.sh run again over it (so it must also be safe to run twice).
    script = ("set -e; cd /autograder/source && bash ./setup.sh && cp run_autograder /autograder/run_autograder"
              f" && mkdir -p {os.path.dirname(prairielearn.DEFAULT_VENV)}"
              f" && ln -s {gradescope.DEFAULT_VENV} {prairielearn.DEFAULT_VENV}")
    return docker_kit.build_image(setup, {"/autograder/source": folder / "source"}, script, "gradescope")


@pytest.fixture(scope="module")
def prairielearn_kit(tmp_path_factory):
    return prairielearn.main_bundle(tmp_path_factory.mktemp("prairielearn"), image="kit-test/gradescope")


def sample_class(folder):
    """{name: source} of the sample class (the reference, the blank stubs, one mistake each) and the corpus."""
    files = {path.stem: path.read_text() for path in write_class(folder / "class", UNIT)}
    stub = files["blank_stubs"]
    traces = folder / f"traces-{uuid.uuid4().hex[:8]}"
    attacks = corpus(traces)
    files.update({f"attack_{name}": stub + "\n" + attack.source for name, attack in attacks.items()})
    reference = files["reference"]  # the timing tier's own attacks: the reference, made to win timing points
    files.update({"timing_forged": forged(reference, ("json.loads",), ("json.dumps", "builtins.float"), mode=True),
                  "timing_precomputed": reference + SLOW_BUT_PRECOMPUTED,
                  "timing_restarts": reference + RESTARTS_THE_HIGH_WATER_MARK})
    return files, attacks


def by_run_autograder(name):
    """Whether ``name`` (of sample_class's files) is graded by run_autograder in a container of its own."""
    return name in ONE_BY_ONE or name.startswith("timing_") or name.removeprefix("attack_") in ON_THE_LAYOUT


def in_the_class_run(name):
    """Whether ``name`` is graded by the class run in one container: every honest member and every attack not on
    the layout, with the hostile classmates of CLASS_ATTACKS (some of them on the layout too)."""
    return not name.startswith(("attack_", "timing_")) or not by_run_autograder(name) \
        or name.removeprefix("attack_") in CLASS_ATTACKS


@pytest.fixture(scope="module")
def graded(image, tmp_path_factory):
    """Some of the sample class (ONE_BY_ONE), the timing attacks and the attacks on the layout through
    run_autograder, each in a fresh container; the whole sample class and the other attacks by a class run in one
    container; and the whole sample class graded on the host."""
    folder = tmp_path_factory.mktemp("class")
    files, attacks = sample_class(folder)
    leftovers = folder / "leftovers.py"
    leftovers.write_text(LEFTOVERS)

    def in_container(name):
        ran = docker_kit.run(image, "/autograder/run_autograder; python3 /tmp/leftovers.py",
                             files={SUBMISSION: files[name].encode(), "/tmp/leftovers.py": leftovers},
                             fetch=[RESULTS], timeout=300)
        return name, ran

    def class_run():
        # Four at once: most attacks here only wait out a limit (a hang, a process that sleeps).
        names = longest_first(name for name in files if in_the_class_run(name))
        return "class", docker_kit.run(image, CLASS_RUN.format(jobs=4),
                                       files={**{f"/class/{name}.py": files[name].encode() for name in names},
                                              "/tmp/leftovers.py": leftovers},
                                       fetch=["/results"], timeout=900)

    runs = {}
    for names, at_once in ((ONE_BY_ONE, HONEST_AT_ONCE),
                           (longest_first(name for name in files if by_run_autograder(name)
                                          and name.startswith(("attack_", "timing_"))), HOSTILE_AT_ONCE)):
        with ThreadPoolExecutor(at_once) as pool:
            runs.update(pool.map(in_container, names))
    # Alone, after them: its honest members' timing verdicts are compared with the host's, as the ones above are.
    runs.update([class_run()])
    paths = []  # the host grades the sample class (the corpus it grades in test_red_team.py, with short limits)
    for name, text in ((name, text) for name, text in files.items() if not name.startswith(("attack_", "timing_"))):
        path = folder / "host" / f"{name}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        paths.append(path)
    grader = Grader(UNIT, sandbox="required")
    try:
        host = {result.name: result for result in grader.grade_many(paths, jobs=2)}
    finally:
        grader.close()
    faults = {name: [test.output for test in result.tests if "through no fault" in test.output][:1]
              for name, result in host.items() if result.grader_fault}
    assert not faults, f"the host's own grading of the sample class failed: {faults}"
    return files, attacks, runs, host


def results_of(ran, path=RESULTS):
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert path in ran.files, f"no {path}: {ran.stdout[-2000:]}"
    return json.loads(ran.files[path])


def leftovers_of(ran):
    line = next(line for line in ran.stdout.splitlines() if line.startswith("LEFTOVERS "))
    return eval(line[len("LEFTOVERS "):], {})  # our own script's repr of two lists of strings


def test_the_container_is_docker_s_default_and_the_grader_falls_back_to_a_user_per_job(graded):
    _, _, runs, _ = graded
    said = runs["reference"].stdout + runs["reference"].stderr
    assert "bubblewrap cannot make its namespaces here" in said, said[-2000:]
    assert "a user of its own per job, seccomp filter" in said
    results = results_of(runs["reference"])
    assert "a user of its own per job" in results["output"]


def test_the_sample_class_gets_the_host_s_scores_test_for_test(graded):
    files, _, runs, host = graded
    for name in ONE_BY_ONE:
        results = results_of(runs[name])
        assert_gradescope_schema(results)
        scored = {test["name"]: test["score"] for test in results["tests"] if test["name"] in rubric.TEST_BY_ID}
        expected = {test.id: test.score for test in host[name].tests}
        told = {test["name"]: test.get("output", "") for test in results["tests"]}
        assert scored == expected, (name, {test.id: (scored.get(test.id), test.score, told.get(test.id), test.output)
                                           for test in host[name].tests if scored.get(test.id) != test.score})
        assert results["score"] == host[name].score
    assert results_of(runs["reference"])["score"] == rubric.MAX_SCORE
    assert results_of(runs["blank_stubs"])["score"] == 0


def class_results(ran, name):
    """The class run's results.json-shaped file of ``name`` (batch.result_to_json: Gradescope's schema)."""
    assert "EXIT 0" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-3000:]
    path = f"/results/{name}.json"
    assert path in ran.files, (sorted(ran.files), ran.stdout[-2000:])
    return json.loads(ran.files[path])


@pytest.mark.parametrize("name", list(corpus(Path("unused"))))
def test_every_attack_scores_0_and_is_contained_in_the_container(graded, name):
    _, attacks, runs, host = graded
    if by_run_autograder(f"attack_{name}"):
        ran = runs[f"attack_{name}"]
        results = results_of(ran)
        assert_gradescope_schema(results)
    else:  # graded beside its classmates (its file: Gradescope's tests, no run's time); nothing may be left of any
        ran = runs["class"]
        results = class_results(ran, f"attack_{name}")
    assert results["score"] == 0, \
        {test["name"]: test["output"] for test in results["tests"] if test["score"]}
    assert "tell your instructor" not in results["output"], results["output"]  # graded, not a grader fault
    said = results["output"] + "\n".join(test["output"] for test in results["tests"])
    if not (attacks[name].grouped_only or attacks[name].private_folders_only):  # what tier C cannot bound
        assert "ESCAPED" not in said, said[:3000]
    running, files = leftovers_of(ran)
    assert running == [] and files == [], (running, files)


@pytest.mark.parametrize("name, timing_points", [("timing_forged", False), ("timing_precomputed", False),
                                                 ("timing_restarts", True)])
def test_the_timing_tier_s_figures_are_the_work_s_own_in_the_container(graded, name, timing_points):
    """Tier C, in Docker's default container: a forged sample (patched json and float, a torch function mode)
    and work hidden in the input draw get no timing points; opening clear_refs and exec are refused (the path
    carries on, and keeps its points). tests/core/test_timing_integrity.py shows each on the host."""
    _, _, runs, _ = graded
    results = results_of(runs[name])
    shaw = next(test for test in results["tests"] if test["name"] == "shaw_speed")
    if timing_points:
        assert shaw["score"] == shaw["max_score"], shaw.get("output")
    else:
        assert shaw["score"] == 0, shaw.get("output")


def test_memory_held_before_the_mark_is_restarted_is_counted_in_the_container(image, reference_text):
    """Issue 36, point 6, in Docker's default container (tier C, no control group per job: the memory figure is the
    runner's high-water mark, watched from outside through the call): a path that holds 60 score-sized tensors,
    then tries to restart the mark (readline's history file, clear_refs, exec), is over the memory limit."""
    ran = docker_kit.run(image, "/autograder/run_autograder",
                         files={SUBMISSION: (reference_text + HOLDS_THEN_RESTARTS_THE_MARK.format(copies=60)).encode()},
                         fetch=[RESULTS], timeout=300)
    shaw = next(test for test in results_of(ran)["tests"] if test["name"] == "shaw_speed")
    assert shaw["score"] == 0 and "Over it" in shaw.get("output", ""), shaw.get("output")


def test_the_hidden_cases_are_out_of_sight_until_the_due_date(graded):
    _, _, runs, _ = graded
    results = results_of(runs["sin_cos_swapped"])
    tests = {test["name"]: test for test in results["tests"]}
    failed = tests["sinusoidal_values"]
    assert failed["visibility"] == "visible" and failed["status"] == "failed"
    assert "Likely mistake:" in failed["output"] and "expected" not in failed["output"].split("Which case")[0]
    details = tests["sinusoidal_values (details)"]
    assert details["visibility"] == "after_due_date" and details["max_score"] == 0
    assert "expected" in details["output"] and "sinusoidal_table(" in details["output"]
    assert tests["shaw_speed"]["visibility"] == "visible" and "shaw_speed (details)" not in tests


# --- PrairieLearn -------------------------------------------------------------------------------------------------

def prairielearn_run(image, kit, student_files, timeout=300):
    """One PrairieLearn grading job: /grade laid out as PrairieLearn lays it out, the kit's entry point run."""
    files = {f"{PL_ROOT}/serverFilesCourse/{prairielearn.KIT_FOLDER}": kit / "serverFilesCourse" / prairielearn.KIT_FOLDER,
             f"{PL_ROOT}/data/data.json": json.dumps({"params": {}, "correct_answers": {},
                                                      "submitted_answers": {}}).encode(),
             f"{PL_ROOT}/tests/README": b"the question's tests folder\n",
             f"{PL_ROOT}/tests/{prairielearn.UNIT_FILE}": kit / "questions" / UNIT.name / "tests" / prairielearn.UNIT_FILE}
    files.update({f"{PL_ROOT}/student/{name}": data for name, data in student_files.items()})
    if not student_files:
        files[f"{PL_ROOT}/student/.keep"] = b""
    ran = docker_kit.run(image, f"{PL_KIT}/run_prairielearn; python3 /tmp/leftovers.py",
                         files={**files, "/tmp/leftovers.py": LEFTOVERS.encode()}, fetch=[PL_RESULTS],
                         timeout=timeout)
    return results_of(ran, PL_RESULTS), ran


def test_a_readable_copy_of_the_answers_elsewhere_stops_the_grader_before_any_job(image, prairielearn_kit,
                                                                                  reference_text):
    """A copy of the reference that job users could read (an instructor's stray unpacking of the kit) would
    give them the answers in tier C: the grader finds it, grades nothing, and tells the instructor where."""
    stray = f"mkdir -p /opt/stray && cp -r {PL_KIT}/solutions /opt/stray/ && chmod -R a+rX /opt/stray && "
    files = {f"{PL_ROOT}/serverFilesCourse/{prairielearn.KIT_FOLDER}":
             prairielearn_kit / "serverFilesCourse" / prairielearn.KIT_FOLDER,
             f"{PL_ROOT}/tests/{prairielearn.UNIT_FILE}": UNIT.name.encode(),
             f"{PL_ROOT}/student/positional_encodings.py": reference_text.encode()}
    ran = docker_kit.run(image, stray + f"{PL_KIT}/run_prairielearn", files=files, fetch=[PL_RESULTS])
    results = results_of(ran, PL_RESULTS)
    assert results["gradable"] is False, results
    assert "/opt/stray/solutions/positional_encodings.py" in results["message"], results["message"]
    assert "chmod -R go-rwx" in results["message"]


def assert_prairielearn_format(results):
    """PrairieLearn's external-grader results: gradable, a score in [0, 1], a message, tests with points."""
    assert isinstance(results["gradable"], bool)
    assert isinstance(results["score"], (int, float)) and 0 <= results["score"] <= 1
    assert isinstance(results.get("message", ""), str) and isinstance(results.get("output", ""), str)
    assert len(json.dumps(results)) < 1024**2  # PrairieLearn reads at most 1 MiB
    for test in results.get("tests", []):
        assert set(test) >= {"name", "points", "max_points", "message"}, test
        assert isinstance(test["name"], str) and isinstance(test["message"], str)
        assert 0 <= test["points"] <= test["max_points"], test
    if results["gradable"]:
        points = sum(test["points"] for test in results["tests"])
        maximum = sum(test["max_points"] for test in results["tests"])
        assert maximum == rubric.MAX_SCORE and results["score"] == pytest.approx(points / maximum)


@pytest.fixture(scope="module")
def prairielearn_graded(image, prairielearn_kit, tmp_path_factory):
    folder = tmp_path_factory.mktemp("prairielearn-class")
    files, attacks = sample_class(folder)
    cases = {name: {"positional_encodings.py": text.encode()} for name, text in files.items()  # some of the
             if name in ONE_BY_ONE or name.removeprefix("attack_") in ON_PRAIRIELEARN}  # class, attacks on its layout
    cases.update({
        "nothing": {},
        "not_a_notebook": {"positional_encodings.ipynb": b'{"cells": [\n'},
        "reference_notebook": {"hw/positional_encodings.ipynb": notebook([files["reference"]]).encode()},
        "notebook": {"positional_encodings.ipynb": notebook([files["blank_stubs"],
                                                             attacks["network_connection"].source]).encode()},
    })

    def one(name):
        return name, prairielearn_run(image, prairielearn_kit, cases[name])

    done = {}
    for names, at_once in (([name for name in cases if not name.startswith("attack_")], HONEST_AT_ONCE),
                           (longest_first(name for name in cases if name.startswith("attack_")), HOSTILE_AT_ONCE)):
        with ThreadPoolExecutor(at_once) as pool:
            done.update(pool.map(one, names))
    return done


def test_prairielearn_grades_the_sample_class_as_the_host_does_in_its_own_format(prairielearn_graded, graded):
    files, _, _, host = graded
    for name in [*ONE_BY_ONE, "reference_notebook"]:
        results, _ = prairielearn_graded[name]
        name = name.replace("_notebook", "")
        assert_prairielearn_format(results)
        assert results["gradable"] is True
        assert results["score"] == pytest.approx(host[name].score / rubric.MAX_SCORE)
        assert {test["name"]: test["points"] for test in results["tests"]} == \
            {test.id: test.score for test in host[name].tests}
    swapped = {test["name"]: test for test in prairielearn_graded["sin_cos_swapped"][0]["tests"]}
    assert "Likely mistake:" in swapped["sinusoidal_values"]["message"]
    assert "sinusoidal_table(" not in swapped["sinusoidal_values"]["message"]  # the hidden case stays hidden


def test_prairielearn_says_not_gradable_with_a_message_for_what_cannot_be_read(prairielearn_graded):
    for name, said in (("nothing", "No file to grade"), ("not_a_notebook", "is not a valid notebook")):
        results, _ = prairielearn_graded[name]
        assert_prairielearn_format(results)
        assert results["gradable"] is False and said in results["message"], results


def test_the_attacks_left_to_gradescope_s_entry_point_are_graded_there():
    assert set(GRADER_MACHINERY_ONLY) <= set(ON_THE_LAYOUT)
    assert all(by_run_autograder(f"attack_{name}") for name in GRADER_MACHINERY_ONLY)


@pytest.mark.parametrize("name", [f"attack_{name}" for name in ON_PRAIRIELEARN] + ["notebook"])
def test_prairielearn_contains_every_attack(prairielearn_graded, graded, name):
    _, attacks, _, _ = graded
    results, ran = prairielearn_graded[name]
    assert_prairielearn_format(results)
    assert results["gradable"] is True and results["score"] == 0, results["message"]
    attack = attacks.get(name[len("attack_"):])
    if attack is None or not (attack.grouped_only or attack.private_folders_only):
        assert "ESCAPED" not in json.dumps(results)
    assert leftovers_of(ran) == ([], [])


# --- Timing in half a CPU ---------------------------------------------------------------------------------------

STABILITY = """
import json, sys
sys.path.insert(0, "/autograder/source")
from autograder.core.grade import Grader
grader = Grader("positional_encodings", sandbox="required", secrets=["/autograder/source"])
verdicts = []
for name in sys.argv[1:]:
    for _ in range(REPEATS):
        result = grader.grade("/work/" + name + ".py")
        verdicts.append([name] + [test.score for test in result.tests if test.task == "timing"]
                        + [next(test.output for test in result.tests if test.id == "shaw_speed")])
grader.close()
print("VERDICTS " + json.dumps(verdicts))
"""
REPEATS = 10


def test_timing_verdicts_in_half_a_cpu_are_the_same_every_time(image, tmp_path, reference_text):
    """Gradescope's default container has half a CPU (and 768 MB): the calls are timed by CPU time there, and the
    reference and the loop each get the same verdict ten times out of ten. (A path near a band's limit, the
    materialised one at about 5x, is measured side by side with the wall clock by
    benchmarks/platform_containers.py.)"""
    variants = {"reference": reference_text, "row_loop": reference_text + ROW_LOOP}
    files = {f"/work/{name}.py": text.encode() for name, text in variants.items()}
    files["/work/stability.py"] = STABILITY.replace("REPEATS", str(REPEATS)).encode()
    ran = docker_kit.run(image, "chmod -R go-rwx /autograder/source /work && cd /work && "
                                "/autograder/venv/bin/python stability.py reference row_loop",
                         files=files, cpus=0.5, memory="768m", timeout=900)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    verdicts = json.loads(next(line for line in ran.stdout.splitlines() if line.startswith("VERDICTS "))[9:])
    by_name = {}
    for name, shaw, t5, feedback in verdicts:
        by_name.setdefault(name, set()).add((shaw, t5))
        assert "Timed by CPU time" in feedback or name == "row_loop", feedback
    assert by_name == {"reference": {(8, 7)}, "row_loop": {(0, 7)}}, verdicts


# --- A class run inside such a container -----------------------------------------------------------------------


def test_a_class_run_in_the_container_gives_every_honest_member_its_own_score(graded):
    """`python -m autograder grade` over a class in tier C: a row for everyone, each honest member of the sample
    class the host's score test for test, hostile classmates (one that looks for a finished submission to run,
    and the attacks on time, memory and processes) score 0, nothing left."""
    import csv
    import io

    files, attacks, runs, host = graded
    ran = runs["class"]
    members = [name for name in files if not name.startswith(("attack_", "timing_"))]
    names = [name for name in files if in_the_class_run(name)]
    assert set(members) | {f"attack_{name}" for name in CLASS_ATTACKS} <= set(names)
    assert "EXIT 0" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "a user of its own per job" in ran.stdout + ran.stderr
    rows = {row["submission"]: row for row in csv.DictReader(io.StringIO(ran.files["/results/grades.csv"].decode()))}
    assert sorted(rows) == sorted(names)
    for name in members:
        assert float(rows[name]["total"]) == host[name].score, name
        differ = {test.id: (rows[name][test.id], test.score, test.output) for test in host[name].tests
                  if float(rows[name][test.id]) != test.score}
        assert not differ, (name, differ)
    for name in names:
        if name.startswith("attack_"):
            assert float(rows[name]["total"]) == 0, name
    assert leftovers_of(ran) == ([], [])


# --- Every unit in the same container: the third and the fourth, which borrow the second unit's reference --------

# Each BORROWS rotary_alibi's apply_rotary: the bundle gives its reference to every job. With two of its sample
# mistakes, the first one named in every test it fails.
BORROWERS = {"long_context": ("yarn_bounds_swapped", "scores_scale_on_q_and_k"),
             "vision_positions": ("sincos_columns_first", "window_scale_on_bias")}


@pytest.fixture(scope="module", params=sorted(BORROWERS))
def borrower_graded(request, image, prairielearn_kit, tmp_path_factory):
    """A borrowing unit's reference, blank stubs and two of its mistakes graded by Gradescope's run_autograder for
    that unit (the same image: a bundle holds every unit, its run_autograder names one) and the reference by
    PrairieLearn's entry point; and the same files graded on the host."""
    from autograder.core import units

    name_of_unit = request.param
    unit = units.get(name_of_unit)
    folder = tmp_path_factory.mktemp(name_of_unit)
    paths = {path.stem: path for path in write_class(folder / "class", unit)}
    names = ("reference", "blank_stubs", *BORROWERS[name_of_unit])
    script = gradescope.run_script(name_of_unit).encode()

    def in_container(name):
        ran = docker_kit.run(image, "bash /tmp/run_autograder; python3 /tmp/leftovers.py",
                             files={f"/autograder/submission/{name_of_unit}.py": paths[name].read_bytes(),
                                    "/tmp/run_autograder": script, "/tmp/leftovers.py": LEFTOVERS.encode()},
                             fetch=[RESULTS], timeout=300)
        return name, ran

    def on_prairielearn():
        files = {PL_KIT: prairielearn_kit / "serverFilesCourse" / prairielearn.KIT_FOLDER,
                 f"{PL_ROOT}/tests/{prairielearn.UNIT_FILE}": name_of_unit.encode(),
                 f"{PL_ROOT}/student/{name_of_unit}.py": paths["reference"].read_bytes()}
        ran = docker_kit.run(image, f"{PL_KIT}/run_prairielearn; python3 /tmp/leftovers.py",
                             files={**files, "/tmp/leftovers.py": LEFTOVERS.encode()}, fetch=[PL_RESULTS])
        return "prairielearn", ran

    with ThreadPoolExecutor(HONEST_AT_ONCE) as pool:
        waiting = [pool.submit(in_container, name) for name in names] + [pool.submit(on_prairielearn)]
        runs = dict(future.result() for future in waiting)
    grader = Grader(unit, sandbox="required")
    try:
        host = {result.name: result for result in grader.grade_many([paths[name] for name in names], jobs=2)}
    finally:
        grader.close()
    return unit, runs, host


def test_a_borrowing_unit_gets_the_host_s_scores_on_both_platforms(borrower_graded):
    unit, runs, host = borrower_graded
    assert host["reference"].score == unit.rubric.MAX_SCORE and host["blank_stubs"].score == 0
    for name, expected in host.items():
        results = results_of(runs[name])
        assert_gradescope_schema(results)
        scored = {test["name"]: test["score"] for test in results["tests"] if test["name"] in unit.rubric.TEST_BY_ID}
        assert scored == {test.id: test.score for test in expected.tests}, (name, scored)
        assert results["score"] == expected.score and leftovers_of(runs[name]) == ([], [])
    swapped = {test["name"]: test for test in results_of(runs[BORROWERS[unit.name][0]])["tests"]}
    failed = [test for name, test in swapped.items() if test["score"] < test["max_score"]]
    assert failed and all("Likely mistake:" in test["output"] for test in failed), failed
    pl = results_of(runs["prairielearn"], PL_RESULTS)
    assert pl["gradable"] is True and pl["score"] == 1, pl.get("message")
    assert {test["name"]: test["points"] for test in pl["tests"]} == \
        {test.id: test.score for test in host["reference"].tests}
    assert leftovers_of(runs["prairielearn"]) == ([], [])
