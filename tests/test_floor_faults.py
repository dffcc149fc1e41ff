"""The floor's faults, each a test (``make floor``): after each, every table's events are in
JetStream exactly once, in seq order, and the hash chain verifies end to end from seq 1.

A small floor each time: a real nats-server, two real tabled daemons (real-01 with CURVE),
ten fake tables from the load generator, ``tabled-bridge`` as installed. ``verify`` reads
the whole stream with the client's chain check (``bench/floor/harness.py``).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess

import pytest
from tabled_client.table import TableFollower

from bench.floor.harness import BIN, Floor, run, verify
from bench.floor.natsd import available, stream_events

pytestmark = [
    pytest.mark.floor,
    pytest.mark.skipif(available() is not None, reason=str(available())),
]


@pytest.fixture
def floor(tmp_path):
    f = Floor(tmp_path / "floor", real=2, fake=10, pace=0.05, interval=0.2, curve_tables=1)
    f.start()
    yield f
    f.close()


def status(f: Floor, part: str = "tables") -> dict:
    r = subprocess.run(
        [str(BIN / "tabled-bridge"), "--config", str(f.bridge_config), "status", "--json"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)[part]


def settle(f: Floor, timeout: float = 90.0, skip: tuple[str, ...] = ()) -> dict[str, int]:
    """Everything each table has now is in JetStream, once, in order, chain verified."""
    assert f.nats is not None
    want = {k: v for k, v in f.heads().items() if k not in skip}
    return run(verify(f.nats.url, want, timeout=timeout))


def test_sigkill_the_bridge_mid_stream_and_restart_it(floor):
    floor.start_bridge()
    before = settle(floor)
    assert floor.control is not None
    floor.control("burst", n=300)  # 3000 events in flight while it dies
    assert floor.kill_bridge(signal.SIGKILL) == -signal.SIGKILL
    floor.start_bridge()
    after = settle(floor)
    assert all(after[t] >= before[t] + (300 if t.startswith("lg-") else 0) for t in before)


def test_restart_nats_server(floor):
    assert floor.nats is not None and floor.control is not None
    floor.start_bridge()
    before = settle(floor)
    floor.nats.stop()
    floor.control("burst", n=100)  # while JetStream is away the tables go on
    floor.nats.start()
    after = settle(floor)
    assert all(after[t] >= before[t] for t in before)
    nats_status = status(floor, "nats")
    assert nats_status["disconnects"] >= 1 and nats_status["state"] == "connected"


def test_kill_a_table_daemon(floor):
    floor.start_bridge()
    settle(floor)
    victim = floor.tables[1]
    victim.kill(signal.SIGKILL)
    # the others are not held back while it is down
    settle(floor, skip=(victim.id,))
    victim.start()
    victim.wait_ready()
    counts = settle(floor)
    assert counts[victim.id] > 0
    # its restart is in the stream too: the crash is on record, in order
    assert floor.nats is not None
    msgs = run(stream_events(floor.nats.url))[victim.id]
    starts = [json.loads(raw)["data"] for _h, raw in msgs if b'"type":"daemon.started"' in raw]
    assert [d["clean"] for d in starts] == [True, False]


def test_cut_a_tables_network_then_resume(floor):
    assert floor.control is not None
    floor.start_bridge()
    settle(floor)
    floor.control("cut", table="lg-003")
    floor.control("backlog", table="lg-003", n=500)  # it goes on dealing while cut off
    settle(floor, skip=("lg-003",))
    st = status(floor)["lg-003"]
    assert st["state"] in ("down", "following") and st["stored_seq"] < floor.heads()["lg-003"][1]
    floor.control("resume", table="lg-003")
    counts = settle(floor)
    assert counts["lg-003"] >= 500


def test_a_wrong_curve_key_for_one_table(floor):
    secure = floor.tables[0]
    assert secure.curve
    floor.write_bridge_config(wrong_key_for=secure.id)
    floor.start_bridge()
    counts = settle(floor, skip=(secure.id,))
    assert secure.id not in counts  # nothing from it: CURVE refuses in silence
    st = status(floor)[secure.id]
    assert st["state"] == "no-heartbeat" and st["up"] is False
    # the same silence for a TableFollower with a key the table does not list, and the
    # right key gets every event from seq 1
    assert floor.keys is not None
    from daemon.security import ClientCurve

    def curve(name: str) -> tuple[bytes, bytes, bytes]:
        assert floor.keys is not None
        c = ClientCurve.load(
            floor.keys / "private" / f"{name}.key_secret", floor.keys / "table.key"
        )
        return c.public, c.secret, c.server

    async def follow(name: str, n: int) -> list[int]:
        f = TableFollower(secure.publish, secure.replay, table=secure.id, curve=curve(name))
        seqs = []
        async for ev in f.events(idle=3):
            seqs.append(ev.seq)
            if len(seqs) == n:
                break
        f.close()
        return seqs

    assert asyncio.run(follow("stranger", 1)) == []
    assert asyncio.run(follow("bridge", 20)) == list(range(1, 21))
    # restarted with the right key, the bridge replays that table from seq 1
    assert floor.kill_bridge(signal.SIGTERM) == 0
    floor.write_bridge_config()
    floor.start_bridge()
    counts = settle(floor)
    assert counts[secure.id] > 0
