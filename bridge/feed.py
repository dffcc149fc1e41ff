"""Every table's live messages, read in groups: one socket and one wake-up for many tables.

Each table's follower had a SUB of its own, and the heartbeat path another per 64 tables:
each heartbeat came twice, and every message woke its table's socket and task through
zmq.asyncio (a future, a task step). A floor of 1,000 idle tables cost the bridge 65-69
µs a table-second, the goal is 20 (issue 31), and the profile was that plumbing. So here
one SUB per :data:`GROUP` tables of a CURVE identity, connected to their PUBs and
subscribed to ``<table>.`` for each, is read by the event loop's fd callback: a socket
that has messages is left :data:`GATHER` s for more, then every message it holds is read
at once and each handed to its table without I/O:

- a **heartbeat** goes to the table's health at once (``on_heartbeat``: the true lag, up,
  checkpoints, the rollback watch), then to its follower: a quiet table's (nothing new,
  nothing queued) is taken there (:meth:`TableFollower.quiet`) and wakes no task;
- anything else (events, a heartbeat that asks for a replay) is queued in the table's
  :class:`Inbox`, in order, and wakes the table's task, which reads the inbox as the
  follower's feed (``tabled_client.feed``) and stores.

Heartbeats stay honest: they are read as they arrive, however far behind the store is
(the queue is the inbox, drained by the table's task; the socket is drained at once), so
a bridge that falls behind sees its lag grow (the reason heartbeats once had sockets of
their own: ``docs/decisions.md``).

**Bounded.** An inbox holds at most :data:`INBOX_MAX` messages, and all inboxes together
:data:`INBOX_BYTES`: past either, the table's events are dropped until a heartbeat gets
in; its ``last_seq`` is past what the follower holds, so the follower replays what was
dropped from the table's journal (nothing is lost; ``docs/floor.md``, Bounded).
Heartbeats have :data:`HEARTBEAT_ROOM` more places, so a full inbox still gets one, and a
heartbeat queued right after another replaces it (the newest says all the follower needs),
so a stuck table's inbox does not fill with heartbeats past the bytes bound.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Iterable
from typing import Any

import msgspec
import structlog
import zmq
import zmq.asyncio
from tabled_client.table import TableFollower

log = structlog.get_logger("tabled.bridge")

#: tables a socket serves: each table is sent every subscription of the socket it is
#: connected to, so one socket for all would send tables² of them (6 M for 2,500 tables)
GROUP = 64
#: messages one table's inbox holds (a backlog past it is replayed from the table)
INBOX_MAX = 2_000
#: bytes every inbox of the bridge holds together, at most (frames and their overhead)
INBOX_BYTES = 64 << 20
#: places an inbox keeps for heartbeats past INBOX_MAX (the one that repairs a drop)
HEARTBEAT_ROOM = 8
#: Python's overhead of a queued message (a list of two bytes objects), counted in bytes
OVERHEAD = 200
#: frames ZeroMQ queues per table connection before the table's PUB drops (the reader
#: drains at every wake-up: this is only for a loop that is late)
RCVHWM = 10_000

_decode = msgspec.json.Decoder().decode
#: seconds a socket's messages gather before they are read (0: read at once): the tables
#: woken together publish in one socket write and their acks come back together. Steady
#: floor, 500 tables at ~1,000 events/s: 0 s 277-286, 2 ms 238, 5 ms 189 µs of bridge CPU
#: an event (issue 31); an event waits at most this long more
GATHER = 0.005
#: plain ints: the enums' operators cost more than the reads on this path
_EVENTS, _POLLIN, _NOBLOCK = int(zmq.EVENTS), int(zmq.POLLIN), int(zmq.NOBLOCK)

Curve = tuple[bytes, bytes, bytes] | None


class Inbox:
    """One table's queued messages, and its follower's feed while one is attached."""

    __slots__ = (
        "_g",
        "dropped",
        "dropping",
        "follower",
        "key",
        "queue",
        "table",
        "waiter",
        "woken",
    )

    def __init__(self, table: str, groups: Groups) -> None:
        self.table = table
        self.key = table.encode()
        self.follower: TableFollower | None = None
        self.queue: collections.deque[list[bytes]] = collections.deque()
        #: events are dropped until a heartbeat gets in (its replay fetches them)
        self.dropping = False
        self.dropped = 0
        #: times the table's task was woken for something queued
        self.woken = 0
        self.waiter: asyncio.Future[None] | None = None
        self._g = groups

    def push(self, frames: list[bytes]) -> None:
        self.queue.append(frames)
        self._g.held += len(frames[0]) + len(frames[1]) + OVERHEAD
        w = self.waiter
        if w is not None and not w.done():
            self.woken += 1
            w.set_result(None)

    def replace_last(self, frames: list[bytes]) -> None:
        old = self.queue[-1]
        self._g.held += len(frames[0]) + len(frames[1]) - len(old[0]) - len(old[1])
        self.queue[-1] = frames

    def pop(self) -> list[bytes]:
        frames = self.queue.popleft()
        self._g.held -= len(frames[0]) + len(frames[1]) + OVERHEAD
        return frames

    def clear(self) -> None:
        while self.queue:
            self.pop()
        self.dropping = False


class Live:
    """The feed of one follower (``tabled_client.feed.Feed``) over its table's inbox."""

    __slots__ = ("follower", "inbox")

    def __init__(self, inbox: Inbox, follower: TableFollower) -> None:
        inbox.clear()  # a new follower starts from a replay: what was queued is in it
        inbox.follower, inbox.waiter = follower, None  # a replaced one reads no more
        self.inbox, self.follower = inbox, follower

    async def first(self, idle: float | None) -> list[bytes] | None:
        inbox = self.inbox
        if not inbox.queue and inbox.follower is self.follower:
            w = inbox.waiter = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(w, idle)
            except TimeoutError:
                return None
            finally:
                if inbox.waiter is w:
                    inbox.waiter = None
        return self.more()

    def more(self) -> list[bytes] | None:
        inbox = self.inbox
        return inbox.pop() if inbox.queue and inbox.follower is self.follower else None

    def close(self) -> None:
        inbox = self.inbox
        if inbox.follower is self.follower:
            inbox.follower = None
            inbox.clear()


