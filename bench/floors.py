"""The floors the figures are compared with: the least work that does the job at all.

* latency: :mod:`bench.relay` (pyserial in, ZeroMQ out), run by the latency benchmark;
* protocol + table: a bare loop over the same lines (split off the CR LF,
  look the card up in a dict), what touching each frame in Python costs;
* journal, one transaction per reading: ``os.pwrite`` + ``os.fdatasync`` of
  the same bytes per reading, in place in a preallocated file on the same
  disk (the disk's sync rate, which no journal with a durable commit per
  reading can beat),
  and bare SQLite (same WAL + ``synchronous=FULL``, one INSERT and COMMIT
  per reading, no hash chain, no publish);
* start-up: the interpreter alone, and the interpreter importing the
  libraries the daemon needs to do its job (pyzmq with its asyncio sockets,
  msgspec, structlog, pyserial, sqlite3, asyncio, tomllib), each imported as
  the daemon imports it: structlog without rich (``daemon/runtime/structlog_lean.py``;
  rich came in with structlog until the daemon stopped needing it, 4.3 MiB
  and ~0.19 s that neither the daemon nor its floor now holds);
* memory: the RSS of that interpreter with a ZeroMQ context and a bound
  PUB socket;
* replay: the journal's rows read in chunks and sent one frame each on a
  plain PUSH socket in a loop, to the same counting receiver.
"""

from __future__ import annotations

import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import proc
from bench.session import Session

#: the daemon's libraries, imported as the daemon imports them (structlog without rich)
DEPS = (
    "import sys\n"
    "sys.modules['rich'] = None\n"
    "import asyncio, sqlite3, tomllib, msgspec, serial, structlog, zmq, zmq.asyncio\n"
    "del sys.modules['rich']\n"
)


def bare_lines(sess: Session, repeat: int = 3) -> dict[str, Any]:
    lines = [f.line for f in sess.frames]
    table = {f.line[:-2]: f.card for f in sess.frames}
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        n = 0
        for line in lines:
            if table.get(line[:-2]) is not None:
                n += 1
        best = min(best, (time.perf_counter_ns() - t0) / 1e9)
    return {
        "frames_per_s": round(len(lines) / best),
        "us_per_frame": round(best / len(lines) * 1e6, 3),
    }


def fsync_per_reading(bodies: list[bytes]) -> dict[str, Any]:
    """Each reading's bytes written in place in a preallocated file, then ``fdatasync``.

    In place, so that no sync also has to journal a new file size: the
    cheapest durable write the disk offers (SQLite's WAL is also rewritten
    in place once it has grown).
    """
    where = proc.workdir("fl-")
    fd = os.open(where / "plain", os.O_RDWR | os.O_CREAT, 0o600)
    size = 1 << 20
    try:
        os.posix_fallocate(fd, 0, size)
        os.write(fd, b"\0" * size)
        os.fsync(fd)
        off = 0
        t0 = time.perf_counter()
        for b in bodies:
            if off + len(b) > size:
                off = 0
            os.pwrite(fd, b, off)
            off += len(b)
            os.fdatasync(fd)
        s = time.perf_counter() - t0
    finally:
        os.close(fd)
        shutil.rmtree(where, ignore_errors=True)
    return {
        "writes": len(bodies),
        "writes_per_s": round(len(bodies) / s),
        "ms_per_write": round(s / len(bodies) * 1e3, 3),
    }


def sqlite_per_reading(bodies: list[bytes]) -> dict[str, Any]:
    where = proc.workdir("fl-")
    db = sqlite3.connect(str(where / "bare.sqlite"), isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        t0 = time.perf_counter()
        for i, b in enumerate(bodies, 1):
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO events VALUES (?, ?)", (i, b))
            db.execute("COMMIT")
        s = time.perf_counter() - t0
    finally:
        db.close()
        shutil.rmtree(where, ignore_errors=True)
    return {
        "transactions": len(bodies),
        "tx_per_s": round(len(bodies) / s),
        "ms_per_tx": round(s / len(bodies) * 1e3, 3),
    }


def _time(args: list[str], n: int = 3) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (the child's utime + stime) of ``n`` runs."""
    ts, cpus = [], []
    for _ in range(n):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        subprocess.run(args, check=True, capture_output=True)
        ts.append(time.monotonic() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    return sorted(ts)[len(ts) // 2], sorted(cpus)[len(cpus) // 2]


def startup() -> dict[str, Any]:
    bare, bare_cpu = _time([sys.executable, "-c", "pass"])
    deps, deps_cpu = _time([sys.executable, "-c", DEPS])
    return {
        "python_s": round(bare, 3),
        "python_with_deps_s": round(deps, 3),
        "python_cpu_s": round(bare_cpu, 3),
        "python_with_deps_cpu_s": round(deps_cpu, 3),
    }


def rss() -> dict[str, Any]:
    code = (
        f"{DEPS}\n"
        "ctx = zmq.Context(); s = ctx.socket(zmq.PUB); s.bind('tcp://127.0.0.1:*')\n"
        "import sys; print('ok', flush=True); sys.stdin.readline()\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert p.stdout is not None
        p.stdout.readline()
        return {"rss_kib": proc.memory(p.pid).get("VmRSS")}
    finally:
        p.kill()
        p.wait(10)


def replay(journal: Path, count: int) -> dict[str, Any]:
    """Rows read and sent by a bare loop in another process, counted here as from tabled."""
    import zmq

    endpoint = f"tcp://127.0.0.1:{proc.free_port()}"
    code = (
        "import sqlite3, sys, zmq\n"
        "db = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True)\n"
        "ctx = zmq.Context(); s = ctx.socket(zmq.PUSH); s.setsockopt(zmq.SNDHWM, 1000); s.bind(sys.argv[2])\n"
        "sys.stdin.readline()\n"
        "lo, hi = 1, int(sys.argv[3])\n"
        "while lo <= hi:\n"
        "    rows = db.execute('SELECT body FROM events WHERE seq BETWEEN ? AND ? ORDER BY seq', (lo, min(lo + 499, hi))).fetchall()\n"
        "    for (b,) in rows: s.send(b)\n"
        "    lo += 500\n"
        "s.send(b'END'); s.close(linger=-1); ctx.term()\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(journal), endpoint, str(count)], stdin=subprocess.PIPE
    )
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.setsockopt(zmq.RCVHWM, 1000)
    pull.connect(endpoint)
    try:
        time.sleep(0.2)
        assert p.stdin is not None
        t0 = time.monotonic()
        p.stdin.write(b"go\n")
        p.stdin.flush()
        n = 0
        while True:
            if not pull.poll(30_000):
                raise RuntimeError("replay floor: nothing for 30 s")
            if pull.recv() == b"END":
                break
            n += 1
        s = time.monotonic() - t0
    finally:
        pull.close(linger=0)
        ctx.term()
        p.kill()
        p.wait(10)
    return {"events": n, "seconds": round(s, 2), "events_per_s": round(n / s)}
