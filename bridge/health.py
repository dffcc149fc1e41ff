"""The bridge's view of each table's health: heartbeats read apart from events, true lag,
and a log line at its priority for every change of a table's state.

Heartbeats come on the table's PUB socket with its events. Read there, a heartbeat waits
behind every event queued before it, so a bridge 55,000 events behind read each
heartbeat only once everything before it was stored, and saw a lag of 0 (issue 31). So
the bridge also reads heartbeats on sockets of their own (:class:`Heartbeats`): one SUB
per 64 tables of a CURVE identity, connected to their PUBs and subscribed to
``<table>.heartbeat`` only, each read by one task as they arrive. Its queue holds only heartbeats, so the newest
``last_seq`` a table committed is known within a heartbeat interval however far behind
the store is; that is what ``up`` and the lag are made of. The events' SUB (the follower)
still reads its own heartbeats for the replay recipe; this path is for the truth.

Lag (:class:`Health`): events the table committed that JetStream has not acked (the
newest heartbeat's ``last_seq`` minus the stored seq, in the same journal), and the age
of the oldest of them: the time since the bridge first saw a heartbeat naming it.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import structlog
import zmq
import zmq.asyncio

log = structlog.get_logger("tabled.bridge")

#: a heartbeat frame larger than this is refused by ZeroMQ (the connection is dropped)
HEARTBEAT_MAX_BYTES = 256 * 1024
#: heartbeats remembered per table for the age of the oldest unstored event (one a
#: second: over an hour; past it the newest entry moves up, ages read a little older)
SEEN_MAX = 4096
#: tables a heartbeat socket serves: each table gets every subscription of its socket, so
#: one socket for all would send tables² subscriptions (6 M for 2,500 tables)
GROUP = 64
_decode = msgspec.json.Decoder().decode
#: state changes kept per table for ``tabled-bridge status``
CHANGES_MAX = 20

Curve = tuple[bytes, bytes, bytes] | None


@dataclass(slots=True)
class Health:
    """One table's heartbeats and lag, as the heartbeat path sees them."""

    table: str
    journal_id: str | None = None
    table_seq: int | None = None
    #: monotonic time of the last heartbeat (None: never)
    heartbeat_at: float | None = None
    #: (last_seq, monotonic time first seen), last_seq increasing, this journal only
    seen: collections.deque[tuple[int, float]] = field(default_factory=collections.deque)
    #: the state last logged, and the recent changes: (unix time, level, text)
    reported: str = "starting"
    changes: collections.deque[tuple[float, str, str]] = field(
        default_factory=lambda: collections.deque(maxlen=CHANGES_MAX)
    )

    def on_heartbeat(self, data: dict[str, Any], now: float) -> None:
        last = int(data["last_seq"])
        jid = data.get("journal_id")
        if jid != self.journal_id:
            self.journal_id = jid
            self.seen.clear()
        self.table_seq, self.heartbeat_at = last, now
        if not self.seen or last > self.seen[-1][0]:
            if len(self.seen) >= SEEN_MAX:
                self.seen[-1] = (last, self.seen[-1][1])
            else:
                self.seen.append((last, now))

    def up(self, now: float, stale_after: float) -> bool:
        return self.heartbeat_at is not None and now - self.heartbeat_at < stale_after

    def lag(
        self, stored_journal: str | None, stored_seq: int, now: float
    ) -> tuple[int | None, float]:
        """(events committed at the table and not stored, age of the oldest in seconds)."""
        if self.table_seq is None:
            return None, 0.0
        done = stored_seq if stored_journal == self.journal_id else 0
        while self.seen and self.seen[0][0] <= done:
            self.seen.popleft()
        events = max(0, self.table_seq - done)
        if not events or not self.seen:
            return events, 0.0
        return events, max(0.0, now - self.seen[0][1])

    def change(self, state: str, level: str, event: str, **kw: Any) -> None:
        """Log ``event`` at ``level`` once, when the table's state becomes ``state``."""
        if state == self.reported:
            return
        self.reported = state
        self.note(level, event, **kw)
        getattr(log, level)(event, table=self.table, state=state, **kw)

    def note(self, level: str, event: str, **kw: Any) -> None:
        """Keep a change for ``status`` (the caller logs it)."""
        detail = ", ".join(f"{k} {v}" for k, v in kw.items())
        self.changes.append((time.time(), level, f"{event}: {detail}" if detail else event))


