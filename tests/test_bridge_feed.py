"""The bridge reads its tables in groups (``bridge/feed.py``): one socket, one wake-up for
many tables, a quiet table's heartbeat taken without waking its task, and a bounded inbox
whose overflow is repaired by replay.

Issue 31: every table's follower had a SUB of its own and every heartbeat woke the
table's task (1,000 idle tables cost the bridge 70-126 µs a table-second against the
goal's 20). Here the floor's own fake tables (``bench/floor/loadgen.py``, real PUB and
replay sockets on loopback) are followed by real :class:`TableFollower`\\ s fed by
:class:`bridge.feed.Groups`; each test waits for what it asserts (events received,
heartbeats counted), never for a time.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import zmq
import zmq.asyncio
from tabled_client.table import TableFollower

import bridge.feed
from bench.floor.loadgen import FakeTable
from bridge.feed import HEARTBEAT_ROOM, Groups


@asynccontextmanager
async def _floor(
    n: int, on_heartbeat: Callable[[str, dict[str, Any]], None] | None = None
) -> AsyncIterator[tuple[list[FakeTable], Groups, dict[str, TableFollower]]]:
    """``n`` fake tables beating every 20 ms, a Groups over them, a follower per table."""
    ctx = zmq.asyncio.Context()
    tables = [FakeTable(ctx, f"fd-{i:03d}", random.Random(i)) for i in range(1, n + 1)]
    seen: dict[str, int] = {}

    def beat_seen(table: str, data: dict[str, Any]) -> None:
        seen[table] = seen.get(table, 0) + 1
        if on_heartbeat is not None:
            on_heartbeat(table, data)

    g = Groups(ctx, ((t.table, t.endpoints[0], None) for t in tables), beat_seen, 1 << 20)
    followers = {
        t.table: TableFollower(
            *t.endpoints, table=t.table, ctx=ctx, replay_timeout=5.0, feed=g.feed(t.table)
        )
        for t in tables
    }

    async def beat() -> None:
        while True:
            for t in tables:
                t.heartbeat()
            await asyncio.sleep(0.02)

    side = [asyncio.create_task(c) for c in (g.run(), beat(), *(t.serve_replay() for t in tables))]
    try:
        yield tables, g, followers
    finally:
        for task in side:
            task.cancel()
        await asyncio.gather(*side, return_exceptions=True)
        for f in followers.values():
            f.close()
        g.close()
        for t in tables:
            t.close()
        ctx.destroy(linger=0)


async def _until(cond: Callable[[], bool]) -> None:
    while not cond():
        await asyncio.sleep(0.01)


async def _collect(f: TableFollower, into: list[int]) -> None:
    async for batch in f.batches():
        into.extend(got.seq for got in batch)


def test_a_quiet_tables_heartbeats_wake_no_task_and_its_events_still_come():
    async def main() -> None:
        async with _floor(3) as (tables, g, followers):
            for t in tables:
                for _ in range(5):
                    t.deal()  # before anyone listens: the first heartbeat's replay brings them
            got = {k: [] for k in followers}
            readers = [asyncio.create_task(_collect(f, got[k])) for k, f in followers.items()]
            try:
                async with asyncio.timeout(30):
                    await _until(lambda: all(len(v) == 5 for v in got.values()))
                    woken = {k: i.woken for k, i in ((k, g.inboxes[k.encode()]) for k in got)}
                    quiet0 = g.quiet
                    # 60 more heartbeats, all quiet: taken by the reader, no task woken
                    await _until(lambda: g.quiet >= quiet0 + 60)
                    assert {k: g.inboxes[k.encode()].woken for k in got} == woken
                    for t in tables:  # an event wakes its table's task, in order
                        t.deal()
                    await _until(lambda: all(len(v) == 6 for v in got.values()))
            finally:
                for r in readers:
                    r.cancel()
                await asyncio.gather(*readers, return_exceptions=True)
            assert all(v == [1, 2, 3, 4, 5, 6] for v in got.values()), got
            assert g.bad == 0

    asyncio.run(main())


@pytest.mark.parametrize(
    ("name", "value"), [("INBOX_MAX", 5), ("INBOX_BYTES", 16 * 1024)], ids=["events", "bytes"]
)
def test_an_inbox_that_overflows_drops_and_the_replay_repairs_it(monkeypatch, name, value):
    """A table's inbox past INBOX_MAX messages, or every inbox past INBOX_BYTES: events
    are dropped until a heartbeat gets in, whose replay brings them back."""
    monkeypatch.setattr(bridge.feed, name, value)
    most = {"queue": 0, "held": 0, "beats_in_a_row": 0}
    g_ref: list[Groups] = []

    def watch(table: str, data: dict[str, Any]) -> None:  # at each heartbeat: the bounds
        g = g_ref[0]
        most["queue"] = max(most["queue"], *(len(i.queue) for i in g.inboxes.values()))
        most["held"] = max(most["held"], g.held)
        for i in g.inboxes.values():  # never two heartbeats in a row: the newest replaces
            kinds = [fr[0].endswith(b".heartbeat") for fr in i.queue]
            most["beats_in_a_row"] += sum(a and b for a, b in itertools.pairwise(kinds))

    async def main() -> Groups:
        async with _floor(3, watch) as (tables, g, followers):
            g_ref.append(g)
            got: dict[str, list[int]] = {k: [] for k in followers}
            readers = [asyncio.create_task(_collect(f, got[k])) for k, f in followers.items()]
            try:
                async with asyncio.timeout(60):
                    await _until(lambda: all(f._live for f in followers.values()))
                    for _ in range(3):  # bursts far past the bound: most are dropped live
                        for t in tables:
                            for _ in range(200):
                                t.deal()
                        await asyncio.sleep(0)
                    await _until(lambda: all(len(v) >= 600 for v in got.values()))
            finally:
                for r in readers:
                    r.cancel()
                await asyncio.gather(*readers, return_exceptions=True)
            # every event once, in order, though the inbox dropped many of them
            assert all(v == list(range(1, 601)) for v in got.values()), {
                k: v[:10] for k, v in got.items()
            }
            assert g.dropped > 0
            assert g.bad == 0
            # what the inboxes hold is what they count
            assert g.held == sum(
                len(fr[0]) + len(fr[1]) + bridge.feed.OVERHEAD
                for i in g.inboxes.values()
                for fr in i.queue
            )
            return g

    asyncio.run(main())
    assert most["beats_in_a_row"] == 0, most
    if name == "INBOX_MAX":
        assert most["queue"] <= value + HEARTBEAT_ROOM, most
    else:  # the events within the bound; a heartbeat or a few more per table past it
        assert most["held"] <= value + 3 * HEARTBEAT_ROOM * 1024, most
