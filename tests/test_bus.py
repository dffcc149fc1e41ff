"""The event bus over real ZeroMQ sockets on loopback and a real SQLite journal.

PUB/SUB has the slow-joiner problem: a subscription takes a moment to reach
the publisher and whatever is published before that is lost. Tests never
sleep for it; they publish heartbeats until the subscriber has seen one
(bounded), and only then publish what they check. Everything else waits on
the sockets themselves, each test bounded by ``asyncio.wait_for``.
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import msgspec
import pytest
import zmq
import zmq.asyncio

from daemon import journal as journal_mod
from daemon.bus.bus import Bus, BusError
from daemon.bus.ipc import EndpointError
from daemon.bus.publisher import io_threads_yield
from daemon.bus.replay_server import ReplayError
from daemon.bus.subscriber import replay
from daemon.journal import Batch, Journal
from daemon.journal.events import Draft, decode

TCP = "tcp://127.0.0.1:*"
TIME = "2026-01-01T00:00:00.000Z"
N_EVENTS = 2500
LIMIT = 20.0  # seconds: a hang guard for each test, never a measurement


def _fill(j: Journal, n: int, *, pad: int = 0, kind: str = "test.tick") -> None:
    drafts = [Draft(kind, {"n": i, "pad": "x" * pad} if pad else {"n": i}) for i in range(n)]
    j.append([Batch(drafts=drafts, time=TIME, mono=None)])


@pytest.fixture
def jpath(tmp_path: Path) -> Iterator[tuple[str, Journal]]:
    path = str(tmp_path / "journal.db")
    j = Journal(path, "t1")
    _fill(j, N_EVENTS)
    yield path, j
    j.close()


def _stored(path: str, start: int = 1, stop: int | None = None) -> list[bytes]:
    db = journal_mod.connect(path, readonly=True)
    try:
        return [raw for _, raw in journal_mod.read_raw(db, start, stop)]
    finally:
        db.close()


@pytest.fixture
async def ctx() -> AsyncIterator[zmq.asyncio.Context]:
    c = zmq.asyncio.Context()
    yield c
    if not c.closed:
        c.destroy(linger=0)


@pytest.fixture
async def bus(ctx: zmq.asyncio.Context, jpath: tuple[str, Journal]) -> AsyncIterator[Bus]:
    path, j = jpath
    b = Bus(ctx, table="t1", publish=TCP, replay=TCP, journal_path=path, journal_id=j.journal_id)
    await b.start()
    yield b
    await b.close()


def _sub(ctx: zmq.asyncio.Context, endpoint: str, *prefixes: bytes) -> zmq.asyncio.Socket:
    s = ctx.socket(zmq.SUB)
    s.setsockopt(zmq.LINGER, 0)
    for p in prefixes:
        s.subscribe(p)
    s.connect(endpoint)
    return s


async def _joined(b: Bus, *subs: zmq.asyncio.Socket) -> None:
    """Publish heartbeats until every subscriber got one, then drain them (slow joiner)."""
    for s in subs:
        for _ in range(200):
            b.heartbeat({"last_seq": 0}, TIME, 0.0)
            if await s.poll(25, zmq.POLLIN):
                break
        else:
            raise AssertionError("subscriber never joined")
    for s in subs:
        while await s.poll(0, zmq.POLLIN):
            await s.recv_multipart()


async def _recv_until_marker(s: zmq.asyncio.Socket, marker: str) -> list[list[bytes]]:
    """Messages up to the heartbeat carrying ``marker``; earlier (join) heartbeats skipped."""
    got = []
    while True:
        msg = await s.recv_multipart()
        if msg[0] == b"t1.heartbeat":
            if msgspec.json.decode(msg[1])["data"].get("marker") == marker:
                return got
            continue
        got.append(msg)


# -- publishing -------------------------------------------------------------------


async def test_publish_reaches_subscribers_and_topics_filter_by_prefix(bus, ctx, jpath):
    path, j = jpath
    everything = _sub(ctx, bus.publish_endpoint, b"t1.")
    cards = _sub(ctx, bus.publish_endpoint, b"t1.card.", b"t1.heartbeat")
    try:
        await asyncio.wait_for(_joined(bus, everything, cards), LIMIT)
        first = j.append(
            [
                Batch(
                    drafts=[
                        Draft("test.tick", {"n": 1}),
                        Draft("card.drawn", {"card": "TH"}),
                        Draft("test.tick", {"n": 2}),
                        Draft("card.burned", {"card": "AS"}),
                    ],
                    time=TIME,
                    mono=1.5,
                )
            ]
        )
        raw = _stored(path, first[0].seq, first[-1].seq)
        bus.publish(first, raw)
        bus.publish(first[:1])  # without stored bytes: the event's canonical form
        bus.heartbeat({"last_seq": first[-1].seq, "marker": "m1"}, TIME, 2.0)

        got = await asyncio.wait_for(_recv_until_marker(everything, "m1"), LIMIT)
        assert got == [
            [b"t1.test.tick", raw[0]],
            [b"t1.card.drawn", raw[1]],
            [b"t1.test.tick", raw[2]],
            [b"t1.card.burned", raw[3]],
            [b"t1.test.tick", raw[0]],
        ]
        assert [decode(m[1]) for m in got[:4]] == first

        got_cards = await asyncio.wait_for(_recv_until_marker(cards, "m1"), LIMIT)
        assert got_cards == [[b"t1.card.drawn", raw[1]], [b"t1.card.burned", raw[3]]]
        assert bus.counters["published"] == 5
        assert bus.counters["dropped"] == 0
    finally:
        everything.close(0)
        cards.close(0)


async def test_heartbeat_body_is_canonical_and_carries_no_seq(bus, ctx):
    sub = _sub(ctx, bus.publish_endpoint, b"t1.heartbeat")
    try:
        await asyncio.wait_for(_joined(bus, sub), LIMIT)
        data = {"last_seq": 7, "last_hash": "ab" * 32, "journal_id": "j", "devices": {}}
        bus.heartbeat(data, TIME, 12.5)

        async def mine() -> list[bytes]:
            while True:  # skip join heartbeats still in flight
                msg = await sub.recv_multipart()
                if msgspec.json.decode(msg[1])["data"] == data:
                    return msg

        topic, body = await asyncio.wait_for(mine(), LIMIT)
        assert topic == b"t1.heartbeat"
        assert msgspec.json.decode(body) == {
            "v": 1,
            "table": "t1",
            "type": "heartbeat",
            "time": TIME,
            "mono": 12.5,
            "data": data,
        }
        assert body == msgspec.json.Encoder(order="sorted").encode(msgspec.json.decode(body))
        assert bus.counters["heartbeats"] >= 2
    finally:
        sub.close(0)


@pytest.mark.parametrize("nodrop", [True, False])
async def test_full_subscriber_never_blocks_publish(ctx, jpath, nodrop):
    """A subscriber that stops reading: publish still returns at once.

    With ``nodrop`` (XPUB_NODROP) the full queue shows as ``Again`` and is
    counted; with libzmq's default PUB the message is silently discarded for
    that subscriber, so nothing can be counted (the subscriber sees the seq
    gap and repairs from replay).
    """
    path, _ = jpath
    b = Bus(ctx, table="t1", publish=TCP, replay=TCP, journal_path=path, sndhwm=1, nodrop=nodrop)
    await b.start()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.RCVHWM, 1)
    sub.setsockopt(zmq.RCVBUF, 4096)
    sub.subscribe(b"t1.")
    sub.connect(b.publish_endpoint)
    try:
        await asyncio.wait_for(_joined(b, sub), LIMIT)
        sent0, dropped0 = b.counters["heartbeats"], b.counters["dropped"]
        big = {"pad": "x" * 8192}
        total = 3000  # ~25 MB: more than any socket buffer between us and the subscriber
        for _ in range(total):
            b.heartbeat(big, TIME, 0.0)
        sent = b.counters["heartbeats"] - sent0
        dropped = b.counters["dropped"] - dropped0
        assert sent + dropped == total
        if nodrop:
            assert dropped > 0
        else:
            assert dropped == 0
    finally:
        sub.close(0)
        await asyncio.wait_for(b.close(), LIMIT)


async def test_close_is_prompt_with_unsent_messages(jpath):
    """Bounded LINGER: the context terminates although a subscriber holds undelivered messages."""
    path, _ = jpath
    ctx = zmq.asyncio.Context()
    other = zmq.Context()  # the subscriber outlives the bus's context
    sub = other.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.RCVHWM, 1)
    sub.setsockopt(zmq.RCVBUF, 4096)
    sub.subscribe(b"")
    b = Bus(ctx, table="t1", publish=TCP, replay=TCP, journal_path=path, linger_ms=100)
    # Context.term blocks until every socket's LINGER has passed: with the
    # default (infinite) it would wait for this subscriber forever.
    term = threading.Thread(target=ctx.term, daemon=True)
    asub = zmq.asyncio.Socket.from_socket(sub)
    try:
        await b.start()
        sub.connect(b.publish_endpoint)
        await asyncio.wait_for(_joined(b, asub), LIMIT)
        for _ in range(3000):
            b.heartbeat({"pad": "x" * 8192}, TIME, 0.0)
        await asyncio.wait_for(b.close(), LIMIT)
        term.start()
        await asyncio.wait_for(asyncio.to_thread(term.join, 10), LIMIT)
        assert not term.is_alive(), "Context.term() still waiting: LINGER not bounded"
    finally:
        asub.close(0)  # lets a stuck term() finish
        sub.close(0)
        other.term()
        if term.is_alive():
            term.join(LIMIT)
        elif not ctx.closed:
            ctx.destroy(linger=0)


async def test_bind_conflict_names_the_endpoint(bus, ctx, jpath):
    path, _ = jpath
    second = Bus(ctx, table="t1", publish=bus.publish_endpoint, replay=TCP, journal_path=path)
    with pytest.raises(EndpointError, match=re.escape(bus.publish_endpoint)) as e:
        await second.start()
    assert "address in use" in str(e.value)
    third = Bus(ctx, table="t1", publish=TCP, replay=bus.replay_endpoint, journal_path=path)
    with pytest.raises(EndpointError, match="replay socket"):
        await third.start()
    await second.close()
    await third.close()


async def test_missing_journal_is_a_clear_error(ctx, tmp_path):
    b = Bus(ctx, table="t1", publish=TCP, replay=TCP, journal_path=str(tmp_path / "none.db"))
    with pytest.raises(BusError, match=r"none\.db"):
        await b.start()


async def test_ipc_endpoints_refuse_a_live_socket(ctx, jpath):
    path, _ = jpath
    with tempfile.TemporaryDirectory(prefix="tb", dir="/tmp") as d:
        ep = f"ipc://{d}/run/pub.sock"
        first = Bus(ctx, table="t1", publish=ep, replay=TCP, journal_path=path)
        await first.start()
        try:
            second = Bus(ctx, table="t1", publish=ep, replay=TCP, journal_path=path)
            with pytest.raises(EndpointError, match="already serves"):
                await second.start()
        finally:
            await first.close()


# -- replay -----------------------------------------------------------------------


async def test_replay_from_one_returns_every_event_in_order(bus, ctx, jpath):
    path, j = jpath
    frames, end = await asyncio.wait_for(replay(ctx, bus.replay_endpoint, 1), LIMIT)
    assert frames == _stored(path)
    assert [decode(f).seq for f in frames] == list(range(1, N_EVENTS + 1))
    assert end == {
        "end": True,
        "from": 1,
        "to": N_EVENTS,
        "last_seq": N_EVENTS,
        "journal_id": j.journal_id,
    }
    assert bus.counters["replayed_events"] == N_EVENTS
    assert bus.counters["replay_requests"] == 1


@pytest.mark.parametrize(
    ("start", "stop", "first", "last"),
    [(10, 20, 10, 20), (2490, 99999, 2490, N_EVENTS), (7, 7, 7, 7), (1, 1, 1, 1)],
)
async def test_replay_with_to(bus, ctx, jpath, start, stop, first, last):
    path, _ = jpath
    frames, end = await asyncio.wait_for(replay(ctx, bus.replay_endpoint, start, stop), LIMIT)
    assert frames == _stored(path, first, last)
    assert [decode(f).seq for f in frames] == list(range(first, last + 1))
    assert (end["from"], end["to"], end["last_seq"]) == (start, last, N_EVENTS)


async def test_replay_beyond_head_is_just_the_end_marker(bus, ctx):
    frames, end = await asyncio.wait_for(replay(ctx, bus.replay_endpoint, N_EVENTS + 1), LIMIT)
    assert frames == []
    assert (end["end"], end["from"], end["to"], end["last_seq"]) == (
        True,
        N_EVENTS + 1,
        N_EVENTS,
        N_EVENTS,
    )


async def test_replay_sees_events_committed_after_start(bus, ctx, jpath):
    _, j = jpath
    _fill(j, 3, kind="card.drawn")
    frames, end = await asyncio.wait_for(replay(ctx, bus.replay_endpoint, N_EVENTS), LIMIT)
    assert [decode(f).seq for f in frames] == [N_EVENTS, N_EVENTS + 1, N_EVENTS + 2, N_EVENTS + 3]
    assert end["last_seq"] == N_EVENTS + 3


BAD_REQUESTS = [
    ([b"not json"], "not JSON"),
    ([b"\xff\xfe"], "not JSON"),
    ([b"[1, 2]"], "JSON object"),
    ([b'"from"'], "JSON object"),
    ([b"{}"], 'missing "from"'),
    ([b'{"to": 5}'], 'missing "from"'),
    ([b'{"from": 0}'], '"from" must be an integer >= 1'),
    ([b'{"from": -3}'], '"from" must be an integer >= 1'),
    ([b'{"from": "1"}'], '"from" must be an integer >= 1'),
    ([b'{"from": 1.5}'], '"from" must be an integer >= 1'),
    ([b'{"from": true}'], '"from" must be an integer >= 1'),
    ([b'{"from": null}'], '"from" must be an integer >= 1'),
    ([b'{"from": 5, "to": 4}'], '"to" (4) is before "from" (5)'),
    ([b'{"from": 1, "to": "9"}'], '"to" must be an integer'),
    ([b'{"from": 1, "to": 2.0}'], '"to" must be an integer'),
    ([b'{"from": 1, "limit": 2}'], "unknown key(s) limit"),
    ([b'{"from": 1}', b"extra"], "one frame, this one has 2"),
    ([b'{"from": 1, "pad": "' + b"x" * 5000 + b'"}'], "too large"),
    ([b'{"from": 1}'], "more than the limit of 100"),  # replay_max=100 below
    ([b'{"from": 1, "to": 1000}'], "more than the limit of 100"),
]


@pytest.mark.parametrize(("frames", "expected"), BAD_REQUESTS)
async def test_bad_requests_get_one_error_frame(ctx, jpath, frames, expected):
    path, _ = jpath
    b = Bus(ctx, table="t1", publish=TCP, replay=TCP, journal_path=path, replay_max=100)
    await b.start()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(b.replay_endpoint)
    try:

        async def exchange() -> None:
            await dealer.send_multipart(frames)
            reply = msgspec.json.decode(await dealer.recv())
            assert set(reply) == {"error"}
            assert expected in reply["error"]
            # exactly one frame: the next thing on this connection answers the next request
            await dealer.send(b'{"from": 2451}')
            nxt = [await dealer.recv() for _ in range(51)]
            assert [decode(f).seq for f in nxt[:50]] == list(range(2451, 2501))
            assert msgspec.json.decode(nxt[50])["end"] is True

        await asyncio.wait_for(exchange(), LIMIT)
        assert b.counters["replay_errors"] == 1
    finally:
        dealer.close(0)
        await b.close()


async def test_replay_client_raises_on_error_reply(bus, ctx):
    with pytest.raises(ReplayError, match="before"):
        await asyncio.wait_for(replay(ctx, bus.replay_endpoint, 5, 4), LIMIT)


async def test_replay_client_times_out_when_nobody_answers(ctx):
    silent = ctx.socket(zmq.ROUTER)  # binds and never answers
    silent.setsockopt(zmq.LINGER, 0)
    port = silent.bind_to_random_port("tcp://127.0.0.1")
    try:
        with pytest.raises(ReplayError, match=r"no answer .* within 0\.2s"):
            await asyncio.wait_for(replay(ctx, f"tcp://127.0.0.1:{port}", 1, timeout=0.2), LIMIT)
    finally:
        silent.close(0)


@pytest.fixture
def big_jpath(tmp_path: Path) -> Iterator[str]:
    """Events of ~4 KiB each, 10 MB in all: more than socket buffers absorb."""
    path = str(tmp_path / "big.db")
    j = Journal(path, "t1")
    _fill(j, N_EVENTS, pad=4096)
    yield path
    j.close()


async def test_slow_replay_client_gets_backpressure_not_drops(ctx, big_jpath):
    """replay_hwm=1 and a client that reads one frame per loop turn: every
    event still arrives, in order (ROUTER without ROUTER_MANDATORY would
    silently drop what does not fit its queue)."""
    b = Bus(ctx, table="t1", publish=TCP, replay=TCP, journal_path=big_jpath, replay_hwm=1)
    await b.start()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.setsockopt(zmq.RCVHWM, 1)
    dealer.setsockopt(zmq.RCVBUF, 4096)
    dealer.connect(b.replay_endpoint)
    try:

        async def slow() -> list[bytes]:
            await dealer.send(b'{"from": 1}')
            got = []
            while True:
                f = await dealer.recv()
                if f.startswith(b'{"end"'):
                    return got
                got.append(f)
                await asyncio.sleep(0)

        frames = await asyncio.wait_for(slow(), LIMIT)
        assert [decode(f).seq for f in frames] == list(range(1, N_EVENTS + 1))
        assert frames == _stored(big_jpath)
    finally:
        dealer.close(0)
        await b.close()


async def test_large_replay_does_not_stall_the_loop(ctx, jpath):
    """While a replay streams, other tasks run and publish goes out.

    The queue to the client is large enough that the stream never waits for
    room, so only the server's own yields between chunks let a concurrent
    task see the stream half done.
    """
    path, j = jpath
    b = Bus(ctx, table="t1", publish=TCP, replay=TCP, journal_path=path, replay_hwm=100_000)
    b.replay.REPLAY_CHUNK = 100
    await b.start()
    extra = j.append([Batch(drafts=[Draft("test.tock", {})], time=TIME, mono=None)])
    samples: list[int] = []
    mid_stream_publishes = 0
    done = asyncio.Event()

    async def watch() -> None:
        nonlocal mid_stream_publishes
        while not done.is_set():
            n = b.counters["replayed_events"]
            samples.append(n)
            if 0 < n < N_EVENTS:
                before = b.counters["published"]
                b.publish(extra)
                mid_stream_publishes += b.counters["published"] - before
            await asyncio.sleep(0)

    async def fetch() -> tuple[list[bytes], dict]:
        try:
            return await replay(ctx, b.replay_endpoint, 1, N_EVENTS)
        finally:
            done.set()

    try:
        watcher = asyncio.create_task(watch())
        frames, _ = await asyncio.wait_for(fetch(), LIMIT)
        await asyncio.wait_for(watcher, LIMIT)
        assert len(frames) == N_EVENTS
        mid = {n for n in samples if 0 < n < N_EVENTS}
        assert len(mid) >= 3, f"the loop never ran mid-stream (samples {sorted(set(samples))})"
        assert mid_stream_publishes > 0
    finally:
        await b.close()


async def test_busy_when_all_replay_slots_are_taken_and_gone_client_frees_its_slot(ctx, big_jpath):
    b = Bus(
        ctx,
        table="t1",
        publish=TCP,
        replay=TCP,
        journal_path=big_jpath,
        replay_hwm=1,
        replay_concurrency=1,
    )
    await b.start()
    stuck = ctx.socket(zmq.DEALER)  # asks, reads one frame, then stops reading
    stuck.setsockopt(zmq.LINGER, 0)
    stuck.setsockopt(zmq.RCVHWM, 1)
    stuck.setsockopt(zmq.RCVBUF, 4096)
    stuck.connect(b.replay_endpoint)
    try:

        async def scenario() -> None:
            await stuck.send(b'{"from": 1}')
            assert decode(await stuck.recv()).seq == 1
            with pytest.raises(ReplayError, match="busy"):
                await replay(ctx, b.replay_endpoint, 1, 5)
            streams = set(b.replay._streams)
            assert len(streams) == 1
            stuck.close(0)  # the client goes away mid-stream
            await asyncio.gather(*streams)  # its stream ends (EHOSTUNREACH), freeing the slot
            frames, _ = await replay(ctx, b.replay_endpoint, 1, 5)
            assert [decode(f).seq for f in frames] == [1, 2, 3, 4, 5]

        await asyncio.wait_for(scenario(), LIMIT)
        assert b.counters["replay_errors"] == 2  # the busy reply and the abandoned stream
        assert b.counters["replayed_events"] < N_EVENTS + 5
    finally:
        stuck.close(0)
        await b.close()


# -- fair replay (issue 18 #10) -------------------------------------------------------------------


def _silent(ctx: zmq.asyncio.Context, endpoint: str) -> zmq.asyncio.Socket:
    """A DEALER that asks for everything and never reads (the attack in issue 18 #10)."""
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RCVHWM, 1)
    s.setsockopt(zmq.RCVBUF, 4096)
    s.connect(endpoint)
    return s


