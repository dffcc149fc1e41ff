"""A subscriber in its own process, so it takes no GIL from the code measured.

    python -m bench.sink ENDPOINT EXPECTED

Prints ``ready`` once connected and ``synced`` at the first heartbeat (the
benchmark publishes heartbeats until then: the subscription is live), then
counts every other message but the journal's snapshot events until ``EXPECTED`` arrived or 10 s pass without
one, and prints one JSON line: messages received and the monotonic time of
the last.
"""

from __future__ import annotations

import json
import sys
import time

import zmq


def main(endpoint: str, expected: int) -> int:
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.RCVHWM, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(endpoint)
    print("ready", flush=True)
    n = 0
    last = 0
    synced = False
    while n < expected:
        if not sub.poll(10_000):
            break
        topic, *_ = sub.recv_multipart()
        if topic.endswith(b".heartbeat"):
            if not synced:
                synced = True
                print("synced", flush=True)
            continue
        if topic.endswith(b".journal.snapshot"):
            continue  # sealed by the journal, not decided: the counts are of decided events
        n += 1
        last = time.monotonic_ns()
    print(json.dumps({"received": n, "last_ns": last}), flush=True)
    sub.close(linger=0)
    ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
