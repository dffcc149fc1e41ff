"""The event bus: committed events out on ZeroMQ PUB, replay of the journal on ROUTER.

The bus of the path of one reading (``README.md``; the zguide's Clone pattern). Every committed event
goes out as one multipart message ``[b"<table>.<type>", canonical JSON]`` so
subscribers filter by topic prefix; a heartbeat (``<table>.heartbeat``, not
journaled) carries the journal's head so a lost tail shows. PUB is not
reliable: late joiners miss the first messages and a subscriber over its
high-water mark loses messages silently. Subscribers therefore watch ``seq``
and, on a gap, ask the replay socket for ``{"from": N}``; it answers from
the journal's own read-only SQLite connection.

Replay wire format (DEALER → ROUTER, one frame each way):

* request: ``{"from": N}`` or ``{"from": N, "to": M}`` (integers, ``1 <= N <= M``);
* reply: the stored canonical bytes of events ``N..min(M, head)`` in seq
  order, one frame each, then the end marker
  ``{"end": true, "from": N, "to": <last seq sent, N-1 if none>,
  "last_seq": <head when the marker was sent>, "journal_id": ...}``;
* a request that cannot be served gets one frame ``{"error": "..."}`` instead.

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
* ``bind`` on an ``ipc://`` path silently unlinks whatever socket file is
  there, even one a live daemon is serving; :func:`prepare_ipc` checks first.
* With ``curve`` (a :class:`daemon.security.ServerCurve`) both sockets are
  CURVE servers in the ZAP domain ``bus``: libzmq admits any client key when
  no ZAP handler runs, so the curve object refuses to configure a socket
  before the authenticator is up. A refused client sees nothing at all.
* A JSON request nested deeper than Python's recursion limit makes msgspec
  raise ``RecursionError``, not ``DecodeError``: it is a refusal like any
  other bad request, never the end of the replay server.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import socket
import sqlite3
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec
import structlog
import zmq
import zmq.asyncio

from daemon import journal
from daemon.events import SCHEMA_VERSION, Event, canonical

if TYPE_CHECKING:
    from daemon.security import ClientCurve, ServerCurve

#: signs the journal head: (table, journal_id, seq, hash) → the heartbeat's ``checkpoint``
Signer = Callable[[str, str, int, str], dict[str, Any]]

log = structlog.get_logger()

REQUEST_MAX_BYTES: Final = 4096
_END_PREFIX: Final = b'{"end":'
_ERROR_PREFIX: Final = b'{"error":'
_REQUEST_KEYS: Final = frozenset({"from", "to"})


class BusError(OSError):
    """The bus cannot start: the message says what and where (an OSError, so a
    daemon's "cannot run" handler for OS-level failures catches it)."""


class EndpointError(OSError):
    """An endpoint cannot be bound: in use, served by someone else, or not creatable."""


class ReplayError(Exception):
    """A replay request was refused, or no answer came in time."""


# -- ipc endpoints ---------------------------------------------------------------


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
        raise EndpointError(
            f"cannot bind the {role} socket to {endpoint}: {e.strerror}{hint}"
        ) from e


# -- the bus ---------------------------------------------------------------------


class Bus:
    """PUB socket for committed events and heartbeats, ROUTER socket for replay."""

    REPLAY_CHUNK: int = 500  # events read (and sent) between yields to the loop

    def __init__(
        self,
        ctx: zmq.asyncio.Context,
        *,
        table: str,
        publish: str,
        replay: str,
        journal_path: str,
        sndhwm: int = 10000,
        replay_hwm: int = 1000,
        replay_max: int = 1_000_000,
        journal_id: str = "",
        linger_ms: int = 200,
        nodrop: bool = False,
        replay_concurrency: int = 8,
        replay_stall: float = 30.0,
        replay_idle: float = 1.0,
        curve: ServerCurve | None = None,
        signer: Signer | None = None,
    ) -> None:
        self.ctx = ctx
        self.table = table
        self.publish_endpoint = publish
        self.replay_endpoint = replay
        self.journal_path = journal_path
        self.sndhwm = sndhwm
        self.replay_hwm = replay_hwm
        self.replay_max = replay_max
        self.journal_id = journal_id
        self.linger_ms = linger_ms
        self.nodrop = nodrop
        self.replay_concurrency = replay_concurrency
        self.replay_stall = replay_stall
        self.replay_idle = replay_idle
        self.curve = curve
        self.signer = signer
        self.counters: dict[str, int] = dict.fromkeys(
            (
                "published",
                "dropped",
                "heartbeats",
                "replay_requests",
                "replay_errors",
                "replayed_events",
                "replay_evicted",
            ),
            0,
        )
        self._pub: zmq.asyncio.Socket | None = None
        self._pub_sync: zmq.Socket | None = None
        self._router: zmq.asyncio.Socket | None = None
        self._db: sqlite3.Connection | None = None
        self._server: asyncio.Task[None] | None = None
        self._streams: dict[asyncio.Task[None], _Stream] = {}
        self._hb_topic = f"{table}.heartbeat".encode()

    # -- lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        if self._server is not None:
            raise BusError("bus already started")
        try:
            self._db = journal.connect(self.journal_path, readonly=True)
            self._db.execute("SELECT MAX(seq) FROM events").fetchone()  # a journal?
            if not self.journal_id:
                row = self._db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()
                self.journal_id = row[0] if row else ""
        except sqlite3.Error as e:
            self._close_db()
            raise BusError(f"cannot read the journal {self.journal_path} for replay: {e}") from e
        try:
            pub = self.ctx.socket(zmq.PUB)
            self._pub = pub
            pub.setsockopt(zmq.LINGER, self.linger_ms)
            pub.setsockopt(zmq.SNDHWM, self.sndhwm)
            if self.nodrop:
                pub.setsockopt(zmq.XPUB_NODROP, 1)
            router = self.ctx.socket(zmq.ROUTER)
            self._router = router
            router.setsockopt(zmq.LINGER, self.linger_ms)
            router.setsockopt(zmq.SNDHWM, self.replay_hwm)
            router.setsockopt(zmq.RCVHWM, 1000)
            router.setsockopt(zmq.ROUTER_MANDATORY, 1)
            router.setsockopt(zmq.MAXMSGSIZE, 65536)  # beyond: disconnected by libzmq
            if self.curve is not None:  # before bind: no moment without CURVE
                self.curve.apply(pub, "publish")
                self.curve.apply(router, "replay")
            prepare_ipc(self.publish_endpoint)
            bind(pub, self.publish_endpoint, "publish")
            prepare_ipc(self.replay_endpoint)
            bind(router, self.replay_endpoint, "replay")
            # the endpoints actually bound ("tcp://127.0.0.1:*" gets its port)
            self.publish_endpoint = pub.getsockopt_string(zmq.LAST_ENDPOINT)
            self.replay_endpoint = router.getsockopt_string(zmq.LAST_ENDPOINT)
        except BaseException:
            self._close_sockets()
            self._close_db()
            raise
        self._pub_sync = zmq.Socket.shadow(pub.underlying)
        self._server = asyncio.create_task(self._serve(), name=f"bus-replay-{self.table}")

    async def close(self) -> None:
        tasks = [t for t in (self._server, *self._streams) if t is not None]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._server = None
        self._streams.clear()
        self._close_sockets()
        self._close_db()

    def _close_sockets(self) -> None:
        self._pub_sync = None  # a shadow: closing the real socket is enough
        for s in (self._pub, self._router):
            if s is not None and not s.closed:
                s.close(linger=self.linger_ms)
        self._pub = self._router = None

    def _close_db(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # -- publishing ----------------------------------------------------------------

    def publish(self, events: Sequence[Event], raw: Sequence[bytes] | None = None) -> None:
        """Send committed events, one message each; never blocks.

        ``raw`` (the journal's stored bytes, parallel to ``events``) is sent
        as is when given, so subscribers get the very bytes that were hashed.
        """
        sock = self._pub_sync
        if sock is None:
            raise BusError("bus not started")
        if raw is not None and len(raw) != len(events):
            raise ValueError(f"{len(events)} events but {len(raw)} raw bodies")
        for i, ev in enumerate(events):
            body = raw[i] if raw is not None else ev.canonical()
            if self._send(sock, ev.topic, body):
                self.counters["published"] += 1

    def heartbeat(self, data: dict[str, Any], time: str, mono: float) -> None:
        """Publish ``<table>.heartbeat`` (not journaled: no seq, no hash).

        With a ``signer``, ``data["last_seq"]``/``data["last_hash"]`` are signed
        into ``data["checkpoint"]`` (``daemon.security.verify_checkpoint``).
        """
        sock = self._pub_sync
        if sock is None:
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
        if self._send(sock, self._hb_topic, body):
            self.counters["heartbeats"] += 1

    def send(self, topic: bytes, body: bytes) -> bool:
        """Publish a message that is not an event (a technician's trace); never blocks."""
        sock = self._pub_sync
        if sock is None:
            raise BusError("bus not started")
        return self._send(sock, topic, body)

    def _send(self, sock: zmq.Socket, topic: bytes, body: bytes) -> bool:
        try:
            sock.send_multipart([topic, body], flags=zmq.NOBLOCK)
        except zmq.Again:
            self.counters["dropped"] += 1
            return False
        return True

    # -- replay server -------------------------------------------------------------

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
            sent = start - 1
            batch = 0
            for seq, raw in journal.read_raw(db, start, last, chunk=self.REPLAY_CHUNK):
                await self._send_replay(identity, raw, st)
                sent = st.sent = seq
                self.counters["replayed_events"] += 1
                batch += 1
                if batch >= self.REPLAY_CHUNK:
                    batch = 0
                    await asyncio.sleep(0)  # let the pipeline run between chunks
            end = {
                "end": True,
                "from": start,
                "to": sent,
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


# -- client ------------------------------------------------------------------------


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
    end marker. Raises :class:`ReplayError` on an error reply, or when
    ``timeout`` seconds pass without any frame arriving (also what a refused
    CURVE key looks like: ``curve`` is ``(client_public, client_secret,
    server_public)``, z85).
    """
    request: dict[str, Any] = {"from": start}
    if stop is not None:
        request["to"] = stop
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        if curve is not None:
            from daemon.security import ClientCurve

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
            if frame.startswith(_END_PREFIX):
                return frames, msgspec.json.decode(frame)
            if frame.startswith(_ERROR_PREFIX):
                raise ReplayError(msgspec.json.decode(frame)["error"])
            frames.append(frame)
    finally:
        sock.close(linger=0)
