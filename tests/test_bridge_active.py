"""Two bridges on the same tables at once (active-active, docs/floor.md, Redundancy): every
publish is conditional on the table's last stored message, so whichever bridge is late is
refused by the server, not stored twice, however long it stalled; a backlog's events go
as atomic batches conditional on the same message (pipelined), refused whole as well.

A real nats-server with a duplicate window of 2 s, four fake tables dealing twenty cards a
second each, two ``tabled-bridge`` processes as installed. Each is stopped (SIGSTOP) in
turn for three windows while the tables deal: the other carries the floor alone
meanwhile, and after both stalls JetStream holds every event of every table exactly once,
in order, the chain verifying from seq 1 (``verify`` fails on a duplicate or a gap).
"""

from __future__ import annotations

import json
import signal
import time
import urllib.request

import pytest

from bench.floor.harness import Floor, run, verify
from bench.floor.natsd import available
from bridge.publish import BATCH_MIN

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))

WINDOW = 2.0


def _status(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=10) as r:
        return json.loads(r.read())["tables"]


def test_two_bridges_one_stalled_past_the_window_store_no_duplicate_and_no_gap(tmp_path):
    f = Floor(
        tmp_path / "floor",
        real=0,
        fake=4,
        interval=0.05,
        nats_lines=[f"duplicate_window = {WINDOW}"],
    )
    other = None
    try:
        f.start()
        assert f.nats is not None
        # a backlog of at least BATCH_MIN events a table before any bridge: the first
        # store of each table is an atomic batch, whichever bridge wins it
        t0 = time.monotonic()
        while min(s for _j, s in f.heads().values()) < BATCH_MIN + 8:
            assert time.monotonic() - t0 < 60, f.heads()
            time.sleep(0.1)
        a = f.start_bridge()
        other, port = f.start_other_bridge("bridge-b")
        run(verify(f.nats.url, f.heads(), timeout=60))
        for stalled in (other, a):
            stalled.send_signal(signal.SIGSTOP)
            try:
                time.sleep(3 * WINDOW)
                # the other one alone stores what the tables dealt meanwhile
                run(verify(f.nats.url, f.heads(), timeout=30))
            finally:
                stalled.send_signal(signal.SIGCONT)
            time.sleep(2)  # the stalled one wakes with seconds of events queued
        counts = run(verify(f.nats.url, f.heads(), timeout=60))
        assert all(n > 100 for n in counts.values()), counts
        mine, theirs = _status(f.metrics_port), _status(port)
        # both were active: each found events the other had stored
        for st in (mine, theirs):
            assert sum(t["duplicates"] + t["skipped"] for t in st.values()) > 0, st
            assert all(t["state"] == "following" for t in st.values()), st
        # pipelined: the tables' backlogs went as atomic batches
        assert sum(t["batches"] for st in (mine, theirs) for t in st.values()) > 0
    finally:
        if other is not None and other.poll() is None:
            other.send_signal(signal.SIGCONT)
            other.kill()
            other.wait(10)
        if f.bridge is not None:
            f.bridge.send_signal(signal.SIGCONT)
        f.close()


def test_a_stream_that_sources_the_floor_stores_every_event(tmp_path):
    """No ``Nats-Expected-Stream`` on publish: a headquarters stream sourcing the floor's
    stream stores every message (2.9 refused them all: "expected stream does not match"), and
    the per-table expected sequence headers the messages carry do not stop it either."""
    import asyncio

    import nats
    from nats.js.api import StreamConfig, StreamSource

    f = Floor(tmp_path / "floor", real=0, fake=3, interval=0.1)
    try:
        f.start()
        assert f.nats is not None
        f.start_bridge()
        heads = f.heads()
        run(verify(f.nats.url, heads, timeout=60))

        async def sourced() -> tuple[int, int]:
            nc = await nats.connect(f.nats.url)
            try:
                js = nc.jetstream()
                await js.add_stream(StreamConfig(name="HQ", sources=[StreamSource(name="TABLES")]))
                deadline = time.monotonic() + 30
                while True:
                    have = (await js.stream_info("TABLES")).state.messages
                    got = (await js.stream_info("HQ")).state.messages
                    if got >= have or time.monotonic() > deadline:
                        return have, got
                    await asyncio.sleep(0.2)
            finally:
                await nc.close()

        have, got = run(sourced())
        # the tables go on dealing: HQ may already hold what TABLES stored after `have`
        assert have > 0 and got >= have, (have, got)
        counts = run(verify(f.nats.url, heads, timeout=30, stream="HQ"))
        assert set(counts) == set(f.fake_endpoints)
    finally:
        f.close()


