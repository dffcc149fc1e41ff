"""The quiet-tables stage of ``make floor``: what a table that deals nothing costs the bridge.

A floor of its own in a subfolder: its own nats-server, ``tables`` fake tables that send
their heartbeat every second and deal nothing, and one ``tabled-bridge``. Once every table
is up, the bridge's CPU (``/proc`` utime+stime) over ``seconds`` is divided by tables ×
seconds: µs per table-second (issue 31's goal: 20). The heartbeats (read once, on the
grouped sockets of ``bridge/feed.py``), ZeroMQ's I/O thread, the status judge each second
and the watchdog are all in it.
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.floor.harness import Floor


def _status(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=30) as r:
        return json.loads(r.read())["tables"]  # type: ignore[no-any-return]


def _cpu(pid: int) -> float:
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_quiet(
    folder: Path, tables: int = 1000, seconds: float = 20.0, settle: float = 3.0
) -> dict[str, Any]:
    f = Floor(folder, real=0, fake=tables, interval=1.0)
    try:
        f.start(deal=False)
        t0 = time.monotonic()
        f.start_bridge(300)
        assert f.bridge is not None
        while True:  # every table up (its heartbeats read), or say how many were not
            st = _status(f.metrics_port)
            up = sum(1 for t in st.values() if t["up"])
            if up == tables or time.monotonic() - t0 > 300:
                break
            time.sleep(1.0)
        time.sleep(settle)
        c0, w0 = _cpu(f.bridge.pid), time.monotonic()
        time.sleep(seconds)  # the window itself: nothing to wait for, tables are idle
        c1, w1 = _cpu(f.bridge.pid), time.monotonic()
        up = sum(1 for t in _status(f.metrics_port).values() if t["up"])
    finally:
        f.close()
    cpu, wall = c1 - c0, w1 - w0
    return {
        "tables": tables,
        "tables_up": up,
        "seconds": round(wall, 1),
        "bridge_cpu_s": round(cpu, 2),
        "bridge_cpu_share": round(cpu / wall, 3),
        "us_per_table_second": round(cpu / (tables * wall) * 1e6, 1),
        "stage_seconds": round(time.monotonic() - t0, 1),
    }