async def _followers(b: Bus, n: int, last: int) -> list[tuple[list[int], int]]:
    """``n`` Followers (the documented recipe, each in its own thread) started at once, each
    until it holds seq ``last``; heartbeats tell them the head, as the daemon's do."""
    from daemon.bus.subscriber import Follower

    def follow() -> tuple[list[int], int]:
        f = Follower(b.publish_endpoint, b.replay_endpoint, table="t1")
        try:
            evs = f.until(lambda e: e.seq == last, timeout=LIMIT)
            return [e.seq for e in evs], f.busy_retries
        finally:
            f.close()

    async def beat() -> None:
        while True:  # what the daemon's heartbeat timer does, faster
            b.heartbeat({"last_seq": last, "journal_id": "j1"}, TIME, 0.0)
            await asyncio.sleep(0.05)

    beats = asyncio.create_task(beat())
    try:
        return await asyncio.wait_for(
            asyncio.gather(*(asyncio.to_thread(follow) for _ in range(n))), LIMIT * 2
        )
    finally:
        beats.cancel()


async def test_eight_silent_clients_cannot_deny_replay_to_the_others(ctx, big_jpath):
    b = Bus(
        ctx,
        table="t1",
        publish=TCP,
        replay=TCP,
        journal_path=big_jpath,
        replay_hwm=1,
        replay_concurrency=8,
        replay_idle=0.2,
    )
    await b.start()
    silent = [_silent(ctx, b.replay_endpoint) for _ in range(8)]
    try:
        for s in silent:
            await s.send(b'{"from": 1}')
        got = await _followers(b, 4, N_EVENTS)
        for seqs, _ in got:  # each follower holds every event once, in order
            assert seqs == list(range(1, N_EVENTS + 1))
        # the silent ones were dropped to make room (not after replay_stall, 30 s: the
        # followers were done within LIMIT); a later follower may take the slot an earlier
        # follower's finished replay freed, so it is at least one eviction, not one each
        assert b.counters["replay_evicted"] >= 1
    finally:
        for s in silent:
            s.close(0)
        await b.close()


