"""``make floor``'s stage at issue 31's own size: 2,500 tables dealing 2 events/s each
(5,000 events/s) through one bridge, for the goals on CPU per event, its ratio to a bare
publish loop, and the true lag.

A floor of its own in a subfolder: its own nats-server, ``tables`` fake tables, one
``tabled-bridge`` with the shipped timeouts. The tables deal nothing until every one is
up at the bridge (its heartbeats read), so the bridge starts live, not behind a start-up
backlog; then they deal a card every ``interval`` s each (jittered). Once every table has
dealt, its head is taken, and the window opens when the bridge has stored every table up
to that head (a head it had: "every lag 0 at once" is not a stable condition at 5,000
events/s, some table always has an event in flight for a few ms). Over ``seconds`` the
bridge's ``/health`` is sampled each second: the largest true lag of any table
(``lag_seconds_max``, ``lag_events_max``) and how many tables had any, as the bridge's
once-a-second judge found them (``/status`` builds every table's document, 100–140 ms of
the bridge's time at 2,500 tables: sampled each second it weighed ~25 µs an event; it is
read only at the window's ends, for the events stored). The bridge's CPU (``/proc``
utime+stime) and the events it stored (the tables' ``published``) over the window give
µs an event, heartbeats included. Then the floor of that CPU:
``bench/floor/bare.py`` at the rate the window stored, ``tables`` tasks, for
``bare_seconds``, while the floor still runs (the same contention as the window, as the
500-table steady stage does).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.floor.bare import argv as bare_argv
from bench.floor.catchup import start_bridge
from bench.floor.harness import ROOT, Floor

TICK = os.sysconf("SC_CLK_TCK")


def _status(port: int, tries: int = 3) -> tuple[dict[str, Any] | None, float]:
    """The bridge's tables and the request's wall time (ms); None when ``tries`` requests
    in a row got no answer in time (a loaded machine: counted, not fatal)."""
    for _ in range(tries):
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=30) as r:
                tables = json.loads(r.read())["tables"]
            return tables, (time.perf_counter() - t0) * 1000
        except (OSError, TimeoutError):
            continue
    return None, 0.0


def _health(port: int) -> tuple[dict[str, Any] | None, float]:
    """The bridge's ``/health`` and the request's wall time (ms); None when it gave no
    answer in time (a loaded machine: counted, not fatal)."""
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as r:
            return json.loads(r.read()), (time.perf_counter() - t0) * 1000
    except (OSError, TimeoutError):
        return None, 0.0


def _room(tables: int) -> None:
    """Raise this process's open-file limit (soft, up to hard) for its children: the
    bridge holds ~3 descriptors a table (docs/floor.md, Under systemd), the shipped unit
    16,384; a CI runner's soft 1,024 would refuse 2,500 tables."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 8 * tables + 1024
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(
            resource.RLIMIT_NOFILE,
            (want if hard == resource.RLIM_INFINITY else min(want, hard), hard),
        )


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _wait(port: int, ready: Any, timeout: float) -> float | None:
    """Seconds until ``ready(tables)`` holds on a /status sample (each second), or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        st = _status(port)[0]
        if st is not None and ready(st):
            return round(time.monotonic() - t0, 1)
        time.sleep(1.0)  # the bench's sampling, not the bridge's
    return None


def run(
    folder: Path,
    *,
    tables: int = 2500,
    seconds: float = 45.0,
    interval: float = 0.5,
    bare_seconds: float = 20.0,
    timeout: float = 300.0,
) -> dict[str, Any]:
    """The stage: its figures (``bench/results/floor-latest.json``'s ``goal``)."""
    w0, load0 = time.monotonic(), os.getloadavg()[0]
    f = Floor(folder, real=0, fake=tables, interval=interval)
    out: dict[str, Any] = {"tables": tables, "interval_s": interval}
    _room(tables)
    try:
        f.start(deal=False)
        assert f.nats is not None and f.control is not None
        start_bridge(f, timeout)
        assert f.bridge is not None
        port, pid = f.metrics_port, f.bridge.pid
        out["all_up_s"] = _wait(port, lambda st: all(t["up"] for t in st.values()), timeout)
        f.control("deal")
        d0 = time.monotonic()
        # every table has dealt and said so in a heartbeat: its head now is a live one
        _wait(port, lambda st: all((t["table_seq"] or 0) >= 1 for t in st.values()), timeout)
        heads = f.heads()
        out["caught_up_s"] = _wait(
            port,
            lambda st: all(
                t in st and st[t]["journal_id"] == j and st[t]["stored_seq"] >= s
                for t, (j, s) in heads.items()
            ),
            timeout,
        )
        out["caught_up_after_dealing_s"] = round(time.monotonic() - d0, 1)
        s0 = _status(port, tries=10)[0]
        if s0 is None:
            raise RuntimeError(f"the bridge's /status did not answer: {f.folder / 'bridge.log'}")
        c0, t0 = _cpu(pid), time.monotonic()
        lags: list[tuple[int, float, int]] = []  # each sample: max events, max s, tables
        took: list[float] = []
        missed = 0  # samples the bridge did not answer in time
        k = 0
        while time.monotonic() - t0 < seconds:  # the window: a sample each second
            k += 1
            time.sleep(max(0.0, min(t0 + k, t0 + seconds) - time.monotonic()))
            h, ms = _health(port)
            if h is None or h["up"] is None:
                missed += 1
                continue
            took.append(ms)
            lags.append((h["lag_events_max"], h["lag_seconds_max"], h["behind"]))
        c1, t1 = _cpu(pid), time.monotonic()
        s1 = _status(port, tries=10)[0]
        if s1 is None:
            raise RuntimeError(f"the bridge's /status did not answer: {f.folder / 'bridge.log'}")
        stored = sum(t["published"] for t in s1.values()) - sum(t["published"] for t in s0.values())
        wall, cpu = t1 - t0, c1 - c0
        rate = stored / wall
        out["window"] = {
            "seconds": round(wall, 1),
            "tables_up": sum(1 for t in s1.values() if t["up"]),
            "events": stored,
            "events_per_s": round(rate, 1),
            "bridge_cpu_s": round(cpu, 2),
            "bridge_cpu_share": round(cpu / wall, 3),
            "bridge_cpu_us_per_event": round(cpu / max(stored, 1) * 1e6, 1),
            "true_lag_seconds_max": round(max((x for _, x, _ in lags), default=0.0), 2),
            "true_lag_events_max": max((e for e, _, _ in lags), default=0),
            "tables_lagging_max": max((n for _, _, n in lags), default=0),
            "true_lag_samples": len(lags),
            "health_unanswered": missed,
            "health_request_ms_median": round(sorted(took)[len(took) // 2], 1) if took else None,
        }
        print(f"  {tables} tables: {out['window']}; the bare loop …", flush=True)
        bare = subprocess.run(
            bare_argv(f.nats.url, tables, rate, bare_seconds),
            capture_output=True,
            check=True,
            cwd=ROOT,
        )
        out["bare_loop"] = json.loads(bare.stdout)
        out["cpu_ratio_to_bare_loop"] = round(
            out["window"]["bridge_cpu_us_per_event"]
            / max(out["bare_loop"]["cpu_us_per_message"], 0.1),
            2,
        )
    finally:
        f.close()
    out["load_average_1m"] = {"start": round(load0, 2), "end": round(os.getloadavg()[0], 2)}
    out["stage_seconds"] = round(time.monotonic() - w0, 1)
    return out
