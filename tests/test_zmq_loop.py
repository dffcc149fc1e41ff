"""A plain ZeroMQ socket read by the asyncio loop (daemon/bus/zmq_loop.py), on real sockets.

Each test is about one of libzmq's ``ZMQ_FD`` edge-trigger rules: messages
queued before the watch, a signal taken by another call on the socket, a flood
read in rounds, a callback that raises. The messages' arrival is awaited
(a future set by the callback), never the clock; LIMIT only guards a hang.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import zmq
import zmq.asyncio

from daemon.bus.zmq_loop import LoopSocket

LIMIT = 20.0  # seconds: a hang guard, never a measurement


@pytest.fixture
async def ctx() -> AsyncIterator[zmq.asyncio.Context]:
    c = zmq.asyncio.Context()
    yield c
    c.destroy(linger=0)


class Collector:
    """on_message that keeps what came and wakes the test when ``want`` messages did."""

    def __init__(self, want: int) -> None:
        self.want = want
        self.got: list[list[Any]] = []
        self._waiting: dict[int, asyncio.Future[None]] = {}

    def __call__(self, msg: list[Any]) -> None:
        self.got.append(msg)
        f = self._waiting.pop(len(self.got), None)
        if f is not None and not f.done():
            f.set_result(None)

    async def wait(self, n: int | None = None) -> None:
        """Until ``n`` (default: ``want``) messages came."""
        n = self.want if n is None else n
        if len(self.got) >= n:
            return
        f = self._waiting.setdefault(n, asyncio.get_running_loop().create_future())
        await asyncio.wait_for(f, LIMIT)


def _pair(ctx: zmq.Context[Any], name: str) -> tuple[zmq.Socket[Any], zmq.Socket[Any]]:
    """A plain server PAIR bound on inproc and a plain client connected to it."""
    server = ctx.socket(zmq.PAIR, socket_class=zmq.Socket)
    server.setsockopt(zmq.LINGER, 0)
    server.bind(f"inproc://{name}")
    client = ctx.socket(zmq.PAIR, socket_class=zmq.Socket)
    client.setsockopt(zmq.LINGER, 0)
    client.connect(f"inproc://{name}")
    return server, client


async def test_messages_queued_before_the_watch_are_read(ctx):
    server, client = _pair(ctx, "queued")
    for i in range(5):
        client.send_multipart([b"m", str(i).encode()])
    # waiting for them on the socket takes the fd's signal: only a look at start finds them
    assert server.poll(int(LIMIT * 1000), zmq.POLLIN)
    got = Collector(5)
    reader = LoopSocket(server, got)
    reader.start()
    try:
        await got.wait()
        assert got.got == [[b"m", str(i).encode()] for i in range(5)]
    finally:
        reader.close(linger=0)
        client.close(0)


async def test_a_signal_taken_by_another_call_is_found_after_the_next_send(ctx):
    """The classic pitfall: a message arrives, something else on the socket (here a
    poll, as a send's own command processing can) takes the fd's signal, and the
    fd stays quiet with the message queued. The send after it looks again."""
    server, client = _pair(ctx, "taken")
    got = Collector(2)
    reader = LoopSocket(server, got)
    reader.start()
    try:
        client.send(b"first")
        await got.wait(1)
        client.send(b"second")
        assert server.poll(int(LIMIT * 1000), zmq.POLLIN)  # the signal is gone now
        reader.send([b"reply"])  # a reply from a task, outside any read
        await got.wait()
        assert got.got == [[b"first"], [b"second"]]
        assert client.recv() == b"reply"
    finally:
        reader.close(linger=0)
        client.close(0)


async def test_a_flood_is_read_in_rounds_with_the_loop_between(ctx):
    server, client = _pair(ctx, "flood")
    for i in range(10):
        client.send(str(i).encode())
    assert server.poll(int(LIMIT * 1000), zmq.POLLIN)
    order: list[str] = []
    got = Collector(10)
    loop = asyncio.get_running_loop()

    def on_message(msg: list[Any]) -> None:
        if not got.got:  # scheduled during the first round: runs before the second
            loop.call_soon(order.append, "other")
        order.append(msg[0].decode())
        got(msg)

    reader = LoopSocket(server, on_message, batch=4)
    reader.start()
    try:
        await got.wait()
        assert order == ["0", "1", "2", "3", "other", *map(str, range(4, 10))]
    finally:
        reader.close(linger=0)
        client.close(0)


async def test_a_callback_that_raises_loses_nothing_after_it(ctx):
    server, client = _pair(ctx, "raises")
    loop = asyncio.get_running_loop()
    errors: list[BaseException] = []
    loop.set_exception_handler(lambda _loop, c: errors.append(c["exception"]))
    got = Collector(3)

    def on_message(msg: list[Any]) -> None:
        got(msg)
        if msg == [b"bad"]:
            raise ValueError("this one")

    for m in (b"bad", b"next", b"last"):
        client.send(m)
    reader = LoopSocket(server, on_message)
    reader.start()
    try:
        await got.wait()
        assert got.got == [[b"bad"], [b"next"], [b"last"]]
        assert [str(e) for e in errors] == ["this one"]
    finally:
        loop.set_exception_handler(None)
        reader.close(linger=0)
        client.close(0)


async def test_copy_false_gives_frames(ctx):
    server, client = _pair(ctx, "frames")
    got = Collector(1)
    reader = LoopSocket(server, got, copy=False)
    reader.start()
    try:
        client.send_multipart([b"a", b"bc"])
        await got.wait()
        assert all(isinstance(f, zmq.Frame) for f in got.got[0])
        assert [f.bytes for f in got.got[0]] == [b"a", b"bc"]
    finally:
        reader.close(linger=0)
        client.close(0)


async def test_stopped_it_reads_nothing_and_close_closes(ctx):
    server, client = _pair(ctx, "stop")
    got = Collector(1)
    reader = LoopSocket(server, got)
    reader.start()
    assert reader.watching
    reader.stop()
    assert not reader.watching
    client.send(b"unread")
    assert server.poll(int(LIMIT * 1000), zmq.POLLIN)  # it is there, and stays there
    reader.send([b"still open"])  # a reply can still go out after stop()
    assert client.recv() == b"still open"
    for _ in range(3):
        await asyncio.sleep(0)  # any round still scheduled has run
    assert got.got == []
    assert server.recv(zmq.NOBLOCK) == b"unread"
    reader.close(linger=0)
    reader.close(linger=0)  # idempotent
    assert reader.closed
    client.close(0)


async def test_send_raises_what_libzmq_raises(ctx):
    router = ctx.socket(zmq.ROUTER, socket_class=zmq.Socket)
    router.setsockopt(zmq.LINGER, 0)
    router.setsockopt(zmq.ROUTER_MANDATORY, 1)
    router.bind("inproc://mandatory")
    reader = LoopSocket(router, lambda _m: None)
    reader.start()
    try:
        with pytest.raises(zmq.ZMQError) as e:
            reader.send([b"nobody", b"hello"])
        assert e.value.errno == zmq.EHOSTUNREACH
    finally:
        reader.close(linger=0)


async def test_a_context_terminated_under_it_stops_the_watch_once(ctx):
    """ETERM (the context's term() with the socket still open) is raised once to the
    loop's handler and the watch stops: the fd would stay readable and call again."""
    server, client = _pair(ctx, "term")
    client.close(0)
    loop = asyncio.get_running_loop()
    errors: asyncio.Future[BaseException] = loop.create_future()

    def handler(_loop: Any, context: dict[str, Any]) -> None:
        if not errors.done():
            errors.set_result(context["exception"])

    loop.set_exception_handler(handler)
    reader = LoopSocket(server, lambda _m: None)
    reader.start()
    term = asyncio.create_task(asyncio.to_thread(ctx.term))  # blocks until the socket closes
    try:
        err = await asyncio.wait_for(errors, LIMIT)
        assert isinstance(err, zmq.ZMQError) and err.errno == zmq.ETERM
        assert not reader.watching
    finally:
        loop.set_exception_handler(None)
        reader.close(linger=0)
        await asyncio.wait_for(term, LIMIT)
