"""Real Docker for the tests: a base image like Gradescope's, images built on it, containers with Docker's defaults.

Gradescope runs the autograder in a Docker container with Docker's default settings: no ``--privileged``,
no added capabilities, the default seccomp profile. The tests that need that container (the Gradescope
bundle, a PrairieLearn entry point) use these functions:

- ``require()`` at the top of a module-scoped fixture: it skips the tests where Docker cannot be used,
  and fails them instead when ``KIT_REQUIRE_DOCKER=1`` (CI sets it, so CI never goes green by skipping).
- ``base_image()``: Debian bookworm from ``debootstrap --variant=minbase`` with python3, python3-venv and
  ca-certificates, run as root, plus this machine's CPU build of torch in ``/opt/wheels`` and an
  ``/etc/pip.conf`` that finds it (and trusts this machine's CA bundle, which pip needs to reach an index).
- ``build_image(base, files, script, tag_hint)``: an image made by running ``script`` in ``base`` with the
  network (Gradescope's ``setup.sh`` step).
- ``run(image, command, ...)``: a fresh container for one command, by default without a network (the
  grading step), with files copied in before it starts and out after it ends.

What is cached, and where:

- the root file system of the base image, as a tarball under ``KIT_DOCKER_CACHE`` (default
  ``/var/cache/kit-docker``), made with debootstrap the first time (about two minutes) and kept;
- every image, under a tag that ends in a hash of everything that went into it, so a test reuses an
  image whose inputs have not changed, in this session and the next ones;
- an image built with ``keep=True`` (the Gradescope ``setup.sh`` step, slow and rarely changed) is not one
  of the run's: it carries ``kit-test.keep=<tag_hint>`` instead of the run's label, so ``.ci/run`` leaves it
  for the next run, and building a new one for the same hint removes the kept ones before it (so at most
  one per hint stays on disk). ``cleanup()`` without ``--run`` removes them too.

Every container and image made here has the label ``kit-test=1``, and ``kit-test.run=<KIT_TEST_RUN>``
where that variable is set. Containers are removed by ``run`` and ``build_image`` themselves; images stay
until ``cleanup()`` (``python3 tests/helpers/docker_kit.py cleanup [--run ID]``; ``.ci/run`` calls it at exit for
the images its run made). The tarball is never removed: delete the folder to rebuild it.

This module uses the standard library only, so ``.ci/run`` can call it with the system's python3.
"""

import argparse
import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

LABEL = "kit-test=1"
RUN_LABEL = "kit-test.run"
KEEP_LABEL = "kit-test.keep"

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# minbase already holds apt, gpgv, passwd (useradd), util-linux (unshare) and libseccomp2 (apt needs it);
# base_image checks each of them, so a change in Debian shows up as a failed build, not a puzzling test.
INCLUDE = ("python3", "python3-venv", "ca-certificates")
TORCH_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# Apart from Debian's own bundle, so that an upgrade of ca-certificates inside the image cannot drop it.
CONTAINER_CA_BUNDLE = "/etc/ssl/kit-host-ca.pem"
PIP_CONF = f"[global]\ncert = {CONTAINER_CA_BUNDLE}\nfind-links = /opt/wheels\n"
BASE_CHECKS = """set -euo pipefail
python3 -c 'import ensurepip, venv, ssl'
for tool in apt-get useradd unshare; do command -v "$tool" >/dev/null || { echo "the base lacks $tool"; exit 1; }; done
dpkg-query -W -f='${Status}\\n' libseccomp2 | grep -q 'install ok installed' || { echo "the base lacks libseccomp2"; exit 1; }
test -f /opt/wheels/%s
""" % TORCH_WHEEL.name

BUILD_TIMEOUT = 3600  # seconds, for debootstrap and for one build script (a pip install of torch)


def cache_dir():
    """The folder that holds the base image's root file system tarball: ``KIT_DOCKER_CACHE`` or ``/var/cache/kit-docker``."""
    return Path(os.environ.get("KIT_DOCKER_CACHE", "/var/cache/kit-docker"))


def rootfs_tarball():
    """Where the tarball of the debootstrap tree lies; its name carries a hash of the debootstrap recipe."""
    return cache_dir() / f"{SUITE}-minbase-{_digest(_rootfs_recipe())}.tar"


