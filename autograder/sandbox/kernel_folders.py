"""The first program of a notebook kernel's sandbox: bounded folders, no way to make more, then the kernel.

Run inside bubblewrap by ``kernel.SandboxedKernelManager`` as ``python -I -S -c <this file's text> SPEC COMMAND...``
(the grader's package is hidden there, so this file imports nothing of it). bubblewrap 0.8 sizes a tmpfs but cannot
bound how many files it holds, and empty files cost no size: a million of them are a gigabyte of the machine's
memory. So the kernel's writable folders are mounted here instead, in a user and mount namespace of the kernel's
own, each a tmpfs with both a size and a number of files (SPEC["folders"]). The read-only mounts that lay below one
of them (the notebook's folder, the connection file, a Python environment in /tmp or /work: SPEC["keep"]) are
mounted again over the fresh folder; the machine's /dev, where it is bound in for a GPU, is made read-only
(SPEC["read_only_below"]). Then a seccomp filter refuses every new user namespace (so the kernel cannot mount a
tmpfs of its own choosing, of any size), and the command runs with no capabilities left.

Everything the kernel writes is then in those folders, and they live only in this namespace: when its last
process ends, and the grader has closed the one descriptor it holds on the sockets' folder, they are gone.
"""

import ctypes
import json
import os
import struct
import sys

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_NOATIME, MS_NODIRATIME, MS_REC, MS_PRIVATE, MS_RELATIME = \
    32, 4096, 1024, 2048, 16384, 1 << 18, 1 << 21
# statvfs's flags and the mount flags a read-only remount must repeat (a user namespace may not drop them).
KEPT_FLAGS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
              (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME))

libc = ctypes.CDLL(None, use_errno=True)


def check(result, what):
    if result != 0:
        sys.stderr.write(f"The notebook kernel's sandbox could not {what}: {os.strerror(ctypes.get_errno())}\n")
        os._exit(125)


def mount(source, target, kind, flags, options=None):
    encode = lambda text: None if text is None else text.encode()  # noqa: E731
    return libc.mount(encode(source), encode(target), encode(kind), flags, encode(options))


NOBODY = 65534


def own_namespaces():
    """A user and mount namespace of this process's own: its mounts can be changed here (this process, which made
    it, has every capability in it until it execs).

    The kernel's user there is never root (bubblewrap's user is root where the grader is, and a root kernel would
    keep every capability in this namespace after exec: it could mount a tmpfs of any size): root becomes nobody,
    the same user of the machine.
    """
    uid, gid = os.getuid(), os.getgid()
    inner_uid, inner_gid = uid or NOBODY, gid or NOBODY
    check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "make a namespace of its own")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{inner_uid} {uid} 1"),
                       ("gid_map", f"{inner_gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    check(mount("none", "/", None, MS_REC | MS_PRIVATE), "make its mounts private")


def bounded_folders(folders, keep):
    """A fresh tmpfs of (size, files) on each folder; then the ``keep`` mounts again where they were."""
    # Held before the folders are covered (and after the namespace is made: a bind mount's source must be in it).
    held = [(path, os.open(path, os.O_PATH)) for path in keep if os.path.lexists(path)]
    for folder, size, files in folders:
        check(mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=0700,size={size},nr_inodes={files}"),
              f"mount {folder}")
    for path, handle in held:
        source = f"/proc/self/fd/{handle}"
        if os.path.isdir(source):
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        # The bind keeps the source mount's flags, read-only included (and, recursive, whatever was mounted below).
        check(mount(source, path, None, MS_BIND | MS_REC), f"mount {path} again")
        os.close(handle)


def read_only_below(top, skip):
    """Every mount at or below ``top`` read-only (the machine's /dev, bound in for a GPU: its device files still
    open for writing, but no file can be made there), except the folders in ``skip``."""
    with open("/proc/self/mountinfo") as handle:
        points = [line.split()[4].encode().decode("unicode_escape") for line in handle]
    below = lambda path, folder: path == folder or path.startswith(folder.rstrip("/") + "/")  # noqa: E731
    for point in sorted(set(points), key=len):
        if below(point, top) and not any(below(point, folder) for folder in skip):
            flags = os.statvfs(point).f_flag
            kept = sum(mount_flag for stat_flag, mount_flag in KEPT_FLAGS if flags & stat_flag)
            check(mount(None, point, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept), f"make {point} read-only")


# seccomp: no new user namespace (clone or unshare with CLONE_NEWUSER; clone3, whose flags a filter cannot read,
# answers ENOSYS and the C library falls back to clone). Without one, the kernel has no capability anywhere and
# can mount nothing.
SYSCALLS = {0xC000003E: {"clone": 56, "unshare": 272, "clone3": 435},  # x86_64
            0xC00000B7: {"clone": 220, "unshare": 97, "clone3": 435}}  # aarch64
ALLOW, ERRNO, KILL = 0x7FFF0000, 0x00050000, 0x80000000
EPERM, ENOSYS = 1, 38
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


def no_new_user_namespaces():
    arch = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}.get(os.uname().machine)
    if arch is None:
        sys.stderr.write(f"The notebook kernel's sandbox knows no seccomp numbers for {os.uname().machine}\n")
        os._exit(125)
    numbers = SYSCALLS[arch]
    load, jump_eq, jump_set, ret = 0x20, 0x15, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JSET|K, BPF_RET|K
    program = [
        (load, 0, 0, 4), (jump_eq, 1, 0, arch), (ret, 0, 0, KILL),  # another architecture's calls: none
        (load, 0, 0, 0),
        (jump_eq, 0, 1, numbers["clone3"]), (ret, 0, 0, ERRNO | ENOSYS),
        (jump_eq, 1, 0, numbers["clone"]), (jump_eq, 0, 3, numbers["unshare"]),
        (load, 0, 0, 16),  # the first argument's low 32 bits: the flags of clone and unshare
        (jump_set, 0, 1, CLONE_NEWUSER), (ret, 0, 0, ERRNO | EPERM),
        (ret, 0, 0, ALLOW),
    ]
    if arch == 0xC000003E:  # x32 system calls share the architecture's number, with bit 30 set: refused too
        program[4:4] = [(0x35, 0, 1, 0x40000000), (ret, 0, 0, ERRNO | EPERM)]  # BPF_JMP|JGE|K
    code = b"".join(struct.pack("HBBI", *line) for line in program)
    buffer = ctypes.create_string_buffer(code)

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    filters = Program(len(program), ctypes.addressof(buffer))
    zero = ctypes.c_ulong(0)
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), zero, zero, zero), "forbid new privileges")
    check(libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(filters), zero, zero),
          "refuse new user namespaces")


def main():
    spec, command = json.loads(sys.argv[1]), sys.argv[2:]
    own_namespaces()
    bounded_folders(spec["folders"], spec["keep"])
    if spec.get("read_only_below"):
        read_only_below(spec["read_only_below"], [folder for folder, _, _ in spec["folders"]])
    os.chdir(spec["chdir"])
    no_new_user_namespaces()
    # This process's capabilities (all of them, in its own namespace) end at exec: its user is not root there.
    if os.getuid() == 0:
        sys.stderr.write("The notebook kernel's sandbox would run the kernel as root\n")
        os._exit(125)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
