"""Follow a floor of tables from NATS JetStream: one durable consumer per backend.

The bridge (``tabled-bridge``, ``docs/floor.md``) stores every table's events in one
stream, subjects ``tables.<table>.<type>``, message id ``<table>:<journal id>:<seq>``,
the event's canonical bytes as the payload. A backend reads them with its own durable
consumer, so it resumes where it acked after a restart.

Every table's hash chain is checked as its events arrive, so the consumer always reads
a table's whole stream and filters by type on this side (a type filter on the server
would leave seq gaps no chain check can cross). A redelivered message (a consumer
restart before its ack) is one already held and is dropped by seq. ``tables=`` is
filtered by the server (a filter subject per table, nats-server 2.10+), so a backend of
a few tables does not read the whole floor. Needs nats-py
(``pip install tabled-client[nats]``).

A stream with bounded retention (``max_age``, ``max_bytes``) no longer holds a table's
oldest events, so its chain cannot be checked from genesis. With ``keys=`` (each table's
Ed25519 public key) a new follower verifies such a table from a signed checkpoint: the
first event at or after the table's oldest remaining one that carries the header
``Tabled-Checkpoint`` proves the hash of the event before it (``tabled_client.checkpoint``),
and the events from the oldest remaining one up to it must chain into that hash; so every
event handed on is proven. A checkpoint that is forged, of another key or of another
chain raises :class:`CheckpointRefused`. Events expire while a follower reads at the edge:
a jump over events no longer held is anchored again from the next checkpoint and recorded
in ``FloorFollower.expired`` (:class:`Expired`); a jump over events still held is a gap.

Why long: anchoring from a checkpoint, re-anchoring after expiry, gap filling and the chain
check share the follower's chains and its consumer (414 lines, under the 500 limit).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
import nats
import nats.errors
import nats.js.errors
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from tabled_client import checkpoint
from tabled_client.chain import GENESIS, Chain, ChainBroken
from tabled_client.checkpoint import CheckpointRefused
from tabled_client.events import Event, decode

STREAM = "TABLES"
PREFIX = "tables"
#: the header with the signed checkpoint of the event before (bridge/store.py)
CHECKPOINT = "Tabled-Checkpoint"


@dataclass(frozen=True, slots=True)
class FloorEvent:
    """One verified event from the floor, typed, with its bytes and where it is in JetStream."""

    event: Event
    journal_id: str
    raw: bytes
    stream_seq: int

    @property
    def table(self) -> str:
        return self.event.table


@dataclass(frozen=True, slots=True)
class Expired:
    """A table's events that retention removed before this follower read them: it had
    handed on ``after`` (journal id, seq) and went on at ``resumed``, proven by the next
    signed checkpoint (docs/floor.md, Retention). Nothing between was handed on."""

    table: str
    after: tuple[str, int]
    resumed: tuple[str, int]


class FloorFollower:
    """Verified events of a floor (or some of its tables) from a durable JetStream consumer.

    ``anchor="genesis"`` checks each table's chain from its seq 1 (a new consumer reads the
    stream from the start); ``anchor="first"`` trusts the first event seen of each table
    and checks every link after it (a consumer resumed after a restart, without ``heads``).
    ``heads`` (``{table: (journal_id, seq, hash)}``, from :attr:`heads`) resumes the check.
    ``keys`` (``{table: PEM public key}``): a table whose oldest event in the stream is past
    seq 1 (retention removed the rest) is verified from a signed checkpoint, read at most
    ``lookahead`` events ahead.
    """

    def __init__(
        self,
        servers: str | list[str],
        *,
        durable: str,
        tables: Iterable[str] | None = None,
        types: Iterable[str] | None = None,
        stream: str = STREAM,
        prefix: str = PREFIX,
        anchor: Literal["genesis", "first"] = "genesis",
        heads: dict[str, tuple[str, int, str]] | None = None,
        batch: int = 64,
        connect: dict[str, Any] | None = None,
        keys: Mapping[str, str | bytes] | None = None,
        lookahead: int = 10_000,
    ) -> None:
        self.servers = [servers] if isinstance(servers, str) else list(servers)
        self.durable = durable
        self.tables = None if tables is None else set(tables)
        self.types = None if types is None else set(types)
        self.stream = stream
        self.prefix = prefix
        self.anchor = anchor
        self.batch = batch
        self.connect_options = connect or {}
        self.keys = None if keys is None else {t: checkpoint.public_key(k) for t, k in keys.items()}
        self.lookahead = lookahead
        self.chains: dict[str, Chain] = {
            t: Chain(t, journal_id=j, seq=s, hash=h) for t, (j, s, h) in (heads or {}).items()
        }
        self.nc: Any = None
        self._sub: Any = None
        #: fetched and not acked yet: given back (nak) on close, so they come again at once
        self._unacked: list[Any] = []
        #: each jump over events that expired before this follower read them, in order
        self.expired: list[Expired] = []
        #: anchored on a checkpoint, nothing checked since: a jump there skips nothing handed on
        self._anchored: set[str] = set()

    @property
    def heads(self) -> dict[str, tuple[str, int, str]]:
        return {
            t: (c.head.journal_id or "", c.head.seq, c.head.hash) for t, c in self.chains.items()
        }

    def _filters(self) -> list[str]:
        """The server's filter: the floor, or each of the tables asked for (several filter
        subjects in one consumer, nats-server 2.10+): the server sends only their events."""
        if self.tables is None:
            return [f"{self.prefix}.>"]
        return [f"{self.prefix}.{t}.>" for t in sorted(self.tables)]

    async def connect(self) -> FloorFollower:
        self.nc = await nats.connect(self.servers, **self.connect_options)
        js = self.nc.jetstream()
        filters = self._filters()
        cfg = ConsumerConfig(
            durable_name=self.durable,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            max_ack_pending=-1,
        )
        if len(filters) == 1:
            cfg.filter_subject = filters[0]
        else:
            cfg.filter_subjects = filters
        self._sub = await js.pull_subscribe(
            filters[0], durable=self.durable, stream=self.stream, config=cfg
        )
        return self

    async def close(self) -> None:
        """Give back what was fetched and not acked (redelivered to the next reader), disconnect."""
        if self.nc is not None:
            for msg in self._unacked:
                await msg.nak()
            self._unacked.clear()
            await self.nc.flush()
            await self.nc.close()
            self.nc = None
            self._sub = None

    async def __aenter__(self) -> FloorFollower:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _chain(self, table: str, journal_id: str, raw: bytes) -> Chain:
        chain = self.chains.get(table)
        seq = msgspec.json.decode(raw)["seq"]
        if chain is None:
            if self.anchor == "first":
                ev = decode(raw)
                chain = Chain(table, journal_id=journal_id, seq=ev.seq - 1, hash=ev.prev)
            elif seq != 1:
                # a durable consumer resumed where an earlier run acked (issue 33: it said
                # only "seq 247 after 0 (expected 1)", the second run of the docs' example)
                raise ChainBroken(
                    f"{table}: the durable consumer {self.durable!r} resumes at seq {seq}, and "
                    f"this follower has no head to check it against (anchor='genesis' starts "
                    f"at seq 1): pass heads= (FloorFollower.heads, kept with your own state "
                    f"after each event) to resume the check, or anchor='first' to trust the "
                    f"first event of each table; a new durable name reads from seq 1"
                )
            else:
                chain = Chain(table, journal_id=journal_id)
            self.chains[table] = chain
        return chain

    def _check(self, table: str, journal_id: str, raw: bytes) -> bool:
        """True for the table's next event; False for one already held (a redelivery)."""
        chain = self._chain(table, journal_id, raw)
        seq = msgspec.json.decode(raw)["seq"]
        if journal_id == chain.head.journal_id and seq <= chain.head.seq:
            return False
        chain.check(raw, journal_id=journal_id)
        self._anchored.discard(table)
        return True

    async def _missing(self, table: str, journal_id: str, raw: bytes, before: int) -> list[Any]:
        """The table's events between its chain's head and ``raw``, read from the stream.

        A durable hands on what a stopped reader was given and never acked only after its
        ack wait, behind newer events; and events left out by ``types`` are acked without
        the loop body, so heads a backend kept there lag behind the acks. Either way the
        next event seen is past the head: the ones between are in the stream, found by
        bisection over stream sequences (the table's first message at or after one only
        moves on) and read in order. Handed on like any other (redelivered later, they are
        held and dropped)."""
        chain = self._chain(table, journal_id, raw)
        seq = msgspec.json.decode(raw)["seq"]
        if journal_id != chain.head.journal_id or seq <= chain.head.seq + 1:
            return []
        js, subject, want = self.nc.jetstream(), f"{self.prefix}.{table}.>", chain.head.seq

        async def first_at(x: int) -> Any:
            try:
                return await js.get_msg(self.stream, seq=x, subject=subject, next=True)
            except nats.js.errors.NotFoundError:
                return None

        def past(m: Any) -> bool:
            h = m.headers or {}
            return h.get("Tabled-Journal") == journal_id and int(h.get("Tabled-Seq", 0)) > want

        lo, hi = 1, before
        while lo < hi:
            mid = (lo + hi) // 2
            m = await first_at(mid)
            if m is None or past(m):
                hi = mid
            else:
                lo = mid + 1
        out = []
        while lo < before:
            m = await first_at(lo)
            if m is None or m.seq >= before:
                break
            out.append(m)
            lo = m.seq + 1
        return out

    async def _held_before(self, table: str, at: int) -> bool:
        """Whether the stream still holds any of ``table``'s messages before stream seq ``at``.
        Retention removes the oldest first and a table's events are stored in seq order: a
        jump at ``at`` with none held before it is expiry; with some, a real gap."""
        js, subject = self.nc.jetstream(), f"{self.prefix}.{table}.>"
        try:
            oldest = await js.get_msg(self.stream, seq=1, subject=subject, next=True)
        except nats.js.errors.NotFoundError:
            return False
        return bool(oldest.seq < at)

    async def _anchor(
        self, table: str, journal_id: str, data: bytes, headers: Any, at: int
    ) -> None:
        """Start ``table``'s chain from a signed checkpoint when its oldest event held is past
        seq 1: the first message from ``data`` (stream seq ``at``) on that carries one proves
        the hash before it, and the events from ``data`` up to it must chain into that hash.
        Events expire while walked (the first one held is at the retention edge): a jump in
        seqs with none of the table held before it starts the walk again after the jump
        (issue 31); the consumer's events before it are then dropped, unproven."""
        first = msgspec.json.decode(data)
        if first["seq"] == 1 or self.keys is None:
            return
        key = self.keys.get(table)
        if key is None:
            raise ChainBroken(
                f"{table}: its oldest event in the stream is seq {first['seq']} (retention "
                f"removed the ones before?) and keys= has no public key for this table"
            )
        js, subject = self.nc.jetstream(), f"{self.prefix}.{table}.>"
        before: list[bytes] = []
        headers, last = headers or {}, first["seq"] - 1
        for _ in range(self.lookahead):
            if headers.get("Tabled-Journal", "") != journal_id:
                break
            ev = msgspec.json.decode(data)
            if ev["seq"] > last + 1 and not await self._held_before(table, at):
                first, before = ev, []  # the ones between expired meanwhile: start again here
            last = ev["seq"]
            signed = headers.get(CHECKPOINT)
            if signed is not None:
                seq = ev["seq"] - 1
                proven = checkpoint.check(signed, key, table=table, journal_id=journal_id, seq=seq)
                chain = Chain(
                    table, journal_id=journal_id, seq=first["seq"] - 1, hash=first["prev"]
                )
                for raw in before:
                    chain.check(raw, journal_id=journal_id)
                if chain.head.seq != seq or chain.head.hash != proven:
                    raise CheckpointRefused(
                        f"{table}: the signed checkpoint says seq {seq} has hash {proven[:16]}…, "
                        f"the stream's chain reaches seq {chain.head.seq} with hash "
                        f"{chain.head.hash[:16]}…: not the events it signed"
                    )
                self._anchored.add(table)
                self.chains[table] = Chain(
                    table, journal_id=journal_id, seq=first["seq"] - 1, hash=first["prev"]
                )
                return
            before.append(data)
            try:
                m = await js.get_msg(self.stream, seq=at + 1, subject=subject, next=True)
            except nats.js.errors.NotFoundError:
                break
            data, headers, at = m.data, m.headers or {}, m.seq
        raise ChainBroken(
            f"{table}: its oldest event in the stream is seq {first['seq']} and no signed "
            f"checkpoint follows it in journal {journal_id} (within {self.lookahead} events): "
            "nothing proves these events came from the table"
        )

    async def _over_expiry(
        self, table: str, journal_id: str, data: bytes, headers: Any, at: int
    ) -> None:
        """The table's next event in hand (``data``, stream seq ``at``) skips past its chain's
        head: if the skipped ones expired before this follower read them (nothing of the
        table is held before ``at``), anchor again from the next signed checkpoint and
        record the jump in :attr:`expired`; else leave it to the chain check to refuse."""
        head = self.chains[table].head
        seq = msgspec.json.decode(data)["seq"]
        if journal_id == head.journal_id and seq <= head.seq + 1:
            return  # the next one, or one already held
        if journal_id != head.journal_id and seq == 1:
            return  # a replaced journal, from its start
        if await self._held_before(table, at):
            return  # a real gap: the chain check raises
        after = (head.journal_id or "", head.seq)
        gone = f"seqs {head.seq + 1}…{seq - 1}" if journal_id == head.journal_id else "events"
        if self.keys is None:
            raise ChainBroken(
                f"{table}: {gone} expired from the stream (retention) before this follower "
                f"read them, after seq {head.seq}: nothing proves seq {seq} on without a signed "
                f"checkpoint; pass keys= to go on from the next one"
            )
        held, fresh = self.chains.pop(table), table in self._anchored
        try:
            await self._anchor(table, journal_id, data, headers, at)  # sets the chain
        except ChainBroken:
            self.chains[table] = held  # heads stay where they were proven
            raise
        if not fresh:  # what it handed on of the table stops at `after`
            self.expired.append(
                Expired(table, after, (journal_id, self.chains[table].head.seq + 1))
            )

    async def events(self, idle: float | None = None) -> AsyncIterator[FloorEvent]:
        """Verified events in each table's seq order; stops after ``idle`` s without any.

        A message is acked when the next one is asked for, that is after the loop body that
        handled it ran: a backend that dies mid-event gets it again (and drops it by seq if
        it was in fact handled: keep :attr:`heads` with your own state).
        """
        if self._sub is None:
            await self.connect()
        waited = 0.0
        while True:
            wait = 1.0 if idle is None else max(0.05, min(1.0, idle - waited))
            try:
                msgs = await self._sub.fetch(self.batch, timeout=wait)
            except (TimeoutError, nats.errors.TimeoutError):
                waited += wait
                if idle is not None and waited >= idle:
                    return
                continue
            waited = 0.0
            self._unacked = list(msgs)
            while self._unacked:
                msg = self._unacked[0]
                table = msg.subject.split(".", 2)[1]
                hdr = msg.headers or {}
                jid = hdr.get("Tabled-Journal", "")
                if self.tables is None or table in self.tables:
                    here = msg.metadata.sequence.stream
                    fresh = table not in self.chains
                    if fresh:
                        await self._anchor(table, jid, msg.data, hdr, here)  # raises: not acked
                    missing = await self._missing(table, jid, msg.data, here)
                    if not fresh:
                        nxt = missing[0] if missing else msg
                        nat = nxt.seq if missing else here
                        await self._over_expiry(table, jid, nxt.data, nxt.headers, nat)
                    for m in missing:
                        if self._check(table, jid, m.data):
                            ev = decode(m.data)
                            if self.types is None or ev.type in self.types:
                                yield FloorEvent(ev, jid, m.data, m.seq)
                    if self._check(table, jid, msg.data):  # raises ChainBroken: not acked
                        ev = decode(msg.data)
                        if self.types is None or ev.type in self.types:
                            yield FloorEvent(ev, jid, msg.data, here)
                await msg.ack()
                self._unacked.pop(0)


__all__ = [
    "GENESIS",
    "ChainBroken",
    "CheckpointRefused",
    "Expired",
    "FloorEvent",
    "FloorFollower",
]