def problem():
    """None when the Docker tests can run here, else one sentence saying why not.

    They need the docker command, a daemon that answers it, the torch wheel for the base image, and, until
    the root file system tarball is cached, debootstrap and root to make it.
    """
    if shutil.which("docker") is None:
        return "There is no docker command on PATH (apt-get install docker.io)."
    try:
        info = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True,
                              text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "The Docker daemon did not answer `docker info` within 30 s."
    if info.returncode != 0:
        last_line = (info.stderr.strip().splitlines() or ["no message"])[-1]
        return f"The Docker daemon is not reachable (start it: dockerd --bridge=none --iptables=false): {last_line}"
    if not TORCH_WHEEL.is_file():
        return f"The base image needs the CPU build of torch at {TORCH_WHEEL}, which is missing."
    if not rootfs_tarball().is_file():
        if shutil.which("debootstrap") is None:
            return (f"The base image's root file system is not cached ({rootfs_tarball()}) and debootstrap, "
                    "which makes it, is not installed (apt-get install debootstrap).")
        if os.geteuid() != 0:
            return f"The base image's root file system is not cached ({rootfs_tarball()}); making it needs root."
    return None


def require():
    """Skip the calling test (or fixture) when Docker cannot be used here; fail it instead under ``KIT_REQUIRE_DOCKER=1``."""
    import pytest  # here, not at the top: .ci/run calls this module with a python3 that has no pytest

    reason = problem()
    if reason is None:
        return
    if os.environ.get("KIT_REQUIRE_DOCKER") == "1":
        pytest.fail(f"KIT_REQUIRE_DOCKER=1, but Docker cannot be used: {reason}", pytrace=False)
    pytest.skip(reason)


def docker(*args, timeout=120, check=True):
    """``docker ARGS``, its output captured (bytes); raises ``DockerError`` with its stderr when it fails and ``check``."""
    done = subprocess.run(["docker", *args], capture_output=True, timeout=timeout)
    if check and done.returncode != 0:
        raise DockerError(f"docker {' '.join(args[:3])} ... exited {done.returncode}: "
                          f"{done.stderr.decode(errors='replace').strip()}")
    return done


class DockerError(RuntimeError):
    """A docker command, or a build script run by ``build_image``, failed."""


def cgroup_version():
    """The cgroup version the daemon gives its containers, as an int (1 or 2)."""
    return int(docker("info", "--format", "{{.CgroupVersion}}").stdout.decode().strip())


def image_exists(tag):
    return docker("image", "inspect", tag, check=False).returncode == 0


def base_image():
    """The tag of the base image, built where missing: Debian bookworm minbase, root, torch's wheel, pip.conf.

    Debian's python3 is 3.11, which the torch wheel (cp311) fits. ``/etc/pip.conf`` points pip at
    ``/opt/wheels`` and at this machine's CA bundle (``/etc/ssl/kit-host-ca.pem``).
    """
    files = {
        str(TORCH_WHEEL): TORCH_WHEEL,
        "/etc/pip.conf": PIP_CONF.encode(),
        CONTAINER_CA_BUNDLE: HOST_CA_BUNDLE,
    }
    return build_image(_rootfs_image(), files, BASE_CHECKS, "base")


def build_image(base, files, script, tag_hint, keep=False):
    """The tag of ``base`` after ``script`` (bash) ran in it with ``files`` copied in, built where missing.

    Args:
        base: the image to start from (a tag or an id).
        files: ``{container path: host path or bytes}``; a host folder is copied with everything in it.
        script: run as ``bash -c script`` as root, with the host's network (for apt and pip).
        tag_hint: a short name for the image, e.g. ``"gradescope"``.
        keep: a cache for later runs (see the module's doc), not an image of this run.

    Returns:
        ``kit-test/<tag_hint>:<hash>``, the hash taken over the base image's id, the files' paths, modes and
        contents, and the script. An image under that tag is reused as it is.

    Raises:
        DockerError: the script failed; the message holds the end of its output.
    """
    base_id = docker("image", "inspect", "--format", "{{.Id}}", base).stdout.decode().strip()
    tag = f"kit-test/{tag_hint}:{_digest([base_id, _files_digest(files), script])}"
    if image_exists(tag):
        return tag
    with _building(tag):
        return tag if image_exists(tag) else _build(base, files, script, tag, tag_hint, keep)