class Groups:
    """Every table's PUB read through one SUB per :data:`GROUP` tables of a CURVE identity."""

    def __init__(
        self,
        ctx: zmq.asyncio.Context,
        tables: Iterable[tuple[str, str, Curve]],
        on_heartbeat: Callable[[str, dict[str, Any]], None],
        max_frame: int,
    ) -> None:
        self.on_heartbeat = on_heartbeat
        self.max_frame = max_frame
        #: bytes every inbox holds now (bounded by INBOX_BYTES)
        self.held = 0
        self.bad = 0
        #: heartbeats taken without waking the table's task (a quiet table's)
        self.quiet = 0
        self.inboxes: dict[bytes, Inbox] = {}
        self.socks: list[zmq.asyncio.Socket] = []
        groups: dict[Curve, list[tuple[str, str]]] = {}
        for tid, publish, curve in tables:
            self.inboxes[tid.encode()] = Inbox(tid, self)
            groups.setdefault(curve, []).append((tid, publish))
        for curve, everyone in groups.items():
            for i in range(0, len(everyone), GROUP):
                self.socks.append(self._socket(ctx, curve, everyone[i : i + GROUP]))

    def feed(self, table: str) -> Callable[[TableFollower], Live]:
        """What a table's follower reads instead of a socket of its own."""
        inbox = self.inboxes[table.encode()]
        return lambda follower: Live(inbox, follower)

    @property
    def dropped(self) -> int:
        return sum(i.dropped for i in self.inboxes.values())

    def _socket(
        self, ctx: zmq.asyncio.Context, curve: Curve, members: list[tuple[str, str]]
    ) -> zmq.asyncio.Socket:
        s = ctx.socket(zmq.SUB)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.MAXMSGSIZE, self.max_frame)
        s.setsockopt(zmq.RCVHWM, RCVHWM)
        # every subscription goes to every table it connects to, through a pipe whose
        # queue is SNDHWM (1,000 by default): past it they were dropped, and only 1,000
        # tables of 2,500 sent their heartbeats
        s.setsockopt(zmq.SNDHWM, 0)
        if curve is not None:
            s.setsockopt(zmq.CURVE_PUBLICKEY, curve[0])
            s.setsockopt(zmq.CURVE_SECRETKEY, curve[1])
            s.setsockopt(zmq.CURVE_SERVERKEY, curve[2])
        for tid, _ in members:
            s.setsockopt(zmq.SUBSCRIBE, f"{tid}.".encode())
        for endpoint in dict.fromkeys(p for _, p in members):
            s.connect(endpoint)
        return s

    def _drain(self, s: zmq.Socket) -> None:
        """Every message the socket holds, each handed to its table: called by the event
        loop when the socket's fd is readable. No future, no task step: ZeroMQ's fd says
        only that something changed, so read while ZMQ_EVENTS says a message is there
        (asking it also re-arms the fd; no EAGAIN raised per wake-up)."""
        recv, one, events = s.recv_multipart, self._one, s.getsockopt
        while events(_EVENTS) & _POLLIN:
            one(recv(_NOBLOCK))

    def _one(self, frames: list[bytes]) -> None:
        try:
            topic, body = frames
            inbox = self.inboxes[topic[: topic.index(b".")]]
            if topic.endswith(b".heartbeat"):
                self._heartbeat(inbox, frames, _decode(body))
            elif inbox.follower is not None:  # none: the next one starts from a replay
                self._event(inbox, frames)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            self.bad += 1  # not a message as docs/events.md says (a subscription matched it)
        except Exception as e:  # one table's trouble must not stop its group's
            self.bad += 1
            if self.bad <= 10:
                log.error("message not handled", error=f"{type(e).__name__}: {e}")

    def _heartbeat(self, inbox: Inbox, frames: list[bytes], hb: dict[str, Any]) -> None:
        self.on_heartbeat(inbox.table, hb["data"])
        f = inbox.follower
        if f is None:
            return
        if not inbox.queue and not inbox.dropping and f.quiet(hb):
            self.quiet += 1  # nothing for the table's task: not woken
            return
        q = inbox.queue
        if q and q[-1][0].endswith(b".heartbeat"):
            inbox.dropping = False  # the newest supersedes the one queued: one, not many
            inbox.replace_last(frames)
        elif len(q) < INBOX_MAX + HEARTBEAT_ROOM:
            inbox.dropping = False  # its replay fetches what was dropped before it
            inbox.push(frames)
        else:
            inbox.dropping = True

    def _event(self, inbox: Inbox, frames: list[bytes]) -> None:
        if (
            inbox.dropping
            or len(inbox.queue) >= INBOX_MAX
            or self.held + len(frames[0]) + len(frames[1]) + OVERHEAD > INBOX_BYTES
        ):
            inbox.dropping = True
            inbox.dropped += 1
            return
        inbox.push(frames)

    def _ready(self, raw: zmq.Socket, fd: int) -> None:
        """A socket has messages: let more gather for GATHER s, then read them all (one
        wake-up of the tables' tasks, their publishes in one socket write)."""
        self._loop.remove_reader(fd)
        self._paused.append((raw, fd))
        if self._timer is None:
            self._timer = self._loop.call_later(GATHER, self._gathered)

    def _gathered(self) -> None:
        self._timer = None
        paused, self._paused = self._paused, []
        for raw, fd in paused:
            try:
                self._drain(raw)
            except zmq.ZMQError as e:  # read again at its next wake-up, whatever this was
                log.error("table socket not read", error=str(e))
            finally:  # back on the loop in every case: a socket left off goes silent
                self._loop.add_reader(fd, self._ready, raw, fd)

    async def run(self) -> None:
        """Read every socket as its fd says, until cancelled."""
        loop = self._loop = asyncio.get_running_loop()
        self._paused: list[tuple[zmq.Socket, int]] = []
        self._timer: asyncio.TimerHandle | None = None
        raws = [zmq.Socket.shadow(s.underlying) for s in self.socks]
        fds = [raw.getsockopt(zmq.FD) for raw in raws]
        try:
            for raw, fd in zip(raws, fds, strict=True):
                if GATHER:
                    loop.add_reader(fd, self._ready, raw, fd)
                else:
                    loop.add_reader(fd, self._drain, raw)
                self._drain(raw)  # what came before: the fd signals changes only
            await loop.create_future()  # for ever: the readers do the work
        finally:
            if self._timer is not None:
                self._timer.cancel()
            for fd in fds:
                loop.remove_reader(fd)

    def close(self) -> None:
        for s in self.socks:
            s.close()
        self.socks.clear()
