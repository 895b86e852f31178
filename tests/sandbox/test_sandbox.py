"""The sandbox, for real: bubblewrap around the worker. What a submission can reach, and what it leaves behind.

These need bubblewrap (`bwrap`); .ci/run installs it. Without it they skip, and the grader refuses to
grade unsandboxed unless told to (the last test).
"""

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from autograder.course.build import ROOT
from autograder.core.grade import Grader
from autograder.sandbox.server import bubblewrap
from red_team_corpus import processes_named
from conftest import REFERENCE, UNIT

pytestmark = pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap (bwrap) is not installed here")

# The findings travel back in the message of the error that sinusoidal_table raises, shown in its feedback.
REPORT = '''

def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    raise RuntimeError("FINDINGS " + repr(FINDINGS))
'''


@pytest.fixture(scope="module")
def sandboxed_grader():
    grader = Grader(UNIT, sandbox="required", timing_mode="withhold")  # the tier's children are tested elsewhere
    yield grader
    grader.close()


def _findings(grader, tmp_path, reference_text, probe):
    path = tmp_path / "probe.py"
    path.write_text(reference_text + "\n" + probe + REPORT)
    result = grader.grade(path)
    text = next(test.output for test in result.tests if test.id == "sinusoidal_values")
    assert "FINDINGS" in text, text
    return text


def test_the_reference_hidden_cases_and_rubric_cannot_be_read_from_inside(sandboxed_grader, tmp_path, reference_text):
    secrets = [str(REFERENCE), str(ROOT / "autograder" / "units" / "positional_encodings" / "rubric.py"), str(ROOT / "autograder" / "units" / "positional_encodings" / "cases" / "shaw.py"),
               str(ROOT / "solutions")]
    probe = f'''
import os, sys
FINDINGS = []
for path in {secrets!r}:
    try:
        FINDINGS.append(("read", path, len(open(path).read()) if os.path.isfile(path) else os.listdir(path)))
    except OSError as error:
        pass
try:
    import solutions
    FINDINGS.append(("import", "solutions"))
except ImportError:
    pass
for folder in sys.path + ["/", "/work", "/tmp", os.path.expanduser("~")]:
    try:
        for name in os.listdir(folder):
            if name in ("solutions", "autograder", "rubric.py"):
                FINDINGS.append(("listed", folder, name))
    except OSError:
        pass
'''
    assert "FINDINGS []" in _findings(sandboxed_grader, tmp_path, reference_text, probe)


def test_other_submissions_and_files_outside_cannot_be_written_or_read(sandboxed_grader, tmp_path, reference_text):
    other = tmp_path / "other_student.py"
    other.write_text("# another student's answer\n")
    target = tmp_path / "planted.txt"
    probe = f'''
FINDINGS = []
try:
    FINDINGS.append(("read", open({str(other)!r}).read()))
except OSError:
    pass
try:
    open({str(target)!r}, "w").write("planted")
    FINDINGS.append(("wrote", {str(target)!r}))
except OSError:
    pass
'''
    assert "FINDINGS []" in _findings(sandboxed_grader, tmp_path, reference_text, probe)
    assert not target.exists()


def test_no_network_from_inside(sandboxed_grader, tmp_path, reference_text):
    probe = '''
import socket
FINDINGS = []
for address in (("127.0.0.1", 22), ("1.1.1.1", 53), ("8.8.8.8", 443)):
    try:
        connection = socket.create_connection(address, timeout=2)
        FINDINGS.append(("connected", address))
        connection.close()
    except OSError:
        pass
'''
    assert "FINDINGS []" in _findings(sandboxed_grader, tmp_path, reference_text, probe)