def _building(tag):
    """A lock held while ``tag`` is made, so that test processes that need the same image at once (pytest's
    workers) make it once: the second waits, then finds it."""
    folder = Path(tempfile.gettempdir()) / "kit-test-docker-locks"
    folder.mkdir(exist_ok=True)
    lock = open(folder / f"{_digest(tag)}.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock  # the lock goes with the file, closed at the end of the with block


def _build(base, files, script, tag, tag_hint, keep):
    container = _new_name()
    try:
        docker("create", "--name", container, *_labels(), "--network", "host", base, "bash", "-c", script)
        _copy_in(container, files)
        built = docker("start", "--attach", container, timeout=BUILD_TIMEOUT, check=False)
        if built.returncode != 0:
            output = (built.stdout + built.stderr).decode(errors="replace")
            raise DockerError(f"building {tag} failed (exit {built.returncode}); the end of its output:\n"
                              f"{output[-4000:]}")
        if keep:
            _remove_kept(tag_hint)
        docker("commit", *_changes(keep=tag_hint if keep else None), container, tag)
    finally:
        docker("rm", "--force", "--volumes", container, check=False)
    return tag


def _remove_kept(tag_hint):
    """Remove the images kept for ``tag_hint`` (see ``build_image``), before a new one takes their place."""
    kept = docker("images", "--format", "{{.Repository}}:{{.Tag}}", "--filter", f"label={KEEP_LABEL}={tag_hint}"
                  ).stdout.decode().split()
    if kept:
        docker("rmi", *kept, check=False)


@dataclass
class Ran:
    """What ``run`` saw: the command's exit status, its output, and the files fetched after it ended."""

    returncode: int
    stdout: str
    stderr: str
    files: dict = field(default_factory=dict)  # {container path: bytes}; a path that did not exist is absent
    container: str = ""  # the container's name (it no longer exists)


class Timeout(subprocess.TimeoutExpired):
    """``run``'s command outlived its timeout; its container has been removed. ``container`` names it."""

    def __init__(self, cmd, timeout, container, output=None, stderr=None):
        super().__init__(cmd, timeout, output, stderr)
        self.container = container


def run(image, command, files=None, network="none", cpus=None, timeout=600, fetch=(), memory=None):
    """Run ``command`` in a fresh container of ``image`` with Docker's default settings; the container is always removed.

    Args:
        image: a tag or id.
        command: a string, run as ``bash -c command``, or a list, run as it is.
        files: ``{container path: host path or bytes}`` copied in before the container starts; bytes are
            written with mode 0644, host files keep theirs, a host folder is copied whole. Owned by root.
        network: ``"none"`` (grading) or another ``docker --network`` value.
        cpus: ``docker --cpus``, e.g. 0.5; None for no CPU limit.
        memory: ``docker --memory``, e.g. "768m" (Gradescope's default container); None for no limit.
        timeout: seconds for the command.
        fetch: container paths copied out after the command ends; a folder comes back file by file.

    Returns:
        ``Ran``. Nothing else is set: no ``--privileged``, ``--cap-add`` or ``--security-opt``.

    Raises:
        Timeout: the command ran past ``timeout`` (the container is removed all the same).
    """
    argv = ["bash", "-c", command] if isinstance(command, str) else list(command)
    container = _new_name()
    limits = (["--cpus", str(cpus)] if cpus is not None else []) + (["--memory", str(memory)] if memory else [])
    try:
        docker("create", "--name", container, *_labels(), "--network", network, *limits, image, *argv)
        _copy_in(container, files or {})
        try:
            done = subprocess.run(["docker", "start", "--attach", container], capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            raise Timeout(argv, timeout, container, expired.output, expired.stderr) from None
        fetched = {}
        for path in fetch:
            fetched.update(_copy_out(container, path))
        return Ran(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"),
                   fetched, container)
    finally:
        docker("rm", "--force", "--volumes", container, check=False)


def cleanup(run=None):
    """Remove every container and image labelled ``kit-test=1`` (only those of ``KIT_TEST_RUN=run`` where given).

    The root file system tarball stays on disk. Returns how many containers and images were removed.
    """
    selector = ["--filter", f"label={LABEL}"] + (["--filter", f"label={RUN_LABEL}={run}"] if run else [])
    containers = docker("ps", "--all", "--quiet", *selector).stdout.decode().split()
    if containers:
        docker("rm", "--force", "--volumes", *containers, check=False)
    # By tag, newest first: an image goes with its last tag, and then its untagged parents that nothing else uses.
    tags = docker("images", "--format", "{{.Repository}}:{{.Tag}}", *selector).stdout.decode().split()
    tags = [tag for tag in tags if not tag.endswith(":<none>")]
    if tags:
        docker("rmi", *tags, check=False)
    leftovers = docker("images", "--all", "--quiet", *selector).stdout.decode().split()
    if leftovers:
        docker("rmi", "--force", *dict.fromkeys(leftovers), check=False)
    return len(containers), len(tags) + len(leftovers)


def _rootfs_recipe():
    return {"suite": SUITE, "variant": "minbase", "include": list(INCLUDE), "mirror": MIRROR}


def _rootfs_image():
    """The debootstrap tree as an image (``docker import`` of the cached tarball, made where missing)."""
    tarball = rootfs_tarball()
    tag = f"kit-test/{SUITE}-minbase:{_digest(_rootfs_recipe())}"
    if image_exists(tag):
        return tag
    with _building(tag):
        if not image_exists(tag):
            if not tarball.is_file():
                _make_rootfs_tarball(tarball)
            docker("import", *_changes(), str(tarball), tag, timeout=BUILD_TIMEOUT)
    return tag


def _make_rootfs_tarball(tarball):
    """debootstrap into a folder beside ``tarball``, then tar it; the tarball appears whole or not at all."""
    tarball.parent.mkdir(parents=True, exist_ok=True)
    with open(tarball.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another session may be making the same tarball
        if tarball.is_file():
            return
        tree = Path(tempfile.mkdtemp(prefix="rootfs-", dir=tarball.parent))
        log = tarball.with_suffix(".log")
        try:
            with open(log, "wb") as out:
                made = subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(INCLUDE)}",
                                       SUITE, str(tree), MIRROR], stdout=out, stderr=subprocess.STDOUT,
                                      timeout=BUILD_TIMEOUT)
            if made.returncode != 0:
                tail = log.read_text(errors="replace")[-3000:]
                raise DockerError(f"debootstrap exited {made.returncode}; the end of {log}:\n{tail}")
            partial = tarball.with_suffix(".partial")
            subprocess.run(["tar", "--numeric-owner", "--xattrs", "-C", str(tree), "-cf", str(partial), "."],
                           check=True, timeout=BUILD_TIMEOUT)
            os.replace(partial, tarball)
        finally:
            _remove_tree(tree)


