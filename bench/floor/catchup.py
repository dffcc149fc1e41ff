"""``make floor``'s catch-up of a floor's outage (issue 31): how long a floor takes to store
what its tables journaled while its bridges were down.

The issue's case: 5,000 tables at 0.2 events/s each, the bridges down for 10 minutes,
600,000 events backlogged; then the bridges start. The fake tables journal their share at
once (``outage``: each table's cards timed over the 10 minutes, none published), not in 10
minutes; the bridges then start from nothing but JetStream's heads and the tables' replay.
Measured: from the bridges' launch to every event in the stream (each chain-checked by
its bridge before its publish), and the time a backend then takes to read all of it back
and verify it (gapless from seq 1, once, in order, chain intact: ``harness.verify``).

The floor is split between two bridges of 2,500 tables (``bridges``), the size one bridge
is meant to carry (issue 31; docs/floor.md, Open files): 5,000 tables' sockets need more
descriptors than one process may hold here (each bridge and each load generator is its
own process, one load generator per bridge).

Its floor, in the same run on the same server: a bare nats-py loop publishing messages of
the same shape (sealed ``card.dealt`` events, the bridge's subjects, message ids, headers
and per-table expected sequence), pipelined, interleaved across tables, into a stream of
its own; its rate over a sample gives the seconds the whole backlog would take at it.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import nats
from nats.js.api import StreamConfig

from bench.floor.harness import Floor, verify
from bench.floor.natsd import NatsServer
from daemon.journal.events import GENESIS, draft, seal, utc_text

TICK = os.sysconf("SC_CLK_TCK")
#: the harness's bridge config shortens these for its fault tests; the stage drops them
SHORTENED = ("publish_timeout", "stale_after", "replay_timeout")


@dataclass
class Outage:
    """The catch-up stage's size (``python -m bench.floor --catchup-*``)."""

    tables: int = 5000
    #: events each table journaled meanwhile: 0.2 events/s for 10 minutes
    per_table: int = 120
    seconds: float = 600.0
    bridges: int = 2
    #: messages the floor's bare publish loop sends (its rate is scaled to the backlog)
    floor_sample: int = 60_000
    #: seconds to wait for the bridges to store it all before calling it unfinished
    timeout: float = 600.0


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def chains(tables: int, per_table: int) -> list[tuple[str, str, int, str, str, bytes]]:
    """``per_table`` sealed ``card.dealt`` events for each of ``tables`` tables, interleaved
    table by table as a floor's catch-up reaches JetStream: (table, journal, seq, hash,
    prev, raw)."""
    now = time.time()
    heads = {f"fl-{i:04d}": GENESIS for i in range(1, tables + 1)}
    out = []
    for seq in range(1, per_table + 1):
        for table, prev in heads.items():
            d = draft(
                "card.dealt",
                {
                    "shoe": 1,
                    "hand": 1 + (seq - 1) // 5,
                    "box": "player" if seq % 2 else "banker",
                    "position": 1 + (seq - 1) % 5,
                    "card": "AS",
                    "shoe_position": seq,
                    "device": "shoe",
                    "face_up": False,
                },
            )
            ev, raw = seal(
                table=table, seq=seq, draft=d, time=utc_text(now), mono=time.monotonic(), prev=prev
            )
            heads[table] = ev.hash
            out.append((table, "j" * 32, seq, ev.hash, prev, raw))
    return out


