"""The control channel's sockets: real ZeroMQ over ipc (and tcp) on this machine.

The client is synchronous (``tablectl`` is a plain CLI), so tests that talk
to a server running in the test's loop call it through ``asyncio.to_thread``.
ipc paths live in a short directory under /tmp: a unix socket path is at
most 107 bytes, and pytest's ``tmp_path`` can be longer than that.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import Any

import msgspec
import pytest
import structlog
import zmq
import zmq.asyncio

from daemon.bus.control import ControlError, ControlServer, Peer
from daemon.bus.ipc import EndpointError
from daemon.ctl.control_client import ControlClient, DaemonUnreachable

LIMIT = 20.0  # seconds: a hang guard for each test, never a measurement


@pytest.fixture
def rundir() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="tc", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
async def ctx() -> AsyncIterator[zmq.asyncio.Context]:
    c = zmq.asyncio.Context()
    yield c
    c.destroy(linger=0)


async def handler(req: dict[str, Any], peer: Peer) -> dict[str, Any]:
    cmd = req["cmd"]
    if cmd == "echo":
        return {"args": req["args"], "actor": req.get("actor"), "transport": peer.transport}
    if cmd == "explode":
        raise RuntimeError("boom")
    if cmd == "wrong":
        return ["not", "a", "dict"]  # type: ignore[return-value]
    raise ControlError(f"unknown command {cmd!r}")


@pytest.fixture
async def server(ctx, rundir) -> AsyncIterator[ControlServer]:
    s = ControlServer(ctx, f"ipc://{rundir}/run/control.sock", handler)
    await s.start()
    yield s
    await s.close()


async def call(endpoint: str, cmd: str, timeout: float = 5.0, **args: Any) -> dict[str, Any]:
    def blocking() -> dict[str, Any]:
        with ControlClient(endpoint, timeout=timeout, actor="pit-boss-7") as c:
            return c.call(cmd, **args)

    return await asyncio.wait_for(asyncio.to_thread(blocking), LIMIT)


async def test_echo_round_trip_over_ipc(server):
    result = await call(server.endpoint, "echo", shoe=3, cards=["TH", "AS"])
    assert result == {
        "args": {"shoe": 3, "cards": ["TH", "AS"]},
        "actor": "pit-boss-7",
        "transport": "ipc",
    }


async def test_echo_round_trip_over_tcp(ctx):
    s = ControlServer(ctx, "tcp://127.0.0.1:*", handler)
    await s.start()
    try:
        endpoint = s._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        assert (await call(endpoint, "echo", n=1))["transport"] == "tcp"
    finally:
        await s.close()


async def test_one_client_many_calls(server):
    def blocking() -> list[dict[str, Any]]:
        with ControlClient(server.endpoint, timeout=5.0) as c:
            return [c.call("echo", i=i) for i in range(20)]

    results = await asyncio.wait_for(asyncio.to_thread(blocking), LIMIT)
    assert [r["args"]["i"] for r in results] == list(range(20))


async def test_a_req_socket_is_served_too(server, ctx):
    req = ctx.socket(zmq.REQ)
    req.setsockopt(zmq.LINGER, 0)
    req.connect(server.endpoint)
    try:
        await req.send(b'{"cmd": "echo", "args": {"x": 1}, "id": "a"}')
        reply = msgspec.json.decode(await asyncio.wait_for(req.recv(), LIMIT))
        assert reply == {
            "ok": True,
            "result": {"args": {"x": 1}, "actor": None, "transport": "ipc"},
            "id": "a",
        }
    finally:
        req.close(0)


MALFORMED = [
    ([b"status"], "not JSON", None),
    ([b"\xff"], "not JSON", None),
    ([b"[]"], "must be a JSON object, not an array", None),
    ([b"42"], "must be a JSON object, not a number", None),
    ([b"{}"], 'missing "cmd"', None),
    ([b'{"args": {}, "id": 9}'], 'missing "cmd"', 9),
    ([b'{"cmd": ""}'], '"cmd" is empty', None),
    ([b'{"cmd": "  "}'], '"cmd" is empty', None),
    ([b'{"cmd": 5}'], '"cmd" must be a string, not a number', None),
    ([b'{"cmd": ["status"], "id": "x"}'], '"cmd" must be a string, not an array', "x"),
    ([b'{"cmd": "status", "args": [1]}'], '"args" must be an object, not an array', None),
    ([b'{"cmd": "status", "args": "a=1", "id": 3}'], '"args" must be an object', 3),
    ([b'{"cmd": "status", "args": null}'], '"args" must be an object, not null', None),
    ([b'{"cmd": "status", "actor": 7}'], '"actor" must be a string', None),
    ([b'{"cmd": "status", "argz": {}}'], "unknown key(s) in request: argz", None),
    ([b'{"cmd": "status"}', b"{}"], "one frame, this one has 2", None),
    ([b'{"cmd": "nope", "id": 1}'], "unknown command 'nope'", 1),  # the handler's refusal
]


@pytest.mark.parametrize(("frames", "expected", "req_id"), MALFORMED)
async def test_malformed_requests_get_an_error_naming_the_problem(
    server, ctx, frames, expected, req_id
):
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(server.endpoint)
    try:
        await dealer.send_multipart(frames)
        reply = msgspec.json.decode(await asyncio.wait_for(dealer.recv(), LIMIT))
        assert reply["ok"] is False
        assert expected in reply["error"]
        assert reply["id"] == req_id
        assert set(reply) == {"ok", "error", "id"}
    finally:
        dealer.close(0)


async def test_handler_exception_is_an_error_reply_and_the_server_goes_on(server):
    with structlog.testing.capture_logs() as logs:
        with pytest.raises(ControlError, match=r"^internal error: RuntimeError: boom$"):
            await call(server.endpoint, "explode")
        with pytest.raises(ControlError, match=r"internal error: TypeError: .*list, not a dict"):
            await call(server.endpoint, "wrong")
    failures = [e for e in logs if e["event"] == "control command failed"]
    assert [e["cmd"] for e in failures] == ["explode", "wrong"]
    assert all(e["log_level"] == "error" and e.get("exc_info") for e in failures)
    assert (await call(server.endpoint, "echo", after="boom"))["args"] == {"after": "boom"}


async def test_handler_refusal_is_the_error_text(server):
    with pytest.raises(ControlError, match=r"^unknown command 'dance'$"):
        await call(server.endpoint, "dance")


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o660])
async def test_ipc_socket_file_has_the_configured_mode(ctx, rundir, mode):
    path = f"{rundir}/sub/dir/control.sock"  # parent directories are created
    s = ControlServer(ctx, f"ipc://{path}", handler, ipc_mode=mode)
    await s.start()
    try:
        st = os.stat(path)
        assert stat.S_ISSOCK(st.st_mode)
        assert stat.S_IMODE(st.st_mode) == mode
    finally:
        await s.close()
    assert not os.path.exists(path), "close() leaves no socket file behind"


def _stale_socket(path: str) -> None:
    """A socket file whose process is gone: bound, never listened on, closed."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()


