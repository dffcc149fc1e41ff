"""The PUB side of the bus: committed events and the heartbeat out, never blocking.

Every committed event goes out as one multipart message ``[b"<table>.<type>",
canonical JSON]`` so subscribers filter by topic prefix; a heartbeat
(``<table>.heartbeat``, not journaled) carries the journal's head so a lost tail
shows. PUB is not reliable: late joiners miss the first messages and a
subscriber over its high-water mark loses messages silently; subscribers repair
from the replay socket (:mod:`daemon.bus.replay_server`).

pyzmq/libzmq behaviour this module works around:

* A ``PUB`` socket never reports a full subscriber queue: ``send`` drops
  the message for that subscriber and returns success, so ``zmq.Again``
  never happens and drops cannot be counted. ``nodrop=True`` sets
  ``XPUB_NODROP`` so a full queue raises ``Again`` (counted in
  ``dropped``), but then the message goes to *no* subscriber: one stuck
  subscriber costs every subscriber a replay. Default is off (a slow
  subscriber only loses its own messages and repairs from replay).
* ``zmq.asyncio`` sockets never raise from ``send(..., NOBLOCK)``; they
  return a finished future holding ``Again``. ``publish`` is synchronous,
  so it sends through a plain shadow of the PUB socket (PUB never
  receives, so the shadow cannot steal a wake-up from a pending ``recv``).
* A ZeroMQ socket is not thread-safe, but may be used from several threads
  with a full memory barrier between uses (the zguide). The loop publishes
  each commit and sends heartbeats and traces, and the journal's sentinel
  thread sends heartbeats while a commit does not return (``daemon/pipeline/writer.py``),
  so every send, and the close, hold ``_send_lock``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import zmq
import zmq.asyncio

from daemon.bus.ipc import BACKLOG, HANDSHAKE_IVL_MS, bind_checked
from daemon.journal.events import SCHEMA_VERSION, Event, canonical

#: the flags of an event's two frames, as ints (zmq's enums cost a call per use)
_MORE = int(zmq.NOBLOCK | zmq.SNDMORE)
_LAST = int(zmq.NOBLOCK)

if TYPE_CHECKING:
    from daemon.security import ServerCurve

#: signs the journal head: (table, journal_id, seq, hash) → the heartbeat's ``checkpoint``
Signer = Callable[[str, str, int, str], dict[str, Any]]


def io_threads_yield(ctx: zmq.Context[Any]) -> None:
    """Let the context's I/O threads wait for a free CPU instead of preempting a publisher.

    A publish wakes ZeroMQ's I/O thread, and on a busy CPU the woken thread preempted
    the publishing thread at once (the one that commits): a 3 µs send took 20-50 µs of
    its wall time, and the next commit waited for it. ``SCHED_BATCH`` keeps the nice
    value and the share of the CPU but does not preempt on wake-up. Call before the
    context's first socket: its threads take the policy when they start.
    """
    ctx.set(zmq.THREAD_SCHED_POLICY, os.SCHED_BATCH)


class BusError(OSError):
    """The bus cannot start: the message says what and where (an OSError, so a
    daemon's "cannot run" handler for OS-level failures catches it)."""


class Publisher:
    """The PUB socket of one table; ``counters`` is shared with the bus that owns it."""

    def __init__(
        self,
        ctx: zmq.asyncio.Context,
        *,
        table: str,
        endpoint: str,
        counters: dict[str, int],
        sndhwm: int = 10000,
        linger_ms: int = 200,
        nodrop: bool = False,
        curve: ServerCurve | None = None,
        signer: Signer | None = None,
        journal_id: str = "",
    ) -> None:
        self.ctx = ctx
        self.table = table
        self.endpoint = endpoint
        self.counters = counters
        self.sndhwm = sndhwm
        self.linger_ms = linger_ms
        self.nodrop = nodrop
        self.curve = curve
        self.signer = signer
        #: the journal a heartbeat's checkpoint names when its data does not
        self.journal_id = journal_id
        self._pub: zmq.asyncio.Socket | None = None
        self._pub_sync: zmq.Socket | None = None
        self._hb_topic = f"{table}.heartbeat".encode()
        #: every PUB send and the close: the journal's sentinel thread sends heartbeats too
        self._send_lock = threading.Lock()
        #: ``(seq, hash)`` of the last event handed to the socket (sent, or dropped at the
        #: high-water mark): what a heartbeat names. The journal's head moves at the commit,
        #: before the writer publishes; a heartbeat naming it could reach a subscriber ahead
        #: of the event and send it to replay an event that is on its way.
        self.published: tuple[int, str] | None = None

    def open(self) -> None:
        """Create the socket and apply CURVE (before any bind: no moment without it)."""
        pub = self.ctx.socket(zmq.PUB)
        self._pub = pub
        pub.setsockopt(zmq.LINGER, self.linger_ms)
        pub.setsockopt(zmq.SNDHWM, self.sndhwm)
        pub.setsockopt(zmq.HANDSHAKE_IVL, HANDSHAKE_IVL_MS)
        pub.setsockopt(zmq.BACKLOG, BACKLOG)
        if self.nodrop:
            pub.setsockopt(zmq.XPUB_NODROP, 1)
        if self.curve is not None:
            self.curve.apply(pub, "publish")

    def bind(self) -> None:
        """Bind; ``endpoint`` becomes the one bound (``tcp://127.0.0.1:*`` gets its port)."""
        pub = self._pub
        assert pub is not None
        self.endpoint = bind_checked(pub, self.endpoint, "publish")
        self._pub_sync = zmq.Socket.shadow(pub.underlying)

    def close(self) -> None:
        with self._send_lock:
            self._pub_sync = None  # a shadow: closing the real socket is enough
            if self._pub is not None and not self._pub.closed:
                self._pub.close(linger=self.linger_ms)
            self._pub = None

    def publish(self, events: Sequence[Event], raw: Sequence[bytes] | None = None) -> None:
        """Send committed events, one message each; never blocks; from any thread.

        ``raw`` (the journal's stored bytes, parallel to ``events``) is sent
        as is when given, so subscribers get the very bytes that were hashed.
        """
        if raw is not None and len(raw) != len(events):
            raise ValueError(f"{len(events)} events but {len(raw)} raw bodies")
        with self._send_lock:
            sock = self._pub_sync
            if sock is None:
                raise BusError("bus not started")
            # Two plain sends with int flags: what send_multipart does, without building
            # its flag enums for every frame of every event.
            send = sock.send
            sent = 0
            for i, ev in enumerate(events):
                body = raw[i] if raw is not None else ev.canonical()
                try:
                    send(ev.topic, _MORE)
                    send(body, _LAST)
                    sent += 1
                except zmq.Again:
                    self.counters["dropped"] += 1
            self.counters["published"] += sent
            if events:
                last = events[-1]
                self.published = (last.seq, last.hash)

    def heartbeat(self, data: dict[str, Any], time: str, mono: float) -> None:
        """Publish ``<table>.heartbeat`` (not journaled: no seq, no hash).

        With a ``signer``, ``data["last_seq"]``/``data["last_hash"]`` are signed
        into ``data["checkpoint"]`` (``daemon.security.verify_checkpoint``).
        """
        if self._pub_sync is None:
            raise BusError("bus not started")
        if self.signer is not None and "last_seq" in data and "last_hash" in data:
            journal_id = str(data.get("journal_id") or self.journal_id)
            data = {
                **data,
                "checkpoint": self.signer(
                    self.table, journal_id, int(data["last_seq"]), str(data["last_hash"])
                ),
            }
        body = canonical(
            {
                "v": SCHEMA_VERSION,
                "table": self.table,
                "type": "heartbeat",
                "time": time,
                "mono": mono,
                "data": data,
            }
        )
        self._send(self._hb_topic, body, "heartbeats")

    def send(self, topic: bytes, body: bytes) -> bool:
        """Publish a message that is not an event (a technician's trace); never blocks."""
        return self._send(topic, body)

    def _send(self, topic: bytes, body: bytes, count: str | None = None) -> bool:
        """One message; ``count`` names the counter a sent one adds to (under the lock: the
        loop and the journal's sentinel both send heartbeats)."""
        with self._send_lock:
            sock = self._pub_sync
            if sock is None:
                raise BusError("bus not started")
            try:
                sock.send_multipart([topic, body], flags=zmq.NOBLOCK)
            except zmq.Again:
                self.counters["dropped"] += 1
                return False
            if count is not None:
                self.counters[count] += 1
            return True
