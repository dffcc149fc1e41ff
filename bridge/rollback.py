"""A table whose journal went back: seen at once, quarantined, its new events kept aside.

A journal restored from an older copy keeps its journal id and starts again below the
seqs JetStream already holds, and its new events take those seqs with other hashes.
Followed as usual, the bridge dropped them as "held" until the chain broke for good
(issue 31). Now the heartbeat path checks each heartbeat of the journal JetStream holds
against the table's stored head:

- the same seq with another hash: rolled back, at once;
- a lower seq: the table is asked for the stored head's seq by replay (a heartbeat read
  late could name a seq stored since); if it has not got it, or has another event under
  it, rolled back.

A rolled-back table is **quarantined**: nothing more of it goes to the table's subjects
(backends see its chain stop, never fork) and an error is logged. The bridge finds where
the table's journal and JetStream part (the fork: the last seq both hold with the same
hash, by bisection: the table's replay on one side, lookups by stream sequence on the
other, a few dozen round trips), and every event of the table after it is **kept
aside**, chain-checked, in the stream ``<stream>_QUARANTINE``,
subjects ``<prefix>-quarantine.<table>.<type>``, message id
``<table>:<journal id>:<seq>:<hash prefix>``: nothing the table sends afterwards is lost.
The operator decides (docs/floor.md, A table rolled back): a new journal on the table
(its heartbeat's new journal id lifts the quarantine, and the bridge bridges the new
journal from seq 1), or the right journal put back and the bridge restarted.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nats.errors
import nats.js.errors
import structlog
from nats.js.api import StorageType, StreamConfig
from tabled_client.chain import GENESIS
from tabled_client.table import Received, ReplayFailed, TableFollower

log = structlog.get_logger("tabled.bridge")


def quarantine_names(stream: str, prefix: str) -> tuple[str, str]:
    """The quarantine stream's name and its subjects' prefix."""
    return f"{stream}_QUARANTINE", f"{prefix}-quarantine"


class Rollbacks:
    """The bridge's watch on journals that go back, and its quarantines."""

    def __init__(self, bridge: Any) -> None:
        self.bridge = bridge
        #: probes in flight (kept so they are not collected, cancelled at the end)
        self.probes: set[asyncio.Task[None]] = set()

    def watch(self, link: Any, data: dict[str, Any]) -> None:
        """Each heartbeat against the table's head in JetStream: did its journal go back?"""
        jid = data.get("journal_id")
        if link.rolled is not None:
            if jid and jid != link.rolled:  # the operator's decision: a new journal
                log.warning("table quarantine lifted: a new journal", table=link.table.id)
                link.health.note("warning", "quarantine lifted: a new journal", journal_id=jid)
                link.rolled, link.state = None, "starting"
                self.bridge.restart(link, self.bridge.follow(link))
            return
        h = link.head
        if h.journal_id is None or jid != h.journal_id or link.probing:
            return
        seq, last_hash = int(data["last_seq"]), str(data.get("last_hash", ""))
        if seq == h.seq and last_hash and last_hash != h.hash:
            self.rolled_back(
                link,
                f"the table's seq {seq} is {last_hash[:16]}…, JetStream holds "
                f"{h.hash[:16]}… under journal {jid}: its journal went back",
            )
        elif seq < h.seq:
            link.probing = True
            task = asyncio.create_task(self._probe(link))
            self.probes.add(task)
            task.add_done_callback(self.probes.discard)

    async def _probe(self, link: Any) -> None:
        h = link.head
        try:
            f = self.bridge.follower(link.table, h.journal_id, h.seq, h.hash)
            why = await went_back(f, h.journal_id, h.seq, h.hash)
            if why and link.rolled is None and link.head.journal_id == h.journal_id:
                self.rolled_back(link, why)
        finally:
            link.probing = False

    async def went_back(self, link: Any) -> bool:
        """After a chain break: did the table's journal go back under what JetStream holds?
        (A table restored a few events back deals past them before a heartbeat shows it:
        its next event then breaks the chain.) If so it is quarantined, not chain-broken."""
        h = link.head
        if h.journal_id is None:
            return False
        f = self.bridge.follower(link.table, h.journal_id, h.seq, h.hash)
        why = await went_back(f, h.journal_id, h.seq, h.hash)
        if why:
            self.rolled_back(link, why)
        return why is not None

    def rolled_back(self, link: Any, why: str) -> None:
        """Quarantine the table: stop bridging it, keep its events from the fork aside."""
        link.state, link.last_error, link.rolled = "rolled-back", why, link.head.journal_id
        link.health.change(
            "rolled-back",
            "error",
            "table rolled back: quarantined, its new events kept aside",
            error=why,
        )
        self.bridge.restart(link, self._quarantine(link))

    async def _quarantine(self, link: Any) -> None:
        b, h, n = self.bridge, link.head, self.bridge.cfg.nats
        probe = b.follower(link.table, h.journal_id, h.seq, h.hash)
        delay = 0.5
        while True:
            try:
                seq, hash = await fork(probe, b.store, link.table.id, h)
                break
            except (TimeoutError, ReplayFailed, nats.errors.Error) as e:
                link.last_error = f"finding where the journal went back: {e}"
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
        log.error(
            "rolled-back table: its events after the fork are kept aside",
            table=link.table.id,
            fork_seq=seq,
            stored_seq=h.seq,
            stream=quarantine_names(n.stream, n.prefix)[0],
        )
        link.fork_seq = seq
        f = b.follower(link.table, h.journal_id, seq, hash)
        await keep_aside(b.js, f, link, n.stream, n.prefix, n.replicas)


