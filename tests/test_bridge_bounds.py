"""The bridge is bounded by construction (docs/floor.md, Bounded): a table that answers a
replay endlessly cannot grow its memory past its bound, and SIGTERM ends it within 5 s
whatever NATS is doing (here: the server stopped with SIGSTOP).

A real nats-server, fake tables (one of them broken: each replay answer is 2,000 frames
of 64 KiB and no end marker, 128 MiB), ``tabled-bridge`` as installed.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from bench.floor.harness import Floor, run, verify
from bench.floor.natsd import available

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))

#: what one table's replay may hold: [bridge] replay_max_bytes (16 MiB) and ZeroMQ's queue
#: of 256 frames (of 64 KiB here), with room for the allocator's own slack
BOUND = 16 * 2**20 + 256 * 65_600 + 16 * 2**20


def _rss(pid: int) -> int:
    for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
        if ln.startswith("VmRSS:"):
            return int(ln.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_an_endless_replay_answer_leaves_the_bridge_under_its_bound(tmp_path):
    f = Floor(tmp_path / "floor", real=0, fake=2, interval=0.1)
    try:
        f.start(deal=False)
        assert f.nats is not None and f.control is not None
        f.control("burst", n=5)
        f.control("endless", table="lg-001", frames=2000)
        bridge = f.start_bridge()
        base = _rss(bridge.pid)
        peak = base
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            peak = max(peak, _rss(bridge.pid))
            time.sleep(0.1)
        # the healthy table is bridged all the same
        run(verify(f.nats.url, {"lg-002": f.heads()["lg-002"]}, timeout=30))
        print(f"RSS {base / 2**20:.0f} MiB, peak +{(peak - base) / 2**20:.1f} MiB")
        assert peak - base < BOUND, (
            f"RSS grew {(peak - base) / 2**20:.0f} MiB from {base / 2**20:.0f}"
        )
        log = (f.folder / "bridge.log").read_text()
        assert "lg-001" in log and "retrying" in log, log[-2000:]
    finally:
        f.close()


def test_sigterm_ends_the_bridge_within_5_s_while_nats_is_stopped(tmp_path):
    f = Floor(tmp_path / "floor", real=0, fake=3, interval=0.1)
    try:
        f.start()
        assert f.nats is not None and f.nats.proc is not None
        bridge = f.start_bridge()
        run(verify(f.nats.url, f.heads(), timeout=60))
        f.nats.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(2)  # publishes in flight, waiting for acks that do not come
            t0 = time.monotonic()
            bridge.send_signal(signal.SIGTERM)
            try:
                rc = bridge.wait(10)
            except Exception:
                bridge.kill()
                raise
            took = time.monotonic() - t0
        finally:
            f.nats.proc.send_signal(signal.SIGCONT)
        f.bridge = None
        assert took < 5, f"the bridge took {took:.1f} s to stop"
        assert rc == 0, (f.folder / "bridge.log").read_text()[-2000:]
    finally:
        f.close()
