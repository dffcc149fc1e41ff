"""A backend reading at the retention edge (issue 31): expiry while it reads is not forgery.

With ``max_age`` the server removes a stream's oldest messages while a new backend reads
them: its walk to a table's first signed checkpoint, or its consumer's next delivery, can
jump from a table's seq 11 to 15 because 12…14 expired between two reads. That is expiry
(nothing of the table is held before the jump any more), not a forged checkpoint or a
broken chain: the follower anchors again from the next checkpoint after the jump and hands
on nothing unproven. A jump while the events before it are still held (messages removed
from the middle, which retention never does) stays an error.

Deterministic: the events are published into a real nats-server stream, and the oldest are
purged (``purge_stream(seq=…)``: everything before a sequence, as expiry removes them) at a
known point of the read, from inside the loop body; no timing.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import nats
import pytest
import zmq.asyncio
from tabled_client.chain import ChainBroken
from tabled_client.floor import Expired, FloorFollower

from bench.floor.loadgen import FakeTable
from bench.floor.natsd import NatsServer, available
from daemon.security.checkpoints import Checkpointer
from tests.test_floor_retention import _keypair, fresh_stream

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = NatsServer(tmp_path_factory.mktemp("nats"))
    s.start()
    yield s
    s.stop()


@pytest.fixture
def ctx():
    c = zmq.asyncio.Context()
    yield c
    c.destroy(linger=0)


def _dealt(ctx: zmq.asyncio.Context, name: str, key: Path, n: int) -> FakeTable:
    t = FakeTable(ctx, name, random.Random(name), Checkpointer.load(key))
    t.cut = True  # deals into its journal only
    for _ in range(n):
        t.deal()
    return t


async def _publish(url: str, events: list[tuple[FakeTable, int]], signed: set[int]) -> dict:
    """Each (table, seq) into a fresh stream as the bridge stores it, the table's signed
    checkpoint of the event before on the seqs in ``signed``; their stream sequences."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        await fresh_stream(js)
        at = {}
        for t, seq in events:
            ev = json.loads(t.journal[seq - 1])
            headers = {
                "Nats-Msg-Id": f"{t.table}:{t.journal_id}:{seq}",
                "Tabled-Journal": t.journal_id,
                "Tabled-Seq": str(seq),
                "Tabled-Hash": ev["hash"],
                "Tabled-Prev": ev["prev"],
            }
            if seq in signed and seq > 1:
                cp = t.checkpointer(t.table, t.journal_id, seq - 1, ev["prev"])  # type: ignore[misc]
                headers["Tabled-Checkpoint"] = json.dumps(cp)
            ack = await js.publish(
                f"tables.{t.table}.card.dealt", t.journal[seq - 1], headers=headers
            )
            at[(t.table, seq)] = ack.seq
        return at
    finally:
        await nc.close()


async def _follow(url: str, hooks: dict[tuple[str, int], Any], **kw) -> tuple[dict, list]:
    """Each table's seqs as a new follower hands them on; when it hands on one of ``hooks``
    (table, seq), that hook(js) runs before it reads on. Also what it reports expired."""
    seqs: dict[str, list[int]] = {}
    nc = await nats.connect(url)
    try:
        async with FloorFollower(url, durable="edge", **kw) as f:
            async for e in f.events(idle=1):
                seqs.setdefault(e.table, []).append(e.event.seq)
                hook = hooks.get((e.table, e.event.seq))
                if hook is not None:
                    await hook(nc.jetstream())
            return seqs, f.expired
    finally:
        await nc.close()


def test_expiry_during_the_walk_to_a_checkpoint_anchors_again_from_the_next_one(
    tmp_path, server, ctx
):
    """The flake of issue 31: the consumer delivered y's oldest event (seq 11), then 11…14
    expired before the walk read on, so the walk went 11 → 15, and 15 carries the checkpoint
    of 14: refused as "not the events it signed" before."""
    key, pub = _keypair(tmp_path, "tables")
    x, y = _dealt(ctx, "fg-x", key, 1), _dealt(ctx, "fg-y", key, 30)
    at = asyncio.run(
        _publish(server.url, [(x, 1)] + [(y, s) for s in range(11, 31)], signed={15, 25})
    )

    async def expire(js: Any) -> None:  # while x's seq 1 is handed on, y's 11 is fetched
        await js.purge_stream("TABLES", seq=at[("fg-y", 15)])

    keys = {"fg-x": pub, "fg-y": pub}
    seqs, expired = asyncio.run(_follow(server.url, {("fg-x", 1): expire}, keys=keys))
    assert seqs == {"fg-x": [1], "fg-y": list(range(15, 31))}  # from the next checkpoint on
    assert expired == []  # nothing of fg-y had been handed on: it just starts later