def _events(table: str, n: int, *, journal: str = "j1", fork_at: int = 0) -> list:
    """``n`` events of ``table`` as a follower hands them on (headers are all the store
    reads; ``fork_at``: from this seq on, another history with other hashes)."""
    from tabled_client.table import Received

    out, prev = [], "0" * 64
    for seq in range(1, n + 1):
        h = f"{'f' if fork_at and seq >= fork_at else 'a'}{seq:063d}"
        raw = json.dumps({"seq": seq, "type": "card.dealt", "hash": h, "prev": prev}).encode()
        out.append(Received(table, journal, seq, "card.dealt", h, prev, "", raw))
        prev = h
    return out


def test_pipelined_batches_of_two_bridges_store_each_event_once(tmp_path):
    """A table's backlog goes as atomic batches conditional on the table's last stored
    message: a second bridge's batch over events the first stored is refused whole, read
    as stored up to the refusal's message, and goes on after it; a batch over another
    history (a journal that went back) is refused as Diverged, never stored."""
    import asyncio

    import nats

    from bench.floor.natsd import NatsServer
    from bridge.config import Nats, Table
    from bridge.core import Link
    from bridge.natslink import ensure_stream
    from bridge.publish import Publisher
    from bridge.store import Diverged, Store

    server = NatsServer(tmp_path / "nats")
    server.start()

    async def scenario() -> None:
        nc = await nats.connect(server.url)
        try:
            js = nc.jetstream()
            await ensure_stream(js, Nats(servers=[server.url]))
            assert (await js.stream_info("TABLES")).config.allow_atomic
            pub = Publisher(nc, 5.0)
            await pub.start()
            store = Store(js, "TABLES", "tables", pub)
            store.batch_min = 2  # a batch from two events (the bridge waits for more)
            one, two = (Link(Table(id="t1", publish="-", replay="-")) for _ in range(2))
            ev = _events("t1", 5)
            head = await store.put_many(one, ev[:3])
            assert (head.seq, head.stream_seq, one.published, one.batches) == (3, 3, 3, 1)
            # the second bridge, behind: its batch of 1..5 is refused, 1..3 are found stored
            head = await store.put_many(two, ev)
            assert (head.seq, two.published, two.duplicates, two.skipped) == (5, 2, 1, 2)
            assert two.batches == 1
            # the first one again, late: everything it offers is stored already
            head = await store.put_many(one, ev[3:])
            assert (head.seq, one.published, one.duplicates, one.skipped) == (5, 3, 1, 1)
            # a fork from seq 4 under the same journal: refused, not stored over
            fork = _events("t1", 7, fork_at=4)
            behind = Link(Table(id="t1", publish="-", replay="-"))
            behind.head = await store.at("t1", 3)
            with pytest.raises(Diverged):
                await store.put_many(behind, fork[3:])
            got = []
            sub = await js.subscribe("tables.>", ordered_consumer=True, stream="TABLES")
            while len(got) < 5:
                m = await sub.next_msg(timeout=5)
                got.append((m.headers["Tabled-Seq"], m.headers["Tabled-Hash"]))
            with pytest.raises(nats.errors.TimeoutError):
                await sub.next_msg(timeout=0.5)  # nothing more: each event once
            assert got == [(str(e.seq), e.hash) for e in ev]
            info = await js.stream_info("TABLES")
            assert info.state.messages == 5
        finally:
            await nc.close()

    try:
        asyncio.run(scenario())
    finally:
        server.stop()
