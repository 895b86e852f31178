"""The Docker test kit, for real: what a container from the base image can and cannot do under Docker's defaults.

The fallback tier of the Gradescope bundle rests on the first of these facts: in a container with Docker's
default seccomp profile and capabilities, a process cannot make a user namespace, so bubblewrap cannot run.

These need Docker (`tests/helpers/docker_kit.py` says what exactly); they skip without it, and fail under
KIT_REQUIRE_DOCKER=1, which .ci/run sets.
"""

import errno
import os

import pytest

import docker_kit

# CAP_CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, NET_RAW,
# SYS_CHROOT, MKNOD, AUDIT_WRITE, SETFCAP: the set Docker gives a container unless told otherwise.
DOCKER_DEFAULT_CAPABILITIES = 0xA80425FB
SECCOMP_MODE_FILTER = 2

UNSHARE_USER_NAMESPACE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER = 0x10000000
print(libc.unshare(CLONE_NEWUSER), ctypes.get_errno())
"""


@pytest.fixture(scope="module")
def base():
    docker_kit.require()
    return docker_kit.base_image()


def _status_field(status_text, name):
    line = next(line for line in status_text.splitlines() if line.startswith(name + ":"))
    return line.split(":", 1)[1].strip()


def _containers_named(name):
    listed = docker_kit.docker("ps", "--all", "--quiet", "--filter", f"name=^{name}$")
    return listed.stdout.decode().split()


def test_base_runs_python_with_dockers_default_capabilities_and_seccomp_filter(base):
    ran = docker_kit.run(base, "python3 --version && id -u && cat /proc/self/status")
    assert ran.returncode == 0, ran.stderr
    version, uid, status = ran.stdout.split("\n", 2)
    assert version.startswith("Python 3.11"), version
    assert uid == "0", f"the base runs as root, like Gradescope's; got uid {uid}"
    capabilities = int(_status_field(status, "CapEff"), 16)
    assert capabilities == DOCKER_DEFAULT_CAPABILITIES, (
        f"effective capabilities {capabilities:#x}, expected Docker's default {DOCKER_DEFAULT_CAPABILITIES:#x}")
    assert _status_field(status, "Seccomp") == str(SECCOMP_MODE_FILTER), "no seccomp filter: not Docker's default"


def test_base_has_what_a_setup_script_needs(base):
    # BASE_CHECKS ran when the image was built; this says so again on the image the tests actually use.
    ran = docker_kit.run(base, docker_kit.BASE_CHECKS + "cat /etc/pip.conf")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "find-links = /opt/wheels" in ran.stdout


def test_user_namespaces_are_refused_with_eperm_under_dockers_defaults(base):
    ran = docker_kit.run(base, ["python3", "-c", UNSHARE_USER_NAMESPACE])
    assert ran.returncode == 0, ran.stderr
    result, error = map(int, ran.stdout.split())
    assert (result, error) == (-1, errno.EPERM), (
        f"unshare(CLONE_NEWUSER) gave {result} with errno {errno.errorcode.get(error, error)}; expected -1 with "
        "EPERM, which the bundle's fallback tier expects of Gradescope's container")
    refused = docker_kit.run(base, "unshare --user --map-root-user true")
    assert refused.returncode != 0 and "Operation not permitted" in refused.stderr, refused.stderr


def test_grading_network_none_leaves_only_loopback(base):
    ran = docker_kit.run(base, "ls /sys/class/net")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["lo"]


def test_files_round_trip_in_and_out(base, tmp_path):
    every_byte = bytes(range(256)) * 4
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\necho tool ran\n")
    script.chmod(0o755)
    folder = tmp_path / "kit"
    (folder / "inner").mkdir(parents=True)
    (folder / "inner" / "a.txt").write_text("a")
    ran = docker_kit.run(
        base,
        "mkdir -p /out && /opt/tool.sh > /out/tool.txt && cp /data/bytes.bin /out/ && cp -r /srv/kit /out/kit"
        " && stat -c %a /tmp",
        files={"/data/bytes.bin": every_byte, "/opt/tool.sh": script, "/srv/kit": folder},
        fetch=["/out/bytes.bin", "/out/tool.txt", "/out/kit", "/out/missing"])
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "1777", "copying files in changed the mode of /tmp"
    assert ran.files == {"/out/bytes.bin": every_byte, "/out/tool.txt": b"tool ran\n", "/out/kit/inner/a.txt": b"a"}


def test_cpus_limit_is_visible_in_the_containers_cgroup(base):
    version = docker_kit.cgroup_version()
    read = {2: "cat /sys/fs/cgroup/cpu.max",
            1: "echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"}
    ran = docker_kit.run(base, read[version], cpus=0.5)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["50000", "100000"], f"cgroup v{version}: quota and period {ran.stdout!r}"


def test_container_is_removed_after_a_failing_command(base):
    ran = docker_kit.run(base, "echo bye >&2; exit 3")
    assert (ran.returncode, ran.stderr) == (3, "bye\n")
    assert _containers_named(ran.container) == []


def test_container_is_removed_after_a_timeout(base):
    with pytest.raises(docker_kit.Timeout) as timeout:
        docker_kit.run(base, "sleep 60", timeout=2)
    assert _containers_named(timeout.value.container) == []


def test_build_image_reuses_an_image_whose_inputs_are_unchanged(base):
    first = docker_kit.build_image(base, {"/probe/value": b"one"}, "cp /probe/value /probe/copy", "cache-probe")
    again = docker_kit.build_image(base, {"/probe/value": b"one"}, "cp /probe/value /probe/copy", "cache-probe")
    other = docker_kit.build_image(base, {"/probe/value": b"two"}, "cp /probe/value /probe/copy", "cache-probe")
    assert first == again and first != other
    assert docker_kit.run(first, "cat /probe/copy").stdout == "one"
    labels = docker_kit.docker("image", "inspect", "--format", "{{json .Config.Labels}}", first).stdout.decode()
    assert '"kit-test":"1"' in labels


def test_a_kept_image_outlives_the_run_s_cleanup_and_its_successor_replaces_it(base, monkeypatch):
    monkeypatch.setenv("KIT_TEST_RUN", f"kept-probe-{os.getpid()}")
    hint = f"keep-probe-{os.getpid()}"
    first = docker_kit.build_image(base, {"/probe/value": b"one"}, "cp /probe/value /probe/copy", hint, keep=True)
    child = docker_kit.build_image(first, {}, "true", f"{hint}-child")
    try:
        # Built on the kept image, the child is the run's: it does not inherit the kept one's hint.
        child_hint = docker_kit.docker("image", "inspect", "--format", '{{index .Config.Labels "%s"}}'
                                       % docker_kit.KEEP_LABEL, child).stdout.decode().strip()
        assert child_hint == "", child_hint
        docker_kit.cleanup(os.environ["KIT_TEST_RUN"])  # the run's images go; the kept one stays
        assert docker_kit.image_exists(first) and not docker_kit.image_exists(child)
        second = docker_kit.build_image(base, {"/probe/value": b"two"}, "cp /probe/value /probe/copy", hint, keep=True)
        assert docker_kit.image_exists(second) and not docker_kit.image_exists(first)
    finally:
        docker_kit._remove_kept(hint)
    assert not docker_kit.image_exists(second)


def test_require_skips_without_docker_and_fails_when_ci_requires_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker command here
    assert "no docker command" in docker_kit.problem()
    monkeypatch.delenv("KIT_REQUIRE_DOCKER", raising=False)
    with pytest.raises(pytest.skip.Exception):
        docker_kit.require()
    monkeypatch.setenv("KIT_REQUIRE_DOCKER", "1")
    with pytest.raises(pytest.fail.Exception, match="KIT_REQUIRE_DOCKER=1"):
        docker_kit.require()
