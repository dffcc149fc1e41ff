"""Binding ZeroMQ endpoints safely: what the bus and the control socket share.

``bind`` on an ``ipc://`` path silently unlinks whatever socket file is there,
even one a live daemon is serving, so :func:`prepare_ipc` looks first (a plain
``connect`` tells a live listener from a file left by a dead process) and
:func:`bind` turns libzmq's errors into one that names the socket and the
endpoint.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
from pathlib import Path

import zmq

#: ZMQ_HANDSHAKE_IVL of every server socket: a peer that has not finished its handshake
#: by then (an idle TCP connection: no key, no greeting) is dropped and frees its descriptor
#: (``daemon/bus/connections.py`` caps how many there are meanwhile)
HANDSHAKE_IVL_MS = 5000
#: ZMQ_BACKLOG of every server socket: the connections the kernel completes that libzmq has
#: not accepted yet; a listener at its cap may still accept these (the budget counts them)
BACKLOG = 32


class EndpointError(OSError):
    """An endpoint cannot be bound: in use, served by someone else, or not creatable."""


def ipc_path(endpoint: str) -> str | None:
    """The filesystem path of an ``ipc://`` endpoint; None for other transports
    and for Linux abstract sockets (``ipc://@name``), which have no file."""
    if not endpoint.startswith("ipc://"):
        return None
    path = endpoint[len("ipc://") :]
    return None if path.startswith("@") else path


def probe_unix(path: str) -> str:
    """What is at ``path``: ``absent``, ``not-socket``, ``stale`` (a socket file
    nobody listens on), ``live`` (something accepts connections) or ``denied``.

    A plain ``connect`` answers this without any protocol: the kernel accepts
    a connection to a listening socket even if its process is busy, and
    refuses one to a file left behind by a dead process.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "absent"
    if not stat.S_ISSOCK(st.st_mode):
        return "not-socket"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(0.5)
        s.connect(path)
    except ConnectionRefusedError:
        return "stale"
    except PermissionError:
        return "denied"
    except FileNotFoundError:
        return "absent"
    except OSError as e:
        if e.errno == errno.EAGAIN:  # backlog full: someone listens
            return "live"
        return "stale"
    finally:
        s.close()
    return "live"


def prepare_ipc(endpoint: str) -> None:
    """Make an ``ipc://`` endpoint bindable: create its directory and remove a
    stale socket file. Raises :class:`EndpointError` if the path is live,
    not a socket, unreadable or too long. Other endpoints are left alone."""
    path = ipc_path(endpoint)
    if path is None:
        return
    limit = getattr(zmq, "IPC_PATH_MAX_LEN", 107) or 107
    if len(path.encode()) > limit:
        raise EndpointError(
            f"cannot bind {endpoint}: the path is {len(path.encode())} bytes, "
            f"longer than the {limit} a unix socket allows"
        )
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise EndpointError(
            f"cannot bind {endpoint}: cannot create {Path(path).parent}: {e.strerror}"
        ) from e
    state = probe_unix(path)
    if state == "live":
        raise EndpointError(f"another process already serves {endpoint}")
    if state == "denied":
        raise EndpointError(
            f"cannot bind {endpoint}: {path} exists and is not ours to check "
            "(permission denied); is another tabled running as another user?"
        )
    if state == "not-socket":
        raise EndpointError(f"cannot bind {endpoint}: {path} exists and is not a socket")
    if state == "stale":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def bind(sock: zmq.Socket, endpoint: str, role: str) -> None:
    """``sock.bind(endpoint)``; a failure becomes an :class:`EndpointError` naming both."""
    try:
        sock.bind(endpoint)
    except zmq.ZMQError as e:
        hint = ""
        if e.errno == zmq.EADDRINUSE:
            hint = " (address in use: is another tabled running, or is the port taken?)"
            port = endpoint.rpartition(":")[2]
            if endpoint.startswith("tcp://") and port.isdigit():
                hint = port_taken(int(port)) or hint
        raise EndpointError(
            f"cannot bind the {role} socket to {endpoint}: {e.strerror}{hint}"
        ) from e


_TCP_STATES = {"01": "established", "06": "time-wait", "08": "close-wait", "0A": "listening"}


def port_taken(port: int) -> str | None:
    """Who holds a TCP ``port`` on this host, in words (``/proc/net/tcp``), for an
    "address in use": a listener (another daemon), or a connection that has it as its own
    port, which is what an outgoing connection is given from the kernel's ephemeral range
    while the daemon is stopped (then a restart fails, however clean the stop)."""
    states: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 3 and int(f[1].rpartition(":")[2], 16) == port:
                states.add(_TCP_STATES.get(f[3], "closing"))
    if not states:
        return None
    if "listening" in states:
        return f" (address in use: a socket listens on port {port}: is another tabled running?)"
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    where = (
        f"inside the range {low}-{high} the kernel gives outgoing connections "
        "(net.ipv4.ip_local_port_range): choose a port below it"
        if low <= port <= high
        else "a connection bound to it by hand"
    )
    return (
        f" (address in use: no one listens on port {port}, but a connection uses it as its own port "
        f"({', '.join(sorted(states))}): a client's outgoing port; the port is {where})"
    )


def bind_checked(sock: zmq.Socket, endpoint: str, role: str) -> str:
    """:func:`prepare_ipc` then :func:`bind`; returns the endpoint bound (``tcp://…:*``
    gets its port)."""
    prepare_ipc(endpoint)
    bind(sock, endpoint, role)
    return sock.getsockopt_string(zmq.LAST_ENDPOINT)
