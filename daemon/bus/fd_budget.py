"""The process's descriptors, shared out: the table's reserve and each network listener's cap.

Every connection a listener accepts holds a descriptor, and at the process's limit libzmq
aborts the process on the next ipc accept (``daemon/bus/connections.py`` says where). So the
limit is raised as far as it goes (:func:`raise_nofile`: the soft limit to the hard one; the
shipped unit sets ``LimitNOFILE=65536``), ``RESERVE`` descriptors stay the table's (journal,
control sockets, devices, hooks, ZeroMQ's own, what a flood gets accepted before the caps'
thread sees it), and what is left beyond those already open is shared between the
listeners (:func:`caps`): each gets what it asks for or its share, whichever is smaller.
The process's sockets, found by descriptor (:func:`sockets`, :func:`listening_socket`), are
what the caps count and act on.
"""

from __future__ import annotations

import os
import resource
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import structlog

log = structlog.get_logger("tabled")

FD_DIR: Final = "/proc/self/fd"
#: descriptors kept for the table itself, never given to network connections
RESERVE: Final = 256
#: the fewest connections a listener may be left; a smaller budget refuses the start
MIN_CAP: Final = 8
#: connections an ipc control socket holds at most (tablectl's are short; a flood of them
#: from a local user who may open the socket must not take the descriptors either)
IPC_MAX_CONNECTIONS: Final = 64
#: the metrics endpoint's connections (a scraper or two; ``daemon/bus/metrics.py``)
METRICS_MAX_CONNECTIONS: Final = 8


class BudgetError(OSError):
    """The descriptor limit cannot hold the table's reserve and the listeners' caps."""


def raise_nofile() -> tuple[int, int]:
    """Soft ``RLIMIT_NOFILE`` up to the hard one; returns ``(soft, hard)`` as they are now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard
    if want == resource.RLIM_INFINITY:  # the kernel's ceiling, not infinity
        try:
            want = int(Path("/proc/sys/fs/nr_open").read_text())
        except (OSError, ValueError):
            want = 1 << 20
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (OSError, ValueError) as e:
            log.warning("cannot raise the descriptor limit", soft=soft, hard=hard, error=str(e))
    return soft, hard


def open_descriptors() -> int:
    return len(os.listdir(FD_DIR)) - 1  # the listing's own


def caps(limit: int, in_use: int, wanted: dict[str, int], past: dict[str, int]) -> dict[str, int]:
    """Each listener's cap: what it wants, or its share of ``limit - in_use - RESERVE``, less
    what each may hold past its cap (``past``: accepted before its caps' thread closed it)."""
    if not wanted:
        return {}
    share = (limit - in_use - RESERVE - sum(past.values())) // len(wanted)
    if share < MIN_CAP:
        raise BudgetError(
            f"the descriptor limit {limit} leaves the {len(wanted)} network listener(s) "
            f"{max(share, 0)} connections each, fewer than {MIN_CAP}: {in_use} are open and "
            f"{RESERVE} are kept for the table, {sum(past.values())} for what the listeners "
            "accept past their caps; raise LimitNOFILE (ulimit -n)"
        )
    return {name: min(n, share) for name, n in wanted.items()}


def address(endpoint: str) -> tuple[int, str, int | None] | None:
    """A bound endpoint as (family, host or path, port); None for a transport without sockets."""
    if endpoint.startswith("ipc://"):
        path = endpoint[6:]
        return socket.AF_UNIX, ("\0" + path[1:] if path.startswith("@") else path), None
    if endpoint.startswith("tcp://"):
        host, _, port = endpoint[6:].rpartition(":")
        family = socket.AF_INET6 if host.startswith("[") else socket.AF_INET
        return family, host.strip("[]"), int(port)
    return None


def accepted_by(sock: socket.socket, addr: tuple[int, str, int | None]) -> bool:
    """Whether ``sock`` is a connection accepted on ``addr`` (not the listener itself)."""
    family, host, port = addr
    try:
        if sock.family != family or sock.type != socket.SOCK_STREAM:
            return False
        local = sock.getsockname()
        sock.getpeername()  # the listener itself has no peer (ENOTCONN)
    except OSError:
        return False
    if family == socket.AF_UNIX:
        name = local.decode("latin-1") if isinstance(local, bytes) else local
        return bool(name) and name == host
    if local[1] != port:
        return False
    return host in ("0.0.0.0", "::", "*") or local[0] == host


def sockets() -> Iterator[socket.socket]:
    """A duplicate of each of the process's sockets, closed after its turn (unless kept:
    ``detach`` it first). Never a duplicate of anything else: a leak here is what it guards."""
    for entry in os.scandir(FD_DIR):
        try:
            fd = int(entry.name)
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            dup = os.dup(fd)
        except (ValueError, OSError):
            continue  # closed meanwhile, or the scan's own descriptor
        try:
            s = socket.socket(fileno=dup)
        except OSError:  # a family Python does not know: not one of ours
            os.close(dup)
            continue
        with s:
            yield s


def listening_socket(endpoint: str) -> socket.socket | None:
    """A duplicate of the process's listening socket bound to ``endpoint`` (tcp), or None."""
    addr = address(endpoint)
    if addr is None or addr[0] == socket.AF_UNIX:
        return None
    family, host, port = addr
    for s in sockets():
        try:
            if (
                s.family == family
                and s.type == socket.SOCK_STREAM
                and s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
                and s.getsockname()[1] == port
                and (host in ("0.0.0.0", "::", "*") or s.getsockname()[0] == host)
            ):
                return socket.socket(fileno=s.detach())
        except OSError:
            pass
    return None


def dup_socket(fd: int) -> socket.socket | None:
    """A socket object on a duplicate of ``fd``, or None if ``fd`` is no longer a socket."""
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return None
        dup = os.dup(fd)
    except OSError:
        return None
    try:
        return socket.socket(fileno=dup)
    except OSError:
        os.close(dup)
        return None
