"""Watch a key directory with inotify: the loop's own file descriptor, no thread, no polling.

The standard library has no inotify binding, and the three libc calls it needs
(``inotify_init1``, ``inotify_add_watch``, ``read``) are a few lines of
ctypes: less to keep than a dependency (and its hashes in the table PC's lock
file). The descriptor is non-blocking and handed to the loop's ``add_reader``,
so a change wakes the loop at once and nothing runs while nothing changes.

Only changes that can alter the allow-list call back: a ``*.key`` written and
closed, renamed in or out, deleted, re-moded or linked in, and the directory
itself changing mode, going away or being replaced (its parent is watched for
its name). An event-queue overflow calls back too: a reload reads the whole
directory, so a lost event loses nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import errno
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Final

IN_ATTRIB: Final = 0x00000004
IN_CLOSE_WRITE: Final = 0x00000008
IN_MOVED_FROM: Final = 0x00000040
IN_MOVED_TO: Final = 0x00000080
IN_CREATE: Final = 0x00000100
IN_DELETE: Final = 0x00000200
IN_DELETE_SELF: Final = 0x00000400
IN_MOVE_SELF: Final = 0x00000800
IN_Q_OVERFLOW: Final = 0x00004000
IN_IGNORED: Final = 0x00008000
IN_ONLYDIR: Final = 0x01000000

MASK: Final = (
    IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
_GONE: Final = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
#: on the parent, for the directory's own name: made, deleted, renamed in or away
_PARENT_MASK: Final = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR
_EVENT: Final = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name


class WatchError(OSError):
    """The directory cannot be watched (no inotify, too many watches, not a directory)."""


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    libc.inotify_init1.argtypes = [ctypes.c_int]
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    return libc


class DirWatch:
    """Calls ``on_change`` from the loop whenever ``directory``'s key files may have changed.

    The parent directory is watched too, for the directory's own name: a
    directory deleted and made again, renamed over, or a symlink swapped to
    another (how deploy tools replace one) is watched again at once, and the
    change calls back like any other.
    """

    def __init__(self, directory: str | Path, on_change: Callable[[], None], suffix: str) -> None:
        self.directory = Path(directory)
        self.on_change = on_change
        self.suffix = suffix
        self._fd: int | None = None
        self._wd: int | None = None  # the directory's watch; None while it does not exist
        self._parent_wd: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._libc: ctypes.CDLL | None = None

    @property
    def gone(self) -> bool:
        """The directory does not exist (its watch is gone until it comes back)."""
        return self._wd is None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Add the watches; raises :class:`WatchError` naming the directory and the fix."""
        try:
            libc = _libc()
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError) as e:
            raise WatchError(f"cannot watch {self.directory}: no inotify here ({e})") from None
        if fd < 0:
            raise WatchError(self._why(ctypes.get_errno(), "inotify_init1"))
        self._fd, self._libc = fd, libc
        parent = os.fsencode(self.directory.absolute().parent)
        wds = []
        for path, mask in ((parent, _PARENT_MASK), (os.fsencode(self.directory), MASK)):
            wd = libc.inotify_add_watch(fd, path, mask)
            if wd < 0:
                err = ctypes.get_errno()
                self.close()
                raise WatchError(self._why(err, "inotify_add_watch"))
            wds.append(wd)
        self._parent_wd, self._wd = wds
        self._loop = loop
        loop.add_reader(fd, self._readable)

    def _why(self, err: int, call: str) -> str:
        hint = {
            errno.ENOSPC: " (raise fs.inotify.max_user_watches)",
            errno.EMFILE: " (raise fs.inotify.max_user_instances)",
        }.get(err, "")
        return f"cannot watch {self.directory} ({call}): {os.strerror(err)}{hint}"

    def close(self) -> None:
        if self._fd is None:
            return
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
        os.close(self._fd)  # closing the descriptor removes its watches
        self._fd = self._wd = self._parent_wd = None

    def _rewatch(self) -> None:
        """The directory's name now points elsewhere (or nowhere): watch what it names now."""
        assert self._fd is not None and self._libc is not None
        if self._wd is not None:
            self._libc.inotify_rm_watch(self._fd, self._wd)  # fails harmlessly if gone
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(self.directory), MASK)
        self._wd = wd if wd >= 0 else None

    def _readable(self) -> None:
        if self._fd is None:
            return
        changed = False
        while True:
            try:
                data = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                break
            if not data:
                break
            changed |= self._matters(data)
        if changed:
            self.on_change()

    def _matters(self, data: bytes) -> bool:
        changed = False
        at = 0
        while at + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, at)
            name = data[at + _EVENT.size : at + _EVENT.size + length].rstrip(b"\0")
            at += _EVENT.size + length
            if mask & IN_Q_OVERFLOW:
                self._rewatch()
                changed = True
            elif wd == self._parent_wd:
                if os.fsdecode(name) == self.directory.name:
                    self._rewatch()
                    changed = True
            elif wd != self._wd:
                continue  # a watch replaced already: its last events
            elif mask & _GONE:
                self._wd = None
                changed = True
            elif not name:  # the directory's own mode
                changed = True
            elif os.fsdecode(name).endswith(self.suffix):
                changed |= not (mask & IN_CREATE) or self._linked(name)
        return changed

    def _linked(self, name: bytes) -> bool:
        """A created file matters only once whole; a symlink or hard link is whole at once."""
        try:
            st = os.lstat(os.path.join(os.fsencode(self.directory), name))
        except OSError:
            return True  # gone again already: reload and see
        return not (st.st_size == 0 and st.st_nlink == 1)
