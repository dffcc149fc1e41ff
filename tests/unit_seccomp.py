"""Run a command under a systemd unit's system call filter, as the unit would run it.

    python tests/unit_seccomp.py UNIT_FILE -- COMMAND [ARG …]

The unit's ``SystemCallFilter=`` lines are read in order as systemd.exec(5) reads them
(the first line's kind sets the default: an allow-list refuses everything else; each
later line adds to or takes from the set), every ``@group`` expanded by
``systemd-analyze syscall-filter``, and the result loaded with libseccomp: a refused
call fails with the unit's ``SystemCallErrorNumber=``. Then COMMAND is exec'd. What
this does not copy from systemd: ``SystemCallArchitectures=``, ``RestrictRealtime=``,
the other sandboxing; the filter is what a library's system call trips over, as
libzmq's ``sched_setscheduler`` did under the shipped unit (it aborts when refused).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_ACT_ERRNO = 0x00050000


def directives(unit: str, key: str) -> list[str]:
    """Every value of ``key`` in the unit's text, in order (comments and sections skipped)."""
    out = []
    for raw in unit.splitlines():
        line = raw.strip()
        if line.startswith(("#", ";", "[")) or "=" not in line:
            continue
        k, _, v = line.partition("=")
        if k.strip() == key:
            out.append(v.strip())
    return out


@functools.cache
def expand(name: str) -> frozenset[str]:
    """A system call, or every call of an ``@group`` (nested groups expanded)."""
    if not name.startswith("@"):
        return frozenset({name})
    text = subprocess.run(
        ["systemd-analyze", "syscall-filter", name], capture_output=True, text=True, check=True
    ).stdout
    calls: set[str] = set()
    for line in text.splitlines()[1:]:
        item = line.strip()
        if item and not item.startswith("#"):
            calls |= expand(item)
    return frozenset(calls)


def allowed(unit: str) -> tuple[frozenset[str], int]:
    """The calls the unit's filter lets through, and the errno the rest fail with."""
    lines = directives(unit, "SystemCallFilter")
    if not lines or lines[0].startswith("~"):
        raise ValueError("only an allow-list filter (the first line without ~) is copied here")
    calls: set[str] = set()
    for line in lines:
        deny = line.startswith("~")
        names: set[str] = set()
        for n in line.lstrip("~").split():
            names |= expand(n)
        calls = calls - names if deny else calls | names
    err = directives(unit, "SystemCallErrorNumber")
    number = getattr(errno, err[-1]) if err else errno.EPERM
    return frozenset(calls), number


def available() -> str | None:
    """Why this cannot run here, or None."""
    if shutil.which("systemd-analyze") is None:
        return "systemd-analyze is not installed (Debian: systemd)"
    try:
        ctypes.CDLL("libseccomp.so.2")
    except OSError:
        return "libseccomp.so.2 is not installed (Debian: libseccomp2)"
    return None


def load(calls: frozenset[str], number: int) -> None:
    """Load the filter into this process (and what it execs): refuse all but ``calls``."""
    lib = ctypes.CDLL("libseccomp.so.2")
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(SCMP_ACT_ERRNO | number)
    if not ctx:
        raise OSError("seccomp_init failed")
    for name in sorted(calls):
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:  # not a call of this architecture
            continue
        rc = lib.seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0)
        if rc < 0:
            raise OSError(-rc, f"seccomp_rule_add({name})")
    rc = lib.seccomp_load(ctx)
    if rc < 0:
        raise OSError(-rc, "seccomp_load")


def main(argv: list[str]) -> int:
    unit, sep, *command = argv
    if sep != "--" or not command:
        print(__doc__, file=sys.stderr)
        return 2
    load(*allowed(Path(unit).read_text()))
    os.execvp(command[0], command)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
