"""tabled with one change applied at start-up, to measure a proposed fix before it is made.

    python -m bench.variant NAME --config table.toml

Used only by :mod:`bench.experiments` and ``python -m bench.memory --variant``, never
by ``make bench``. Each variant
patches the running daemon's code from outside (the daemon's files are not
touched) the way the proposed change would behave. (``inline-commit`` and
``no-decide-ahead`` were variants until the commit moved to the loop's thread and
the decide-ahead went with it, ``io-batch`` until the daemon made its ZeroMQ I/O
threads ``SCHED_BATCH`` itself: ``docs/decisions.md``.)

* ``timeline``: no change in behaviour; the commit path is timed stage by
  stage (``time.monotonic_ns``, the benchmark's clock) and the stamps are
  written at exit to the file named by ``$BENCH_TIMELINE``;
* ``cpu-profile``: no change in behaviour; cProfile on the event loop's thread, timed
  by that thread's CPU clock (``time.thread_time``), so waits cost nothing; the
  stats go at exit to the file named by ``$BENCH_CPROFILE``;
* ``heap-stats``: no change in behaviour; every ``SIGUSR1`` writes the process's heaps
  (glibc's ``mallinfo2`` over all arenas, pymalloc's, SQLite's ``sqlite3_memory_used``,
  each mapping's RSS, the collector's objects by type) to ``snap-NNNN.json`` in the
  directory named by ``$BENCH_TRACEMALLOC``: the soak (``bench.memory --variant
  heap-stats``) sends one with each RSS sample;
* ``tracemalloc``: ``heap-stats``, and ``tracemalloc`` traces the Python heap (8 frames a
  block) from start-up, or from record ``$BENCH_TRACE_FROM``: each ``SIGUSR1`` also
  dumps a snapshot (``snap-NNNN.pickle``), which the soak diffs at the end;
* ``none``: no change (the same launcher, as a control).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def _timeline() -> None:
    """Stamps per commit: process start, append start/end, publish start/end."""
    import atexit
    import json
    import os
    import time

    from daemon import journal
    from daemon.bus import bus
    from daemon.pipeline import pipeline

    now = time.monotonic_ns
    rec: dict[str, list[Any]] = {"process": [], "append": [], "publish": [], "listeners": []}
    process, commit = pipeline.Pipeline._commit_batch, journal.Journal.commit
    publish = bus.Bus.publish

    async def timed_process(self: Any, batch: Any) -> None:
        # from the decided batch's commit
        rec["process"].append((now(), len(batch.items)))
        await process(self, batch)
        rec["listeners"].append(now())

    def timed_commit(self: Any, batches: Any, snapshot: Any = None) -> Any:
        t0 = now()
        out = commit(self, batches, snapshot)
        mono = batches[0].mono if batches else None
        rec["append"].append((t0, now(), mono, len(out[0])))
        return out

    def timed_publish(self: Any, events: Any, raw: Any = None) -> None:
        t0 = now()
        publish(self, events, raw)
        rec["publish"].append((t0, now(), events[0].seq if events else None))

    pipeline.Pipeline._commit_batch = timed_process  # type: ignore[method-assign]
    journal.Journal.commit = timed_commit  # type: ignore[method-assign]
    bus.Bus.publish = timed_publish  # type: ignore[method-assign]

    def dump() -> None:
        path = os.environ.get("BENCH_TIMELINE")
        if path:
            with open(path, "w") as f:
                json.dump(rec, f)

    atexit.register(dump)


def _cpu_profile() -> None:
    import atexit
    import cProfile
    import os
    import time

    prof = cProfile.Profile(time.thread_time)
    prof.enable()

    def dump() -> None:
        prof.disable()
        path = os.environ.get("BENCH_CPROFILE")
        if path:
            prof.dump_stats(path)

    atexit.register(dump)


#: glibc's ``struct mallinfo2``, all ``size_t``
_MALLINFO2 = (
    "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
    "fordblks", "keepcost",
)  # fmt: skip


def _pymalloc(path: str) -> dict[str, int]:
    """pymalloc's arenas (mmapped apart from malloc's heaps, so in neither ``mallinfo2`` nor
    tracemalloc's totals): ``sys._debugmallocstats``, which writes to fd 2, read back."""
    import os
    import sys

    out: dict[str, int] = {}
    saved = os.dup(2)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    with open(path) as f:
        for line in f:
            if line.startswith("# ") and "=" in line:
                k, _, v = line[2:].partition("=")
                out["_".join(k.split())] = int(v.strip().replace(",", ""))
    os.unlink(path)
    return out


