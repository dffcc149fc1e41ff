"""Memory over a soak: peak RSS of the daemon across many baccarat hands.

The daemon runs as a real process on a pty, as in the latency benchmark;
this process is the dealer and the croupier of an endless generated
session (:class:`bench.session.ShoeDealer`: shoe after shoe of 8 decks)
on an accelerated clock: each hand's ``betting.open`` and ``betting.close``
are sent together on the control socket, its cards written back to back
as soon as betting is closed, the next hand as soon as the result is
published. Every 1,000 hands ``/proc/<pid>/status`` gives ``VmRSS`` and
``VmHWM`` (peak RSS); the daemon logs at ``info`` as in production (to
/dev/null here).

A soak is bounded by hands (default 100,000) and by time (default 50 s,
so that ``make bench`` stays within its budget); when time runs out first,
the result says how many hands were played and the RSS slope over the
hands after the first 10,000 is extrapolated to 100,000 — a number to
read with that caveat, which ``--soak-seconds 0`` (no time bound) removes.

Each sample splits RSS into ``RssAnon`` (malloc's heaps and arenas), ``RssFile``
(mapped files) and ``RssShmem`` (SQLite's ``-shm``). ``python -m bench.memory
--variant tracemalloc`` (never ``make bench``: tracing slows the daemon and adds to
its RSS) runs the daemon under :mod:`bench.variant`'s ``tracemalloc``, takes a
snapshot of its Python heap with every sample, and prints the traced total per
sample and the top growth (by line, and the largest by traceback) between the
sample at the first mark and the last.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import msgspec

from bench import floors, proc
from bench.latency import Loop
from bench.session import ShoeDealer, shoe_session
from bench.sizes import Size, pick
from bench.stats import Load


class _Soak:
    def __init__(self, loop: Loop, publish: str, control: str) -> None:
        self.loop = loop
        self.dealt = 0
        self.events = 0
        self.heartbeats = 0
        self.alarms = 0
        self.replies: dict[int, dict[str, Any]] = {}
        self._ids = 0
        loop.sub(publish, self._on_event)
        self.ctl = loop.dealer(control, self._on_reply)

    def _on_event(self, t: int, frames: list[bytes]) -> None:
        topic = frames[0]
        if topic.endswith(b".heartbeat"):
            self.heartbeats += 1
            return
        self.events += 1
        if topic.endswith(b".card.dealt"):
            self.dealt += 1
        elif b".alarm." in topic:
            self.alarms += 1

    def _on_reply(self, t: int, frames: list[bytes]) -> None:
        msg = msgspec.json.decode(frames[-1])
        self.replies[msg.get("id")] = msg

    def send(self, cmd: str) -> int:
        self._ids += 1
        self.ctl.send(
            msgspec.json.encode({"cmd": cmd, "args": {}, "id": self._ids, "actor": "bench"})
        )
        return self._ids

    def reply(self, i: int) -> dict[str, Any]:
        self.loop.wait(lambda: i in self.replies, 30.0, "a control reply")
        r = self.replies.pop(i)
        if not r.get("ok"):
            raise RuntimeError(f"tabled refused a command: {r.get('error')}")
        return r["result"]  # type: ignore[no-any-return]


def run(
    *,
    size: Size = "full",
    hands: int = 100_000,
    seconds: float = 50.0,
    log: Callable[[str], None] = print,
    variant: str | None = None,
) -> dict[str, Any]:
    if size != "full":
        cap_hands, cap_s = pick(size, 0, 3_000, 150), pick(size, 0.0, 20.0, 10.0)
        hands, seconds = min(hands, cap_hands), min(seconds or cap_s, cap_s)
    sample_every = pick(size, 1_000, 250, 50)
    first_mark = pick(size, 10_000, 1_000, 100)
    where = proc.workdir("soak-")
    pty = proc.Pty()
    cfg, ep = proc.write_config(where, shoe_session(cards=1), port=pty.path)
    d = proc.DaemonProcess(cfg, log=None, variant=variant)  # info-level logs, thrown away
    traced = variant in ("tracemalloc", "heap-stats")  # a SIGUSR1 with each sample
    heap: dict[str, Any] = {}
    loop = Loop()
    soak = _Soak(loop, ep["publish"], ep["control"])
    samples: list[dict[str, Any]] = []
    try:
        d.start()
        loop.wait(lambda: soak.heartbeats > 0, 15.0, "a heartbeat")
        while not all(x["health"] == "ok" for x in soak.reply(soak.send("devices"))["devices"]):
            loop.idle(20_000_000)
        loop.idle(300_000_000)
        m0 = d.memory()
        samples.append({"hands": 0, "s": 0.0, **_parts(m0)})
        if traced:
            os.kill(d.pid, signal.SIGUSR1)
        log(
            f"  soak: up to {hands:,} hands, {seconds or 'no'} s bound; RSS at start {m0['VmRSS'] >> 10} MiB"
        )
        dealer = ShoeDealer(seed=3)
        load = Load([d.pid])
        cpu0, ev0 = d.oncpu_seconds(), soak.events
        t0 = time.monotonic()
        played = 0
        expected = soak.dealt
        pending: int | None = None
        for step in dealer.steps():
            dealer.decisions.clear()
            if step.kind == "cmd":
                i = soak.send(step.name)
                if step.name == "betting.open":
                    pending = i  # betting.close follows at once; both answered in order
                    continue
                if pending is not None:
                    soak.reply(pending)
                    pending = None
                soak.reply(i)
                continue
            for f in step.frames:
                pty.write(f.line)
                if f.card is not None:
                    expected += 1
            loop.wait(lambda e=expected: soak.dealt >= e, 30.0, "the hand's events")
            if "hand.result" not in step.frames[-1].events:
                continue  # the burn
            played += 1
            if played % sample_every == 0:
                m = d.memory()
                samples.append({"hands": played, "s": round(time.monotonic() - t0, 1), **_parts(m)})
                if traced:
                    os.kill(d.pid, signal.SIGUSR1)
                if d.proc is not None and d.proc.poll() is not None:
                    raise RuntimeError("tabled exited during the soak")
            if played >= hands or (seconds and time.monotonic() - t0 > seconds):
                break
        elapsed = time.monotonic() - t0
        cpu = d.oncpu_seconds() - cpu0
        events = soak.events - ev0
        m1 = d.memory()
        loadr = load.result()
        if soak.alarms:
            raise RuntimeError(f"the soak raised {soak.alarms} alarm(s)")
        if d.stop() != 0:
            raise RuntimeError("tabled exited with an error")
        if traced:  # before the cleanup: the records are in the run's directory
            heap = _heap_growth(cfg.parent / "tracemalloc", samples, first_mark)
    finally:
        d.close()
        loop.close()
        pty.close()
        proc.cleanup(where, ep)

    at_mark = next((s for s in samples if s["hands"] >= first_mark), None)
    after = [s for s in samples if s["hands"] >= first_mark]
    slope = None
    if len(after) >= 3:
        xs = [s["hands"] for s in after]
        ys = [s["rss_kib"] for s in after]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        var = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    out: dict[str, Any] = {
        "hands": played,
        "target_hands": hands,
        "seconds": round(elapsed, 1),
        "hands_per_s": round(played / elapsed, 1),
        "events": events,
        "cpu_s": round(cpu, 2),
        "cpu_us_per_event": round(cpu / events * 1e6, 1) if events else None,
        "rss_start_kib": samples[0]["rss_kib"],
        f"rss_at_{first_mark}_hands_kib": at_mark["rss_kib"] if at_mark else None,
        "rss_end_kib": m1["VmRSS"],
        "peak_rss_kib": m1["VmHWM"],
        "rss_slope_kib_per_10k_hands": round(slope * 10_000, 1) if slope is not None else None,
        "samples": samples,
        "machine_load": loadr,
        "floor_rss_kib": floors.rss().get("rss_kib"),
    }
    if played < hands and slope is not None:
        out["extrapolated_rss_at_target_kib"] = round(m1["VmRSS"] + slope * (hands - played))
    if heap:
        out["heap"] = heap
    return out


def _parts(m: dict[str, int]) -> dict[str, int]:
    return {
        "rss_kib": m["VmRSS"],
        "hwm_kib": m["VmHWM"],
        "anon_kib": m.get("RssAnon", 0),
        "file_kib": m.get("RssFile", 0),
        "shmem_kib": m.get("RssShmem", 0),
    }


def _heap_growth(where: Any, samples: list[dict[str, Any]], first_mark: int) -> dict[str, Any]:
    """The daemon's heap records (one per sample, in order: :mod:`bench.variant`'s
    ``heap-stats``) added to the samples, in KiB: malloc's bytes in use, free and mmapped,
    pymalloc's arenas (1 MiB each) and the bytes in their blocks, pymalloc's block count,
    full collections, SQLite's own, the tracemalloc total. From the sample at the first
    mark to the last: the mappings whose RSS moved, the object types that grew, and with
    snapshots what grew, by line and by traceback."""
    import json
    import tracemalloc

    snaps = sorted(where.glob("snap-*.json"))
    for s, f in zip(samples, snaps, strict=False):
        rec = json.loads(f.read_text())
        mi = rec["malloc"]
        s["malloc_used_kib"] = (mi["uordblks"] + mi["hblkhd"]) >> 10
        s["malloc_free_kib"] = mi["fordblks"] >> 10
        s["malloc_mmap_kib"] = mi["hblkhd"] >> 10
        s["sqlite_kib"] = rec["sqlite_used"] >> 10
        pm = rec["pymalloc"]
        s["blocks"] = rec["blocks"]
        if "gc" in rec:  # full collections so far, and the objects they freed
            s["gc2"] = rec["gc"][2]["collections"]
            s["gc2_freed"] = rec["gc"][2]["collected"]
        if pm:  # none under tracemalloc, whose hooks wrap pymalloc
            s["pymalloc_arenas"] = pm["arenas_allocated_current"]
            s["pymalloc_used_kib"] = pm["bytes_in_allocated_blocks"] >> 10
        if "traced" in rec:
            s["traced_kib"] = rec["traced"] >> 10
    out: dict[str, Any] = {}
    recs = [s for s in samples if "malloc_used_kib" in s]
    if len(recs) >= 2:  # which mappings' RSS moved from the first mark to the last sample
        j0 = next((i for i, s in enumerate(recs) if s["hands"] >= first_mark), 0)
        r0, r1 = (json.loads(snaps[j].read_text()) for j in (j0, len(recs) - 1))

        def at(k: str) -> str:  # a mapping by its start and name (a heap's end moves)
            return k.split("-", 1)[0] + " " + k.partition(" ")[2]

        m0 = {at(k): v for k, v in r0["smaps"].items()}
        moved = sorted(
            ((v[1] - m0.get(at(k), [0, 0])[1], k, v[0]) for k, v in r1["smaps"].items()),
            key=lambda x: -abs(x[0]),
        )
        t0 = r0["gc_types"]
        grew = sorted(((n - t0.get(t, 0), t, n) for t, n in r1["gc_types"].items()), reverse=True)
        out["gc_types_grew"] = [f"{d:+7d} {t} (now {n})" for d, t, n in grew[:12] if d]
        out["smaps_from_hands"], out["smaps_to_hands"] = recs[j0]["hands"], recs[-1]["hands"]
        out["smaps_moved"] = [
            f"{d:+6d} KiB RSS  {k} (size {size} KiB)" for d, k, size in moved[:8] if d
        ]
    done = [s for s in samples if "traced_kib" in s]
    if len(done) < 2:
        return out
    i0 = next((i for i, s in enumerate(done) if s["hands"] >= first_mark), 0)
    i1 = len(done) - 1
    # a record's number is its sample's (tracing may start late: ``$BENCH_TRACE_FROM``)
    a, b = (
        tracemalloc.Snapshot.load(str(where / f"snap-{samples.index(done[i]):04d}.pickle"))
        for i in (i0, i1)
    )
    noise = (
        tracemalloc.Filter(False, tracemalloc.__file__),
        tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
        tracemalloc.Filter(False, "<frozen importlib._bootstrap_external>"),
    )
    a, b = a.filter_traces(noise), b.filter_traces(noise)
    by_line = b.compare_to(a, "lineno")
    by_tb = b.compare_to(a, "traceback")
    return out | {
        "from_hands": done[i0]["hands"],
        "to_hands": done[i1]["hands"],
        "growth_kib": (done[i1]["traced_kib"] - done[i0]["traced_kib"]),
        "top_lines": [
            f"{d.size_diff / 1024:+8.1f} KiB {d.count_diff:+6d} blocks  {d.traceback[0]}"
            for d in by_line[:20]
        ],
        "top_tracebacks": [
            f"{d.size_diff / 1024:+8.1f} KiB {d.count_diff:+6d} blocks\n      "
            + "\n      ".join(str(fr) for fr in d.traceback)
            for d in by_tb[:5]
        ],
    }


if __name__ == "__main__":
    import pprint

    p = argparse.ArgumentParser(prog="python -m bench.memory")
    p.add_argument("seconds", nargs="?", type=float, default=60.0)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--hands", type=int, default=100_000)
    p.add_argument("--variant", choices=("tracemalloc", "heap-stats", "none"))
    a = p.parse_args()
    r = run(
        size="quick" if a.quick else "full",
        hands=a.hands,
        seconds=a.seconds,
        variant=a.variant,
    )
    heap = r.pop("heap", None)
    for s in r.pop("samples"):
        print(" ".join(f"{k}={v}" for k, v in s.items()))
    pprint.pprint(r, width=110)
    if heap and "smaps_moved" in heap:
        print(f"mappings' RSS, hands {heap['smaps_from_hands']:,} -> {heap['smaps_to_hands']:,}:")
        print("\n".join(heap["smaps_moved"]))
        print("objects the collector tracks, by type, most grown:")
        print("\n".join(heap["gc_types_grew"]))
    if heap and "top_lines" in heap:
        print(
            f"traced heap, hands {heap['from_hands']:,} -> {heap['to_hands']:,}: {heap['growth_kib']:+} KiB"
        )
        print("\n".join(heap["top_lines"]))
        print("\n".join(heap["top_tracebacks"]))
