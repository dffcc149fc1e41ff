"""The subscriber recipe, as a small library backends and tools can use.

PUB/SUB loses what was sent before a subscription arrived and what a slow
subscriber's queue could not hold. So (the zguide's Clone pattern): subscribe
first, wait for a heartbeat (proof the subscription is live), replay from
the last seq held, drop duplicates by seq, and replay again whenever a seq
or a heartbeat's ``last_seq`` shows a gap. What comes out is every
committed event exactly once, in order.

On a table with ``[security]`` CURVE, pass ``curve=(client_public,
client_secret, server_public)`` (z85; ``daemon.security.follower_curve``
loads them from key files). A key the table does not list gets no error,
only silence: no heartbeat ever arrives and replays time out.

A table serves a few replays at a time and answers ``busy: …`` past that (or
while its slots are held by clients that stopped reading, until it drops them):
the follower asks again after a jittered, doubling pause, so many followers
starting at once spread out instead of asking in lockstep, and gives up with
:class:`ReplayFailed` only when ``timeout`` seconds pass without being served.
The pause waits on the follower's stop event, so :meth:`Follower.close` from
another thread ends it at once; its time is injected (``clock``), so a test of
the backoff waits on no wall clock.

:func:`replay` is the bare asyncio client of the replay socket (one request,
its frames and end marker), for tools that want a range rather than a stream.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import zmq
import zmq.asyncio

from daemon.bus.replay_server import END_PREFIX, ERROR_PREFIX, ReplayError
from daemon.journal.events import Event, canonical, decode
from daemon.security import ClientCurve


class ReplayFailed(Exception):
    pass


def _wait(seconds: float, stopped: threading.Event) -> bool:
    return stopped.wait(seconds)


@dataclass(frozen=True, slots=True)
class FollowerClock:
    """The follower's time: ``mono`` for deadlines; ``wait(seconds, stopped)`` pauses on
    the follower's stop event and returns True when it was set meanwhile; ``jitter()``
    spreads the pauses."""

    mono: Callable[[], float] = time.monotonic
    wait: Callable[[float, threading.Event], bool] = _wait
    jitter: Callable[[], float] = field(default=lambda: random.uniform(0.5, 1.5))


class Follower:
    """Follows one table's events gap-free; ``last_seq`` is where a restart resumes."""

    def __init__(
        self,
        publish: str,
        replay: str,
        *,
        table: str = "",
        last_seq: int = 0,
        journal_id: str | None = None,
        ctx: zmq.Context[Any] | None = None,
        curve: ClientCurve | tuple[bytes, bytes, bytes] | None = None,
        clock: FollowerClock | None = None,
    ) -> None:
        self.ctx = ctx or zmq.Context.instance()
        self._stopped = threading.Event()
        self.clock = clock or FollowerClock()
        self.curve = ClientCurve.of(curve) if curve is not None else None
        self.replay_endpoint = replay
        self.last_seq = last_seq
        #: the journal ``last_seq`` belongs to (keep both across restarts of the follower)
        self.journal_id: str | None = journal_id
        self.heartbeat: dict[str, Any] | None = None
        self.repairs = 0
        #: replays the table answered ``busy`` and that were asked again
        self.busy_retries = 0
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.setsockopt(zmq.RCVHWM, 100_000)
        self.sub.setsockopt(zmq.SUBSCRIBE, f"{table}.".encode() if table else b"")
        if self.curve is not None:
            self.curve.apply(self.sub)
        self.sub.connect(publish)
        self._live = False
        #: times the table's journal was replaced while following (journal_id changed)
        self.journal_changes = 0

    def rewind(self, last_seq: int) -> None:
        """Hold nothing after ``last_seq``: the next heartbeat replays from there."""
        self.last_seq = last_seq
        self._live = False

    def close(self) -> None:
        """Stop: a backoff pause in progress (in another thread) ends at once."""
        self._stopped.set()
        self.sub.close()

    #: the first pause after ``busy`` and the longest (seconds); each pause is jittered
    BUSY_FIRST, BUSY_MAX = 0.05, 2.0

    def _replay(self, start: int, stop: int | None, timeout: float) -> list[Event]:
        """One replay; a busy table is asked again with backoff until ``timeout`` runs out."""
        clock = self.clock
        deadline = clock.mono() + timeout
        delay = self.BUSY_FIRST
        while True:
            try:
                return self._replay_once(start, stop, timeout)
            except ReplayFailed as e:
                left = deadline - clock.mono()
                if not str(e).startswith("busy") or left <= 0:
                    raise
                self.busy_retries += 1
                if clock.wait(min(left, delay * clock.jitter()), self._stopped):
                    raise ReplayFailed("the follower was closed while the table was busy") from e
                delay = min(delay * 2, self.BUSY_MAX)

    def _replay_once(self, start: int, stop: int | None, timeout: float) -> list[Event]:
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        if self.curve is not None:
            self.curve.apply(s)
        s.connect(self.replay_endpoint)
        try:
            req: dict[str, Any] = {"from": start}
            if stop is not None:
                req["to"] = stop
            s.send(json.dumps(req).encode())
            out: list[Event] = []
            while True:
                if not s.poll(int(timeout * 1000)):
                    raise ReplayFailed(
                        f"no replay answer from {self.replay_endpoint} in {timeout} s"
                    )
                frame = s.recv()
                try:
                    out.append(decode(frame))
                    continue
                except msgspec.ValidationError:
                    pass  # not an event: the end marker or an error reply
                reply = json.loads(frame)
                if reply.get("end") is True:
                    return out
                raise ReplayFailed(str(reply.get("error", reply)))
        finally:
            s.close()

    def _catch_up(self, upto: int | None, timeout: float) -> Iterator[Event]:
        if upto is not None and upto <= self.last_seq:
            return
        self.repairs += 1
        for ev in self._replay(self.last_seq + 1, upto, timeout):
            if ev.seq == self.last_seq + 1:
                self.last_seq = ev.seq
                yield ev

    def events(
        self, timeout: float = 10.0, *, heartbeats: bool = False
    ) -> Iterator[Event | dict[str, Any]]:
        """Yield events in seq order without gaps (and heartbeats when asked); stop after ``timeout`` s of silence."""
        while True:
            if not self.sub.poll(int(timeout * 1000)):
                return
            topic, body = self.sub.recv_multipart()
            if topic.startswith(b"~") or topic.endswith(b".journal.state"):
                continue  # not events: a raw trace, the journal's health (also in heartbeats)
            if topic.endswith(b".heartbeat"):
                hb = json.loads(body)
                self.heartbeat = hb
                jid = hb["data"].get("journal_id")
                if jid and self.journal_id and jid != self.journal_id:
                    # A new journal (the table's file was replaced): its seqs start again at 1
                    # and mean other events. Start over; the caller sees ``journal_id`` change.
                    self.journal_changes += 1
                    self.rewind(0)
                self.journal_id = jid or self.journal_id
                if not self._live or hb["data"]["last_seq"] > self.last_seq:
                    # first heartbeat: the subscription is live, fetch what came before it;
                    # later: the tail was lost (HWM, a quiet gap): repair it.
                    self._live = True
                    yield from self._catch_up(hb["data"]["last_seq"], timeout)
                if heartbeats:
                    yield hb
                continue
            if not self._live:
                continue  # the first heartbeat's replay covers these
            ev = decode(body)
            if ev.seq <= self.last_seq:
                continue  # already held (replayed, or a duplicate)
            if ev.seq > self.last_seq + 1:
                yield from self._catch_up(ev.seq - 1, timeout)
            self.last_seq = ev.seq
            yield ev

    def until(self, pred: Any, timeout: float = 10.0) -> list[Event]:
        """Events until one matches ``pred``; raises TimeoutError if none does in ``timeout`` s."""
        out: list[Event] = []
        deadline = time.monotonic() + timeout
        for ev in self.events(timeout=max(0.05, deadline - time.monotonic())):
            assert isinstance(ev, Event)
            out.append(ev)
            if pred(ev):
                return out
            if time.monotonic() > deadline:
                break
        raise TimeoutError(f"no matching event in {timeout} s (got {len(out)} others)")


