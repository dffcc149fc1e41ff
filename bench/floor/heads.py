"""The head-lookup stage of ``make floor``: 5,000 tables' last stored events, as a bridge
reads them at start, on a small stream and on the same stream grown 40-fold.

A stream of its own (``HEADS``) on the floor's server: each table gets five messages
(five event types) with the bridge's headers, and the bridge's own lookup
(``bridge.store.Store.head``: a direct get of the last message on ``<prefix>.<table>.>``)
is timed for all tables at once, as the bridge's tasks ask at start (median of 3). Then every table gets
``grow`` more messages on its subjects (tiny, no acks asked) and five more with headers,
and the lookups are timed again: a lookup that grew with the stream shows here
(issue 31: 6.9 s for 5,000 tables at 2 M messages on nats-server 2.9).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import nats
from nats.js.api import StreamConfig

from bridge.publish import Publisher
from bridge.store import Store

TYPES = ("card.dealt", "hand.started", "hand.result", "table.heartbeat", "shoe.changed")


async def _headed(js: Any, tables: list[str], round_: int) -> dict[str, int]:
    """Five messages a table with the bridge's headers; returns each table's last seq."""
    futs = []
    for i, t in enumerate(tables):
        for k, ty in enumerate(TYPES):
            seq = round_ * 1000 + k + 1
            h = {
                "Tabled-Journal": "j",
                "Tabled-Seq": str(seq),
                "Tabled-Hash": f"{i:032x}{seq:032x}",
                "Tabled-Prev": "0" * 64,
            }
            futs.append(await js.publish_async(f"heads.{t}.{ty}", b"{}", headers=h))
    await asyncio.gather(*futs)
    return {t: round_ * 1000 + len(TYPES) for t in tables}


async def _lookups(nc: Any, tables: list[str], want: dict[str, int]) -> float:
    pub = Publisher(nc, 30.0)
    await pub.start()
    store = Store(nc.jetstream(), "HEADS", "heads", pub)
    t0 = time.perf_counter()
    heads = await asyncio.gather(*(store.head(t) for t in tables))
    took = time.perf_counter() - t0
    wrong = [t for t, h in zip(tables, heads, strict=True) if h.seq != want[t]]
    if wrong:
        raise AssertionError(f"head lookups: {len(wrong)} tables wrong, e.g. {wrong[:3]}")
    return took


async def measure_heads(url: str, tables: int = 5000, grow: int = 195) -> dict[str, Any]:
    nc = await nats.connect(url)
    js = nc.jetstream(timeout=30)
    try:
        await js.add_stream(StreamConfig(name="HEADS", subjects=["heads.>"], allow_direct=True))
        ids = [f"h{i:05d}" for i in range(tables)]
        want = await _headed(js, ids, 1)
        small = (await js.stream_info("HEADS")).state.messages
        t_small = sorted([await _lookups(nc, ids, want) for _ in range(3)])[1]
        for n in range(grow):  # each table's subjects grow; no acks asked, counted after
            ty = TYPES[n % len(TYPES)]
            for t in ids:
                await nc.publish(f"heads.{t}.{ty}", b"-")
        await nc.flush(timeout=60)
        want = await _headed(js, ids, 2)
        large = (await js.stream_info("HEADS")).state.messages
        t_large = sorted([await _lookups(nc, ids, want) for _ in range(3)])[1]
        await js.delete_stream("HEADS")
    finally:
        await nc.close()
    return {
        "tables": tables,
        "stream_messages_small": small,
        "seconds_small": round(t_small, 3),
        "stream_messages_large": large,
        "seconds_large": round(t_large, 3),
        "note": "every table's head at once, median of 3; a direct get each (bridge/store.py)",
    }