async def bare_publish(url: str, messages: int, per_table: int) -> dict[str, Any]:
    """The floor: ``messages`` of the bridge's shape, published pipelined by bare nats-py
    into a stream of their own (then deleted), each conditional on its table's last."""
    tables = max(1, messages // per_table)
    msgs = chains(tables, per_table)
    nc = await nats.connect(url)
    js = nc.jetstream(timeout=30)
    await js.add_stream(StreamConfig(name="CATCHFLOOR", subjects=["catchfloor.>"]))
    last: dict[str, int] = {}
    try:
        t0 = time.perf_counter()
        futs = []
        for n, (table, jid, seq, h, prev, raw) in enumerate(msgs, 1):
            headers = {
                "Nats-Msg-Id": f"{table}:{jid}:{seq}",
                # a fresh stream, one publisher, in order: message n is stream seq n
                "Nats-Expected-Last-Subject-Sequence": str(last.get(table, 0)),
                "Nats-Expected-Last-Subject-Sequence-Subject": f"catchfloor.{table}.>",
                "Tabled-Journal": jid,
                "Tabled-Seq": str(seq),
                "Tabled-Hash": h,
                "Tabled-Prev": prev,
            }
            last[table] = n
            futs.append(
                await js.publish_async(f"catchfloor.{table}.card.dealt", raw, headers=headers)
            )
        acks = await asyncio.gather(*futs, return_exceptions=True)
        took = time.perf_counter() - t0
        errors = sum(1 for a in acks if isinstance(a, BaseException))
        await js.delete_stream("CATCHFLOOR")
    finally:
        await nc.close()
    return {
        "messages": len(msgs),
        "tables": tables,
        "refused_or_failed": errors,
        "seconds": round(took, 2),
        "per_s": round(len(msgs) / took),
    }


async def _stored(url: str, want: int, timeout: float) -> tuple[float | None, int]:
    """When the stream first held ``want`` messages (monotonic), or None; and how many."""
    nc = await nats.connect(url)
    js = nc.jetstream(timeout=10)
    deadline = time.monotonic() + timeout
    have = 0
    try:
        while time.monotonic() < deadline:
            try:
                have = (await js.stream_info("TABLES")).state.messages
            except Exception:  # the bridges make the stream as they start
                have = 0
            if have >= want:
                return time.monotonic(), have
            await asyncio.sleep(0.2)  # the bench's own sampling, not the bridges'
        return None, have
    finally:
        await nc.close()


def run(folder: Path, o: Outage) -> dict[str, Any]:
    """The stage: its figures (``bench/results/floor-latest.json``'s ``outage_catch_up``)."""
    nats_srv = NatsServer(folder / "nats")
    nats_srv.start()
    share = -(-o.tables // o.bridges)
    parts = [
        Floor(
            folder / f"part-{i}",
            real=0,
            fake=min(share, o.tables - i * share),
            cluster=[nats_srv],
            table_prefix=f"c{i + 1}",
        )
        for i in range(o.bridges)
    ]
    total = o.tables * o.per_table
    out: dict[str, Any] = {"config": asdict(o), "events": total}
    try:
        for p in parts:
            p.start(deal=False)
        b0 = time.monotonic()
        for p in parts:
            assert p.control is not None
            p.control("outage", n=o.per_table, seconds=o.seconds)
        out["backlog_built_s"] = round(time.monotonic() - b0, 1)
        print(
            f"  {total:,} events journaled by {o.tables:,} tables, none stored; "
            "the floor's bare publish …",
            flush=True,
        )
        fl = asyncio.run(bare_publish(nats_srv.url, min(o.floor_sample, total), o.per_table))
        fl["seconds_for_backlog"] = round(total / fl["per_s"], 1)
        out["floor"] = fl
        print(f"  floor {fl}; starting {o.bridges} bridges …", flush=True)
        t0 = time.monotonic()
        for p in parts:  # from this thread: a bridge dies with the thread that started it
            start_bridge(p, 300)
        out["bridges_ready_s"] = round(time.monotonic() - t0, 2)
        pids = [p.bridge.pid for p in parts if p.bridge is not None]
        # the stream's count, sampled from here on: nothing is complete before READY
        done, have = asyncio.run(_stored(nats_srv.url, total, o.timeout - (time.monotonic() - t0)))
        cpu = sum(_cpu(pid) for pid in pids)  # since each bridge's launch
        if done is None:
            out.update(stored=have, finished=False, stored_s=None)
            print(f"  only {have:,} of {total:,} stored in {o.timeout:g} s", flush=True)
            return out
        out.update(
            stored=have,
            finished=True,
            stored_s=round(done - t0, 2),
            events_per_s=round(total / (done - t0)),
            bridge_cpu_us_per_event=round(cpu / total * 1e6, 1),
            note="bridge CPU from its launch, start-up and heartbeats included",
        )
        print(f"  stored in {out['stored_s']} s; verifying every table from seq 1 …", flush=True)
        heads: dict[str, tuple[str, int]] = {}
        for p in parts:
            heads.update(p.heads())
        v0 = time.monotonic()
        counts = asyncio.run(verify(nats_srv.url, heads, timeout=600))
        out["verified"] = {
            "tables": len(counts),
            "events": sum(counts.values()),
            "gapless_once_in_order_chain_ok": True,
            "read_back_s": round(time.monotonic() - v0, 1),
        }
        return out
    finally:
        for p in parts:
            p.close()
        nats_srv.stop()


def start_bridge(p: Floor, timeout: float) -> None:
    """``p.start_bridge`` on a status port picked now, and on another if it was taken
    meanwhile all the same (the load generators bind thousands of ephemeral ports)."""
    for attempt in range(3):
        p.metrics_port = 0
        p.write_bridge_config()
        # the shipped timeouts (5 s publish, 10 s replay, 5 s stale), not the fault tests'
        # shorter ones: a loaded catch-up is what they are for (docs/floor.md)
        cfg = p.bridge_config.read_text().splitlines()
        p.bridge_config.write_text(
            "\n".join(x for x in cfg if x.split(" = ")[0] not in SHORTENED) + "\n"
        )
        try:
            p.start_bridge(timeout)
            return
        except AssertionError:
            log = (p.folder / "bridge.log").read_text()
            if attempt == 2 or "address already in use" not in log:
                raise
