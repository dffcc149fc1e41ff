"""One table's events into JetStream, each publish conditional on what the table last stored.

Every publish says which message it expects to be the table's last in the stream: the
header ``Nats-Expected-Last-Subject-Sequence`` with the stream sequence of the last
message on ``<prefix>.<table>.>`` (``-Subject`` names that wildcard; nats-server 2.11+).
So a publish from a bridge that is not up to date (a second bridge on the same tables, one
stalled past any duplicate window, a retry whose first try was stored after all) is
refused by the server, atomically, instead of being stored twice or deduplicated by time
(issue 31). No ``Nats-Expected-Stream``: a stream that sources this one (a headquarters)
would refuse every message carrying it. The message id stays (an exact re-send inside the
window is still dropped as a duplicate).

A refusal ("wrong last sequence: N") names the stream sequence now last for the table;
the message there (one literal lookup) says what happened:

- it is this very event (same journal, seq and hash): stored already, by another bridge or
  by this one's earlier try whose ack was lost: counted as a duplicate, go on;
- it is the event before this one: only the expected sequence was stale: try again;
- it is further on in the same journal: another bridge stored past this one: the follower
  skips forward to it (:class:`Ahead`);
- the same seq with another hash: the table's journal went backwards (restored from an
  older copy) or forked: :class:`Diverged`, never stored over;
- anything else (another journal, nothing): the follower starts again from JetStream's head.

Signed checkpoints ride on the events: a table's heartbeat may carry its journal head
signed with its Ed25519 key (``[security] checkpoint_key``); the bridge keeps it and puts
it, as the header ``Tabled-Checkpoint`` (its JSON), on the event after the one it signs
(the event whose ``prev`` is the signed hash). So once retention removed a table's oldest
events, a backend that starts later finds, on a remaining event, the signed proof of that
event's ``prev`` and verifies the table from there instead of from genesis
(``tabled_client.floor``); the header travels with the event into a headquarters stream.
The bridge holds no key: it carries what the table signed, checking only that it names
this table, journal and chain; the backend checks the signature.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from dataclasses import dataclass, replace
from typing import Any

import nats.errors
import nats.js.errors
import structlog
from tabled_client.chain import GENESIS
from tabled_client.table import Received

from bridge.natslink import RETRY, store_full
from bridge.publish import BATCH_MAX, BATCH_MIN, Message, Publisher

log = structlog.get_logger("tabled.bridge")

#: the longest wait between tries of a publish NATS did not answer: a stream whose leader
#: died answers again once a new one is elected (2-3 s), and each table's next try comes
#: at most this long after (it was 2 s: storing again took 5.2-7.2 s; issue 31's goal 5)
RETRY_MAX = 0.5
#: seconds a publish retried after a failure waits for its answer (at most the configured
#: publish_timeout): a stream whose leader died answers again once its followers elected
#: another (nats-server's Raft: 4-9 s), and a retry waiting the whole publish_timeout
#: (5 s) then stored ~4 s after the election (tests/test_floor_cluster.py). A late answer
#: is harmless: the retry is conditional, so a publish stored after all is found stored.
RETRY_TIMEOUT = 1.0
#: JetStream's error code for a failed expected-sequence check
WRONG_LAST_SEQUENCE = 10071
#: an atomic batch carried a header the server does not take in one (ADR-50: 2.12.0
#: refused ``Nats-Msg-Id``; later releases take it)
BATCH_UNSUPPORTED_HEADER = 10177
#: the header with the signed checkpoint of the event before this one (its ``prev``)
CHECKPOINT = "Tabled-Checkpoint"
#: checkpoints kept per table for events not stored yet (one a heartbeat; a table far
#: behind keeps the newest: the oldest are dropped, the chain needs only some)
KEPT_CHECKPOINTS = 16


def keep_checkpoint(kept: dict[int, bytes], table: str, data: dict[str, Any]) -> None:
    """Keep a heartbeat's signed checkpoint (``data["checkpoint"]``) for the event after it."""
    cp = data.get("checkpoint")
    if not isinstance(cp, dict) or cp.get("table") != table:
        return
    seq = cp.get("seq")
    if not isinstance(seq, int) or seq < 1 or seq in kept:
        return
    kept[seq] = json.dumps(cp, separators=(",", ":"), sort_keys=True).encode()
    while len(kept) > KEPT_CHECKPOINTS:
        del kept[min(kept)]


