"""The floor on a three-server NATS cluster, the stream at three replicas: the stream's
leader is killed mid-stream (SIGKILL) and the bridge stores again within seconds, and
the conditional publishes (each table's expected last sequence, checked by the new
leader) leave no duplicate and no gap (docs/floor.md, A NATS cluster of three).
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time

import nats
import pytest

from bench.floor import figures
from bench.floor.harness import Floor, run, verify
from bench.floor.natsd import NatsServer, available, cluster

pytestmark = [
    pytest.mark.floor,
    pytest.mark.skipif(available() is not None, reason=str(available())),
]


def _cluster(folder) -> list[NatsServer]:
    servers = cluster(folder)
    for s in servers:
        s.start(timeout=30)
    return servers


async def _leader(url: str) -> str:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        for _ in range(100):
            try:
                info = await js.stream_info("TABLES")
                if info.cluster is not None and info.cluster.leader:
                    return info.cluster.leader
            except Exception:
                pass
            await asyncio.sleep(0.2)
        raise AssertionError("no stream leader")
    finally:
        await nc.close()


async def _new_leader(url: str, old: str) -> float:
    """When (monotonic) the stream has a leader other than ``old``."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream(timeout=1)
        while True:
            try:
                info = await js.stream_info("TABLES")
                if info.cluster is not None and info.cluster.leader not in (None, "", old):
                    return time.monotonic()
            except Exception:
                pass
            await asyncio.sleep(0.05)
    finally:
        await nc.close()


def test_the_streams_leader_killed_the_bridge_stores_again_within_seconds(tmp_path):
    cluster = _cluster(tmp_path)
    f = Floor(
        tmp_path / "floor",
        real=0,
        fake=3,
        interval=0.1,
        cluster=cluster,
        nats_lines=["replicas = 3", "connect_timeout = 60"],
    )
    try:
        f.start()
        f.start_bridge(timeout=120)
        run(verify(cluster[0].url, f.heads(), timeout=90))
        leader = run(_leader(cluster[0].url))
        victim = next(s for s in cluster if f"floor-{s.port}" == leader)
        others = [s for s in cluster if s is not victim]
        before = f.heads()
        elected: list[float] = []
        t0 = time.monotonic()
        victim.stop(signal.SIGKILL)
        watch = threading.Thread(
            target=lambda: elected.append(run(_new_leader(others[1].url, leader)) - t0),
            daemon=True,
        )
        watch.start()
        # stored again: an event every table dealt after the kill is in the stream
        while True:
            want = f.heads()
            if all(want[t][1] > before[t][1] for t in before):
                break
            assert time.monotonic() - t0 < 60, "the tables dealt nothing after the kill"
            time.sleep(0.05)
        deadline = t0 + 60
        while True:  # JetStream's API may time out while the stream elects a leader
            try:
                run(verify(others[0].url, want, timeout=max(1.0, deadline - time.monotonic())))
                break
            except nats.errors.TimeoutError:
                assert time.monotonic() < deadline, "no answer from the cluster in 60 s"
                time.sleep(0.2)
        took = time.monotonic() - t0
        watch.join(60)
        print(
            f"stored again {took:.1f} s after the stream leader's SIGKILL "
            f"(a new leader elected after {elected[0] if elected else float('nan'):.1f} s)"
        )
        assert took < 15, f"stored again {took:.1f} s after the leader's kill"
        victim.start(timeout=30)
        counts = run(verify(others[1].url, f.heads(), timeout=90))  # once each, in order
        assert all(counts[t] >= want[t][1] for t in want), (counts, want)
        # for bench.floor: the figure, and its floor (the server's own election)
        figures.record(
            "leader_loss",
            {
                "stored_again_s": round(took, 1),
                "elected_s": round(elected[0], 1) if elected else None,
            },
        )
    finally:
        f.close()
        for s in cluster:
            s.stop()
