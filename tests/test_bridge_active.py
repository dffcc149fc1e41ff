"""Two bridges on the same tables at once (active-active, docs/floor.md, Redundancy): every
publish is conditional on the table's last stored message, so whichever bridge is late is
refused by the server, not stored twice, however long it stalled.

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