async def test_stale_socket_file_is_replaced(ctx, rundir):
    path = f"{rundir}/control.sock"
    _stale_socket(path)
    s = ControlServer(ctx, f"ipc://{path}", handler)
    await s.start()
    try:
        assert (await call(s.endpoint, "echo", ok=1))["args"] == {"ok": 1}
    finally:
        await s.close()


async def test_second_server_on_a_live_endpoint_refuses(server, ctx):
    path = server.endpoint.removeprefix("ipc://")
    inode = os.stat(path).st_ino
    second = ControlServer(ctx, server.endpoint, handler)
    with pytest.raises(EndpointError, match=f"^another tabled already serves {server.endpoint}$"):
        await second.start()
    await second.close()  # harmless, and must not remove the first server's socket
    assert os.stat(path).st_ino == inode
    assert (await call(server.endpoint, "echo"))["args"] == {}


async def test_a_live_socket_of_another_program_is_not_taken(ctx, rundir):
    path = f"{rundir}/control.sock"
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(path)
    other.listen()
    try:
        s = ControlServer(ctx, f"ipc://{path}", handler)
        with pytest.raises(EndpointError, match="does not answer as tabled"):
            await s.start()
    finally:
        other.close()


async def test_a_regular_file_in_the_way_is_not_removed(ctx, rundir):
    path = f"{rundir}/control.sock"
    with open(path, "w") as f:
        f.write("not a socket")
    s = ControlServer(ctx, f"ipc://{path}", handler)
    with pytest.raises(EndpointError, match="is not a socket"):
        await s.start()
    assert open(path).read() == "not a socket"