async def test_a_second_request_on_one_connection_is_refused_while_its_replay_runs(ctx, big_jpath):
    b = Bus(ctx, table="t1", publish=TCP, replay=TCP, journal_path=big_jpath, replay_hwm=1)
    await b.start()
    s = _silent(ctx, b.replay_endpoint)
    try:

        async def scenario() -> None:
            await s.send(b'{"from": 1}')
            await s.send(b'{"from": 1}')
            frames = [await s.recv() for _ in range(3)]
            errors = [f for f in frames if f.startswith(b'{"error":')]
            assert len(errors) == 1 and b"in progress" in errors[0]
            assert len(b.replay._streams) == 1

        await asyncio.wait_for(scenario(), LIMIT)
    finally:
        s.close(0)
        await b.close()


async def test_followers_starting_at_once_retry_busy_and_all_catch_up(ctx, big_jpath):
    """Issue 18 #10: twelve Followers at once on a table with two replay slots."""
    b = Bus(ctx, table="t1", publish=TCP, replay=TCP, journal_path=big_jpath, replay_concurrency=2)
    await b.start()
    try:
        got = await _followers(b, 12, N_EVENTS)
        assert all(seqs == list(range(1, N_EVENTS + 1)) for seqs, _ in got)
        assert sum(retries for _, retries in got) >= 1  # some were told busy, and asked again
    finally:
        await b.close()


