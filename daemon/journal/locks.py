"""One daemon per journal: the locks the writer holds for as long as it runs.

Two locks, because a journal is reached by a name and is a file:

* ``<journal>.lock``, an ``fcntl`` lock keyed by the path, taken before the journal is
  looked at or created (so two daemons never both create it) and holding the pid that a
  refusal names;
* a ``flock`` on the journal file itself, keyed by its inode: two names for one file (a
  hard link) took two path locks and both wrote (issue 28, item 5). A ``flock`` belongs to
  the open file, so it follows the inode whatever name opened it; SQLite's own locks are
  ``fcntl`` byte ranges, which Linux keeps apart from ``flock``, and readers (``tablectl
  verify``, replay, the history check) never take one.

The kernel drops both when the process dies, SIGKILL included. (On NFS Linux emulates
``flock`` with a whole-file ``fcntl`` lock; the journal does not go there: WAL needs a
local disk.)
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from pathlib import Path

from daemon.journal.format import JournalError


def lock_path(p: Path) -> int:
    """``<journal>.lock``, locked, with this pid in it; its descriptor."""
    lp = Path(f"{p}.lock")
    try:
        fd = os.open(lp, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise JournalError(f"journal {p}: cannot create its lock file {lp}: {e.strerror}") from None
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EAGAIN):
            os.close(fd)
            raise JournalError(f"journal {p}: cannot lock {lp}: {e.strerror}") from None
        other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise JournalError(
            f"journal {p} is in use by another tabled (pid {other}, lock {lp}): one daemon "
            "per journal; stop the other one, or give this table its own [table] state_dir"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


#: the journal files this process holds, by (device, inode): [descriptor, holders]. A
#: process is one writer, as with ``fcntl`` locks (which never conflict within a process):
#: a second :class:`~daemon.journal.Journal` on the same file in one process (the tests'
#: reopen) shares the lock, and the descriptor closes with the last of them.
_held: dict[tuple[int, int], list[int]] = {}
_guard = threading.Lock()


def lock_file(p: Path) -> tuple[int, int]:
    """The journal file itself, whatever name reaches it, locked (``flock``); its key for
    :func:`unlock_file`.

    Release it only after the journal's SQLite connection is closed: closing any
    descriptor of a file drops the process's ``fcntl`` locks on it, SQLite's included.
    """
    try:
        fd = os.open(p, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise JournalError(f"journal {p}: cannot open it: {e.strerror}") from None
    st = os.fstat(fd)
    key = (st.st_dev, st.st_ino)
    with _guard:
        if key in _held:
            os.close(fd)
            _held[key][1] += 1
            return key
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise JournalError(f"journal {p}: cannot lock it: {e.strerror}") from None
            raise JournalError(
                f"journal {p} is in use by another tabled (pid {holder(st) or '?'}) through "
                f"another name (a hard link: the same file, inode {st.st_ino}): one daemon per "
                "journal; stop the other one, or give this table its own journal (a copy, not "
                "a link)"
            ) from None
        _held[key] = [fd, 1]
    return key


def unlock_file(key: tuple[int, int]) -> None:
    with _guard:
        entry = _held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _held[key]
            os.close(entry[0])


def holder(st: os.stat_result) -> str | None:
    """The pid holding a ``flock`` on this inode, from ``/proc/locks`` (Linux), if it shows."""
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    try:
        with open("/proc/locks", encoding="ascii") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 6 or parts[1] != "FLOCK":
                    continue
                ident = parts[5].split(":")
                if len(ident) != 3:
                    continue
                if (int(ident[0], 16), int(ident[1], 16), int(ident[2])) == want:
                    return parts[4]
    except (OSError, ValueError):
        return None
    return None