async def replay(
    ctx: zmq.asyncio.Context,
    endpoint: str,
    start: int,
    stop: int | None = None,
    timeout: float = 10.0,
    *,
    curve: ClientCurve | tuple[bytes, bytes, bytes] | None = None,
) -> tuple[list[bytes], dict[str, Any]]:
    """Ask the replay socket at ``endpoint`` for events ``start..stop``.

    Returns the event frames (stored canonical bytes, in seq order) and the
    end marker. Raises :class:`daemon.bus.replay_server.ReplayError` on an error reply, or
    when ``timeout`` seconds pass without any frame arriving (also what a
    refused CURVE key looks like: ``curve`` is ``(client_public, client_secret,
    server_public)``, z85).
    """
    request: dict[str, Any] = {"from": start}
    if stop is not None:
        request["to"] = stop
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        if curve is not None:
            ClientCurve.of(curve).apply(sock)
        sock.connect(endpoint)
        await sock.send(canonical(request))
        frames: list[bytes] = []
        while True:
            if not await sock.poll(timeout * 1000, zmq.POLLIN):
                raise ReplayError(
                    f"no answer from the replay socket at {endpoint} within {timeout}s "
                    f"({len(frames)} events received)"
                )
            frame = await sock.recv()
            if frame.startswith(END_PREFIX):
                return frames, msgspec.json.decode(frame)
            if frame.startswith(ERROR_PREFIX):
                raise ReplayError(msgspec.json.decode(frame)["error"])
            frames.append(frame)
    finally:
        sock.close(linger=0)