def judge(
    h: Health,
    *,
    task_state: str,
    up: bool,
    lag_events: int | None,
    lag_seconds: float,
    behind_after: float,
    stale_after: float,
    running: float,
) -> str:
    """The table's state for status and logs; logs it when it changed. ``running``: seconds
    since the bridge started (a table is not logged silent before its first heartbeat
    could have come)."""
    if task_state in ("chain-broken", "rolled-back", "retrying"):
        return task_state  # logged where it happened, with its reason
    if not up:
        if h.heartbeat_at is None and running < stale_after:
            return "no-heartbeat"  # not logged yet: its first heartbeat may still come
        if h.heartbeat_at is None:
            h.change(
                "no-heartbeat",
                "warning",
                "table silent",
                why="no heartbeat yet: off, or a wrong CURVE key",
            )
            return "no-heartbeat"
        h.change("down", "warning", "table down", no_heartbeat_for_s=stale_after)
        return "down"
    if lag_events and lag_seconds >= behind_after:
        h.change(
            "behind",
            "warning",
            "table behind",
            lag_events=lag_events,
            lag_seconds=round(lag_seconds, 1),
        )
        return "behind"
    if h.reported != "up":
        h.change("up", "info", "table caught up" if h.reported == "behind" else "table up")
    return "following" if task_state in ("following", "waiting") else task_state


def assess(
    h: Health, task_state: str, head: Any, b: Any, now: float, running: float
) -> tuple[str, bool, int | None, float]:
    """A table's state (logged by :func:`judge` when it changed), up, and its lag in events
    and seconds, against ``head`` (its last event in JetStream) and ``b`` ([bridge])."""
    lag, lag_s = h.lag(head.journal_id, head.seq, now)
    up = h.up(now, b.stale_after)
    state = judge(
        h,
        task_state=task_state,
        up=up,
        lag_events=lag,
        lag_seconds=lag_s,
        behind_after=b.behind_after,
        stale_after=b.stale_after,
        running=running,
    )
    return state, up, lag, lag_s


class Heartbeats:
    """Every table's heartbeats, on sockets that carry nothing else, read as they arrive."""

    def __init__(
        self,
        ctx: zmq.asyncio.Context,
        tables: Iterable[tuple[str, str, Curve]],
        on_heartbeat: Callable[[str, dict[str, Any]], None],
    ) -> None:
        self.on_heartbeat = on_heartbeat
        self.socks: list[zmq.asyncio.Socket] = []
        groups: dict[Curve, list[tuple[str, str]]] = {}
        for tid, publish, curve in tables:
            groups.setdefault(curve, []).append((tid, publish))
        for curve, everyone in groups.items():
            for i in range(0, len(everyone), GROUP):
                self.socks.append(self._socket(ctx, curve, everyone[i : i + GROUP]))
        self.bad = 0

    @staticmethod
    def _socket(
        ctx: zmq.asyncio.Context, curve: Curve, members: list[tuple[str, str]]
    ) -> zmq.asyncio.Socket:
        s = ctx.socket(zmq.SUB)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.MAXMSGSIZE, HEARTBEAT_MAX_BYTES)
        s.setsockopt(zmq.RCVHWM, 10_000)
        # every subscription goes to every table it connects to, through a pipe whose
        # queue is SNDHWM (1,000 by default): past it they were dropped, and only 1,000
        # tables of 2,500 sent their heartbeats
        s.setsockopt(zmq.SNDHWM, 0)
        if curve is not None:
            s.setsockopt(zmq.CURVE_PUBLICKEY, curve[0])
            s.setsockopt(zmq.CURVE_SECRETKEY, curve[1])
            s.setsockopt(zmq.CURVE_SERVERKEY, curve[2])
        for tid, _ in members:
            s.setsockopt(zmq.SUBSCRIBE, f"{tid}.heartbeat".encode())
        for endpoint in dict.fromkeys(p for _, p in members):
            s.connect(endpoint)
        return s

    async def _read(self, s: zmq.asyncio.Socket) -> None:
        # one wake-up reads every heartbeat queued (a socket serves 64 tables): the rest
        # through the same socket without the event loop, until none is left
        raw = zmq.Socket.shadow(s.underlying)
        while True:
            frames = await s.recv_multipart()
            while True:
                self._one(frames)
                try:
                    frames = raw.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break

    def _one(self, frames: list[bytes]) -> None:
        try:
            topic, body = frames
            tid = topic.decode()[: -len(".heartbeat")]
            hb = _decode(body)
            self.on_heartbeat(tid, hb["data"])
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            self.bad += 1  # not a heartbeat as docs/events.md says: the follower judges
        except Exception as e:  # one table's trouble must not stop every table's health
            self.bad += 1
            if self.bad <= 10:
                log.error("heartbeat not handled", error=f"{type(e).__name__}: {e}")

    async def run(self) -> None:
        await asyncio.gather(*(self._read(s) for s in self.socks))

    def close(self) -> None:
        for s in self.socks:
            s.close()
        self.socks.clear()
