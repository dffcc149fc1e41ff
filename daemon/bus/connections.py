"""Connection caps on the network listeners: no flood of connections takes the table's descriptors.

libzmq accepts every TCP connection it is offered, before any handshake (CURVE and ZAP
judge after the accept), and each holds a descriptor until its handshake times out. At
the process's limit, the next connection to the ipc control socket made libzmq abort the
process (``EMFILE`` is not among the errors its ipc listener tolerates:
``src/ipc_listener.cpp:297``, libzmq 4.3.5), and the journal, a device's reopen and a hook
need descriptors too. The descriptors are shared out by ``daemon/bus/fd_budget.py`` (the
table's reserve, each listener's cap); :class:`ConnectionGuard` keeps each cap:

* a thread of its own (a loop blocked by a slow commit does not delay it) reads each
  listener's socket monitor: the accepted and disconnected connections, by descriptor;
* past the cap, the oldest connection whose peer is still in its handshake (it has sent
  no more than a greeting, and for CURVE a HELLO: ``TCP_INFO``) is shut down to make room,
  so an idle flood cannot keep a new subscriber or replay client out; a peer past its
  handshake (authenticated, with CURVE) is never touched;
* when there is no such peer (the cap is full of real clients), the new connection is shut
  down and the listening socket gets a drop-all socket filter (``SO_ATTACH_FILTER``): the
  kernel completes no new connection there and libzmq accepts none, until there is room
  (the filter goes; a waiting client's SYN is retried by its kernel). The same for the rest
  of a second in which ``ACCEPT_RATE`` connections came: a flood's churn costs the caps'
  thread (and the process's GIL) that much at most;
* ``HANDSHAKE_IVL_MS`` (``daemon/bus/ipc.py``, set on each socket by its owner): libzmq drops a
  peer that does not finish its handshake in time, so an idle connection frees its place.

What a listener can hold is bounded: its cap, its backlog and ``BEHIND`` (accepted before
the events caught up: then it closes at once); the budget counts all three. The count
comes from the monitor's events; while a listener is closed it is checked against the
kernel's own list (``/proc/self/fd``) every second.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import resource
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import structlog
import zmq
from zmq.utils.monitor import parse_monitor_message

from daemon.bus.fd_budget import (
    IPC_MAX_CONNECTIONS,
    METRICS_MAX_CONNECTIONS,
    RESERVE,
    BudgetError,
    accepted_by,
    address,
    caps,
    dup_socket,
    listening_socket,
    open_descriptors,
    sockets,
)
from daemon.bus.ipc import HANDSHAKE_IVL_MS

log = structlog.get_logger("tabled")

#: how often a listener at its cap is recounted from the kernel's list
RESYNC_SECONDS: Final = 1.0
#: connections a listener accepts a second; past it, it closes for the rest of the second
#: (a flood's churn costs the caps' thread, and the process's GIL, this much at most)
ACCEPT_RATE: Final = 1000
#: connections accepted past the cap that the events have not caught up with yet: then the
#: listener closes at once (the budget counts these)
BEHIND: Final = 32
#: the ZMTP greeting (64 bytes) and a CURVE HELLO (200): what a peer that sent more has got
#: past, and an idle or half-open one has not (``TCP_INFO``'s ``tcpi_bytes_received``)
_GREETING: Final = 64
_CURVE_HELLO: Final = 200
_BYTES_RECEIVED: Final = 128  # its offset in struct tcp_info (Linux >= 4.1)
#: a listener's "at the cap" warning, at most this often (seconds)
WARN_EVERY: Final = 60.0
_SO_ATTACH_FILTER: Final = 26
_SO_DETACH_FILTER: Final = 27
#: one classic BPF instruction, ``ret #0``: keep no byte of any packet
#: (struct sock_filter: u16 code, u8 jt, u8 jf, u32 k, in the machine's byte order)
_DROP_ALL = ctypes.create_string_buffer(struct.pack("=HBBI", 0x06, 0, 0, 0), 8)
#: struct sock_fprog: u16 len, then the pointer at its native alignment (8 or 4 bytes)
_DROP_PROG: Final = struct.pack("@HP", 1, ctypes.addressof(_DROP_ALL))
_EVENTS: Final = int(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)
_HANDSHAKE: Final = int(
    zmq.EVENT_HANDSHAKE_SUCCEEDED
    | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_AUTH
)


@dataclass
class _Listener:
    name: str
    endpoint: str
    cap: int
    #: a duplicate of libzmq's listening socket: what the filter goes on (None for ipc: a
    #: unix socket's filter does not see connects, so past the cap new ones are only cut)
    sock: socket.socket | None
    monitor: zmq.Socket[Any]
    handshake: Callable[[dict[str, Any]], None] | None
    #: bytes a peer has sent once past the part of a handshake an idle peer never sends
    past: int
    addr: tuple[int, str, int | None] = (0, "", None)
    live: int = 0
    #: connections not yet seen past their handshake: fd → when accepted (oldest first)
    young: dict[int, float] = field(default_factory=dict)
    filtered: bool = False
    resynced: float = 0.0
    hold_until: float = 0.0  # closed, not to open before (monotonic)
    window: float = 0.0  # when the current second of accepts began
    this_second: int = 0
    warned: float = float("-inf")
    counters: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("accepted", "evicted", "cut", "capped"), 0)
    )


class ConnectionGuard:
    """The caps of a set of ZeroMQ listeners, kept by one thread (see the module's docstring)."""

    def __init__(self) -> None:
        self._listeners: list[_Listener] = []
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._loop: asyncio.AbstractEventLoop | None = None

    def watch(
        self,
        name: str,
        sock: zmq.Socket[Any],
        cap: int,
        handshake: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        """Cap ``sock``'s connections (a bound tcp listener); ``handshake`` gets its handshake
        events on the loop (the socket's one monitor is this one: libzmq keeps one a socket)."""
        endpoint = sock.getsockopt(zmq.LAST_ENDPOINT).decode()
        addr = address(endpoint)
        lsock = None if addr is None or addr[0] == socket.AF_UNIX else listening_socket(endpoint)
        if addr is None or (lsock is None and addr[0] != socket.AF_UNIX):
            raise BudgetError(f"the {name} socket's listener on {endpoint} is not found")
        curve = sock.getsockopt(zmq.MECHANISM) == zmq.CURVE
        past = _GREETING + (_CURVE_HELLO if curve else 0)
        mon_addr = f"inproc://tabled.connections.{name}"
        sock.monitor(mon_addr, _EVENTS | (_HANDSHAKE if handshake is not None else 0))
        mon: zmq.Socket[Any] = sock.context.socket(zmq.PAIR, socket_class=zmq.Socket)
        mon.setsockopt(zmq.LINGER, 0)
        mon.connect(mon_addr)
        self._listeners.append(_Listener(name, endpoint, cap, lsock, mon, handshake, past, addr))

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, name="connections", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the thread and let go of the listening sockets (before libzmq closes its own:
        a duplicate left open would keep the port listening)."""
        if self._thread is not None:
            self._wake_w.send(b"x")
            self._thread.join()
            self._thread = None
        for lst in self._listeners:
            lst.monitor.close(linger=0)
            if lst.sock is not None:
                lst.sock.close()
        self._listeners.clear()
        self._wake_r.close()
        self._wake_w.close()

    def status(self) -> dict[str, dict[str, Any]]:
        return {
            lst.name: {"live": lst.live, "cap": lst.cap, "full": lst.filtered, **lst.counters}
            for lst in self._listeners
        }

    # -- the thread -------------------------------------------------------------------------

    def _run(self) -> None:
        poller = zmq.Poller()
        for lst in self._listeners:
            poller.register(lst.monitor, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        while True:
            try:
                ready = dict(poller.poll(int(RESYNC_SECONDS * 1000)))
                if self._wake_r.fileno() in ready:
                    return
                for lst in self._listeners:
                    if lst.monitor in ready:
                        self._drain(lst)
                    if lst.filtered and time.monotonic() - lst.resynced >= RESYNC_SECONDS:
                        self._resync(lst)
            except Exception:  # never the end of the caps: the next round tries again
                log.exception("connection guard failed; it goes on")

    def _drain(self, lst: _Listener) -> None:
        while True:
            try:
                msg = lst.monitor.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            ev = parse_monitor_message(msg)
            kind = ev["event"]
            if kind == zmq.EVENT_ACCEPTED:
                self._accepted(lst, int(ev["value"]))
            elif kind == zmq.EVENT_DISCONNECTED:
                lst.live = max(0, lst.live - 1)
                lst.young.pop(int(ev["value"]), None)
                if lst.filtered:
                    self._maybe_open(lst, time.monotonic())
            elif lst.handshake is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(lst.handshake, ev)

    def _accepted(self, lst: _Listener, fd: int) -> None:
        """One more connection: past the cap, a peer still in its handshake makes room (the
        oldest), else the new one is cut and the listener closes until a place frees."""
        now = time.monotonic()
        lst.live += 1
        lst.counters["accepted"] += 1
        if now - lst.window >= 1.0:
            lst.window, lst.this_second = now, 0
        lst.this_second += 1
        if lst.this_second > ACCEPT_RATE and not lst.filtered:
            self._filter(lst, until=lst.window + 1.0)  # a churn: closed for the rest of the second
        if lst.live <= lst.cap:
            lst.young[fd] = now
        elif self._make_room(lst, now):
            lst.young[fd] = now
            lst.counters["evicted"] += 1
        else:  # full of peers past their handshake
            self._cut(lst, fd)
            lst.counters["cut"] += 1
            if not lst.filtered:
                self._filter(lst)
        if lst.live >= lst.cap + BEHIND and not lst.filtered:  # the events lag the accepts
            self._filter(lst)

    def _make_room(self, lst: _Listener, now: float) -> bool:
        """Cut the oldest connection still in its handshake; False when there is none."""
        while (victim := self._idle(lst, now)) is not None:
            del lst.young[victim]
            if self._cut(lst, victim):
                return True
        return False

    def _idle(self, lst: _Listener, now: float) -> int | None:
        """The oldest connection still in its handshake (a peer past it is struck off)."""
        for fd, since in list(lst.young.items()):
            if now - since >= HANDSHAKE_IVL_MS / 1000 or self._received(lst, fd) > lst.past:
                del lst.young[fd]  # past its handshake: libzmq drops a peer that is not
                continue
            return fd
        return None

    def _received(self, lst: _Listener, fd: int) -> int:
        """Bytes the peer on ``fd`` sent (TCP_INFO), or more than any handshake if it is gone;
        0 on ipc (no such count: a connection younger than the handshake time may be cut)."""
        if lst.sock is None:
            return 0
        s = dup_socket(fd)
        if s is None:
            return 1 << 62
        with s:
            if not accepted_by(s, lst.addr):
                return 1 << 62
            try:
                info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
            except OSError:
                return 1 << 62
            return int(struct.unpack_from("<Q", info, _BYTES_RECEIVED)[0])

    def _cut(self, lst: _Listener, fd: int) -> bool:
        """Shut down one accepted connection (libzmq sees it end and frees it)."""
        s = dup_socket(fd)
        if s is None:
            return False
        with s:
            if not accepted_by(s, lst.addr):  # the number was reused meanwhile
                return False
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                return False
            return True

    def _filter(self, lst: _Listener, until: float = 0.0) -> None:
        """Close the listener: the kernel completes no new connection on it (not before
        ``until``, a monotonic time, does it open again)."""
        if lst.sock is None:  # ipc: nothing to close; past the cap new ones are cut
            return
        lst.sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, _DROP_PROG)
        lst.filtered = True
        lst.hold_until = until
        lst.counters["capped"] += 1
        lst.resynced = now = time.monotonic()
        if now - lst.warned >= WARN_EVERY:  # a flood fills it again each handshake interval
            lst.warned = now
            log.warning(
                "connections at the cap: new ones wait",
                socket=lst.name,
                endpoint=lst.endpoint,
                cap=lst.cap,
                live=lst.live,
                times=lst.counters["capped"],
                evicted=lst.counters["evicted"],
                cut=lst.counters["cut"],
            )

    def _open(self, lst: _Listener) -> None:
        if lst.sock is None:
            return
        with contextlib.suppress(OSError):  # ENOENT: no filter on
            lst.sock.setsockopt(socket.SOL_SOCKET, _SO_DETACH_FILTER, 0)
        lst.filtered = False

    def _resync(self, lst: _Listener) -> None:
        """The kernel's count of the listener's connections (in case an event was missed);
        it opens again when there is room, or a place a peer in its handshake could give."""
        lst.resynced = now = time.monotonic()
        lst.live = sum(accepted_by(s, lst.addr) for s in sockets())
        self._maybe_open(lst, now)

    def _maybe_open(self, lst: _Listener, now: float) -> None:
        """Open a closed listener once it has caught up (what it accepted is counted and within
        its cap) and has room, or a peer in its handshake that could give one."""
        if now >= lst.hold_until and (
            lst.live < lst.cap or (lst.live == lst.cap and self._idle(lst, now) is not None)
        ):
            self._open(lst)


def guard_listeners(
    listeners: list[tuple[str, zmq.Socket[Any]]],
    max_connections: int,
    *,
    metrics: bool,
    take_monitor: Callable[[zmq.Socket[Any]], Callable[[dict[str, Any]], None] | None],
) -> tuple[ConnectionGuard, int]:
    """Budget the descriptors and cap each listener in ``listeners`` (name, bound socket):
    tcp ones at ``max_connections``, ipc ones (the control sockets) at ``IPC_MAX_CONNECTIONS``;
    returns the guard (not started) and the metrics endpoint's cap (0 without one)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    kinds = {name: sock.getsockopt(zmq.LAST_ENDPOINT).decode()[:6] for name, sock in listeners}
    tcp = [(n, s) for n, s in listeners if kinds[n] in ("tcp://", "ipc://")]
    wanted = {n: max_connections if kinds[n] == "tcp://" else IPC_MAX_CONNECTIONS for n, _ in tcp}
    if metrics:
        wanted["metrics"] = METRICS_MAX_CONNECTIONS
    limit = soft if soft != resource.RLIM_INFINITY else 1 << 20
    # past its cap a listener may hold its backlog and what the events had not caught up with
    past = {name: int(sock.getsockopt(zmq.BACKLOG)) + BEHIND for name, sock in tcp}
    budget = caps(limit, open_descriptors(), wanted, past)
    guard = ConnectionGuard()
    try:
        for name, sock in tcp:
            guard.watch(name, sock, budget[name], take_monitor(sock))
    except BaseException:
        guard.close()
        raise
    log.info("connection caps", limit=limit, reserve=RESERVE, **budget)
    return guard, budget.get("metrics", 0)
