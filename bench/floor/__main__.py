"""``make floor`` / ``python -m bench.floor``: a 500-table floor for 60 s through one bridge.

    python -m bench.floor [--real 20] [--fake 480] [--seconds 60] [--interval 0.5]
                          [--burst 20] [--backlog 7200] [--quiet 1000] [--heads 5000]
                          [--goal 2500] [--goal-seconds 45] [--output PATH]

Starts a real nats-server with JetStream in a temporary folder, ``--real`` tabled daemons
on simulated shoes (a card every ``--interval`` s), the load generator for ``--fake``
more tables at the same rate, and ``tabled-bridge``. Measures, in this order:

1. the raw JetStream publish rate with nats-py on the same server (before the bridge
   runs): one publish at a time waiting for each ack (what the bridge does per table),
   and pipelined (``publish_async``), ``nats bench``-style; after the steady window,
   the CPU floor: a bare nats-py loop publishing the same messages at the same rate
   (``bench/floor/bare.py``, up to 20 s);
2. the floor for ``--seconds``: events/s stored through the bridge, table-to-consumer
   latency (event ``time`` to a live JetStream consumer here) p50/p99, the bridge's CPU
   per event (its /proc utime+stime over the window), and the true lag it reports (the
   largest of any table, sampled each second);
3. a burst: every table deals ``--burst`` cards at once; the time until all are stored;
4. catch-up: one table offline for an hour of events (``--backlog`` cards), then back;
   the time from its return until the last of them is in JetStream.

Then every table's stream is checked: gapless from seq 1, each event once, the chain
verifying with the client's check; 5,000 tables' head lookups are timed on a stream of
their own, small and grown 40-fold (``bench/floor/heads.py``, ~30 s); once the floor is
down, ``--quiet`` idle tables through a bridge of their own give its CPU per
table-second (``bench/floor/quiet.py``, ~60 s); ``--goal`` tables (2,500) dealing a card
every ``--interval`` s each through a bridge of their own give the steady goals at the
goal's own size, with their bare loop (``bench/floor/goal.py``, ~75 s); and issue
31's goals are printed (``bench/floor/verdicts.py``), each met, missed or not measured here
(with where it is). The figures are printed and written to
``bench/results/floor-latest.json``; none is an assert (``docs/performance.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import nats
from nats.js.api import StreamConfig

from bench.floor import catchup, goal, stall
from bench.floor import figures as from_tests
from bench.floor.bare import argv as bare_argv
from bench.floor.harness import ROOT, Floor, verify
from bench.floor.heads import measure_heads
from bench.floor.natsd import available
from bench.floor.quiet import measure_quiet
from bench.floor.verdicts import report
from bench.stats import machine

RESULTS = ROOT / "bench" / "results"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def bridge_status(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=10) as r:
        return json.loads(r.read())  # type: ignore[no-any-return]


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


async def raw_publish(url: str, n_sync: int, n_async: int) -> dict[str, float]:
    """nats-py into JetStream on the same server: acked one by one, and pipelined."""
    nc = await nats.connect(url)
    js = nc.jetstream(timeout=10)
    await js.add_stream(StreamConfig(name="RAWBENCH", subjects=["rawbench.>"]))
    payload = b"x" * 420  # about one card.dealt event
    t0 = time.perf_counter()
    for i in range(n_sync):
        await js.publish("rawbench.sync", payload, headers={"Nats-Msg-Id": f"s{i}"})
    sync = n_sync / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    futs = [
        await js.publish_async("rawbench.async", payload, headers={"Nats-Msg-Id": f"a{i}"})
        for i in range(n_async)
    ]
    await asyncio.gather(*futs)
    pipelined = n_async / (time.perf_counter() - t0)
    await js.delete_stream("RAWBENCH")
    await nc.close()
    return {"acked_one_by_one_per_s": round(sync), "pipelined_per_s": round(pipelined)}


class Watcher:
    """A live consumer of the whole floor: latency per event, and who has reached what."""

    def __init__(self) -> None:
        self.latency_ms: list[float] = []
        self.seen: dict[str, int] = {}
        self.count = 0
        self.recording = False
        self.waiters: list[tuple[dict[str, int], asyncio.Future[float]]] = []

    async def run(self, url: str) -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        sub = await js.subscribe("tables.>", ordered_consumer=True, stream="TABLES")
        try:
            async for msg in sub.messages:
                now = time.time()
                table = msg.subject.split(".")[1]
                seq = int(msg.headers["Tabled-Seq"])
                self.seen[table] = max(self.seen.get(table, 0), seq)
                self.count += 1
                if self.recording:
                    t = msg.data.split(b'"time":"', 1)[1][:23].decode()
                    sent = datetime.datetime.fromisoformat(t + "+00:00").timestamp()
                    self.latency_ms.append((now - sent) * 1000)
                for want, fut in list(self.waiters):
                    if not fut.done() and all(self.seen.get(k, 0) >= v for k, v in want.items()):
                        fut.set_result(time.monotonic())
                        self.waiters.remove((want, fut))
        finally:
            await nc.close()

    def reach(self, want: dict[str, int]) -> asyncio.Future[float]:
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        if all(self.seen.get(k, 0) >= v for k, v in want.items()):
            fut.set_result(time.monotonic())
        else:
            self.waiters.append((want, fut))
        return fut


async def measure(f: Floor, a: argparse.Namespace) -> dict[str, Any]:
    assert f.nats is not None and f.control is not None
    out: dict[str, Any] = {}
    print("raw JetStream publish (nats-py) …", flush=True)
    out["raw_jetstream"] = await raw_publish(f.nats.url, 3000, 20000)
    print(f"  {out['raw_jetstream']}", flush=True)
    print("starting the bridge …", flush=True)
    await asyncio.to_thread(f.start_bridge, 120)
    w = Watcher()
    watch = asyncio.create_task(w.run(f.nats.url))
    assert f.bridge is not None
    pid = f.bridge.pid
    # let every table be found and caught up before the window opens
    heads = await asyncio.to_thread(f.heads)
    await asyncio.wait_for(w.reach({k: s for k, (_j, s) in heads.items()}), 180)
    print(f"floor of {len(heads)} tables caught up; measuring {a.seconds} s …", flush=True)
    s0, c0, t0 = bridge_status(f.metrics_port), cpu_seconds(pid), time.monotonic()
    w.recording = True
    lags: list[tuple[int, float]] = []  # each second: the floor's largest true lag
    while time.monotonic() - t0 < a.seconds:  # the measurement window itself
        await asyncio.sleep(min(1.0, max(0.0, a.seconds - (time.monotonic() - t0))))
        tables = (await asyncio.to_thread(bridge_status, f.metrics_port))["tables"].values()
        lags.append(
            (
                max((t["lag_events"] or 0 for t in tables), default=0),
                max((t["lag_seconds"] for t in tables), default=0.0),
            )
        )
    w.recording = False
    s1, c1, t1 = bridge_status(f.metrics_port), cpu_seconds(pid), time.monotonic()
    stored = sum(t["published"] for t in s1["tables"].values()) - sum(
        t["published"] for t in s0["tables"].values()
    )
    up = sum(1 for t in s1["tables"].values() if t["up"])
    out["steady"] = {
        "tables": len(s1["tables"]),
        "tables_up": up,
        "seconds": round(t1 - t0, 1),
        "events": stored,
        "events_per_s": round(stored / (t1 - t0), 1),
        "latency_ms_p50": round(pct(w.latency_ms, 50), 1),
        "latency_ms_p99": round(pct(w.latency_ms, 99), 1),
        "latency_samples": len(w.latency_ms),
        "bridge_cpu_s": round(c1 - c0, 2),
        "bridge_cpu_us_per_event": round((c1 - c0) / max(stored, 1) * 1e6, 1),
        "bridge_cpu_share": round((c1 - c0) / (t1 - t0), 3),
        # the lag the bridge reports (heartbeats read apart from events: docs/floor.md,
        # Health), sampled each second: the largest of any table in any sample
        "true_lag_events_max": max((e for e, _ in lags), default=0),
        "true_lag_seconds_max": round(max((x for _, x in lags), default=0.0), 2),
        "true_lag_samples": len(lags),
    }
    print(f"  {out['steady']}", flush=True)
    # the floor of that CPU: a bare nats-py loop, same messages, same rate, own process
    bare_s = min(a.seconds, 20.0)
    print(f"bare publish loop at {out['steady']['events_per_s']} msg/s for {bare_s:g} s …")
    proc = await asyncio.create_subprocess_exec(
        *bare_argv(f.nats.url, len(s1["tables"]), out["steady"]["events_per_s"], bare_s),
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    out["bare_loop"] = json.loads((await proc.communicate())[0])
    bare_us = out["bare_loop"]["cpu_us_per_message"]
    out["steady"]["cpu_ratio_to_bare_loop"] = round(
        out["steady"]["bridge_cpu_us_per_event"] / max(bare_us, 0.1), 2
    )
    print(f"  {out['bare_loop']}; the bridge: {out['steady']['cpu_ratio_to_bare_loop']}×")
    # a burst: every fake table deals --burst cards at once
    before = {k: s for k, (_j, s) in (await asyncio.to_thread(f.heads)).items()}
    b0 = time.monotonic()
    await asyncio.to_thread(f.control, "burst", n=a.burst)
    want = {k: before[k] + a.burst for k in f.fake_endpoints}
    b1 = await asyncio.wait_for(w.reach(want), 300)
    n = a.burst * len(f.fake_endpoints)
    out["burst"] = {
        "events": n,
        "seconds_until_stored": round(b1 - b0, 2),
        "events_per_s": round(n / (b1 - b0)),
    }
    print(f"  burst {out['burst']}", flush=True)
    # catch-up: one table offline for an hour's worth of events
    victim = next(iter(f.fake_endpoints))
    await asyncio.to_thread(f.control, "cut", table=victim)
    r = await asyncio.to_thread(f.control, "backlog", table=victim, n=a.backlog)
    c_start = time.monotonic()
    await asyncio.to_thread(f.control, "resume", table=victim)
    try:
        c_end = await asyncio.wait_for(w.reach({victim: r["last_seq"]}), 600)
    except TimeoutError:
        _why_not_caught_up(f, victim, r["last_seq"])
        raise
    out["catch_up"] = {
        "table": victim,
        "events": a.backlog,
        "offline_equivalent_s": round(a.backlog * a.interval),
        "seconds": round(c_end - c_start, 2),
        "events_per_s": round(a.backlog / (c_end - c_start)),
        "note": "includes up to one heartbeat interval (1 s) before the table is seen back",
    }
    print(f"  catch-up {out['catch_up']}", flush=True)
    heads = await asyncio.to_thread(f.heads)
    print("verifying every table's stream from seq 1 …", flush=True)
    v0 = time.monotonic()
    counts = await verify(f.nats.url, heads, timeout=300)
    out["verified"] = {
        "tables": len(counts),
        "events": sum(counts.values()),
        "gapless_once_in_order_chain_ok": True,
        "seconds": round(time.monotonic() - v0, 1),
    }
    print(f"  {out['verified']}", flush=True)
    watch.cancel()
    if a.heads:
        print(f"head lookups: {a.heads} tables, a small stream and one grown 40-fold …", flush=True)
        out["heads"] = await measure_heads(f.nats.url, a.heads)
        print(f"  {out['heads']}", flush=True)
    return out


def _why_not_caught_up(f: Floor, victim: str, want: int) -> None:
    """What the bridge said of a table that never caught up, and its log's tail: the
    evidence a timed-out catch-up needs (the floor's folder goes with the run)."""
    try:
        link = bridge_status(f.metrics_port)["tables"].get(victim)
    except Exception as e:  # the bridge may be what hangs
        link = f"no status: {type(e).__name__}: {e}"
    print(f"  catch-up of {victim} to seq {want} timed out; the bridge's status of it: {link}")
    log = f.folder / "bridge.log"
    if log.exists():
        tail = log.read_text(errors="replace").splitlines()[-40:]
        print("  the bridge's log, last lines:", *tail, sep="\n    ", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--real", type=int, default=20)
    p.add_argument("--fake", type=int, default=480)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--burst", type=int, default=20)
    p.add_argument("--backlog", type=int, default=7200)
    p.add_argument("--catchup-tables", type=int, default=5000)
    p.add_argument("--catchup-per-table", type=int, default=120)
    p.add_argument("--catchup-bridges", type=int, default=2)
    p.add_argument("--stall-tables", type=int, default=200)
    p.add_argument("--stall-seconds", type=float, default=600)
    p.add_argument("--skip", action="append", default=[], choices=["catchup", "stall"])
    p.add_argument("--quiet", type=int, default=1000, help="idle tables of the quiet stage")
    p.add_argument("--heads", type=int, default=5000, help="tables of the head-lookup stage")
    p.add_argument("--goal", type=int, default=2500, help="tables of the goal-size stage (0: skip)")
    p.add_argument("--goal-seconds", type=float, default=45.0, help="its window")
    p.add_argument("--output", type=Path, default=RESULTS / "floor-latest.json")
    a = p.parse_args(argv)
    why = available()
    if why is not None:
        print(f"bench.floor: cannot run: {why}", file=sys.stderr)
        return 1
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="floor-") as tmp:
        f = Floor(Path(tmp), real=a.real, fake=a.fake, pace=a.interval, interval=a.interval)
        try:
            f.start()
            figures = asyncio.run(measure(f, a))
        finally:
            f.close()
        if a.quiet:  # a floor of its own, once the busy one is gone
            print(f"quiet tables: {a.quiet} idle tables through one bridge …", flush=True)
            figures["quiet"] = measure_quiet(Path(tmp) / "quiet", a.quiet)
            print(f"  {figures['quiet']}", flush=True)
        if a.goal:  # the steady goals at their own size, on a floor of its own
            print(f"the goal's size: {a.goal:,} tables, a card every {a.interval:g} s each …")
            figures["goal"] = goal.run(
                Path(tmp) / "goal", tables=a.goal, seconds=a.goal_seconds, interval=a.interval
            )
            print(f"  {figures['goal']}", flush=True)
    figures.update(stages(a))
    figures["from_tests"] = from_tests.read()
    report(figures)
    result = {
        "load_average_1m": {"start": round(load0, 2), "end": round(os.getloadavg()[0], 2)},
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "config": {k: v for k, v in vars(a).items() if k != "output"},
        **figures,
    }
    a.output.parent.mkdir(parents=True, exist_ok=True)
    a.output.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"written to {a.output}")
    problems = figures.get("stall", {}).get("problems", 0)
    if problems:  # duplicates or gaps are wrong, not slow: make floor fails
        print(f"bench.floor: the stall left {problems} duplicates, gaps or broken links")
    return 1 if problems else 0


def stages(a: argparse.Namespace) -> dict[str, Any]:
    """The stages on floors of their own: a 5,000-table outage's catch-up, then two bridges
    with one stalled (bench/floor/catchup.py, stall.py)."""
    out: dict[str, Any] = {}
    if "catchup" not in a.skip:
        o = catchup.Outage(
            tables=a.catchup_tables, per_table=a.catchup_per_table, bridges=a.catchup_bridges
        )
        print(
            f"catch-up of a 10-minute outage: {o.tables:,} tables × {o.per_table} events, "
            f"{o.bridges} bridges …",
            flush=True,
        )
        with tempfile.TemporaryDirectory(prefix="floor-outage-") as tmp:
            out["outage_catch_up"] = catchup.run(Path(tmp), o)
        print(f"  {out['outage_catch_up']}", flush=True)
    if "stall" not in a.skip:
        print(
            f"two bridges, one stalled {a.stall_seconds:g} s, {a.stall_tables} tables …", flush=True
        )
        with tempfile.TemporaryDirectory(prefix="floor-stall-") as tmp:
            out["stall"] = stall.run(Path(tmp), tables=a.stall_tables, seconds=a.stall_seconds)
        print(f"  {out['stall']}", flush=True)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