def _checkpoint_for(kept: dict[int, bytes] | None, got: Received) -> str | None:
    """The kept checkpoint that signs ``got``'s ``prev`` (journal, seq and hash), if any;
    older ones are dropped (their event is stored)."""
    if not kept:
        return None
    for s in [s for s in kept if s < got.seq - 1]:
        del kept[s]
    raw = kept.get(got.seq - 1)
    if raw is None:
        return None
    cp = json.loads(raw)
    if cp.get("journal_id") != (got.journal_id or "") or cp.get("hash") != got.prev:
        return None  # another journal, or not this chain: not carried
    return raw.decode()


@dataclass(frozen=True, slots=True)
class Head:
    """A table's last event in the stream: its journal, seq and hash, and its stream seq."""

    journal_id: str | None
    seq: int
    hash: str
    #: the message's sequence in the stream (0: the table has nothing stored)
    stream_seq: int


NOTHING = Head(None, 0, GENESIS, 0)


class Ahead(Exception):
    """JetStream holds more of this table than the follower has: go on from ``head``."""

    def __init__(self, head: Head) -> None:
        super().__init__(f"JetStream holds up to seq {head.seq} of journal {head.journal_id}")
        self.head = head


class Diverged(Exception):
    """JetStream holds another event under this journal and seq: the journal went back."""

    def __init__(self, head: Head, got: Received) -> None:
        super().__init__(
            f"seq {got.seq} of journal {got.journal_id} is {got.hash[:16]}… at the table but "
            f"{head.hash[:16]}… in JetStream (stream seq {head.stream_seq}): the table's "
            "journal went back (restored from an older copy?)"
        )
        self.head = head
        self.got = got


def _head(m: Any) -> Head:
    h = m.headers or {}
    return Head(h["Tabled-Journal"] or None, int(h["Tabled-Seq"]), h["Tabled-Hash"], m.seq)


