"""Cost per event: the daemon's CPU time per committed event, from its own accounting.

``utime + stime`` of the ``tabled`` process (all threads) from
``/proc/<pid>/stat``, across a measured window, divided by the events it
committed (and published) in that window. The latency runs and the soak
measure it on their own windows; this module gathers those figures, and
when run alone (``--only cost``) plays a shorter shoe session of its own at
both paces.

Two more shoe runs at each pace put the figures in their place (the issue asks
for both):

* ``durable``: the floor is the *durable* relay (``bench/relay.py JOURNAL``: each
  read one SQLite transaction, WAL and ``synchronous=FULL``, before its publish;
  no table, no chain, one thread). No process that commits a reading durably
  before publishing it can cost less on this machine, whatever its design, so the
  absolute CPU goals are read against it (``docs/decisions.md``, Where the commit
  runs).
* ``one_cpu``: the daemon pinned to one CPU (``taskset``, as systemd's
  ``CPUAffinity=`` would): a stand-in for a small fanless table PC, where the
  loop and the journal's thread hand off without waking another CPU.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from bench.latency import run_one
from bench.session import shoe_session
from bench.sizes import Size, pick

PACES: tuple[tuple[str, float | None], ...] = (("paced", 0.0005), ("full", None))


def gather(results: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    lat = results.get("latency") or {}
    for dev in ("shoe", "wheel"):
        for mode in ("paced", "full"):
            r = (lat.get(dev) or {}).get(mode)
            if r:
                out[f"{dev}_{mode}"] = _cost(r)
    soak = results.get("memory")
    if soak:
        out["soak"] = {"cpu_us_per_event": soak["cpu_us_per_event"], "events": soak["events"]}
    rep = (results.get("startup") or {}).get("replay")
    if rep:
        out["replay_per_event_sent"] = {"cpu_us_per_event": rep["tabled_cpu_us_per_event"]}
    return out


def _cost(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "cpu_us_per_event": r["tabled_cpu_us_per_event"],
        "cpu_us_per_frame": r["tabled_cpu_us_per_frame"],
        "events": r["events"],
        "cpu_by_thread_s": r["tabled_cpu_by_thread_s"],
    }


def one_cpu() -> str:
    """The CPU to pin to: the last this process may run on (the first often takes IRQs)."""
    return str(max(os.sched_getaffinity(0)))


def floors(*, size: Size = "full", log: Callable[[str], None] = print) -> dict[str, Any]:
    """The durable-relay and one-CPU runs, each pace, on a shoe session of their own."""
    sess = shoe_session(cards=pick(size, 2_000, 500, 100))
    snapshot_every = pick(size, 1000, 1000, 50)
    out: dict[str, Any] = {}
    cpu = one_cpu()
    for mode, gap in PACES:
        log(f"  cost: shoe/{mode} against the durable relay, {len(sess.frames)} frames")
        r = run_one(sess, gap, durable_floor=True, snapshot_every=snapshot_every, log=log)
        out[f"durable_relay_{mode}"] = {
            "cpu_us_per_frame": r["floor_cpu_us_per_frame"],
            # its wire -> subscriber latency too: the same durable commit tabled makes
            "ms": {k: r["floor_ms"][k] for k in ("p50", "p99")},
            "tabled_same_run": _cost(r) | {"ms": {k: r["tabled_ms"][k] for k in ("p50", "p99")}},
        }
        log(f"  cost: shoe/{mode}, the daemon pinned to CPU {cpu}")
        r = run_one(sess, gap, cpus=cpu, snapshot_every=snapshot_every, log=log)
        out[f"shoe_{mode}_one_cpu"] = _cost(r) | {"cpu": cpu}
    return out


def run(*, size: Size = "full", log: Callable[[str], None] = print) -> dict[str, Any]:
    sess = shoe_session(cards=pick(size, 3_000, 500, 200))
    lat: dict[str, Any] = {"shoe": {}}
    for mode, gap in PACES:
        log(f"  cost: shoe/{mode}, {len(sess.frames)} frames")
        lat["shoe"][mode] = run_one(sess, gap)
    return gather({"latency": lat})