def test_expiry_between_deliveries_anchors_again_from_the_next_checkpoint(tmp_path, server, ctx):
    """y is followed from a checkpoint (11…16 handed on), then 17…19 expire before the
    consumer delivers them: it delivers 20. The follower anchors again from the checkpoint
    carried by 22, hands on 20… proven, and reports the jump."""
    key, pub = _keypair(tmp_path, "tables")
    y = _dealt(ctx, "fg-y", key, 30)
    at = asyncio.run(_publish(server.url, [(y, s) for s in range(11, 31)], signed={15, 22, 27}))

    async def expire(js: Any) -> None:
        await js.purge_stream("TABLES", seq=at[("fg-y", 20)])

    seqs, expired = asyncio.run(
        _follow(server.url, {("fg-y", 16): expire}, keys={"fg-y": pub}, batch=1)
    )
    assert seqs == {"fg-y": list(range(11, 17)) + list(range(20, 31))}
    assert expired == [Expired("fg-y", (y.journal_id, 16), (y.journal_id, 20))]


def test_expiry_right_after_an_anchor_is_no_loss_to_report(tmp_path, server, ctx):
    """y anchored (from 13: 11, 12 expired during the walk) and nothing of it handed on
    yet when 13…19 expire too: it starts at 20, and no jump is reported (none was lost)."""
    key, pub = _keypair(tmp_path, "tables")
    x, y = _dealt(ctx, "fg-x", key, 2), _dealt(ctx, "fg-y", key, 30)
    order = [(x, 1), (y, 11), (x, 2)] + [(y, s) for s in range(12, 31)]
    at = asyncio.run(_publish(server.url, order, signed={13, 22}))

    def purge(before: tuple[str, int]) -> Any:
        async def hook(js: Any) -> None:
            await js.purge_stream("TABLES", seq=at[before])

        return hook

    hooks = {("fg-x", 1): purge(("fg-y", 13)), ("fg-x", 2): purge(("fg-y", 20))}
    keys = {"fg-x": pub, "fg-y": pub}
    seqs, expired = asyncio.run(_follow(server.url, hooks, keys=keys, batch=3))
    assert seqs == {"fg-x": [1, 2], "fg-y": list(range(20, 31))}
    assert expired == []


def test_expiry_between_deliveries_without_keys_says_what_expired(tmp_path, server, ctx):
    """From genesis without ``keys=``: nothing can prove the events after the jump."""
    key, _pub = _keypair(tmp_path, "tables")
    y = _dealt(ctx, "fg-y", key, 20)
    at = asyncio.run(_publish(server.url, [(y, s) for s in range(1, 21)], signed={15}))

    async def expire(js: Any) -> None:
        await js.purge_stream("TABLES", seq=at[("fg-y", 9)])

    with pytest.raises(ChainBroken, match=r"fg-y: seqs 6…8 expired .* pass keys="):
        asyncio.run(_follow(server.url, {("fg-y", 5): expire}, batch=1))


@pytest.mark.parametrize(
    ("gone", "refusal"),
    [
        ((12, 13, 14), "the stream's chain reaches seq 11"),  # in the walk
        ((17, 18, 19), "seq 20 after 16"),  # in delivery
    ],
)
def test_a_gap_while_the_events_before_it_are_held_stays_an_error(
    tmp_path, server, ctx, gone, refusal
):
    """Messages deleted from the middle, y's 11 still held: not what retention does."""
    key, pub = _keypair(tmp_path, "tables")
    y = _dealt(ctx, "fg-y", key, 30)
    at = asyncio.run(_publish(server.url, [(y, s) for s in range(11, 31)], signed={15, 22, 27}))

    async def delete(js: Any) -> None:
        for s in gone:
            await js.delete_msg("TABLES", at[("fg-y", s)])

    async def run() -> Any:
        nc = await nats.connect(server.url)
        try:
            await delete(nc.jetstream())
        finally:
            await nc.close()
        return await _follow(server.url, {}, keys={"fg-y": pub}, batch=1)

    with pytest.raises(ChainBroken, match=refusal):
        asyncio.run(run())