async def went_back(f: TableFollower, journal_id: str | None, seq: int, hash: str) -> str | None:
    """Why the table's journal no longer holds ``seq`` with ``hash`` (stored in JetStream),
    or None when it does (or the table did not answer: asked again at a later heartbeat)."""
    try:
        frames, end = await f.fetch(seq, seq)
    except Exception:
        return None
    if end.get("journal_id") not in (None, journal_id):
        return None  # another journal now: a journal change, not a rollback
    for raw in frames:
        ev = json.loads(raw)
        if ev.get("seq") == seq:
            if ev.get("hash") == hash:
                return None
            return (
                f"the table's seq {seq} is {str(ev.get('hash'))[:16]}…, JetStream holds "
                f"{hash[:16]}… under journal {journal_id}: its journal went back"
            )
    last = int(end.get("last_seq", seq))
    if last < seq:
        return (
            f"the table's journal {journal_id} ends at seq {last}, JetStream holds it up to "
            f"seq {seq}: its journal went back (restored from an older copy?)"
        )
    return None


async def _table_hash(f: TableFollower, seq: int) -> tuple[str | None, int]:
    """The table's hash at ``seq`` now (None: it has none), and its last seq."""
    frames, end = await f.fetch(seq, seq)
    for raw in frames:
        ev = json.loads(raw)
        if ev.get("seq") == seq:
            return str(ev["hash"]), int(end.get("last_seq", seq))
    return None, int(end.get("last_seq", 0))


async def _stored_hash(store: Any, table: str, head: Any, seq: int) -> str | None:
    """JetStream's hash for the table's ``seq`` of ``head``'s journal, by bisection over
    stream sequences: the table's first message at or after a stream seq only moves on."""
    lo, hi = 1, head.stream_seq
    while lo < hi:
        mid = (lo + hi) // 2
        m = await store.next_of(table, mid)
        if m is None or (m.journal_id == head.journal_id and m.seq >= seq):
            hi = mid
        else:
            lo = mid + 1
    m = await store.next_of(table, lo)
    if m is not None and m.journal_id == head.journal_id and m.seq == seq:
        return m.hash
    return None


async def fork(f: TableFollower, store: Any, table: str, head: Any) -> tuple[int, str]:
    """The last seq the table's journal and JetStream both hold with the same hash (0:
    none), and that hash: every event of the table after it is the table's alone."""
    _, last = await _table_hash(f, 1)
    lo, hi, at = 0, min(last, head.seq), GENESIS
    while lo < hi:
        mid = (lo + hi + 1) // 2
        mine, _ = await _table_hash(f, mid)
        if mine is not None and mine == await _stored_hash(store, table, head, mid):
            lo, at = mid, mine
        else:
            hi = mid - 1
    if lo and at == GENESIS:
        at, _ = await _table_hash(f, lo)
    return lo, at or GENESIS


async def ensure_stream(js: Any, stream: str, prefix: str, replicas: int) -> None:
    name, subjects = quarantine_names(stream, prefix)
    try:
        await js.stream_info(name)
    except nats.js.errors.NotFoundError:
        await js.add_stream(
            StreamConfig(
                name=name,
                subjects=[f"{subjects}.>"],
                storage=StorageType.FILE,
                num_replicas=replicas,
            )
        )
        log.info("stream created", stream=name, subjects=[f"{subjects}.>"])


async def keep_aside(
    js: Any, f: TableFollower, link: Any, stream: str, prefix: str, replicas: int
) -> None:
    """Every event the follower gets, into the quarantine stream, until cancelled."""
    await ensure_stream(js, stream, prefix, replicas)
    name, subjects = quarantine_names(stream, prefix)
    try:
        async for got in f.received():
            await _put(js, name, subjects, got)
            link.quarantined += 1
    finally:
        f.close()


async def _put(js: Any, name: str, subjects: str, got: Received) -> None:
    jid = got.journal_id or ""
    headers = {
        "Nats-Msg-Id": f"{got.table}:{jid}:{got.seq}:{got.hash[:16]}",
        "Tabled-Journal": jid,
        "Tabled-Seq": str(got.seq),
        "Tabled-Hash": got.hash,
        "Tabled-Prev": got.prev,
    }
    delay = 0.1
    while True:
        try:
            await js.publish(f"{subjects}.{got.table}.{got.type}", got.raw, headers=headers)
            return
        except (TimeoutError, nats.errors.Error) as e:
            log.warning("quarantine publish failing", table=got.table, error=str(e))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)