async def _one_slot_taken(ctx: zmq.asyncio.Context, path: str) -> tuple[Bus, zmq.asyncio.Socket]:
    """A bus with one replay slot, held for the whole test by a client that reads no more."""
    b = Bus(
        ctx,
        table="t1",
        publish=TCP,
        replay=TCP,
        journal_path=path,
        replay_hwm=1,
        replay_concurrency=1,
        replay_idle=LIMIT * 10,
    )
    await b.start()
    silent = _silent(ctx, b.replay_endpoint)
    await silent.send(b'{"from": 1}')
    await asyncio.wait_for(silent.recv(), LIMIT)  # its stream holds the one slot
    return b, silent


async def test_a_busy_table_is_asked_again_after_doubling_pauses_until_the_timeout(ctx, big_jpath):
    """The follower's backoff on an injected clock: pauses double from BUSY_FIRST, the
    last is cut to what is left of ``timeout``, then the busy reply is the error."""
    from daemon.bus.subscriber import Follower, FollowerClock, ReplayFailed

    b, silent = await _one_slot_taken(ctx, big_jpath)
    now = [0.0]
    pauses: list[float] = []

    def wait(seconds: float, stopped: threading.Event) -> bool:
        pauses.append(seconds)
        now[0] += seconds
        return False

    clock = FollowerClock(mono=lambda: now[0], wait=wait, jitter=lambda: 1.0)
    f = Follower(b.publish_endpoint, b.replay_endpoint, table="t1", clock=clock)
    try:
        with pytest.raises(ReplayFailed, match="busy"):
            await asyncio.wait_for(asyncio.to_thread(f._replay, 1, 5, 1.0), LIMIT)
        assert pauses == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.25])
        assert f.busy_retries == 5
    finally:
        f.close()
        silent.close(0)
        await b.close()