def _remove_tree(tree):
    """Remove a debootstrap tree, after unmounting what a failed debootstrap may have left mounted in it.

    Never rmtree through a mount: below a mounted /sys or /proc that would delete the host's own entries.
    """
    inside = str(tree.resolve()) + "/"
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1] for line in mounts]
    for point in sorted((p for p in points if p.startswith(inside)), key=len, reverse=True):
        subprocess.run(["umount", "--lazy", point], check=False)
    with open("/proc/self/mounts") as mounts:
        if any(line.split()[1].startswith(inside) for line in mounts):
            raise DockerError(f"{tree} still has file systems mounted in it; left in place")
    shutil.rmtree(tree, ignore_errors=True)


def _labels():
    run_id = os.environ.get("KIT_TEST_RUN")
    return ["--label", LABEL] + (["--label", f"{RUN_LABEL}={run_id}"] if run_id else [])


def _changes(keep=None):
    """``--change`` options for import and commit: the labels (a commit would otherwise keep its base's run label
    and keep hint) and a plain CMD. ``keep``: the tag hint of an image kept for later runs, which belongs to no run."""
    changes = ["LABEL " + LABEL]
    if keep is not None:
        changes.append(f"LABEL {RUN_LABEL}=\"\" {KEEP_LABEL}={json.dumps(keep)}")
    else:  # an image built on a kept one would keep its hint, and go when a new one of that hint is built
        changes.append(f"LABEL {KEEP_LABEL}=\"\"")
        if os.environ.get("KIT_TEST_RUN"):
            changes.append(f"LABEL {RUN_LABEL}={json.dumps(os.environ['KIT_TEST_RUN'])}")
    changes.append('CMD ["bash"]')
    return [option for change in changes for option in ("--change", change)]


