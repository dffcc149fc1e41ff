"""What a floor's catch-up holds is bounded by ``[bridge] catch_ups``, not by its tables.

Issue 31: a floor's bridges, started after an outage of 2,500 tables each, held ~6 GB: every
table replayed its whole backlog at once and held it, verified, until its turn to be
stored (and ZeroMQ kept a whole read buffer alive for each frame queued). Now a table's
replay chunk is read and stored holding one of ``catch_ups`` slots (docs/floor.md,
Bounded). The events a table holds verified and not yet stored are its follower's seq
minus its stored seq: this test counts them, at every turn of the bridge's event loop,
while 24 fake tables catch up 30 events each through a real nats-server, with 2 slots.
Before the slots every table held its backlog at once (24 tables, 720 events).
"""

from __future__ import annotations

import asyncio
import gc

import pytest
from tabled_client.table import Received

from bench.floor.harness import Floor, verify
from bench.floor.natsd import available
from bridge import config as bridge_config
from bridge.core import FloorBridge
from bridge.health import CHANGES_MAX
from bridge.store import KEPT_CHECKPOINTS

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))

TABLES, BACKLOG, SLOTS = 24, 30, 2


async def _catch_up(f: Floor) -> tuple[int, int, int, FloorBridge]:
    """Run the bridge until every table is stored; the most tables and events it held
    verified and unstored at once, and the events it still holds then."""
    b = FloorBridge(bridge_config.load(f.bridge_config), f.bridge_config.parent)
    stop = asyncio.Event()
    run = asyncio.create_task(b.run(stop))
    most_tables = most_events = 0
    try:
        async with asyncio.timeout(180):  # a hang fails here, not the bound
            while True:
                held = [  # one journal per table here: seqs compare
                    link.follower.last_seq - link.head.seq
                    for link in b.links.values()
                    if link.follower is not None
                ]
                most_tables = max(most_tables, sum(1 for h in held if h > 0))
                most_events = max(most_events, sum(held))
                if all(link.head.seq == BACKLOG for link in b.links.values()):
                    # stored events are not kept (each table kept its last batch until
                    # its next events: an idle floor, the whole backlog)
                    kept = sum(isinstance(o, Received) for o in gc.get_objects())
                    break
                assert not run.done(), run.result()
                await asyncio.sleep(0)  # every turn of the loop: nothing missed
    finally:
        stop.set()
        await run
    return most_tables, most_events, kept, b


def test_a_floor_wide_catch_up_holds_at_most_its_slots(tmp_path):
    f = Floor(tmp_path / "floor", real=0, fake=TABLES, interval=1.0)
    f.bridge_lines.append(f"catch_ups = {SLOTS}")
    try:
        f.start(deal=False)
        assert f.control is not None and f.nats is not None
        f.control("outage", n=BACKLOG, seconds=60)  # journaled, none published
        most_tables, most_events, kept, b = asyncio.run(_catch_up(f))
        print(f"held at once: {most_tables} tables, {most_events} events; {kept} after")
        assert 1 <= most_tables <= SLOTS, most_tables
        assert most_events <= SLOTS * BACKLOG, most_events
        assert kept <= TABLES, f"{kept} events kept after they were stored"
        # every table's structures are capped; nothing waits on the bridge's inbox
        assert not b.store.publisher.waiting
        for link in b.links.values():
            assert len(link.checkpoints) <= KEPT_CHECKPOINTS
            assert len(link.health.changes) <= CHANGES_MAX
        counts = asyncio.run(verify(f.nats.url, f.heads(), timeout=60))
        assert sum(counts.values()) == TABLES * BACKLOG
    finally:
        f.close()
