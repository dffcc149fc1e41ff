"""A bridge started while its JetStream cluster has no leader yet waits for one.

All the servers of a floor's cluster come up together after a power cut; the first to
start has no quorum, and its JetStream API does not answer. The bridge's start asked for
its stream once and ended ("tabled crashed": ``nats: timeout``; seen in
``tests/test_floor_cluster.py`` on a loaded machine). It now asks again with a warning
until the cluster answers (``bridge/natslink.py``, ``ensure_stream``).
"""

from __future__ import annotations

import asyncio

import nats
import pytest
import structlog

from bench.floor.natsd import available, cluster
from bridge.config import Nats
from bridge.natslink import ensure_stream

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


def test_the_stream_is_made_once_the_cluster_answers(tmp_path):
    servers = cluster(tmp_path)

    async def main() -> tuple[int, int]:
        nc = await nats.connect(servers[0].url)
        try:
            js = nc.jetstream(timeout=1.0)
            with structlog.testing.capture_logs() as logs:
                task = asyncio.ensure_future(
                    ensure_stream(js, Nats(servers=[servers[0].url], replicas=3))
                )
                for _ in range(600):  # the first warning: it waits, and is still running
                    if any(e["log_level"] == "warning" for e in logs) or task.done():
                        break
                    await asyncio.sleep(0.1)
                assert not task.done(), task.result() if not task.exception() else task.exception()
                for s in servers[1:]:  # the quorum comes up
                    await asyncio.to_thread(s.start, 30)
                waits = await asyncio.wait_for(task, 120)
            info = await js.stream_info("TABLES")
            return waits, info.config.num_replicas
        finally:
            await nc.close()

    try:
        servers[0].start(timeout=30)
        waits, replicas = asyncio.run(main())
    finally:
        for s in servers:
            s.stop()
    assert waits >= 1 and replicas == 3