def test_client_times_out_when_nothing_listens():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    endpoint = f"tcp://127.0.0.1:{port}"
    with ControlClient(endpoint, timeout=0.2) as c:
        with pytest.raises(DaemonUnreachable) as e:
            c.call("status")
    assert str(e.value).startswith(
        f"no answer from tabled at {endpoint} within 0.2s: is it running?"
    )
    assert "a journal write does not return" in str(e.value)  # what else silences a daemon


def test_client_says_when_the_ipc_socket_file_does_not_exist(rundir):
    path = f"{rundir}/nowhere/control.sock"
    with ControlClient(f"ipc://{path}", timeout=0.2) as c:
        with pytest.raises(DaemonUnreachable) as e:
            c.call("status")
    assert str(e.value) == f"no control socket at {path}: is tabled running?"


def test_client_says_when_the_ipc_socket_is_stale(rundir):
    path = f"{rundir}/control.sock"
    _stale_socket(path)
    with ControlClient(f"ipc://{path}", timeout=0.2) as c:
        with pytest.raises(
            DaemonUnreachable, match=re.escape(f"{path} exists but nothing listens")
        ):
            c.call("status")


async def test_oversized_request_is_dropped_by_the_socket(ctx, rundir):
    """MAXMSGSIZE: libzmq disconnects a peer that sends more; the client sees a timeout."""
    s = ControlServer(ctx, f"ipc://{rundir}/control.sock", handler, max_message=1024)
    await s.start()
    try:
        with pytest.raises(DaemonUnreachable, match="no answer"):
            await call(s.endpoint, "echo", timeout=0.3, pad="x" * 4096)
        assert (await call(s.endpoint, "echo", pad="x" * 100))["args"]["pad"] == "x" * 100
    finally:
        await s.close()


