"""A floor's catch-up (issue 31): a backlog read from a table's replay in bulk and stored as
atomic batches as large as the server takes, each conditional on the table's last stored
message, so two active bridges store every event once, in order.

Against a real nats-server (and, for the end-to-end case, two real ``tabled-bridge``
processes over fake tables): the wire bytes the bridge writes itself are nats-py's own, a
backlog larger than one batch goes as full batches, a backlog waits for a batch slot
instead of going one event at a time, and a replay answer larger than a batch and than a
replay chunk is stored exactly once under two bridges.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import nats
import nats.errors
import pytest
from tabled_client.table import Received

from bench.floor.harness import Floor, run, verify
from bench.floor.natsd import NatsServer, available
from bridge.config import Nats, Table
from bridge.core import Link
from bridge.natslink import ensure_stream
from bridge.publish import BATCH_MAX, BATCH_SLOTS, Publisher, header_lines, wire
from bridge.store import Store

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


def _events(table: str, n: int) -> list[Received]:
    out, prev = [], "0" * 64
    for seq in range(1, n + 1):
        h = f"a{seq:063d}"
        raw = json.dumps({"seq": seq, "type": "card.dealt", "hash": h, "prev": prev}).encode()
        out.append(Received(table, "j1", seq, "card.dealt", h, prev, "", raw))
        prev = h
    return out


def test_the_wire_bytes_are_nats_pys_own():
    """What the publisher writes itself is byte for byte what nats-py's ``publish`` sends."""
    from nats.aio.client import Client

    sent: list[bytes] = []

    async def capture(cmd: bytes, priority: bool = False) -> None:
        sent.append(cmd)

    nc = Client()
    nc._send_command = capture  # type: ignore[method-assign]
    nc._flush_queue = None
    headers = {
        "Nats-Msg-Id": "bac-01:j1:7",
        "Tabled-Journal": "j1",
        "Tabled-Checkpoint": '{"seq":6,"sig":"a b"}',
        "Nats-Expected-Last-Subject-Sequence-Subject": "tables.bac-01.>",
    }
    payload = b'{"seq":7}'
    for reply in ("", "_INBOX.x.1"):
        asyncio.run(nc._send_publish("tables.bac-01.card.dealt", reply, payload, 9, headers))
        assert wire("tables.bac-01.card.dealt", payload, header_lines(headers), reply) == sent[-1]


def test_a_line_break_or_a_space_from_a_table_is_refused_not_sent():
    with pytest.raises(nats.errors.BadHeaderError):
        header_lines({"Tabled-Journal": "j1\r\nNats-Expected-Last-Subject-Sequence: 0"})
    with pytest.raises(nats.errors.BadHeaderError):
        header_lines({"Tabled-Journal": "j1\n"})
    with pytest.raises(nats.errors.BadSubjectError):
        wire("tables.t1.card dealt", b"{}", b"")


def test_an_events_header_lines_are_its_headers_and_a_line_break_is_refused():
    """``Store._message`` formats an event's header lines at once: the same lines as the
    headers through :func:`header_lines`; a journal id with a line break is refused."""
    from dataclasses import replace

    store = Store(None, "TABLES", "tables", None)  # type: ignore[arg-type]
    got = _events("bac-01", 2)[1]
    headers = {
        "Nats-Msg-Id": "bac-01:j1:2",
        "Tabled-Journal": "j1",
        "Tabled-Seq": "2",
        "Tabled-Hash": got.hash,
        "Tabled-Prev": got.prev,
    }
    cp = '{"seq":1,"table":"bac-01"}'
    assert store._message(got, None) == ("tables.bac-01.card.dealt", got.raw, header_lines(headers))
    with_cp = header_lines({**headers, "Tabled-Checkpoint": cp})
    assert store._message(got, cp)[2] == with_cp
    with pytest.raises(nats.errors.BadHeaderError):
        store._message(
            replace(got, journal_id="j1\r\nNats-Expected-Last-Subject-Sequence: 0"), None
        )


