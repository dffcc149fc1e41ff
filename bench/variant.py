"""tabled with one change applied at start-up, to measure a proposed fix before it is made.

    python -m bench.variant NAME --config table.toml

Used only by :mod:`bench.experiments`, never by ``make bench``. Each variant
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

    from daemon import bus, journal, pipeline

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


VARIANTS: dict[str, Callable[[], None]] = {
    "timeline": _timeline,
    "cpu-profile": _cpu_profile,
    "none": lambda: None,
}


def main() -> int:
    name, *rest = sys.argv[1:]
    VARIANTS[name]()
    from daemon.app import main as tabled

    return tabled(rest)


if __name__ == "__main__":
    sys.exit(main())