class Held:
    """A handler whose ``hold`` commands wait until released: requests in progress."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.waiting = 0
        self.all_waiting = asyncio.Event()
        self.want = 0
        self.cancelled = 0

    async def __call__(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        if req["cmd"] != "hold":
            return await handler(req, peer)
        self.waiting += 1
        if self.waiting >= self.want:
            self.all_waiting.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return {"held": req["args"]["n"]}


def _dealer(ctx: zmq.asyncio.Context, endpoint: str) -> zmq.asyncio.Socket:
    d = ctx.socket(zmq.DEALER)
    d.setsockopt(zmq.LINGER, 0)
    d.connect(endpoint)
    return d


async def test_more_than_max_in_flight_gets_busy_and_the_rest_are_answered(ctx, rundir):
    held = Held()
    held.want = ControlServer.MAX_IN_FLIGHT
    s = ControlServer(ctx, f"ipc://{rundir}/control.sock", held)
    await s.start()
    d = _dealer(ctx, s.endpoint)
    try:
        for n in range(ControlServer.MAX_IN_FLIGHT):
            await d.send(msgspec.json.encode({"cmd": "hold", "args": {"n": n}, "id": n}))
        await asyncio.wait_for(held.all_waiting.wait(), LIMIT)
        await d.send(msgspec.json.encode({"cmd": "echo", "id": "one more"}))
        busy = msgspec.json.decode(await asyncio.wait_for(d.recv(), LIMIT))
        assert busy == {
            "ok": False,
            "error": "busy: too many requests in progress, try again",
            "id": None,
        }
        held.release.set()
        replies = [
            msgspec.json.decode(await asyncio.wait_for(d.recv(), LIMIT))
            for _ in range(ControlServer.MAX_IN_FLIGHT)
        ]
        assert sorted(r["id"] for r in replies) == list(range(ControlServer.MAX_IN_FLIGHT))
        assert all(r["ok"] and r["result"] == {"held": r["id"]} for r in replies)
        assert s.counters["requests"] == ControlServer.MAX_IN_FLIGHT
        # a slot is free again: the same request now runs
        await d.send(msgspec.json.encode({"cmd": "echo", "id": "again"}))
        again = msgspec.json.decode(await asyncio.wait_for(d.recv(), LIMIT))
        assert again["ok"] and again["id"] == "again"
    finally:
        d.close(0)
        await s.close()


async def test_a_burst_from_several_clients_gets_one_reply_each(server, ctx):
    """More requests at once than one wake of the reader takes (daemon/bus/zmq_loop.py's
    batch): each gets exactly one reply, its answer, its error or ``busy`` (more than
    MAX_IN_FLIGHT at once, as before), and the server answers normally after."""
    dealers = [_dealer(ctx, server.endpoint) for _ in range(3)]
    busy = "busy: too many requests in progress, try again"
    try:
        for i in range(150):
            for k, d in enumerate(dealers):
                if i % 10 == 0:
                    await d.send(b"not json")
                else:
                    await d.send(
                        msgspec.json.encode({"cmd": "echo", "args": {"i": i}, "id": f"{k}-{i}"})
                    )
        for k, d in enumerate(dealers):
            replies = [
                msgspec.json.decode(await asyncio.wait_for(d.recv(), LIMIT)) for _ in range(150)
            ]
            good = [r["id"] for r in replies if r["ok"]]
            assert len(good) == len(set(good))
            assert set(good) <= {f"{k}-{i}" for i in range(150) if i % 10}
            assert all(
                r["error"] == busy or "not JSON" in r["error"] for r in replies if not r["ok"]
            )
        assert (await call(server.endpoint, "echo", after="burst"))["args"] == {"after": "burst"}
    finally:
        for d in dealers:
            d.close(0)


async def test_close_with_a_command_in_progress_cancels_it_and_leaves_nothing(ctx, rundir):
    held = Held()
    held.want = 1
    path = f"{rundir}/control.sock"
    s = ControlServer(ctx, f"ipc://{path}", held)
    await s.start()
    d = _dealer(ctx, s.endpoint)
    try:
        await d.send(msgspec.json.encode({"cmd": "hold", "args": {"n": 1}}))
        await asyncio.wait_for(held.all_waiting.wait(), LIMIT)
        await asyncio.wait_for(s.close(), LIMIT)
        assert held.cancelled == 1
        assert not os.path.exists(path)
    finally:
        d.close(0)


async def test_a_future_cancelled_under_a_handler_still_gets_its_client_a_reply(ctx, rundir):
    """A handler awaiting something that is cancelled (the pipeline's state mark when the
    writer stops) is not a cancelled request: its client gets an error reply, a repeat of
    the same id the same reply, and its in-flight slot is free (before: no reply ever,
    and a repeat waited for one forever)."""
    loop = asyncio.get_running_loop()
    gate: asyncio.Future[None] = loop.create_future()
    started: asyncio.Future[None] = loop.create_future()

    async def waits(req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        if req["cmd"] == "wait":
            started.set_result(None)
            await gate
        return {"cmd": req["cmd"]}

    s = ControlServer(ctx, f"ipc://{rundir}/control.sock", waits)
    await s.start()
    d = _dealer(ctx, s.endpoint)
    try:
        await d.send(msgspec.json.encode({"cmd": "wait", "id": "w1"}))
        await asyncio.wait_for(started, LIMIT)
        await d.send(msgspec.json.encode({"cmd": "wait", "id": "w1"}))  # a repeat meanwhile
        gate.cancel()
        replies = [msgspec.json.decode(await asyncio.wait_for(d.recv(), LIMIT)) for _ in range(2)]
        assert [r["id"] for r in replies] == ["w1", "w1"]
        assert all(not r["ok"] and "CancelledError" in r["error"] for r in replies)
        await d.send(msgspec.json.encode({"cmd": "ping", "id": "p1"}))
        after = msgspec.json.decode(await asyncio.wait_for(d.recv(), LIMIT))
        assert after == {"ok": True, "result": {"cmd": "ping"}, "id": "p1"}
    finally:
        d.close(linger=0)
        await s.close()