def test_a_backlog_goes_as_full_batches_and_waits_for_a_slot(tmp_path):
    """2,500 events of a table go as batches of BATCH_MAX (three round trips), in order,
    each event once; with every batch slot taken a backlog waits for one rather than going
    one event at a time (before: 2,500 single publishes, one round trip each)."""
    server = NatsServer(tmp_path / "nats")
    server.start()

    async def scenario() -> None:
        nc = await nats.connect(server.url)
        try:
            js = nc.jetstream()
            await ensure_stream(js, Nats(servers=[server.url]))
            pub = Publisher(nc, 60.0)  # no retry on a loaded machine: the count is exact
            await pub.start()
            store = Store(js, "TABLES", "tables", pub)
            link = Link(Table(id="t1", publish="-", replay="-"))
            for _ in range(BATCH_SLOTS):  # every slot taken (other tables' batches)
                await pub.slots.acquire()
            ev = _events("t1", 2500)
            task = asyncio.create_task(store.put_many(link, ev))
            while not (task.done() or pub.slots._waiters):  # it waits, or it went without
                await asyncio.sleep(0.01)
            for _ in range(BATCH_SLOTS):
                pub.slots.release()
            head = await task
            assert (head.seq, head.stream_seq) == (2500, 2500)
            assert (link.published, link.batches) == (2500, -(-2500 // BATCH_MAX))
            sub = await js.subscribe("tables.>", ordered_consumer=True, stream="TABLES")
            got = [int((await sub.next_msg(timeout=5)).headers["Tabled-Seq"]) for _ in ev]
            assert got == list(range(1, 2501))
            assert (await js.stream_info("TABLES")).state.messages == 2500
        finally:
            await nc.close()

    try:
        asyncio.run(scenario())
    finally:
        server.stop()


def test_a_replay_answer_larger_than_a_batch_is_stored_once_in_order_by_two_bridges(tmp_path):
    """Two tables journaled 2,500 events each while no bridge ran (more than a batch and
    than a replay chunk); two bridges start on them, active-active: JetStream ends with
    every event once, in order, the chains verifying from seq 1, and the backlog went as
    atomic batches."""
    f = Floor(tmp_path / "floor", real=0, fake=2, interval=0.5)
    other = None
    pool = ThreadPoolExecutor(2)
    try:
        f.start(deal=False)
        assert f.nats is not None and f.control is not None
        for t in ("lg-001", "lg-002"):
            assert f.control("backlog", table=t, n=2500)["last_seq"] == 2500
        # a batch's ack given time on a loaded machine (the harness's 2 s is for faults)
        f.bridge_config.write_text(
            f.bridge_config.read_text().replace("publish_timeout = 2.0", "publish_timeout = 30.0")
        )
        # both at once, so their catch-ups overlap; the threads that start them live until
        # the end (a bridge dies with the thread that started it: PR_SET_PDEATHSIG)
        a = pool.submit(f.start_bridge)
        b = pool.submit(f.start_other_bridge, "bridge-b")
        a.result()
        other, port = b.result()
        counts = run(verify(f.nats.url, f.heads(), timeout=120))
        assert counts == {"lg-001": 2500, "lg-002": 2500}, counts
        published = batches = 0
        for p in (f.metrics_port, port):
            with urllib.request.urlopen(f"http://127.0.0.1:{p}/status", timeout=10) as r:
                st = json.loads(r.read())["tables"]
            published += sum(t["published"] for t in st.values())
            batches += sum(t["batches"] for t in st.values())
            print(p, {k: (t["published"], t["duplicates"], t["skipped"]) for k, t in st.items()})
        assert published <= 5000  # each event stored by one bridge, once (verify: in order)
        assert batches >= 2, batches  # each table's backlog went as batches
    finally:
        if other is not None and other.poll() is None:
            other.kill()
            other.wait(10)
        f.close()
        pool.shutdown()


def test_a_server_that_takes_no_message_id_in_a_batch_stops_the_batches_at_once():
    """nats-server 2.12.0 refused a ``Nats-Msg-Id`` in an atomic batch (ADR-50, error
    10177); later releases take it. Against such a server (its answers stubbed: the pinned
    server is newer) the first refused batch turns batching off: the backlog goes one event
    at a time, each stored, instead of a refused batch before every event."""
    import nats.js.errors

    from bridge.publish import Ack

    class Server:  # answers as 2.12.0 did
        def __init__(self) -> None:
            self.slots = asyncio.Semaphore(BATCH_SLOTS)
            self.batches = self.seq = 0

        def batch_id(self) -> str:
            return "b"

        async def publish(self, out: list, timeout: float | None = None) -> Ack:
            if len(out) > 1:
                self.batches += 1
                raise nats.js.errors.APIError(
                    code=400, err_code=10177, description="batch publish unsupported header used"
                )
            self.seq += 1
            return Ack(self.seq, False)

    server = Server()
    store = Store(None, "TABLES", "tables", server)  # type: ignore[arg-type]
    link = Link(Table(id="t1", publish="-", replay="-"))
    head = asyncio.run(store.put_many(link, _events("t1", 100)))
    assert (head.seq, head.stream_seq, link.published) == (100, 100, 100)
    assert server.batches == 1  # before: a refused batch before each of the 100 events
    assert (asyncio.run(store.put_many(link, _events("t1", 200)[100:])).seq, server.batches) == (
        200,
        1,
    )


def test_a_publish_retried_after_a_failure_waits_a_short_while_for_its_answer():
    """A retry after a failure (a timeout: the stream's leader died) waits RETRY_TIMEOUT
    for its answer, not the whole publish_timeout: a retry sent during the election and
    waiting 5 s stored ~4 s after the new leader was elected (tests/test_floor_cluster.py:
    stored again 8.8-10.5 s after the kill, the election 5.3-6.3 s; now 5.2-5.7 s)."""
    from bridge.publish import Ack
    from bridge.store import RETRY_TIMEOUT

    waits: list[float | None] = []

    class Answers:  # the publisher's answers: two timeouts, then stored
        timeout = 5.0

        async def publish(self, msgs: list, timeout: float | None = None) -> Ack:
            waits.append(timeout)
            if len(waits) < 3:
                raise nats.errors.TimeoutError
            return Ack(1, False)

    store = Store(None, "TABLES", "tables", Answers())
    link = Link(Table(id="t1", publish="-", replay="-"))
    head = asyncio.run(store.put_many(link, _events("t1", 1)))
    assert waits == [None, RETRY_TIMEOUT, RETRY_TIMEOUT] and RETRY_TIMEOUT < Answers.timeout
    assert (head.seq, link.published, link.publish_errors) == (1, 1, 2)


def test_a_timed_out_publish_keeps_no_batch_alive():
    """A publish whose answer timed out raises its future's exception, and that
    exception's traceback holds the store's frame, and with it the batch: a reference
    cycle (the future, its exception, the frames) kept every timed-out batch until the
    collector ran (tests/test_bridge_memory.py counted 100 events kept under load)."""
    import gc

    from bridge.publish import Ack, _expire

    class Answers:  # times out once, as the publisher does, then stored
        timeout = 5.0
        calls = 0

        async def publish(self, msgs: list, timeout: float | None = None) -> Ack:
            self.calls += 1
            if self.calls == 1:
                fut: asyncio.Future[Ack] = asyncio.get_running_loop().create_future()
                _expire(fut)
                return await fut
            return Ack(1, False)

    async def scenario() -> int:
        store = Store(None, "TABLES", "tables", Answers())
        link = Link(Table(id="t1", publish="-", replay="-"))
        await store.put_many(link, _events("t1", 1))
        return link.publish_errors

    gc.collect()
    gc.disable()
    try:
        errors = asyncio.run(scenario())
        kept = sum(isinstance(o, Received) for o in gc.get_objects())
    finally:
        gc.enable()
    assert errors == 1 and kept == 0, f"{kept} events kept after a timed-out publish"