def _smaps() -> dict[str, list[int]]:
    """Each mapping's size and RSS in KiB, by ``start-end name`` (``/proc/self/smaps``)."""
    out: dict[str, list[int]] = {}
    key = ""
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(maxsplit=5)
            if head[0].endswith(":"):
                if head[0] in ("Size:", "Rss:"):
                    out[key].append(int(head[1]))
                continue
            key = f"{head[0]} {head[5].strip() if len(head) > 5 else ''}".strip()
            out[key] = []
    return out


def _heap_stats(trace: bool) -> None:
    """On every SIGUSR1, the process's heaps into ``$BENCH_TRACEMALLOC``/``snap-NNNN.json``:
    glibc's ``mallinfo2`` (all arenas: bytes in use, free, mmapped), pymalloc's arenas
    (:func:`_pymalloc`), SQLite's own ``sqlite3_memory_used``, each mapping's RSS, the
    count of pymalloc's blocks, full collections so far, the objects the collector tracks
    by type, ``/proc/self/status``'s RSS parts; with ``trace``, the tracemalloc total and
    a snapshot (``snap-NNNN.pickle``)."""
    import _sqlite3
    import collections
    import ctypes
    import gc
    import json
    import os
    import signal
    import sys
    import tracemalloc

    class MallInfo2(ctypes.Structure):
        _fields_ = tuple((k, ctypes.c_size_t) for k in _MALLINFO2)

    # ``$BENCH_TRACE_FROM``: tracing starts at that record, not at start-up, so the
    # snapshots hold only what was allocated since (and the daemon runs at full speed before)
    trace_from = int(os.environ.get("BENCH_TRACE_FROM", "0")) if trace else -1
    if trace_from == 0:
        tracemalloc.start(8)
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    sqlite = ctypes.CDLL(_sqlite3.__file__)  # its symbols resolve in libsqlite3 it links
    sqlite.sqlite3_memory_used.restype = ctypes.c_int64
    sqlite.sqlite3_memory_highwater.restype = ctypes.c_int64
    where = os.environ.get("BENCH_TRACEMALLOC")
    n = [0]

    def dump(*_: Any) -> None:
        if not where:
            return
        base = os.path.join(where, f"snap-{n[0]:04d}")
        rec: dict[str, Any] = {}
        if n[0] == trace_from and not tracemalloc.is_tracing():
            tracemalloc.start(8)
        if tracemalloc.is_tracing():
            snap = tracemalloc.take_snapshot()
            rec["traced"], rec["peak"] = tracemalloc.get_traced_memory()
            rec["overhead"] = tracemalloc.get_tracemalloc_memory()
            snap.dump(base + ".pickle")
            del snap
        mi = libc.mallinfo2()
        rec["malloc"] = {k: getattr(mi, k) for k in _MALLINFO2}
        rec["sqlite_used"] = sqlite.sqlite3_memory_used()
        rec["sqlite_highwater"] = sqlite.sqlite3_memory_highwater(0)
        rec["pymalloc"] = _pymalloc(base + ".pymalloc")
        rec["smaps"] = _smaps()
        rec["blocks"] = sys.getallocatedblocks()
        rec["gc"] = gc.get_stats()  # per generation: collections, collected, uncollectable
        kinds = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
        rec["gc_types"] = dict(kinds)
        with open("/proc/self/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "Threads"):
                    rec[k] = int(v.split()[0])
        with open(base + ".json", "w") as f:
            json.dump(rec, f)
        n[0] += 1

    # a plain handler (not the loop's): it runs on the main thread between bytecodes
    signal.signal(signal.SIGUSR1, dump)


VARIANTS: dict[str, Callable[[], None]] = {
    "timeline": _timeline,
    "cpu-profile": _cpu_profile,
    "tracemalloc": lambda: _heap_stats(True),
    "heap-stats": lambda: _heap_stats(False),
    "none": lambda: None,
}


def main() -> int:
    name, *rest = sys.argv[1:]
    VARIANTS[name]()
    from daemon.runtime.app import main as tabled

    return tabled(rest)


if __name__ == "__main__":
    sys.exit(main())
