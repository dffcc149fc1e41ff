"""The floor of the bridge's CPU per event: a bare nats-py loop publishing the same messages.

    python -m bench.floor.bare --url nats://… --tables 500 --rate 1000 --seconds 20

A process of its own (its CPU is its own): ``--tables`` asyncio tasks, each publishing a
card-sized payload at its share of ``--rate`` with the bridge's headers (message id, the
table's expected last sequence from its previous ack, journal, seq, hash, prev) and waiting
for each ack, as a table's events reach JetStream through the bridge, with none of the
bridge's work around it (no ZeroMQ, no chain check, no health). Prints its CPU per message
as JSON; ``make floor`` reads the bridge's CPU per event against it (issue 31: ≤ 1.5×).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import sys
import time

import nats
from nats.js.api import StreamConfig

PAYLOAD = b"x" * 420  # about one card.dealt event


def argv(url: str, tables: int, rate: float, seconds: float) -> list[str]:
    """This loop's command line, as the floor's stages run it in a process of its own."""
    return [
        sys.executable,
        "-m",
        "bench.floor.bare",
        "--url",
        url,
        "--tables",
        str(tables),
        "--rate",
        str(max(1.0, rate)),
        "--seconds",
        str(seconds),
    ]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def run(url: str, tables: int, rate: float, seconds: float) -> dict[str, float]:
    nc = await nats.connect(url)
    js = nc.jetstream(timeout=10)
    await js.add_stream(StreamConfig(name="BARE", subjects=["bare.>"]))
    every = tables / rate
    count = 0
    stop = time.monotonic() + seconds

    async def table(t: int) -> None:
        nonlocal count
        last, seq = 0, 0
        # each publish at its time, whatever its ack took: sleeping a whole interval after
        # the ack offered 3,759 msg/s of 4,942 at 2,500 tables (acks ~150 ms under load)
        due = time.monotonic() + random.uniform(0, every)
        await asyncio.sleep(due - time.monotonic())
        while time.monotonic() < stop:
            seq += 1
            ack = await js.publish(
                f"bare.t{t}.card.dealt",
                PAYLOAD,
                headers={
                    "Nats-Msg-Id": f"t{t}:j:{seq}",
                    "Nats-Expected-Last-Subject-Sequence": str(last),
                    "Nats-Expected-Last-Subject-Sequence-Subject": f"bare.t{t}.>",
                    "Tabled-Journal": "j",
                    "Tabled-Seq": str(seq),
                    "Tabled-Hash": f"{seq:064x}",
                    "Tabled-Prev": f"{seq - 1:064x}",
                },
            )
            last = ack.seq
            count += 1
            due += every * random.uniform(0.5, 1.5)
            await asyncio.sleep(max(0.0, due - time.monotonic()))

    c0, w0 = _cpu(), time.monotonic()
    await asyncio.gather(*(table(t) for t in range(tables)))
    cpu, wall = _cpu() - c0, time.monotonic() - w0
    await js.delete_stream("BARE")
    await nc.close()
    return {
        "tables": tables,
        "messages": count,
        "messages_per_s": round(count / wall, 1),
        "cpu_s": round(cpu, 2),
        "cpu_us_per_message": round(cpu / max(count, 1) * 1e6, 1),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True)
    p.add_argument("--tables", type=int, default=500)
    p.add_argument("--rate", type=float, default=1000.0)
    p.add_argument("--seconds", type=float, default=20.0)
    a = p.parse_args()
    print(json.dumps(asyncio.run(run(a.url, a.tables, a.rate, a.seconds))), flush=True)


if __name__ == "__main__":
    main()
