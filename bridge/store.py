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
import re
from dataclasses import dataclass, replace
from typing import Any

import nats.js.errors
import structlog
from tabled_client.chain import GENESIS
from tabled_client.table import Received

from bridge.natslink import RETRY, store_full

log = structlog.get_logger("tabled.bridge")

#: JetStream's error code for a failed expected-sequence check
WRONG_LAST_SEQUENCE = 10071
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

    def __init__(self, js: Any, stream: str, prefix: str) -> None:
        self.js = js
        self.stream = stream
        self.prefix = prefix

    def subjects(self, table: str) -> str:
        return f"{self.prefix}.{table}.>"

    async def head(self, table: str) -> Head:
        """Where JetStream stands for ``table``: its last stored event."""
        try:
            m = await self.js.get_last_msg(self.stream, self.subjects(table))
        except nats.js.errors.NotFoundError:
            return NOTHING
        return _head(m)

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
        """Store ``got`` after ``link.head``; return the new head. Retried until it is stored
        or refused for good (:class:`Ahead`, :class:`Diverged`)."""
        jid = got.journal_id or ""
        subject = f"{self.prefix}.{got.table}.{got.type}"
        delay = 0.1
        checkpoint = _checkpoint_for(getattr(link, "checkpoints", None), got)
        while True:
            headers = {
                "Nats-Msg-Id": f"{got.table}:{jid}:{got.seq}",
                "Nats-Expected-Last-Subject-Sequence": str(link.head.stream_seq),
                "Nats-Expected-Last-Subject-Sequence-Subject": self.subjects(got.table),
                "Tabled-Journal": jid,
                "Tabled-Seq": str(got.seq),
                "Tabled-Hash": got.hash,
                "Tabled-Prev": got.prev,
            }
            if checkpoint is not None:
                headers[CHECKPOINT] = checkpoint
            try:
                ack = await self.js.publish(subject, got.raw, headers=headers)
            except RETRY as e:
                _failed(link, got, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            except nats.js.errors.BadRequestError as e:
                if e.err_code != WRONG_LAST_SEQUENCE:
                    raise
                m = re.search(r"(\d+)\s*$", e.description or "")
                now = await (self.at(got.table, int(m[1])) if m else self.head(got.table))
                if (now.journal_id, now.seq) == (got.journal_id, got.seq):
                    if now.hash != got.hash:
                        raise Diverged(now, got) from None
                    _stored(link, got)
                    link.duplicates += 1  # another bridge's, or our own lost ack's
                    return now
                if (now.journal_id, now.seq, now.hash) == (got.journal_id, got.seq - 1, got.prev):
                    link.head = now  # only the expected sequence was stale
                    continue
                if now.stream_seq < link.head.stream_seq and (
                    now.journal_id is None
                    or (now.journal_id == got.journal_id and now.seq < got.seq)
                ):
                    # what we knew as the table's last message is gone (max_age, a purge):
                    # the table's place in its journal is ours, the stream's sequence theirs
                    link.head = replace(link.head, stream_seq=now.stream_seq)
                    continue
                raise Ahead(now) from None  # further on, or another journal: from there
            _stored(link, got)
            if ack.duplicate:  # an exact re-send inside the window, if the server checks ids first
                link.duplicates += 1
            else:
                link.published += 1
            return Head(got.journal_id, got.seq, got.hash, ack.seq)


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