class Store:
    """Publishing for every table of one stream (the state is each table's :class:`Head`)."""

    def __init__(self, js: Any, stream: str, prefix: str, publisher: Publisher) -> None:
        self.js = js
        self.stream = stream
        self.prefix = prefix
        self.publisher = publisher
        #: a backlog of fewer events goes one at a time (bridge/publish.py, BATCH_MIN)
        self.batch_min = BATCH_MIN

    def subjects(self, table: str) -> str:
        return f"{self.prefix}.{table}.>"

    async def head(self, table: str) -> Head:
        """Where JetStream stands for ``table``: its last stored event.

        A direct get of the last message on the table's subjects (the stream's
        ``allow_direct``): the answer is the message itself with its headers, no JSON or
        base64 to unpack, so 5,000 tables' heads at start cost a round trip each on one
        inbox and do not grow with the stream. Any replica may answer, so in a cluster a
        head may be a moment old; the first publish's expected sequence then says so and
        the refusal is read as usual (:meth:`put_many`)."""
        m = await self.publisher.request(f"$JS.API.DIRECT.GET.{self.stream}.{self.subjects(table)}")
        h = m.headers or {}
        status = h.get("Status")
        if status == "404":
            return NOTHING
        if status:
            raise nats.js.errors.APIError(
                code=int(status), description=h.get("Description", "") or "direct get failed"
            )
        return Head(
            h["Tabled-Journal"] or None,
            int(h["Tabled-Seq"]),
            h["Tabled-Hash"],
            int(h["Nats-Sequence"]),
        )

    async def at(self, table: str, stream_seq: int) -> Head:
        """The table's event at ``stream_seq`` (0: nothing), by its literal sequence."""
        if stream_seq == 0:
            return NOTHING
        try:
            m = await self.js.get_msg(self.stream, seq=stream_seq)
        except nats.js.errors.NotFoundError:
            return await self.head(table)
        if not m.subject.startswith(f"{self.prefix}.{table}."):
            return await self.head(table)
        return _head(m)

    async def next_of(self, table: str, stream_seq: int) -> Head | None:
        """The table's first event at or after ``stream_seq`` (None: none)."""
        try:
            m = await self.js.get_msg(
                self.stream, seq=stream_seq, subject=self.subjects(table), next=True
            )
        except nats.js.errors.NotFoundError:
            return None
        return _head(m)

    async def put(self, link: Any, got: Received) -> Head:
        """Store ``got`` after ``link.head``; return the new head (:meth:`put_many`)."""
        return await self.put_many(link, [got])

    def _message(self, got: Received, checkpoint: str | None) -> Message:
        """The event as published: its subject, bytes, and its own header lines (an
        attempt adds the expected sequence and a batch's lines: :meth:`put_many`).

        The lines are formatted at once, not through a dict (the catch-up's per-event
        cost); a value with a line break (a table's journal id) is refused, as
        :func:`~bridge.publish.header_lines` refuses it."""
        jid = got.journal_id or ""
        lines = (
            f"Nats-Msg-Id: {got.table}:{jid}:{got.seq}\r\nTabled-Journal: {jid}\r\n"
            f"Tabled-Seq: {got.seq}\r\nTabled-Hash: {got.hash}\r\nTabled-Prev: {got.prev}\r\n"
        )
        n = 5
        if checkpoint is not None:
            lines += f"{CHECKPOINT}: {checkpoint}\r\n"
            n = 6
        if lines.count("\n") != n or lines.count("\r") != n:
            raise nats.errors.BadHeaderError(f"{got.table}: a line break in a header: {lines!r}")
        return f"{self.prefix}.{got.table}.{got.type}", got.raw, lines.encode()

    async def put_many(self, link: Any, batch: list[Received]) -> Head:
        """Store ``batch`` (one table's next events, in seq order) after ``link.head``;
        return the new head. Retried until every event is stored or refused for good
        (:class:`Ahead`, :class:`Diverged`).

        More than one event go as one atomic batch whose first message carries the
        expected sequence: the server stores all of them or none, so the batch is as
        conditional as a single publish, and a table's backlog costs one round trip per
        batch instead of one per event. A refusal is read as for one event, and a batch
        another bridge stored in part goes on after that part."""
        batch = list(batch)
        kept = getattr(link, "checkpoints", None)
        msgs = [self._message(got, _checkpoint_for(kept, got)) for got in batch]
        delay = 0.1
        single = False
        wait: float | None = None  # the configured timeout; RETRY_TIMEOUT after a failure
        while batch:
            # a backlog goes as batches, each waiting for a slot (held for its round trip);
            # fewer events go one at a time. Going one at a time when the slots were taken
            # cost a floor's catch-up a round trip and ~15 µs of CPU more per event
            n = 1 if single or len(batch) < self.batch_min else min(len(batch), BATCH_MAX)
            single = False  # one event alone after a batch the server would not take
            first = batch[0]
            expect = (
                f"Nats-Expected-Last-Subject-Sequence: {link.head.stream_seq}\r\n"
                f"Nats-Expected-Last-Subject-Sequence-Subject: {self.subjects(first.table)}\r\n"
            ).encode()
            if n == 1:
                out = [(msgs[0][0], msgs[0][1], msgs[0][2] + expect)]
            else:
                bid = f"Nats-Batch-Id: {self.publisher.batch_id()}\r\n".encode()
                out = [
                    (
                        subject,
                        payload,
                        b"%s%sNats-Batch-Sequence: %d\r\n%s%s"
                        % (
                            lines,
                            bid,
                            i,
                            expect if i == 1 else b"",
                            b"Nats-Batch-Commit: 1\r\n" if i == n else b"",
                        ),
                    )
                    for i, (subject, payload, lines) in enumerate(msgs[:n], 1)
                ]
            try:
                if n == 1:
                    ack = await self.publisher.publish(out, wait)
                else:
                    async with self.publisher.slots:
                        ack = await self.publisher.publish(out, wait)
            except RETRY as e:
                _failed(link, first, e)
                # a timeout is the publisher's future's exception: its traceback holds this
                # frame (the batch) and the future holds it, a cycle only the collector ends
                e.__traceback__ = None
                wait = min(RETRY_TIMEOUT, self.publisher.timeout)
                await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, RETRY_MAX)
                continue
            except nats.js.errors.APIError as e:
                if e.err_code != WRONG_LAST_SEQUENCE:
                    if n > 1:  # too many batches open, or one the server will not take
                        if e.err_code == BATCH_UNSUPPORTED_HEADER and self.batch_min <= BATCH_MAX:
                            # nats-server 2.12.0 takes no message id in a batch: every
                            # batch would be refused, a round trip lost each time
                            self.batch_min = BATCH_MAX + 1
                            log.warning(
                                "nats-server refuses message ids in atomic batches (2.12.0?): "
                                "backlogs go one event at a time",
                                error=str(e),
                            )
                        single = True
                        continue
                    raise
                m = re.search(r"(\d+)\s*$", e.description or "")
                now = await (self.at(first.table, int(m[1])) if m else self.head(first.table))
                if now.journal_id == first.journal_id and first.seq <= now.seq <= batch[-1].seq:
                    k = now.seq - first.seq
                    if now.hash != batch[k].hash:
                        raise Diverged(now, batch[k]) from None
                    # stored already, up to this one: another bridge's, or our lost ack's
                    _stored(link, batch[k])
                    link.duplicates += 1
                    link.skipped += k
                    link.head = now
                    del batch[: k + 1], msgs[: k + 1]
                    continue
                if (now.journal_id, now.seq, now.hash) == (
                    first.journal_id,
                    first.seq - 1,
                    first.prev,
                ):
                    link.head = now  # only the expected sequence was stale
                    continue
                if now.stream_seq < link.head.stream_seq and (
                    now.journal_id is None
                    or (now.journal_id == first.journal_id and now.seq < first.seq)
                ):
                    # what we knew as the table's last message is gone (max_age, a purge):
                    # the table's place in its journal is ours, the stream's sequence theirs
                    link.head = replace(link.head, stream_seq=now.stream_seq)
                    continue
                raise Ahead(now) from None  # further on, or another journal: from there
            last = batch[n - 1]
            _stored(link, last)
            if ack.duplicate:  # an exact re-send inside the window, if the server checks ids first
                link.duplicates += n
            else:
                link.published += n
                if n > 1:
                    link.batches = getattr(link, "batches", 0) + 1
            link.head = Head(last.journal_id, last.seq, last.hash, ack.seq)
            del batch[:n], msgs[:n]
        return link.head


def _failed(link: Any, got: Received, e: BaseException) -> None:
    link.publish_errors += 1
    link.failing += 1
    link.last_error = f"publish: {type(e).__name__} {e}".strip()
    if link.failing == 1:
        full = store_full(e)
        level = "error" if full else "warning"
        event = "store full" if full else "publish failing"
        link.health.note(level, event, error=link.last_error)
        getattr(log, level)(event, table=got.table, error=link.last_error)


def _stored(link: Any, got: Received) -> None:
    if link.failing:
        log.info("publish stored again", table=got.table, after_errors=link.failing)
        link.health.note("info", "publish stored again", after_errors=link.failing)
        link.failing = 0
    link.last_event_time = got.time
