"""Cost per event: the daemon's CPU time per committed event, from its own accounting.

``utime + stime`` of the ``tabled`` process (all threads) from
``/proc/<pid>/stat``, across a measured window, divided by the events it
committed (and published) in that window. The latency runs and the soak
measure it on their own windows; this module gathers those figures, and
when run alone (``--only cost``) plays a shorter shoe session of its own at
both paces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.latency import run_one
from bench.session import shoe_session
from bench.sizes import Size, pick


def gather(results: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    lat = results.get("latency") or {}
    for dev in ("shoe", "wheel"):
        for mode in ("paced", "full"):
            r = (lat.get(dev) or {}).get(mode)
            if r:
                out[f"{dev}_{mode}"] = {
                    "cpu_us_per_event": r["tabled_cpu_us_per_event"],
                    "cpu_us_per_frame": r["tabled_cpu_us_per_frame"],
                    "events": r["events"],
                    "cpu_by_thread_s": r["tabled_cpu_by_thread_s"],
                }
    soak = results.get("memory")
    if soak:
        out["soak"] = {"cpu_us_per_event": soak["cpu_us_per_event"], "events": soak["events"]}
    rep = (results.get("startup") or {}).get("replay")
    if rep:
        out["replay_per_event_sent"] = {"cpu_us_per_event": rep["tabled_cpu_us_per_event"]}
    return out


def run(*, size: Size = "full", log: Callable[[str], None] = print) -> dict[str, Any]:
    sess = shoe_session(cards=pick(size, 3_000, 500, 200))
    lat: dict[str, Any] = {"shoe": {}}
    for mode, gap in (("paced", 0.0005), ("full", None)):
        log(f"  cost: shoe/{mode}, {len(sess.frames)} frames")
        lat["shoe"][mode] = run_one(sess, gap)
    return gather({"latency": lat})
