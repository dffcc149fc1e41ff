"""The floor: a bare relay from a pty to a PUB socket — pyserial in, ZeroMQ out.

No parsing, no table, no journal: what moving the same bytes through the
same kernel pty, the same pyserial and the same loopback ZeroMQ costs in a
Python process. The latency benchmark runs it on the same frames as the
daemon and reports the daemon's latency as this floor plus an overhead.
Each message carries the bytes read and the ``time.monotonic_ns()`` of the
read (the clock the benchmark writes with), so the floor splits into
write → read and read → subscriber, as the daemon's events do with their
``mono``.

    python -m bench.relay PORT ENDPOINT [JOURNAL]

With ``JOURNAL`` it is the *durable* relay (``python -m bench.experiments
durable-floor``): each read is one SQLite transaction (WAL, ``synchronous=FULL``,
one INSERT of the bytes) committed on the same thread before the bytes are
published. No hash chain, no table, no second thread: the least a process can do
that commits every reading before it publishes it, which is what a paced event of
tabled's cannot cost less than.
"""

from __future__ import annotations

import sqlite3
import sys
import time

import serial
import zmq


def main(argv: list[str]) -> int:
    port, endpoint, *journal = argv
    db = None
    if journal:
        db = sqlite3.connect(journal[0], isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE IF NOT EXISTS readings (seq INTEGER PRIMARY KEY, body BLOB)")
    ser = serial.Serial(port, 9600, timeout=None, exclusive=True)
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 0)
    pub.setsockopt(zmq.SNDHWM, 100_000)
    pub.bind(endpoint)
    print("ready", flush=True)
    clock = time.monotonic_ns
    try:
        while True:
            data = ser.read(1)  # blocks until a byte arrives
            t = clock()
            n = ser.in_waiting
            if n:
                data += ser.read(n)
            if db is not None:
                db.execute("BEGIN IMMEDIATE")
                db.execute("INSERT INTO readings (body) VALUES (?)", (data,))
                db.execute("COMMIT")
            pub.send_multipart([data, b"%d" % t])
    except KeyboardInterrupt:
        return 0
    finally:
        if db is not None:
            db.close()
        pub.close()
        ctx.term()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