def test_a_detached_daemon_does_not_outlive_grading(sandboxed_grader, tmp_path, reference_text):
    marker = f"daemon-{uuid.uuid4().hex[:12]}"
    probe = f'''
import json
import os
FINDINGS = []
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", [{marker!r}, "300"])
    os._exit(0)
'''
    _findings(sandboxed_grader, tmp_path, reference_text, probe)
    deadline = time.monotonic() + 5
    while processes_named(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_named(marker) == []


def test_the_reference_still_scores_full_marks_in_the_sandbox(sandboxed_grader, tmp_path, reference_text):
    path = tmp_path / "reference.py"
    path.write_text(reference_text)
    result = sandboxed_grader.grade(path)
    assert {test.id: test.output for test in result.tests if not test.passed and test.task != "timing"} == {}


def test_without_bubblewrap_grading_is_refused_unless_unsandboxed(tmp_path, reference_text):
    path = tmp_path / "reference.py"
    path.write_text(reference_text)
    environment = {**os.environ, "PATH": str(tmp_path)}  # no bwrap on this PATH
    refused = subprocess.run([sys.executable, "-m", "autograder", "grade", str(path)], cwd=ROOT, env=environment,
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "bubblewrap (bwrap) is not installed" in refused.stderr
    allowed = subprocess.run([sys.executable, "-m", "autograder", "grade", str(path), "--unsandboxed", "--json",
                              "--without-gpu", "withhold"], cwd=ROOT, env=environment, capture_output=True, text=True,
                             timeout=300)
    assert allowed.returncode == 0 and "WITHOUT a sandbox" in allowed.stderr


def test_jobs_of_one_fork_server_cannot_see_or_touch_each_other(sandboxed_grader, tmp_path, reference_text):
    """Two submissions graded at once share the fork server, not their files, processes or memory."""
    secret = f"secret-{uuid.uuid4().hex[:8]}"
    keeper = f'''
import time
for folder in ("/work", "/tmp", "/dev/shm"):
    with open(folder + "/{secret}", "w") as handle:
        handle.write("{secret}")
time.sleep(8)  # long enough for the other submission to look around
'''
    looker = f'''
import os, signal, time
time.sleep(2)
FINDINGS = []
for folder in ("/work", "/tmp", "/dev/shm"):
    FINDINGS += [(folder, name) for name in os.listdir(folder) if "secret" in name]
me = os.readlink("/proc/self")  # this process, as /proc numbers it
for name in os.listdir("/proc"):
    if not name.isdigit():
        continue
    for what in ("root/work/{secret}", "root/tmp/{secret}", "cwd/{secret}", "environ", "mem", "maps"):
        try:
            with open(f"/proc/{{name}}/{{what}}", "rb") as handle:
                data = handle.read(1 << 16)
            if name != me:
                FINDINGS.append(("read", name, what, len(data)))
        except OSError:
            pass
for pid in range(1, 4096):  # every process id this one could signal (1 is its own namespace's init)
    if pid not in (1, os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
            FINDINGS.append(("killed", pid))
        except OSError:
            pass
'''
    first, second = tmp_path / "keeper.py", tmp_path / "looker.py"
    first.write_text(reference_text + "\n" + keeper)
    second.write_text(reference_text + "\n" + looker + REPORT)
    results = {result.name: result for result in sandboxed_grader.grade_many([first, second], jobs=2)}
    text = next(test.output for test in results["looker"].tests if test.id == "sinusoidal_values")
    assert "FINDINGS []" in text, text
    # The first one was not killed or disturbed: all its correctness points (the tier is withheld here).
    assert results["keeper"].score == 85, [t.output for t in results["keeper"].tests if not t.passed]


@pytest.mark.parametrize("sandboxed, isolate", [(True, False), (False, False)], ids=["sandbox_per_job", "unsandboxed"])
def test_the_fork_server_without_namespaces_of_its_own_still_grades(sandboxed, isolate, reference_text, tmp_path):
    """Where the kernel refuses namespaces inside bubblewrap, each job gets a server of its own; unsandboxed, a plain fork."""
    from autograder.units.positional_encodings import rubric
    from autograder.core.cases import build_cases
    from autograder.intake.load import load
    from autograder.sandbox.server import ForkServer, Limits, run_submission, serialize_plan

    path = tmp_path / "reference.py"
    path.write_text(reference_text + "\nimport os\nos.makedirs('made_here', exist_ok=True)\n")
    server = ForkServer(sandboxed, isolate=isolate)
    try:
        assert server.shared == (not sandboxed)
        outcome = run_submission(load(path), serialize_plan(build_cases(UNIT, rubric.SEED), UNIT), ["sinusoidal", "shaw"],
                                 Limits(sandboxed=sandboxed), server)
    finally:
        server.close()
    assert not outcome.load_failure and not outcome.failures, (outcome.load_failure, outcome.failures)
    assert set(outcome.results) == {"sinusoidal", "shaw"}
    assert not (tmp_path / "made_here").exists()  # it ran in a folder of its own


def test_a_kit_installed_into_the_python_environment_is_hidden_inside(monkeypatch, tmp_path):
    """pip install . (not -e) puts the grader and the reference in site-packages, which the sandbox mounts."""
    from autograder.sandbox import server as sandbox

    secret_folder = Path(sys.prefix) / f"kit-{uuid.uuid4().hex[:8]}"
    secret_folder.mkdir()
    try:
        (secret_folder / "reference.py").write_text("ANSWER = 42\n")
        probe = (f'import os\nprint(sorted(os.listdir({str(secret_folder)!r})) if os.path.isdir({str(secret_folder)!r}) '
                 'else "gone")\n'
                 f'try:\n    open(os.path.join({str(secret_folder)!r}, "planted.py"), "w").close()\n'
                 '    print("PLANTED")\nexcept OSError:\n    print("not writable")\n')
        seen = {}
        for hidden in (False, True):
            monkeypatch.setattr(sandbox, "KIT_FOLDERS", (secret_folder,) if hidden else ())
            server = sandbox.ForkServer(sandboxed=True)
            try:
                with open(tmp_path / f"out-{hidden}", "w+b") as out:
                    job = server.spawn({"mode": "grade"}, out.fileno(), out.fileno())
                    header = json.dumps({"filename": "probe.py", "chunks": [{"label": "probe.py", "source": probe}],
                                         "tasks": [], "limits": {}}).encode()
                    sandbox.send_all(job.input, sandbox.frame(b"S", header) + sandbox.frame(b"P", sandbox.serialize_plan({}).data))
                    job.wait(time.monotonic() + 60)
                    job.stop()
                    out.seek(0)
                    seen[hidden] = out.read().decode()
            finally:
                server.close()
        assert "reference.py" in seen[False]  # the control: without the cover it is there to read
        assert "reference.py" not in seen[True] and "[]" in seen[True], seen[True]
        assert "PLANTED" not in seen[True]  # the cover is read-only: no job leaves a file there for the next
    finally:
        shutil.rmtree(secret_folder)


def test_a_task_cut_short_by_the_submission_s_time_limit_while_it_runs_is_unrun_not_its_own_failure(reference_text,
                                                                                                  tmp_path):
    """The task running when the whole submission's time ran out did not fail on its own: the error model runs
    such a mutant again (core/mutants.py), where it once had no outcome and a loaded machine named another edit.
    A task's own limit (task_seconds) is set far beyond the submission's here, so the submission's is what ends it."""
    from autograder.units.positional_encodings import rubric
    from autograder.core.cases import build_cases
    from autograder.intake.load import load
    from autograder.sandbox.server import ForkServer, Limits, run_submission, serialize_plan

    path = tmp_path / "hangs_in_shaw.py"
    path.write_text(reference_text + "\n\ndef shaw_scores(*args, **kwargs):\n    import time\n    time.sleep(600)\n")
    tasks = ["sinusoidal", "shaw", "t5_bucket"]
    server = ForkServer(True)
    try:
        outcome = run_submission(load(path), serialize_plan(build_cases(UNIT, rubric.SEED), UNIT), tasks,
                                 Limits(wall_seconds=15, task_seconds=300), server)
    finally:
        server.close()
    assert not outcome.load_failure
    # shaw was running (or, on a machine slow to start the job, waiting) when the time ran out; t5_bucket waited.
    assert {"shaw", "t5_bucket"} <= set(outcome.unrun) <= set(tasks), outcome.unrun
    assert all("time limit" in outcome.failures[task] for task in outcome.unrun), outcome.failures
    assert not set(outcome.results) & set(outcome.unrun)
