"""The floor: a bare relay from a pty to a PUB socket — pyserial in, ZeroMQ out.

No parsing, no table, no journal: what moving the same bytes through the
same kernel pty, the same pyserial and the same loopback ZeroMQ costs in a
Python process. The latency benchmark runs it on the same frames as the
daemon and reports the daemon's latency as this floor plus an overhead.
Each message carries the bytes read and the ``time.monotonic_ns()`` of the
read (the clock the benchmark writes with), so the floor splits into
write → read and read → subscriber, as the daemon's events do with their
``mono``.

    python -m bench.relay PORT ENDPOINT
"""

from __future__ import annotations

import sys
import time

import serial
import zmq


def main(argv: list[str]) -> int:
    port, endpoint = argv
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
            pub.send_multipart([data, b"%d" % t])
    except KeyboardInterrupt:
        return 0
    finally:
        pub.close()
        ctx.term()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
