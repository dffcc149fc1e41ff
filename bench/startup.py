"""Start-up and replay: READY=1 with an empty and with a 1,000,000-event journal.

Start-up is the time from spawning ``tabled`` (as systemd runs it) to its
``READY=1`` on the notify socket: interpreter, imports, config, journal
recovery (the whole chain walked unless the journal's seal holds, then the
newest proven snapshot and the events after it), the sockets bound. The big
journal is started once more first: that start finds no seal (the file is a
fresh copy) and walks every event; it is reported on its own. Each case is started
three times (the page cache is warm, as on a restart; a cold boot also reads the
interpreter from disk). The import floor is spawn-to-exit of ``python -c "import
daemon.runtime.app"`` (:func:`_import_time`), sampled beside each start.

After a crash (SIGKILL) there is no seal: without a checkpoint key the start walks
the whole chain (the first start above); with ``[security] checkpoint_key`` it walks
from the newest stored proof (``daemon/journal/proofs.py``), measured as ``crash_keyed``:
the daemon is killed and started again, ``starts`` times.

Replay: with the daemon up on the big journal, one DEALER asks the replay
socket for events 1..1,000,000 and counts the frames until the end marker,
as a subscriber that joined late (or a backend rebuilding its store) does.

Floors (:mod:`bench.floors`): the interpreter alone and with the daemon's
libraries imported; for replay, the same rows sent by a bare loop. An empty
journal's start is also given in CPU seconds (the process's utime + stime at
READY, and the floor's), which load from other processes distorts far less
than the wall clock.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import zmq

from bench import floors, proc
from bench.journal1m import TABLE, build, key_path
from bench.session import shoe_session
from bench.sizes import Size, pick


def _recovered(log: Path) -> dict[str, Any]:
    for line in log.read_text(errors="replace").splitlines():
        if '"journal recovered"' in line:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            keys = (
                "seconds",
                "sealed",
                "verified",
                "verified_from",
                "replayed",
                "from_snapshot",
                "last_seq",
            )
            return {k: d.get(k) for k in keys}
    return {}


def _starts(
    cfg: Path, where: Path, n: int, pty: proc.Pty, floor: list[float]
) -> tuple[list[float], list[float], list[dict[str, Any]], proc.DaemonProcess]:
    times: list[float] = []
    cpus: list[float] = []
    rec: list[dict[str, Any]] = []
    d: proc.DaemonProcess | None = None
    for i in range(n):
        if i:  # the first start (the whole chain walked) is reported on its own
            floor.append(_import_time())
        d = proc.DaemonProcess(cfg, log=where / f"daemon-{i}.log")
        times.append(d.start())
        cpus.append(d.cpu_seconds())
        rec.append(_recovered(where / f"daemon-{i}.log"))
        if i < n - 1:
            if d.stop() != 0:
                raise RuntimeError("tabled exited with an error" + d._tail())
            d.close()
        pty.drain()
    assert d is not None
    return times, cpus, rec, d


def _summary(times: list[float], cpus: list[float] | None = None) -> dict[str, Any]:
    out = {
        "runs_s": [round(t, 3) for t in times],
        "median_s": round(statistics.median(times), 3),
        "max_s": round(max(times), 3),
    }
    if cpus:  # the process's own CPU up to READY: what load on the machine distorts least
        out["cpu_runs_s"] = [round(c, 3) for c in cpus]
        out["cpu_median_s"] = round(statistics.median(cpus), 3)
    return out


def _import_time() -> float:
    """Wall seconds from spawning ``python -c "import daemon.runtime.app"`` to its exit: the floor a
    start (spawn to READY) is judged against, the interpreter's start included in both.

    Taken beside every measured start with a big journal, and the goals use the median:
    one sample at the run's start, against medians of starts minutes later, swung the
    ratio by ±0.3 on this shared VM (docs/performance.md, Start-up). Until round 4 it was
    ``-X importtime``'s cumulative figure for ``daemon.runtime.app``, which leaves out the
    interpreter's start and adds the tracing's own cost: a start with the big journal
    came out *faster* than its floor (0.89×)."""
    t0 = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", "import daemon.runtime.app"],
        capture_output=True,
        check=True,
        cwd=proc.ROOT,
    )
    return time.monotonic() - t0


def replay(endpoint: str, start: int, stop: int, timeout: float = 120.0) -> dict[str, Any]:
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RCVHWM, 0)
    s.connect(endpoint)
    try:
        t0 = time.monotonic()
        s.send(msgspec.json.encode({"from": start, "to": stop}))
        n = 0
        first = None
        end: dict[str, Any] = {}
        deadline = t0 + timeout
        while True:
            if not s.poll(max(1, int((deadline - time.monotonic()) * 1000))):
                raise RuntimeError(f"replay: no frame for too long ({n} received)")
            frame = s.recv()
            if first is None:
                first = time.monotonic() - t0
            if frame.startswith(b'{"end":'):
                end = msgspec.json.decode(frame)
                break
            if frame.startswith(b'{"error":'):
                raise RuntimeError(f"replay refused: {frame[:200]!r}")
            n += 1
        seconds = time.monotonic() - t0
    finally:
        s.close()
        ctx.term()
    if n != stop - start + 1 or end.get("to") != stop:
        raise RuntimeError(f"replay sent {n} events, end marker {end}")
    return {
        "events": n,
        "seconds": round(seconds, 2),
        "events_per_s": round(n / seconds),
        "first_event_s": round(first or 0.0, 4),
    }


def run(*, size: Size = "full", log: Callable[[str], None] = print) -> dict[str, Any]:
    big = pick(size, 1_000_000, 100_000, 2_000)
    starts = pick(size, 3, 2, 1)
    sess = shoe_session(cards=1)
    out: dict[str, Any] = {"journal_events": big, "starts_per_case": starts}
    floor = [_import_time()]
    out["floor"] = floors.startup()

    # an empty journal: a fresh state directory for every start
    times: list[float] = []
    cpus: list[float] = []
    for _ in range(starts):
        where = proc.workdir("st0-")
        pty = proc.Pty()
        cfg, ep = proc.write_config(where, sess, port=pty.path, table=TABLE)
        d = proc.DaemonProcess(cfg, log=where / "daemon.log")
        try:
            times.append(d.start())
            cpus.append(d.cpu_seconds())
            d.stop()
        finally:
            d.close()
            pty.close()
            proc.cleanup(where, ep)
    out["empty"] = _summary(times, cpus)
    log(
        f"  start-up, empty journal: {out['empty']['median_s']} s, "
        f"{out['empty']['cpu_median_s']} s of CPU"
    )

    cached = build(big, log=log)
    where = proc.workdir("st1-")
    pty = proc.Pty()
    journal = where / "journal.sqlite"
    shutil.copyfile(cached, journal)
    cfg, ep = proc.write_config(where, sess, port=pty.path, journal=journal, table=TABLE)
    d: proc.DaemonProcess | None = None
    try:
        # The first start on the copied file finds no seal: it walks the whole chain. Every
        # later start follows a clean stop, finds the seal and skips the walk (daemon/journal/seal.py).
        times, cpus, rec, d = _starts(cfg, where, starts + 1, pty, floor)
        out["big"] = _summary(times[1:], cpus[1:]) | {
            "recovery": rec[-1],
            "journal_mib": journal.stat().st_size >> 20,
            "unsealed_first_start": {"s": round(times[0], 3), "recovery": rec[0]},
        }
        log(
            f"  start-up, {big:,}-event journal: {out['big']['median_s']} s sealed, "
            f"{times[0]:.3f} s walking the whole chain (first start on a copy)"
        )
        log(f"  replay of {big:,} events to one subscriber …")
        cpu0 = d.cpu_seconds()
        r = replay(ep["replay"], 1, big)
        r["tabled_cpu_s"] = round(d.cpu_seconds() - cpu0, 2)
        r["tabled_cpu_us_per_event"] = round(r["tabled_cpu_s"] / big * 1e6, 1)
        r["tabled_peak_rss_kib"] = d.memory().get("VmHWM")
        out["replay"] = r
        log(f"  replay: {r['events_per_s']:,} events/s")
        if d.stop() != 0:
            raise RuntimeError("tabled exited with an error" + d._tail())
        log("  replay floor: the same rows, a bare loop, a PUSH socket …")
        out["replay"]["floor"] = floors.replay(journal, big)
        log("  start-up after a crash, with the checkpoint key …")
        d.close()
        d = None
        keyed = f'[security]\ncheckpoint_key = "{key_path()}"\n'
        cfg, ep2 = proc.write_config(
            where, sess, port=pty.path, journal=journal, table=TABLE, extra=keyed
        )
        shutil.rmtree(ep["runtime"], ignore_errors=True)  # the old config's sockets only
        ep = ep2
        times, cpus, rec = [], [], []
        for i in range(starts + 1):
            if i:
                floor.append(_import_time())
            d = proc.DaemonProcess(cfg, log=where / f"crash-{i}.log")
            t = d.start()
            if i:  # the first start follows the clean stop above: sealed, not measured
                times.append(t)
                cpus.append(d.cpu_seconds())
                rec.append(_recovered(where / f"crash-{i}.log"))
            assert d.proc is not None
            d.proc.kill()  # SIGKILL: no seal for the next start
            d.proc.wait(10)
            d.close()
            d = None
            pty.drain()
        out["crash_keyed"] = _summary(times, cpus) | {"recovery": rec[-1]}
        log(
            f"  start-up after a crash, checkpoint key: {out['crash_keyed']['median_s']} s "
            f"(walked from seq {rec[-1].get('verified_from')}, {rec[-1].get('verified')} events)"
        )
    finally:
        if d is not None:
            d.close()
        pty.close()
        proc.cleanup(where, ep)
        out["imports_runs_s"] = [round(x, 3) for x in floor]
        out["imports_s"] = round(statistics.median(floor), 3)
    return out


if __name__ == "__main__":
    import pprint

    pprint.pprint(run(size="quick" if "--quick" in sys.argv else "full"), width=110)
