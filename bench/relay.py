"""The floor: a bare relay from a pty to a PUB socket — pyserial in, ZeroMQ out.

No parsing, no table, no journal: what moving the same bytes through the
same kernel pty, the same pyserial and the same loopback ZeroMQ costs in a
Python process. The latency benchmark runs it on the same card stream as
the daemon and reports the daemon's latency as this floor plus an overhead.

    python -m bench.relay PORT ENDPOINT
"""

from __future__ import annotations

import sys

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
    read, waiting, send = ser.read, ser.read, pub.send
    try:
        while True:
            data = read(1)  # blocks until a byte arrives
            n = ser.in_waiting
            if n:
                data += waiting(n)
            send(data)
    except KeyboardInterrupt:
        return 0
    finally:
        pub.close()
        ctx.term()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