async def test_closing_a_follower_ends_its_busy_backoff_at_once(ctx, big_jpath):
    """``close`` from another thread wakes a follower pausing for a busy table."""
    from daemon.bus.subscriber import Follower, FollowerClock, ReplayFailed

    b, silent = await _one_slot_taken(ctx, big_jpath)
    pausing = threading.Event()

    def wait(seconds: float, stopped: threading.Event) -> bool:
        pausing.set()
        return stopped.wait(seconds)  # what the follower's own clock does

    clock = FollowerClock(wait=wait)
    f = Follower(b.publish_endpoint, b.replay_endpoint, table="t1", clock=clock)
    f.BUSY_FIRST = LIMIT * 10  # a pause far beyond the test's guard: only close can end it
    try:
        follower = asyncio.create_task(asyncio.to_thread(f._replay, 1, 5, LIMIT * 100))
        assert await asyncio.to_thread(pausing.wait, LIMIT)  # told busy, it pauses
        f.close()
        with pytest.raises(ReplayFailed, match="closed"):
            await asyncio.wait_for(follower, LIMIT)
    finally:
        f.close()
        silent.close(0)
        await b.close()


def test_io_threads_yield_puts_the_io_thread_at_sched_batch():
    """A publish wakes ZeroMQ's I/O thread; at ``SCHED_BATCH`` it waits for a free CPU
    instead of preempting the loop that woke it and commits (docs/decisions.md). The
    calling thread keeps its own policy."""
    ctx = zmq.Context()
    io_threads_yield(ctx)
    a, b = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    try:
        port = a.bind_to_random_port("tcp://127.0.0.1")
        b.connect(f"tcp://127.0.0.1:{port}")
        a.send(b"x")  # over TCP: through the I/O thread, which set its policy when it started
        assert b.poll(10_000) and b.recv() == b"x"
        policies = {
            Path(f"/proc/self/task/{tid}/comm").read_text().strip(): os.sched_getscheduler(int(tid))
            for tid in os.listdir("/proc/self/task")
        }
        assert policies["ZMQbg/IO/0"] == os.SCHED_BATCH
        assert os.sched_getscheduler(0) == os.SCHED_OTHER
    finally:
        a.close(linger=0)
        b.close(linger=0)
        ctx.term()
