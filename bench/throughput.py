"""Throughput, in-process: no pty, no daemon process, the daemon's own code.

* **protocol + table**: frame bytes → the device's protocol → the table's
  ``decide`` and ``apply``, as ``DeviceRunner.on_data`` and
  ``Pipeline._process`` run them; no I/O. One line per ``feed`` (how frames
  arrive at a dealer's or a wheel's pace). Commands between hands are
  decided too but not timed.
* **journal + publish**: the session's decisions appended with
  ``Journal.commit`` (a file on the same disk, WAL, ``synchronous=FULL``),
  one transaction per reading as the pipeline commits a lone reading,
  snapshots every 1000 events as ``Pipeline._commit`` takes them, each
  commit's events published (the stored bytes) with ``Bus.publish`` to a subscriber in another
  process that counts them.
  Each reading's commit and publish are timed apart (wall µs: p50, mean, p99),
  so a run shows which of the two moved against the bare SQLite floor.
* **pipeline**: the same readings through ``Pipeline`` itself (decide,
  the commit, publish, and ``log_events`` writing its JSON lines to
  /dev/null as tabled writes them to journald): once awaiting each commit
  (one transaction per reading), once with readings arriving faster than
  they commit (2,000 waiting at any time: group commit, up to 512 inputs
  per transaction).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import msgspec
import zmq
import zmq.asyncio

from bench import floors, proc
from bench.session import Session, shoe_session, wheel_available, wheel_session
from bench.sizes import Size, pick
from bench.stats import Load
from daemon.bus.bus import Bus
from daemon.bus.publisher import io_threads_yield
from daemon.games import find as game_class
from daemon.journal import SNAPSHOT_EVENT, Batch, Journal
from daemon.journal.events import utc_text
from daemon.table import Command, DeviceReading, Table
from drivers.base import driver_class
from drivers.readings import Malformed, Unknown


def _table(sess: Session) -> Table:
    cls = game_class(sess.game)
    assert cls is not None
    return Table(cls(msgspec.convert(sess.rules, cls.Rules)), [sess.device])


def _protocol(sess: Session) -> Any:
    drv = driver_class(sess.driver)
    return drv(msgspec.convert(sess.options, drv.Options)).protocol()


# -- protocol + table ----------------------------------------------------------------------------


def protocol_table(sess: Session, repeat: int = 3) -> dict[str, Any]:
    """Frames per second through protocol + table; the best of ``repeat`` passes.

    Timed on the thread's CPU clock (the machine is shared: a pass that lost
    the CPU to another process is not slower code) and on the wall clock.
    """
    lines = [(s.kind, s.name, [f.line for f in s.frames]) for s in sess.steps]
    frames = sum(len(x[2]) for x in lines)
    best_cpu = best_wall = best_proto = float("inf")
    dev = sess.device
    clock = time.thread_time_ns
    for _ in range(repeat):
        table, proto = _table(sess), _protocol(sess)
        state = table.initial()
        decide, apply = table.decide, table.apply
        mono = 0.0
        cpu = wall = 0
        gc.collect()
        for kind, name, burst in lines:
            if kind == "cmd":
                d = decide(state, Command(name, {}, "bench", "dealer", source="control", mono=mono))
                for x in d.drafts:
                    state = apply(state, x.type, x.data)
                continue
            c0, w0 = clock(), time.perf_counter_ns()
            for line in burst:
                mono += 0.001
                for r in proto.feed(line, mono):
                    if isinstance(r, Malformed | Unknown):
                        raise RuntimeError(f"bad frame {line!r}: {r}")
                    d = decide(state, DeviceReading(dev, r, mono))
                    for x in d.drafts:
                        state = apply(state, x.type, x.data)
            cpu += clock() - c0
            wall += time.perf_counter_ns() - w0
        best_cpu = min(best_cpu, cpu / 1e9)
        best_wall = min(best_wall, wall / 1e9)
        proto = _protocol(sess)
        c0 = clock()
        mono = 0.0
        for _kind, _, burst in lines:
            for line in burst:
                mono += 0.001
                proto.feed(line, mono)
        best_proto = min(best_proto, (clock() - c0) / 1e9)
    return {
        "frames": frames,
        "frames_per_s": round(frames / best_cpu),
        "frames_per_wall_s": round(frames / best_wall),
        "us_per_frame": round(best_cpu / frames * 1e6, 2),
        "protocol_only_us_per_frame": round(best_proto / frames * 1e6, 2),
        "table_us_per_frame": round((best_cpu - best_proto) / frames * 1e6, 2),
    }


# -- journal + publish ---------------------------------------------------------------------------


class _Sink:
    """bench.sink in its own process, subscribed before anything is measured."""

    def __init__(self, bus: Bus, expected: int) -> None:
        self.p = subprocess.Popen(
            [sys.executable, "-m", "bench.sink", bus.publish_endpoint, str(expected)],
            cwd=proc.ROOT,
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        assert self.p.stdout is not None
        self.p.stdout.readline()  # ready
        os.set_blocking(self.p.stdout.fileno(), False)
        deadline = time.monotonic() + 10
        buf = b""
        while b"synced" not in buf:
            if time.monotonic() > deadline:
                raise RuntimeError("the subscriber never saw a heartbeat")
            bus.heartbeat({"last_seq": 0}, utc_text(time.time()), time.monotonic())
            time.sleep(0.02)
            buf += self.p.stdout.read() or b""
        os.set_blocking(self.p.stdout.fileno(), True)

    def result(self) -> dict[str, Any]:
        assert self.p.stdout is not None
        out = self.p.stdout.read()
        self.p.wait(30)
        return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(10)


async def _bus(where: Any, table: str) -> tuple[zmq.asyncio.Context, Bus, Journal]:
    j = Journal(where / "journal.sqlite", table)
    ctx = zmq.asyncio.Context()
    io_threads_yield(ctx)  # as daemon/runtime/app.py makes its context
    bus = Bus(
        ctx,
        table=table,
        publish=f"tcp://127.0.0.1:{proc.free_port()}",
        replay=f"tcp://127.0.0.1:{proc.free_port()}",
        journal_path=str(where / "journal.sqlite"),
        journal_id=j.journal_id,
    )
    await bus.start()
    return ctx, bus, j


def _spread(us: list[float]) -> dict[str, float]:
    """p50, mean and p99 of per-reading wall µs (the mean carries the checkpoints' tail)."""
    q = sorted(us)
    return {
        "p50": round(q[len(q) // 2], 1),
        "mean": round(sum(q) / len(q), 1),
        "p99": round(q[int(len(q) * 0.99)], 1),
    }


async def _journal_publish(sess: Session, snapshot_every: int = 1000) -> dict[str, Any]:
    where = proc.workdir("tp-")
    table = _table(sess)
    # the states the snapshots are taken of, decided beforehand (not timed)
    state = table.initial()
    plan: list[tuple[Any, list[Any], Any]] = []
    for inp, drafts in sess.decisions:
        for x in drafts:
            state = table.apply(state, x.type, x.data)
        if drafts:
            plan.append((inp, drafts, state))
    n_events = sum(len(d) for _, d, _ in plan)
    ctx, bus, j = await _bus(where, "tp")
    sink: _Sink | None = None
    bodies: list[Any] = []
    try:
        sink = _Sink(bus, n_events)
        gc.collect()
        load = Load([sink.p.pid])
        # each reading's commit and publish, wall µs: where the time goes beside the floor
        commit_us: list[float] = []
        publish_us: list[float] = []
        now = time.perf_counter
        c0, t0 = time.process_time(), time.perf_counter()
        for inp, drafts, st in plan:
            n = len(drafts)
            snap = None
            if (j.last_seq + n) // snapshot_every > j.last_seq // snapshot_every:
                snap = (table.state_version, table.encode_state(st))
            # the append prunes old snapshots in its own transaction, as the pipeline's does
            a = now()
            evs, raws = j.commit(
                [Batch(drafts, utc_text(time.time()), getattr(inp, "mono", None))], snap
            )
            b = now()
            bus.publish(evs, raws)
            commit_us.append((b - a) * 1e6)
            publish_us.append((now() - b) * 1e6)
            bodies.append(evs)
        t1, c1 = time.perf_counter(), time.process_time()
        got = sink.result()
        t_sub = (
            (got["last_ns"] / 1e9 - (time.monotonic() - (time.perf_counter() - t0)))
            if got["last_ns"]
            else None
        )
        per_reading = [b"".join(e.canonical() for e in evs) for evs in bodies]
        return {
            "readings": len(plan),
            "events": n_events,
            "transactions": len(plan),
            "seconds": round(t1 - t0, 3),
            "events_per_s": round(n_events / (t1 - t0)),
            "readings_per_s": round(len(plan) / (t1 - t0)),
            "cpu_us_per_event": round((c1 - c0) / n_events * 1e6, 1),
            "commit_us": _spread(commit_us),
            "publish_us": _spread(publish_us),
            "subscriber_received": got["received"],
            "subscriber_done_s": round(t_sub, 3) if t_sub is not None else None,
            "machine_load": load.result(),
            "_bodies": per_reading,
        }
    finally:
        if sink is not None:
            sink.close()
        await bus.close()
        ctx.term()
        j.close()
        shutil.rmtree(where, ignore_errors=True)


async def _pipeline(
    sess: Session, *, one_at_a_time: bool, snapshot_every: int = 1000
) -> dict[str, Any]:
    from daemon.pipeline.pipeline import Pipeline
    from daemon.runtime.event_log import event_logger

    where = proc.workdir("tp-")
    inputs = [inp for inp, drafts in sess.decisions]
    n_events = sum(len(d) for _, d in sess.decisions)
    ctx, bus, j = await _bus(where, "tp")
    table = _table(sess)
    p = Pipeline(table, j, snapshot_every=snapshot_every)
    p.publishers.append(bus.publish)  # as daemon/runtime/app.py: the moment each commit returns
    p.listeners.append(event_logger("all", table.game.describe))
    task = asyncio.create_task(p.run())
    sink: _Sink | None = None
    try:
        sink = _Sink(bus, n_events)
        gc.collect()
        load = Load([sink.p.pid])
        c0, t0 = time.process_time(), time.perf_counter()
        if one_at_a_time:
            for inp in inputs:
                fut = p.submit(inp, reply=True)
                assert fut is not None
                await fut
        else:
            # readings arrive faster than commits: up to `window` wait at any time, so each
            # transaction takes everything queued meanwhile (the pipeline takes 512 at most)
            window = 2_000
            inflight: deque[asyncio.Future[Any]] = deque()
            for inp in inputs:
                fut = p.submit(inp, reply=True)
                assert fut is not None
                inflight.append(fut)
                if len(inflight) >= window:
                    await inflight.popleft()
            await asyncio.gather(*inflight)
        t1, c1 = time.perf_counter(), time.process_time()
        got = sink.result()
        sealed = j.db.execute(
            "SELECT COUNT(*) FROM events WHERE type = ?", (SNAPSHOT_EVENT,)
        ).fetchone()[0]
        if p.stats.events - sealed != n_events:
            raise RuntimeError(
                f"pipeline committed {p.stats.events - sealed} decided events "
                f"(+{sealed} snapshots), expected {n_events}"
            )
        return {
            "readings": len(inputs),
            "events": n_events,
            "transactions": p.stats.commits,
            "seconds": round(t1 - t0, 3),
            "events_per_s": round(n_events / (t1 - t0)),
            "readings_per_s": round(len(inputs) / (t1 - t0)),
            "cpu_us_per_event": round((c1 - c0) / n_events * 1e6, 1),
            "subscriber_received": got["received"],
            "machine_load": load.result(),
        }
    finally:
        if sink is not None:
            sink.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        p.close()
        await bus.close()
        ctx.term()
        j.close()
        shutil.rmtree(where, ignore_errors=True)


def _quiet_logs() -> Callable[[], None]:
    """tabled's logging set up as in production (JSON lines), written to /dev/null."""
    from daemon.runtime import logs

    devnull = open(os.devnull, "w")
    real = sys.stdout
    sys.stdout = devnull
    try:
        logs.setup("info", "json", table="tp")
    finally:
        sys.stdout = real
    return devnull.close


def run(*, size: Size = "full", log: Callable[[str], None] = print) -> dict[str, Any]:
    big = shoe_session(cards=pick(size, 10_000, 2_000, 300))
    mid = shoe_session(cards=pick(size, 5_000, 1_000, 200))
    small = shoe_session(cards=pick(size, 2_000, 500, 200))
    out: dict[str, Any] = {}
    sessions = [("shoe", big)]
    if wheel_available():
        sessions.append(("wheel", wheel_session(events=pick(size, 3_000, 1_000, 300), short=False)))
    for name, sess in sessions:
        log(f"  protocol + table: {name}, {len(sess.frames)} frames")
        load = Load([])
        out[f"protocol_table_{name}"] = protocol_table(sess) | {
            "floor_bare_loop": floors.bare_lines(sess),
            "machine_load": load.result(),
        }
    # the smoke's sessions are short: it snapshots often, so it meets the snapshot events
    snapshot_every = pick(size, 1000, 1000, 50)
    close = _quiet_logs()
    try:
        log(f"  journal + publish: {mid.events} events, one transaction per reading")
        jp = asyncio.run(_journal_publish(mid, snapshot_every))
        bodies = jp.pop("_bodies")
        log(f"  floors: write + fdatasync, bare SQLite; {min(3000, len(bodies))} readings")
        jp["floor_fdatasync_per_reading"] = floors.fsync_per_reading(bodies[:3000])
        jp["floor_bare_sqlite_per_reading"] = floors.sqlite_per_reading(bodies[:3000])
        out["journal_publish"] = jp
        log(f"  pipeline: one transaction per reading, {small.events} events")
        out["pipeline_one_tx_per_reading"] = asyncio.run(
            _pipeline(small, one_at_a_time=True, snapshot_every=snapshot_every)
        )
        log(f"  pipeline: readings faster than commits (group commit), {big.events} events")
        out["pipeline_group_commit"] = asyncio.run(
            _pipeline(big, one_at_a_time=False, snapshot_every=snapshot_every)
        )
    finally:
        close()
    return out


if __name__ == "__main__":
    import pprint

    pprint.pprint(run(size="quick" if "--quick" in sys.argv else "full"), width=110)
