"""tabled-client's FloorFollower against a real JetStream filled by the real bridge:
a durable consumer resumes where it acked, a type filter keeps the chain check whole,
and a forged message in the stream raises instead of passing."""

from __future__ import annotations

import asyncio
import json

import nats
import pytest
from tabled_client import ChainBroken
from tabled_client.floor import FloorFollower

from bench.floor.harness import Floor, run, verify
from bench.floor.natsd import available

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


@pytest.fixture(scope="module")
def floor(tmp_path_factory):
    f = Floor(tmp_path_factory.mktemp("ff") / "floor", real=0, fake=3, interval=0.1)
    f.start(deal=False)
    assert f.control is not None and f.nats is not None
    f.control("burst", n=10)
    f.start_bridge()
    run(verify(f.nats.url, f.heads(), timeout=60))
    yield f
    f.close()


async def take(f: FloorFollower, n: int) -> list[tuple[str, int]]:
    out = []
    async for e in f.events(idle=3):
        out.append((e.table, e.event.seq))
        if len(out) == n:
            break
    return out


def test_a_durable_consumer_resumes_where_it_acked(floor):
    url = floor.nats.url

    async def go() -> tuple[list[tuple[str, int]], list[tuple[str, int]], dict]:
        f = FloorFollower(url, durable="audit", tables={"lg-001"})
        first = await take(f, 4)
        heads = f.heads
        await f.close()
        # the 4th was handed on but not acked (the loop body had not finished): it comes
        # again, and the heads the backend kept drop it by seq
        g = FloorFollower(url, durable="audit", tables={"lg-001"}, heads=heads)
        rest = await take(g, 100)
        await g.close()
        return first, rest, heads

    first, rest, heads = asyncio.run(go())
    assert first == [("lg-001", s) for s in (1, 2, 3, 4)]
    assert rest == [("lg-001", s) for s in range(5, 11)]
    assert heads["lg-001"][1] == 4


def test_a_type_filter_still_checks_every_link(floor):
    async def go() -> list[tuple[str, int]]:
        f = FloorFollower(floor.nats.url, durable="video", types={"hand.result"})
        got = await take(f, 100)
        assert {t: h[1] for t, h in f.heads.items()} == {"lg-001": 10, "lg-002": 10, "lg-003": 10}
        await f.close()
        return got

    assert asyncio.run(go()) == []  # the fake tables deal cards only: nothing shown, all checked


def test_a_forged_event_in_the_stream_raises(floor):
    url = floor.nats.url

    async def go() -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        last = await js.get_last_msg("TABLES", "tables.lg-002.>")
        ev = json.loads(last.data)
        forged = {
            **ev,
            "seq": ev["seq"] + 1,
            "prev": ev["hash"],
            "data": {**ev["data"], "card": "AS"},
        }
        # a plausible next event whose hash was not recomputed, stored as the bridge would
        await js.publish(
            "tables.lg-002.card.dealt",
            json.dumps(forged, separators=(",", ":"), sort_keys=True).encode(),
            headers={
                "Nats-Msg-Id": f"lg-002:{last.headers['Tabled-Journal']}:{forged['seq']}",
                "Tabled-Journal": last.headers["Tabled-Journal"],
            },
        )
        await nc.close()
        f = FloorFollower(url, durable="surveillance", tables={"lg-002"})
        with pytest.raises(ChainBroken, match=r"lg-002 seq 11: hash does not match"):
            await take(f, 100)
        await f.close()

    asyncio.run(go())


def test_a_resumed_consumer_without_heads_anchors_at_its_first_event(floor):
    async def go() -> list[tuple[str, int]]:
        f = FloorFollower(floor.nats.url, durable="overlay", tables={"lg-003"})
        await take(f, 3)
        await f.close()
        g = FloorFollower(floor.nats.url, durable="overlay", tables={"lg-003"}, anchor="first")
        rest = await take(g, 100)
        assert g.heads["lg-003"][1] == 10
        await g.close()
        return rest

    assert asyncio.run(go()) == [("lg-003", s) for s in range(3, 11)]


def test_a_resumed_consumer_without_heads_or_anchor_says_what_to_do(floor):
    """The docs' example run twice with one durable raised ``seq 247 after 0 (expected 1)``
    (issue 33): the error names the durable and the two ways to resume."""

    async def go() -> str:
        f = FloorFollower(floor.nats.url, durable="twice", tables={"lg-002"})
        await take(f, 3)
        await f.close()
        g = FloorFollower(floor.nats.url, durable="twice", tables={"lg-002"})
        try:
            with pytest.raises(ChainBroken) as e:
                await take(g, 100)
        finally:
            await g.close()
        return str(e.value)

    said = asyncio.run(go())
    assert "durable consumer 'twice' resumes at seq " in said
    assert "heads=" in said and "anchor='first'" in said, said


def test_a_set_of_tables_is_filtered_by_the_server(floor):
    """``tables={a, b}`` is one consumer with a filter subject per table: the server sends
    only their events (it read the whole floor and dropped the rest before)."""

    async def go() -> tuple[list[tuple[str, int]], int, list[str]]:
        f = FloorFollower(floor.nats.url, durable="two", tables={"lg-001", "lg-003"})
        got = await take(f, 100)
        js = f.nc.jetstream()
        info = await js.consumer_info("TABLES", "two")
        await f.close()
        return got, info.delivered.stream_seq, list(info.config.filter_subjects or [])

    got, _last, filters = asyncio.run(go())
    assert sorted(got) == [(t, s) for t in ("lg-001", "lg-003") for s in range(1, 11)]
    assert filters == ["tables.lg-001.>", "tables.lg-003.>"]