def _new_name():
    return f"kit-test-{uuid.uuid4().hex[:12]}"


def _digest(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def _files_digest(files):
    """A hash of every path, mode and content that ``_copy_in`` would write."""
    digest = hashlib.sha256()
    for member, content in _members(files):
        digest.update(json.dumps([member.name, member.type.decode(), member.mode, member.size]).encode())
        if content is not None:
            with content() as stream:
                for block in iter(lambda: stream.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def _members(files):
    """``(TarInfo, opener or None)`` for every file and folder ``files`` puts in a container.

    Missing parent folders are left to ``docker cp``, which makes them (0755) without touching those that
    exist: a folder entry for ``/tmp`` would set its mode to the entry's.
    """
    for target, source in sorted(files.items()):
        target = target.strip("/")
        if isinstance(source, (bytes, bytearray)):
            info = _info(target, tarfile.REGTYPE, 0o644, len(source), time.time())
            yield info, lambda data=bytes(source): io.BytesIO(data)
            continue
        source = Path(source)
        paths = [source, *sorted(source.rglob("*"))] if source.is_dir() else [source]
        for path in paths:
            name = target + "/" + path.relative_to(source).as_posix() if path != source else target
            stat = path.stat()
            if path.is_dir():
                yield _info(name, tarfile.DIRTYPE, stat.st_mode & 0o7777, 0, stat.st_mtime), None
            else:
                yield (_info(name, tarfile.REGTYPE, stat.st_mode & 0o7777, stat.st_size, stat.st_mtime),
                       lambda path=path: open(path, "rb"))


def _info(name, kind, mode, size, mtime):
    # A real mtime: pip refuses to zip files dated before 1980, tar's default of 0 among them.
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.mtime = kind, mode, size, mtime
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _copy_in(container, files):
    """Copy ``files`` into the (created, not yet started) container as one tar stream on ``docker cp``'s stdin."""
    if not files:
        return
    with tempfile.TemporaryFile() as stream:  # a file, not memory: the torch wheel is 190 MB
        with tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for info, content in _members(files):
                if content is None:
                    tar.addfile(info)
                else:
                    with content() as data:
                        tar.addfile(info, data)
        stream.seek(0)
        done = subprocess.run(["docker", "cp", "-", f"{container}:/"], stdin=stream, capture_output=True,
                              timeout=BUILD_TIMEOUT)
    if done.returncode != 0:
        raise DockerError(f"docker cp into {container} failed: {done.stderr.decode(errors='replace').strip()}")


def _copy_out(container, path):
    """``{container path: bytes}`` for the file at ``path``, or for every file below it; empty where it does not exist."""
    done = docker("cp", f"{container}:{path}", "-", check=False, timeout=BUILD_TIMEOUT)
    if done.returncode != 0:
        return {}
    # The tar's names start at the last component of ``path``.
    parent = path.rstrip("/").rsplit("/", 1)[0]
    fetched = {}
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        for member in tar:
            if member.isfile():
                fetched[f"{parent}/{member.name}"] = tar.extractfile(member).read()
    return fetched


def main(argv=None):
    parser = argparse.ArgumentParser(description="The Docker images and containers of the kit's tests.")
    commands = parser.add_subparsers(dest="command", required=True)
    clean = commands.add_parser("cleanup", help="remove the containers and images labelled kit-test=1")
    clean.add_argument("--run", help="only those made with KIT_TEST_RUN=RUN")
    commands.add_parser("base", help="build the base image where missing and print its tag")
    args = parser.parse_args(argv)
    if args.command == "cleanup":
        containers, images = cleanup(args.run)
        print(f"removed {containers} containers and {images} images labelled {LABEL}"
              + (f" of run {args.run}" if args.run else ""))
    else:
        print(base_image())
    return 0


if __name__ == "__main__":
    sys.exit(main())
