"""The replay server: the journal's events again, on a ROUTER socket, for a subscriber's gap.

Subscribers watch ``seq`` and, on a gap, ask the replay socket for
``{"from": N}``; it answers from the journal's own read-only SQLite
connection (the client side is :func:`daemon.bus.subscriber.replay`).

Replay wire format (DEALER → ROUTER, one frame each way):

* request: ``{"from": N}`` or ``{"from": N, "to": M}`` (integers, ``1 <= N <= M``);
* reply: the stored canonical bytes of events ``N..min(M, head)`` in seq
  order, one frame each, then the end marker
  ``{"end": true, "from": N, "to": <last seq sent, N-1 if none>,
  "last_seq": <head when the marker was sent>, "journal_id": ...}``;
* a request that cannot be served gets one frame ``{"error": "..."}`` instead.

pyzmq/libzmq behaviour this module works around:

* With ``ROUTER_MANDATORY`` the socket is writable (``POLLOUT``) when *any*
  peer has room, so an awaited send to a peer whose queue is full can fail
  with ``Again`` after the wait; the replay stream then backs off briefly
  and tries again, and gives up after ``replay_stall`` seconds without
  progress. A peer that went away gives ``EHOSTUNREACH`` and ends its stream.
* Fairness: a client that asks and never reads still holds one of the
  ``replay_concurrency`` slots while its stream waits for room. So a stream
  that has waited ``replay_idle`` seconds without getting one frame out gives
  its slot to the next request (it is cancelled; its client never sees the
  end marker, so it asks again later), and one connection has at most one
  stream. Eight silent DEALERs thus cost the others at most ``replay_idle``
  of ``busy``, which a follower retries with backoff.
* With ``curve`` (a :class:`daemon.security.ServerCurve`) the socket is a
  CURVE server in the ZAP domain ``bus``: libzmq admits any client key when
  no ZAP handler runs, so the curve object refuses to configure a socket
  before the authenticator is up. A refused client sees nothing at all.
* A JSON request nested deeper than Python's recursion limit makes msgspec
  raise ``RecursionError``, not ``DecodeError``: it is a refusal like any
  other bad request, never the end of the replay server.

Why long: the fairness and back-pressure rules above are one stream's life (slot,
query, send, wait, give up) and only hold together.
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import msgspec
import structlog
import zmq
import zmq.asyncio

from daemon import journal
from daemon.bus.ipc import BACKLOG, HANDSHAKE_IVL_MS, bind_checked
from daemon.bus.publisher import BusError
from daemon.journal.events import canonical

if TYPE_CHECKING:
    from daemon.security import ServerCurve

log = structlog.get_logger()

REQUEST_MAX_BYTES: Final = 4096
#: how a reply frame that is not an event starts (canonical JSON sorts ``end``/``error`` first)
END_PREFIX: Final = b'{"end":'
ERROR_PREFIX: Final = b'{"error":'
_REQUEST_KEYS: Final = frozenset({"from", "to"})


class ReplayError(Exception):
    """A replay request was refused, or no answer came in time."""


class ReplayServer:
    """The ROUTER socket and the streams it serves; ``counters`` is shared with the bus."""

    REPLAY_CHUNK: int = 500  # events read (and sent) between yields to the loop

    def __init__(
        self,
        ctx: zmq.asyncio.Context,
        *,
        table: str,
        endpoint: str,
        journal_path: str,
        counters: dict[str, int],
        replay_hwm: int = 1000,
        replay_max: int = 1_000_000,
        journal_id: str = "",
        linger_ms: int = 200,
        replay_concurrency: int = 8,
        replay_stall: float = 30.0,
        replay_idle: float = 1.0,
        curve: ServerCurve | None = None,
    ) -> None:
        self.ctx = ctx
        self.table = table
        self.endpoint = endpoint
        self.journal_path = journal_path
        self.counters = counters
        self.replay_hwm = replay_hwm
        self.replay_max = replay_max
        self.journal_id = journal_id
        self.linger_ms = linger_ms
        self.replay_concurrency = replay_concurrency
        self.replay_stall = replay_stall
        self.replay_idle = replay_idle
        self.curve = curve
        self._router: zmq.asyncio.Socket | None = None
        self._router_sync: zmq.Socket | None = None
        self._db: sqlite3.Connection | None = None
        self._server: asyncio.Task[None] | None = None
        self._streams: dict[asyncio.Task[None], _Stream] = {}

    # -- lifecycle ---------------------------------------------------------------

    def open_journal(self) -> None:
        """The journal's read-only connection; learns ``journal_id`` when not given."""
        try:
            self._db = journal.connect(self.journal_path, readonly=True)
            self._db.execute("SELECT MAX(seq) FROM events").fetchone()  # a journal?
            if not self.journal_id:
                row = self._db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()
                self.journal_id = row[0] if row else ""
        except sqlite3.Error as e:
            self.close_journal()
            raise BusError(f"cannot read the journal {self.journal_path} for replay: {e}") from e

    def open(self) -> None:
        """Create the socket and apply CURVE (before any bind: no moment without it)."""
        router = self.ctx.socket(zmq.ROUTER)
        self._router = router
        router.setsockopt(zmq.LINGER, self.linger_ms)
        router.setsockopt(zmq.SNDHWM, self.replay_hwm)
        router.setsockopt(zmq.RCVHWM, 1000)
        router.setsockopt(zmq.ROUTER_MANDATORY, 1)
        router.setsockopt(zmq.HANDSHAKE_IVL, HANDSHAKE_IVL_MS)
        router.setsockopt(zmq.BACKLOG, BACKLOG)
        router.setsockopt(zmq.MAXMSGSIZE, 65536)  # beyond: disconnected by libzmq
        if self.curve is not None:
            self.curve.apply(router, "replay")

    def bind(self) -> None:
        """Bind; ``endpoint`` becomes the one bound (``tcp://127.0.0.1:*`` gets its port)."""
        router = self._router
        assert router is not None
        self.endpoint = bind_checked(router, self.endpoint, "replay")
        self._router_sync = zmq.Socket.shadow(router.underlying)

    def serve(self) -> None:
        if self._server is not None:
            raise BusError("replay server already started")
        self._server = asyncio.create_task(self._serve(), name=f"bus-replay-{self.table}")

    @property
    def started(self) -> bool:
        return self._server is not None

    async def stop(self) -> None:
        tasks = [t for t in (self._server, *self._streams) if t is not None]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._server = None
        self._streams.clear()

    def close_socket(self) -> None:
        self._router_sync = None  # a shadow: closing the real socket is enough
        if self._router is not None and not self._router.closed:
            self._router.close(linger=self.linger_ms)
        self._router = None

    def close_journal(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # -- serving -----------------------------------------------------------------

    async def _serve(self) -> None:
        router = self._router
        assert router is not None
        while True:
            frames = await router.recv_multipart()
            identity, body = frames[0], frames[1:]
            self.counters["replay_requests"] += 1
            try:
                start, stop = self._parse(body)
            except ReplayError as e:
                await self._refuse(identity, str(e))
                continue
            except Exception as e:  # a hostile request must never end the server
                log.exception("replay request not understood")
                await self._refuse(identity, f"request not understood: {type(e).__name__}")
                continue
            if any(s.identity == identity for s in self._streams.values()):
                await self._refuse(identity, "a replay to this connection is in progress")
                continue
            if len(self._streams) >= self.replay_concurrency and not self._evict_idle():
                await self._refuse(
                    identity,
                    f"busy: {len(self._streams)} replays in progress, try again shortly",
                )
                continue
            st = _Stream(identity)
            task = asyncio.create_task(self._stream(st, start, stop))
            self._streams[task] = st
            task.add_done_callback(lambda t: self._streams.pop(t, None))

    def _evict_idle(self) -> bool:
        """Free the slot of the stream that has waited longest for a client that reads nothing."""
        now = asyncio.get_running_loop().time()
        idle = [
            (st.waiting_since, task)
            for task, st in self._streams.items()
            if st.waiting_since is not None and now - st.waiting_since >= self.replay_idle
        ]
        if not idle:
            return False
        since, task = min(idle, key=lambda x: x[0])
        st = self._streams.pop(task)
        task.cancel()
        self.counters["replay_evicted"] += 1
        log.info(
            "replay client dropped: it read nothing",
            seconds=round(now - since, 3),
            sent=st.sent,
            streams=len(self._streams),
        )
        return True

    def _parse(self, body: list[bytes]) -> tuple[int, int | None]:
        if len(body) != 1:
            raise ReplayError(f"a request is one frame, this one has {len(body)}")
        frame = body[0]
        if len(frame) > REQUEST_MAX_BYTES:
            raise ReplayError(f"request too large ({len(frame)} bytes)")
        try:
            req = msgspec.json.decode(frame)
        except msgspec.DecodeError as e:
            raise ReplayError(f'request is not JSON ({e}); send {{"from": N}}') from None
        except RecursionError:
            raise ReplayError('request is nested too deeply; send {"from": N}') from None
        if not isinstance(req, dict):
            raise ReplayError(
                f'request must be a JSON object like {{"from": N}}, not {type(req).__name__}'
            )
        unknown = sorted(set(req) - _REQUEST_KEYS)
        if unknown:
            raise ReplayError(f'unknown key(s) {", ".join(unknown)}: only "from" and "to"')
        if "from" not in req:
            raise ReplayError('missing "from" (the first seq wanted, >= 1)')
        start = req["from"]
        if not _is_int(start) or start < 1:
            raise ReplayError(f'"from" must be an integer >= 1, got {start!r}')
        stop = req.get("to")
        if "to" in req:
            if not _is_int(stop):
                raise ReplayError(f'"to" must be an integer, got {stop!r}')
            if stop < start:
                raise ReplayError(f'"to" ({stop}) is before "from" ({start})')
        return start, stop

    async def _refuse(self, identity: bytes, what: str) -> None:
        """One ``{"error": ...}`` frame; waits at most half a second for room."""
        self.counters["replay_errors"] += 1
        router = self._router
        assert router is not None
        try:
            fut = router.send_multipart([identity, canonical({"error": what})], flags=zmq.NOBLOCK)
            if fut.done():
                fut.result()
            else:  # queued behind a stream waiting for room
                await asyncio.wait_for(fut, 0.5)
        except (zmq.ZMQError, TimeoutError) as e:  # peer gone, or its queue full
            log.warning("replay error reply undeliverable", error=what, reason=repr(e))

    async def _stream(self, st: _Stream, start: int, stop: int | None) -> None:
        identity = st.identity
        db = self._db
        assert db is not None
        try:
            head = _head(db)
            last = head if stop is None else min(stop, head)
            count = last - start + 1
            if count > self.replay_max:
                await self._refuse(
                    identity,
                    f"from {start} would send {count} events, more than the limit of "
                    f'{self.replay_max} per request: ask for fewer with "to"',
                )
                return
            st.sent = start - 1
            await self._send_rows(db, st, start, last)
            end = {
                "end": True,
                "from": start,
                "to": st.sent,
                "last_seq": _head(db),
                "journal_id": self.journal_id,
            }
            await self._send_replay(identity, canonical(end), st)
        except _Gone as e:
            self.counters["replay_errors"] += 1
            log.info("replay stream stopped", start=start, reason=str(e))
        except sqlite3.Error as e:
            log.error("replay failed reading the journal", start=start, error=str(e))
            await self._refuse(identity, f"cannot read the journal: {e}")
        except Exception as e:
            log.exception("replay stream failed", start=start)
            await self._refuse(identity, f"internal error: {type(e).__name__}: {e}")

    async def _send_rows(self, db: sqlite3.Connection, st: _Stream, start: int, last: int) -> None:
        """Events ``start..last`` to one client: the stored bytes, as published.

        One query streams the rows, ``REPLAY_CHUNK`` at a time, and each chunk
        goes out through a plain shadow of the ROUTER socket, without a future
        per frame, while the client's queue has room. A full queue sends that
        frame the waiting way (:meth:`_send_replay`, the fairness rules' clock)
        and closes the query first: an open cursor is a read snapshot that keeps
        the WAL from being checkpointed, so a slow client never holds one while
        it waits. The rest of the chunk is in memory; the next chunk comes from
        a new query after the last seq sent.
        """
        sync = self._router_sync
        assert sync is not None
        identity = st.identity
        more, final = zmq.SNDMORE | zmq.NOBLOCK, zmq.NOBLOCK
        counted = lo = start
        try:
            while lo <= last:
                cur: sqlite3.Cursor | None = db.execute(
                    "SELECT seq, body FROM events WHERE seq BETWEEN ? AND ? ORDER BY seq",
                    (lo, last),
                )
                try:
                    while cur is not None and (rows := cur.fetchmany(self.REPLAY_CHUNK)):
                        for seq, body in rows:
                            try:
                                sync.send(identity, more)
                            except zmq.Again:  # this client's queue is full: wait the fair way
                                if cur is not None:
                                    cur.close()
                                    cur = None
                                # the shadow's sends may have taken the asyncio socket's
                                # wake-up: asking it for its events schedules its waiters
                                self._router_events()
                                await self._send_replay(identity, body, st)
                            except zmq.ZMQError as e:
                                raise _Gone.from_error(e) from None
                            else:
                                sync.send(body, final)  # the message's rest: never refused
                            st.sent = seq
                        self.counters["replayed_events"] += st.sent + 1 - counted
                        counted = lo = st.sent + 1
                        self._router_events()
                        await asyncio.sleep(0)  # let the pipeline run between chunks
                    if cur is not None:
                        return  # the query ran to its end: every row sent
                finally:
                    if cur is not None:
                        cur.close()
        finally:  # a stream stopped mid-chunk counts what it sent
            self.counters["replayed_events"] += max(0, st.sent + 1 - counted)

    def _router_events(self) -> None:
        router = self._router
        if router is not None and not router.closed:
            router.get(zmq.EVENTS)

    async def _send_replay(self, identity: bytes, frame: bytes, st: _Stream | None = None) -> None:
        """Send one frame to one replay client, waiting while its queue is full.

        Every wait is bounded: with ROUTER_MANDATORY an awaited send can end
        in ``Again`` (the socket was writable for another peer), and a peer
        that vanished while its queue was full never makes the socket
        writable again, so each attempt waits at most half a second and the
        whole send at most ``replay_stall`` seconds.
        """
        router = self._router
        assert router is not None
        msg = [identity, frame]
        loop: asyncio.AbstractEventLoop | None = None
        deadline = 0.0
        delay = 0.001
        while True:
            fut = router.send_multipart(msg)  # sends at once when the peer has room
            try:
                if fut.done():
                    fut.result()
                    if st is not None:
                        st.waiting_since = None
                    return
                if loop is None:
                    loop = asyncio.get_running_loop()
                    deadline = loop.time() + self.replay_stall
                    if st is not None:
                        st.waiting_since = loop.time()
                await asyncio.wait_for(fut, max(0.001, min(deadline - loop.time(), 0.5)))
                if st is not None:
                    st.waiting_since = None
                return
            except zmq.Again:
                # writable for some other peer, not this one: back off a little
                if loop is None:
                    loop = asyncio.get_running_loop()
                    deadline = loop.time() + self.replay_stall
                    if st is not None:
                        st.waiting_since = loop.time()
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.05)
            except TimeoutError:
                pass  # a vanished peer shows as EHOSTUNREACH on the next attempt
            except zmq.ZMQError as e:
                raise _Gone.from_error(e) from None
            if loop.time() >= deadline:
                raise _Gone(f"client read nothing for {self.replay_stall:g}s")


@dataclass(slots=True)
class _Stream:
    """One replay in progress: whose, how far, and since when it waits for room."""

    identity: bytes
    sent: int = 0
    waiting_since: float | None = None


class _Gone(Exception):
    @classmethod
    def from_error(cls, e: zmq.ZMQError) -> _Gone:
        if e.errno == zmq.EHOSTUNREACH:
            return cls("client went away")
        return cls(f"send failed: {e.strerror}")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _head(db: sqlite3.Connection) -> int:
    row = db.execute("SELECT MAX(seq) FROM events").fetchone()
    return row[0] or 0
