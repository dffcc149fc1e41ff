"""Follow one table directly: its PUB socket, its replay socket, gap repair, chain check.

The subscriber recipe (``docs/events.md``, the zguide's Clone pattern), in asyncio:
subscribe first; the first heartbeat proves the subscription is live, so replay
from the last seq held up to its ``last_seq``; drop what is already held; replay
again whenever a seq skips or a heartbeat's ``last_seq`` is ahead. A heartbeat
with a new ``journal_id`` means the table's journal was replaced: its seqs start
again at 1, so the follower starts over (and so does the chain). Every event is
checked against the table's hash chain before it is handed on; a break raises
:class:`~tabled_client.chain.ChainBroken`.

A table that is off, or that does not admit this CURVE key, sends nothing: no
heartbeat, so ``up`` stays false and nothing is yielded; nothing errors.

Why long: the recipe is one state machine over one table's stream (live messages, replay
in bounded chunks, gaps, heartbeats, the chain): split, its parts would share every field.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import zmq
import zmq.asyncio

from tabled_client.chain import GENESIS, Chain
from tabled_client.events import Event, decode
from tabled_client.feed import Feed, SocketFeed

#: events asked for in one replay request (the daemon sends at most ``[bus] replay_max``)
REPLAY_CHUNK = 2000
#: the largest frame read from a table (ZeroMQ's MAXMSGSIZE: a larger one drops the peer)
MAX_FRAME = 1 << 20
#: the bytes of one replay answer held at once: past them, the rest is left unread
REPLAY_MAX_BYTES = 16 << 20
#: frames ZeroMQ queues for a replay socket before TCP pushes back on the table
REPLAY_RCVHWM = 256
#: messages read from the events' socket at one wake-up, at most (``batches``)
DRAIN_MAX = 500
#: msgspec's JSON decoder: a live event is parsed twice before its chain check (its seq,
#: then its fields), a few µs each with it against ~10 with ``json.loads``
_decode = msgspec.json.Decoder().decode


class ReplayFailed(Exception):
    """The replay socket did not answer, or answered with an error."""


@dataclass(frozen=True, slots=True)
class Received:
    """One verified event as it came off the table: its exact bytes and its journal."""

    table: str
    journal_id: str | None
    seq: int
    type: str
    hash: str
    prev: str
    time: str
    raw: bytes


Curve = tuple[bytes | str, bytes | str, bytes | str]


def _apply_curve(sock: zmq.asyncio.Socket, curve: Curve | None) -> None:
    if curve is None:
        return
    public, secret, server = (v.encode() if isinstance(v, str) else v for v in curve)
    sock.setsockopt(zmq.CURVE_PUBLICKEY, public)
    sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
    sock.setsockopt(zmq.CURVE_SERVERKEY, server)


class TableFollower:
    """Every event of one table, exactly once, in seq order, chain-verified.

    ``curve`` is ``(client_public, client_secret, server_public)`` in z85 for a table
    with CURVE. To resume, pass the last ``seq`` held with its ``hash`` and
    ``journal_id`` (all three, from :attr:`head`): the chain then goes on from there.
    ``feed``: where live messages come from (default: its own SUB, :class:`SocketFeed`).
    """

    def __init__(
        self,
        publish: str,
        replay: str,
        *,
        table: str,
        last_seq: int = 0,
        last_hash: str = GENESIS,
        journal_id: str | None = None,
        curve: Curve | None = None,
        ctx: zmq.asyncio.Context | None = None,
        replay_timeout: float = 10.0,
        max_frame: int = MAX_FRAME,
        replay_max_bytes: int = REPLAY_MAX_BYTES,
        catch_ups: asyncio.Semaphore | None = None,
        feed: Callable[[TableFollower], Feed] | None = None,
    ) -> None:
        self.table = table
        self.publish_endpoint = publish
        self.replay_endpoint = replay
        self.curve = curve
        self.ctx = ctx or zmq.asyncio.Context.instance()
        self.replay_timeout = replay_timeout
        #: a table (broken or hostile) cannot grow our memory past these (docs/floor.md)
        self.max_frame = max_frame
        self.replay_max_bytes = replay_max_bytes
        #: shared by the followers of one process (a bridge): a replay's chunk is held
        #: from its request until its consumer asked for what follows its last event (it
        #: stored them), with a slot of this; so what many tables' backlogs hold at once
        #: is bounded by the slots, not by the number of tables (docs/floor.md, Bounded)
        self.catch_ups = catch_ups
        self.chain = Chain(table, journal_id=journal_id, seq=last_seq, hash=last_hash)
        self.heartbeat: dict[str, Any] | None = None
        #: monotonic time of the last heartbeat (None: never: the table is off, or our key is wrong)
        self.heartbeat_at: float | None = None
        self.repairs = 0
        self.journal_changes = 0
        self.replay_errors = 0
        self._live = False
        self._feed_of = feed or SocketFeed
        self._feed: Feed | None = None

    # -- where it stands ---------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        return self.chain.head.seq

    @property
    def journal_id(self) -> str | None:
        return self.chain.head.journal_id

    @property
    def head(self) -> tuple[str | None, int, str]:
        """``(journal_id, seq, hash)`` of the last event handed on: where a restart resumes."""
        h = self.chain.head
        return h.journal_id, h.seq, h.hash

    @property
    def table_seq(self) -> int | None:
        """The table's own last seq, from its last heartbeat."""
        return None if self.heartbeat is None else int(self.heartbeat["data"]["last_seq"])

    def skip_to(self, seq: int, hash: str) -> None:
        """Go on after ``seq`` (whose hash is ``hash``) of this journal without its events:
        someone trusted holds them (another bridge stored them in JetStream). Events up to
        ``seq`` are then dropped as held; the chain goes on from ``hash``."""
        if seq > self.chain.head.seq:
            self.chain.head.seq, self.chain.head.hash = seq, hash

    def up(self, stale_after: float = 5.0) -> bool:
        return self.heartbeat_at is not None and time.monotonic() - self.heartbeat_at < stale_after

    # -- the recipe --------------------------------------------------------------------

    def _open(self) -> zmq.asyncio.Socket:
        sub = self.ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.RCVHWM, 100_000)
        sub.setsockopt(zmq.MAXMSGSIZE, self.max_frame)
        sub.setsockopt(zmq.SUBSCRIBE, f"{self.table}.".encode())
        _apply_curve(sub, self.curve)
        sub.connect(self.publish_endpoint)
        return sub

    def close(self) -> None:
        if self._feed is not None:
            self._feed.close()
            self._feed = None

    async def _replay(self, start: int, stop: int) -> tuple[list[bytes], dict[str, Any]]:
        """Events ``start … stop`` as the table answers. An answer is held only up to the
        frames asked for and :attr:`replay_max_bytes`: past either, the rest is left unread
        (the socket is closed) and what came is returned marked ``partial``, so a table that
        answers endlessly cannot grow our memory (docs/floor.md, Bounded)."""
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.MAXMSGSIZE, self.max_frame)
        s.setsockopt(zmq.RCVHWM, REPLAY_RCVHWM)
        _apply_curve(s, self.curve)
        s.connect(self.replay_endpoint)
        # the same socket read without the event loop once poll said it is readable: every
        # frame queued is taken at one wake-up (a frame each cost a future and a loop turn:
        # most of a floor's catch-up, issue 31)
        raw = zmq.Socket.shadow(s.underlying)
        asked = stop - start + 1
        try:
            await s.send(json.dumps({"from": start, "to": stop}).encode())
            out: list[bytes] = []
            held = 0
            while True:
                if not await s.poll(int(self.replay_timeout * 1000)):
                    raise ReplayFailed(
                        f"{self.table}: no replay answer from {self.replay_endpoint} "
                        f"in {self.replay_timeout} s"
                    )
                while True:
                    try:
                        frame = raw.recv(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    if frame.startswith(b'{"data"'):
                        out.append(frame)
                        held += len(frame)
                        if len(out) > asked:  # more than asked: the rest unread
                            return out[:asked], {"end": True, "partial": True}
                        if held >= self.replay_max_bytes:
                            return out, {"end": True, "partial": True}
                        continue
                    reply = json.loads(frame)
                    if reply.get("end") is True:
                        return out, reply
                    raise ReplayFailed(f"{self.table}: replay: {reply.get('error', reply)}")
        finally:
            s.close()

    async def fetch(self, start: int, stop: int) -> tuple[list[bytes], dict[str, Any]]:
        """Events ``start … stop`` as the table's replay socket answers now, unchecked, and
        its end marker (``last_seq``, ``journal_id``): to ask what the journal holds."""
        return await self._replay(start, stop)

    async def _catch_up(self, upto: int, limit: int) -> AsyncIterator[list[Received]]:
        """Replay ``last_seq+1 … upto`` in chunks, handed on in lists of at most ``limit``;
        a busy server is retried with backoff. Each chunk holds a slot of
        :attr:`catch_ups` (if given) from its request until its consumer asks for more
        after its last list (it has stored them)."""
        delay = 0.05
        while self.last_seq < upto:
            async with self.catch_ups or contextlib.nullcontext():
                self.repairs += 1
                stop = min(upto, self.last_seq + REPLAY_CHUNK)
                try:
                    frames, end = await self._replay(self.last_seq + 1, stop)
                except ReplayFailed as e:
                    self.replay_errors += 1
                    if "busy" not in str(e):
                        raise
                    busy = True  # waited for below, without our slot
                else:
                    busy = False
                if not busy:
                    if end.get("journal_id") and end["journal_id"] != self.journal_id:
                        return  # replaced meanwhile: the next heartbeat starts over
                    delay = 0.05
                    before, came = self.last_seq, len(frames)
                    part: list[Received] = []
                    try:
                        for raw in frames:
                            got = self._accept(raw, replayed=True)
                            if got is not None:
                                part.append(got)
                                if len(part) >= limit:
                                    yield part
                                    part = []
                    except Exception:
                        if part:  # verified before the trouble: handed on first
                            yield part
                        raise
                    del frames  # handed on: not held while the next chunk is asked for
                    if part:
                        yield part
                    del part
                    if not came:
                        return  # the table has less than its heartbeat said: ask again later
                    if end.get("partial") and self.last_seq == before:
                        self.replay_errors += 1  # a whole answer's worth and nothing new
                        raise ReplayFailed(
                            f"{self.table}: a replay answer past its bound brought nothing new"
                        )
                    continue
            # the table's replay slots are all taken: jittered, so followers spread out;
            # waited for without a slot of ours
            await asyncio.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, 2.0)

    def _accept(self, raw: bytes, *, replayed: bool = False) -> Received | None:
        """Check and hand on the next event; ``None`` for one already held.

        A replay answer that skips a seq did not send what was asked (a server that dropped
        frames): that replay failed and is asked again, the events it did send are checked
        as they come. A live event never gets here past a gap (``received`` repairs it
        first); the chain check itself refuses any other break, for good.
        """
        fields = _decode(raw)
        if fields["seq"] <= self.last_seq:
            return None
        if replayed and fields["seq"] > self.last_seq + 1:
            self.replay_errors += 1
            raise ReplayFailed(
                f"{self.table}: the replay answer skips from seq {self.last_seq} to "
                f"{fields['seq']}: asked again"
            )
        f = self.chain.check(raw, journal_id=self.journal_id)
        return Received(
            self.table, self.journal_id, f["seq"], f["type"], f["hash"], f["prev"], f["time"], raw
        )

    def quiet(self, hb: dict[str, Any]) -> bool:
        """True (the heartbeat taken) when ``hb`` asks nothing of the follower: live, the
        same journal, nothing past what it holds. A feed that reads many tables calls it
        when the table has nothing queued, so a quiet table's heartbeat wakes no task."""
        data = hb["data"]
        jid = data.get("journal_id")
        if not self._live or (jid and jid != self.journal_id) or data["last_seq"] > self.last_seq:
            return False
        self.heartbeat, self.heartbeat_at = hb, time.monotonic()
        return True

    def _on_heartbeat(self, hb: dict[str, Any]) -> int | None:
        """What to replay up to, if anything."""
        self.heartbeat, self.heartbeat_at = hb, time.monotonic()
        jid = hb["data"].get("journal_id")
        if jid and jid != self.journal_id:
            if self.journal_id is not None:
                # a new journal: its seqs start again at 1 and mean other events
                self.journal_changes += 1
                self.chain.head.seq, self.chain.head.hash = 0, GENESIS
                self._live = False
            self.chain.head.journal_id = jid
        last = int(hb["data"]["last_seq"])
        if not self._live or last > self.last_seq:
            self._live = True
            return last
        return None

    async def received(self, idle: float | None = None) -> AsyncIterator[Received]:
        """Verified events as bytes (what the bridge forwards); stops after ``idle`` s of silence."""
        async for batch in self.batches(idle):
            for got in batch:
                yield got

    async def batches(
        self, idle: float | None = None, limit: int = DRAIN_MAX
    ) -> AsyncIterator[list[Received]]:
        """Verified events in lists: every message ready at one wake-up (up to ``limit``)
        read without waiting again, so a busy table costs one poll per burst, not one per
        event, and its caller may store a list at once. A replay's events come in lists
        of at most ``limit``. Stops after ``idle`` s of silence."""
        if self._feed is None:
            self._feed = self._feed_of(self)
        feed = self._feed
        while True:
            first = await feed.first(idle)
            if first is None:
                return
            out: list[Received] = []
            try:
                for i in range(limit):
                    if i == 0:
                        topic, body = first
                    else:
                        more = feed.more()
                        if more is None:
                            break
                        topic, body = more
                    if topic.endswith(b".heartbeat"):
                        upto = self._on_heartbeat(_decode(body))
                        if upto is not None:
                            if out:
                                yield out
                                out = []
                            try:
                                # closed with this generator: its catch-up slot is freed then
                                async with contextlib.aclosing(
                                    self._catch_up(upto, limit)
                                ) as chunks:
                                    async for part in chunks:
                                        yield part
                                        del part  # stored: not kept while the table idles
                            except ReplayFailed:
                                self._live = False  # retried at the next heartbeat
                        continue
                    if topic.endswith(b".journal.state") or not self._live:
                        continue  # not an event; or before the first heartbeat (its replay covers it)
                    seq = _decode(body)["seq"]
                    if seq > self.last_seq + 1:
                        if out:
                            yield out
                            out = []
                        failed = False
                        try:
                            async with contextlib.aclosing(
                                self._catch_up(seq - 1, limit)
                            ) as chunks:
                                async for part in chunks:
                                    yield part
                                    del part
                        except ReplayFailed:
                            self._live = False
                            failed = True
                        if failed:
                            continue
                        if self.last_seq != seq - 1:
                            continue  # not repaired yet: the next heartbeat tries again
                    got = self._accept(body)
                    if got is not None:
                        out.append(got)
            except Exception:
                if out:  # verified before the trouble: handed on first (a break stops after)
                    yield out
                raise
            if out:
                yield out

    async def events(self, idle: float | None = None) -> AsyncIterator[Event]:
        """Verified events as typed Structs (``tabled_client.events``)."""
        async for got in self.received(idle):
            yield decode(got.raw)
