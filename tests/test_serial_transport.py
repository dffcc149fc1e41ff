"""The serial transport against real ptys and real pyserial (and a real TCP socket).

Nothing here sleeps to synchronise: every wait is on an event the code under
test causes (a sink callback, bytes on the master), with ``asyncio.wait_for``
as a safety net against a hang, never as the condition being tested.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from structlog.testing import capture_logs

from drivers.serial import (
    MAX_PENDING,
    PortSpecError,
    PortUnavailable,
    SerialSettings,
    SerialTransport,
    resolve_port,
)
from drivers.sim.pty import PtyLink

GUARD = 5.0  # seconds: only a hang ever reaches it


class Sink:
    """Records every callback; tests await what they expect."""

    def __init__(self) -> None:
        self.events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.data = bytearray()
        self.monos: list[float] = []
        self.sent = bytearray()
        self.disconnects: list[str] = []
        self.connects: list[dict[str, Any]] = []
        self._changed = asyncio.Event()

    def on_connected(self, info: dict[str, Any]) -> None:
        self.connects.append(info)
        self.events.put_nowait(("connected", info))

    def on_disconnected(self, reason: str) -> None:
        self.disconnects.append(reason)
        self.events.put_nowait(("disconnected", reason))

    def on_data(self, data: bytes, mono: float) -> None:
        assert isinstance(data, bytes) and data
        self.data += data
        self.monos.append(mono)
        self._changed.set()

    def on_sent(self, data: bytes, mono: float) -> None:
        self.sent += data
        self._changed.set()

    async def next_event(self) -> tuple[str, Any]:
        return await asyncio.wait_for(self.events.get(), GUARD)

    async def expect(self, kind: str) -> Any:
        got, value = await self.next_event()
        assert got == kind, f"expected {kind}, got {got}: {value!r}"
        return value

    async def wait_data(self, n: int) -> None:
        async def until() -> None:
            while len(self.data) < n:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(until(), GUARD)


async def read_master(link: PtyLink, n: int) -> bytes:
    async def until() -> bytes:
        got = bytearray()
        while len(got) < n:
            got += await link.read()
        return bytes(got)

    return await asyncio.wait_for(until(), GUARD)


@contextlib.asynccontextmanager
async def running(transport: SerialTransport, sink: Sink):
    task = asyncio.create_task(transport.run(sink))
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def transport_for(port: str, **kw: Any) -> SerialTransport:
    kw.setdefault("reconnect_min", 0.01)
    kw.setdefault("reconnect_max", 0.05)
    return SerialTransport(port, SerialSettings(), **kw)


class Pauses:
    """Stands in for the backoff timer: records each delay asked for and holds
    the transport there until the test releases it, so retries happen exactly
    when the test says (and the asserted delays are the real computed ones)."""

    def __init__(self) -> None:
        self._asked: asyncio.Queue[float] = asyncio.Queue()
        self._go: asyncio.Queue[None] = asyncio.Queue()

    async def pause(self, delay: float) -> bool:
        await self._asked.put(delay)
        await self._go.get()
        return False

    async def next(self) -> float:
        return await asyncio.wait_for(self._asked.get(), GUARD)

    def release(self) -> None:
        self._go.put_nowait(None)


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> Pauses:
    p = Pauses()

    async def pause(self: SerialTransport, delay: float) -> bool:
        return await p.pause(delay)

    monkeypatch.setattr(SerialTransport, "_pause", pause)
    return p


@pytest.fixture
def pty(tmp_path: Path):
    link = PtyLink(link=tmp_path / "by-id" / "usb-FTDI_Shoe_A1-if00-port0")
    yield link
    link.close()


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# --- data in both directions -------------------------------------------------


async def test_bytes_from_device_arrive_in_order(pty: PtyLink) -> None:
    ticks = iter(range(1_000_000))
    sink, t = Sink(), transport_for(pty.path, clock=lambda: float(next(ticks)))
    async with running(t, sink):
        info = await sink.expect("connected")
        assert info == {"port": pty.slave_path, "spec": pty.path}
        assert t.connected
        pty.opened.set()
        pty.write(b"first ")
        pty.write(b"second")
        await sink.wait_data(12)
        assert bytes(sink.data) == b"first second"
        assert sink.monos == sorted(sink.monos)  # stamped by the injected clock


async def test_large_burst_from_device_is_complete_and_ordered(pty: PtyLink) -> None:
    rng = random.Random(7)
    burst = bytes(rng.randrange(256) for _ in range(100_000))  # every byte value, raw
    sink, t = Sink(), transport_for(pty.path)
    async with running(t, sink):
        await sink.expect("connected")
        pty.write(burst)  # far more than the pty holds: buffered, written as it drains
        await sink.wait_data(len(burst))
        assert bytes(sink.data) == burst
        assert len(sink.monos) > 1  # it really came in several reads


async def test_writes_reach_the_device_and_are_reported_sent(pty: PtyLink) -> None:
    chunks = [bytes([i]) * 8000 for i in range(6)]  # 48 kB: more than the pty takes at once
    sink, t = Sink(), transport_for(pty.path)
    async with running(t, sink):
        await sink.expect("connected")
        assert t.write(b"HELLO\r\n")
        assert await read_master(pty, 7) == b"HELLO\r\n"
        assert bytes(sink.sent) == b"HELLO\r\n"
        for c in chunks:
            assert t.write(c)
        want = b"".join(chunks)
        assert await read_master(pty, len(want)) == want
        assert bytes(sink.sent) == b"HELLO\r\n" + want


async def test_write_from_on_connected_is_sent(pty: PtyLink) -> None:
    class Greeter(Sink):
        def on_connected(self, info: dict[str, Any]) -> None:
            assert t.write(b"IDENTIFY\r")  # what a driver's on_connect() sends
            super().on_connected(info)

    sink = Greeter()
    t = transport_for(pty.path)
    async with running(t, sink):
        await sink.expect("connected")
        assert await read_master(pty, 9) == b"IDENTIFY\r"


async def test_a_device_that_does_not_read_gets_writes_dropped_whole(pty: PtyLink) -> None:
    sink, t = Sink(), transport_for(pty.path)
    async with running(t, sink):
        await sink.expect("connected")
        accepted: list[bytes] = []
        for i in range(40):  # nobody reads the master: the pty fills, then our buffer
            chunk = bytes([65 + i % 26]) * 4000
            if not t.write(chunk):
                break
            accepted.append(chunk)
        else:
            pytest.fail("writes never refused")
        assert t.bytes_dropped == 4000
        # what the pty took, plus our buffer up to its bound
        assert MAX_PENDING <= len(accepted) * 4000 <= MAX_PENDING + 64 * 1024
        want = b"".join(accepted)
        assert await read_master(pty, len(want)) == want  # nothing torn, nothing extra
        assert t.write(b"after")  # drained: writes are accepted again
        assert await read_master(pty, 5) == b"after"


async def test_write_when_disconnected_returns_false(pty: PtyLink) -> None:
    sink, t = Sink(), transport_for(pty.path)
    assert not t.connected
    assert t.write(b"x") is False
    async with running(t, sink):
        await sink.expect("connected")
        pty.hangup()
        await sink.expect("disconnected")
        assert not t.connected
        assert t.write(b"x") is False
    assert sink.sent == b""


# --- unplug, replug, renumbering ---------------------------------------------


async def test_hangup_then_replug_reconnects_by_itself(pty: PtyLink) -> None:
    sink, t = Sink(), transport_for(pty.path)
    async with running(t, sink):
        first = await sink.expect("connected")
        pty.write(b"before")
        await sink.wait_data(6)  # the hangup would flush it otherwise

        pty.hangup()
        reason = await sink.expect("disconnected")
        assert "hung up" in reason and first["port"] in reason
        assert not t.connected

        pty.reopen()  # a new /dev/pts/N behind the same by-id link
        second = await sink.expect("connected")
        assert second["spec"] == pty.path
        assert second["port"] == pty.slave_path != first["port"]
        assert t.connected and t.reconnects == 1

        pty.write(b"after")
        await sink.wait_data(11)
        assert bytes(sink.data) == b"beforeafter"
        assert t.write(b"ping")
        assert await read_master(pty, 4) == b"ping"
        assert sink.disconnects == [reason]


async def test_renumbered_device_is_found_through_the_symlink(tmp_path: Path) -> None:
    usb0, usb1 = PtyLink(), PtyLink()  # ttyUSB0 and, after the replug, ttyUSB1
    by_id = tmp_path / "usb-FTDI_Shoe_A1-if00-port0"
    by_id.symlink_to(usb0.slave_path)
    sink, t = Sink(), transport_for(str(by_id))
    try:
        async with running(t, sink):
            assert (await sink.expect("connected"))["port"] == usb0.slave_path
            tmp = tmp_path / "new"
            tmp.symlink_to(usb1.slave_path)
            os.replace(tmp, by_id)  # udev re-points by-id at the new node
            usb0.hangup()
            await sink.expect("disconnected")
            assert (await sink.expect("connected"))["port"] == usb1.slave_path
            usb1.write(b"from ttyUSB1")
            await sink.wait_data(12)
            assert bytes(sink.data) == b"from ttyUSB1"
            assert t.reconnects == 1
    finally:
        usb0.close()
        usb1.close()


async def test_second_opener_is_told_the_port_is_in_use(pty: PtyLink, pauses: Pauses) -> None:
    s1, t1 = Sink(), transport_for(pty.path)
    s2, t2 = Sink(), transport_for(pty.path)
    async with running(t1, s1):
        await s1.expect("connected")
        async with running(t2, s2):
            reason = await s2.expect("disconnected")
            assert reason.startswith("port is in use by another process")
            assert pty.slave_path in reason
            assert not t2.connected
            for _ in range(3):  # it keeps trying...
                await pauses.next()
                pauses.release()
            await pauses.next()
            assert s2.disconnects == [reason]  # ...but says so once
            assert s2.connects == []
            # t1 is untouched by t2's attempts
            assert t1.connected
            pty.write(b"still mine")
            await s1.wait_data(10)


async def test_missing_port_is_reported_once_then_connects_when_it_appears(
    tmp_path: Path,
) -> None:
    where = tmp_path / "by-id" / "usb-late"
    sink, t = Sink(), transport_for(str(where))
    async with running(t, sink):
        reason = await sink.expect("disconnected")
        assert reason.startswith("port not present") and str(where) in reason
        link = PtyLink(link=where)  # plugged in later
        try:
            info = await sink.expect("connected")
            assert info["port"] == link.slave_path
            assert sink.disconnects == [reason]
            assert t.reconnects == 0  # the first successful open is not a re-open
        finally:
            link.close()


async def test_backoff_doubles_up_to_the_cap_and_resets_after_data(
    tmp_path: Path, pauses: Pauses
) -> None:
    where = tmp_path / "by-id" / "usb-flaky"
    with capture_logs() as logs:
        sink, t = Sink(), transport_for(str(where), reconnect_min=0.01, reconnect_max=0.05)
        async with running(t, sink):
            reason = await sink.expect("disconnected")
            for want in (0.01, 0.02, 0.04):
                assert await pauses.next() == pytest.approx(want)
                pauses.release()
            assert await pauses.next() == pytest.approx(0.05)  # capped
            link = PtyLink(link=where)
            try:
                pauses.release()
                await sink.expect("connected")
                link.hangup()  # lost at once, nothing received: keep backing off
                await sink.expect("disconnected")
                assert await pauses.next() == pytest.approx(0.05)
                link.reopen()
                pauses.release()
                await sink.expect("connected")
                link.write(b"alive")
                await sink.wait_data(5)
                link.hangup()  # this one carried data: start over from the minimum
                await sink.expect("disconnected")
                assert await pauses.next() == pytest.approx(0.01)
            finally:
                link.close()
    assert sink.disconnects[0] == reason  # the open failures were reported once
    assert len(sink.disconnects) == 3  # plus the two losses
    unavailable = [e for e in logs if e["event"] == "serial port unavailable"]
    assert [e["log_level"] for e in unavailable] == ["warning", "debug", "debug", "debug"]
    assert {e["reason"] for e in unavailable} == {reason}
    assert all(e.get("port") == str(where) for e in logs), [
        e for e in logs if e.get("port") != str(where)
    ]


async def test_close_while_waiting_to_retry_ends_run(tmp_path: Path) -> None:
    sink, t = Sink(), transport_for(str(tmp_path / "nothing"), reconnect_min=30, reconnect_max=60)
    task = asyncio.create_task(t.run(sink))
    await sink.expect("disconnected")
    await t.close()
    await asyncio.wait_for(task, GUARD)  # not 30 s


async def test_cancelling_run_closes_everything(pty: PtyLink) -> None:
    baseline = open_fds()
    sink, t = Sink(), transport_for(pty.path)
    task = asyncio.create_task(t.run(sink))
    await sink.expect("connected")
    assert open_fds() > baseline  # the port (and pyserial's pipes) are open
    pty.hangup()  # a reconnect cycle in between must not leak either
    await sink.expect("disconnected")
    pty.reopen()
    await sink.expect("connected")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert open_fds() == baseline
    assert not t.connected
    await t.close()  # idempotent after a cancel
    await t.close()


async def test_close_ends_run(pty: PtyLink) -> None:
    baseline = open_fds()
    sink, t = Sink(), transport_for(pty.path)
    task = asyncio.create_task(t.run(sink))
    await sink.expect("connected")
    await t.close()
    await asyncio.wait_for(task, GUARD)
    assert open_fds() == baseline
    assert t.write(b"x") is False
    assert sink.disconnects == []  # a deliberate close is not a device event


async def test_an_exception_in_the_sink_stops_run(pty: PtyLink) -> None:
    class Broken(Sink):
        def on_data(self, data: bytes, mono: float) -> None:
            raise ZeroDivisionError("bug in the daemon")

    baseline = open_fds()
    sink, t = Broken(), transport_for(pty.path)
    task = asyncio.create_task(t.run(sink))
    await sink.expect("connected")
    pty.write(b"x")
    with pytest.raises(ZeroDivisionError):
        await asyncio.wait_for(task, GUARD)
    assert open_fds() == baseline


# --- USB identity --------------------------------------------------------------


def _port(device: str, vid: int | None, pid: int | None, serial: str | None) -> Any:
    return SimpleNamespace(device=device, vid=vid, pid=pid, serial_number=serial)


FAKE_PORTS = [
    _port("/dev/ttyS0", None, None, None),
    _port("/dev/ttyUSB0", 0x0403, 0x6001, "A1"),
    _port("/dev/ttyUSB1", 0x0403, 0x6001, "B2"),
    _port("/dev/ttyACM0", 0x2341, 0x0043, "X9"),
]


def test_usb_identity_found() -> None:
    assert resolve_port("usb:0403:6001:A1", comports=lambda: FAKE_PORTS) == "/dev/ttyUSB0"
    assert resolve_port("USB:0403:6001:b2", comports=lambda: FAKE_PORTS) == "/dev/ttyUSB1"
    assert resolve_port("usb:2341:43", comports=lambda: FAKE_PORTS) == "/dev/ttyACM0"


def test_usb_identity_not_found() -> None:
    with pytest.raises(PortUnavailable) as e:
        resolve_port("usb:0403:6001:C3", comports=lambda: FAKE_PORTS)
    assert str(e.value) == "no serial port with USB id 0403:6001 (serial C3) is present"
    with pytest.raises(PortUnavailable) as e:
        resolve_port("usb:0403:6015", comports=lambda: FAKE_PORTS)
    assert str(e.value) == "no serial port with USB id 0403:6015 is present"


def test_usb_identity_ambiguous_names_both_and_asks_for_the_serial() -> None:
    with pytest.raises(PortUnavailable) as e:
        resolve_port("usb:0403:6001", comports=lambda: FAKE_PORTS)
    msg = str(e.value)
    assert "/dev/ttyUSB0 (serial A1)" in msg and "/dev/ttyUSB1 (serial B2)" in msg
    assert "usb:0403:6001:<serial>" in msg


def test_usb_identity_shared_serial_is_ambiguous_too() -> None:
    twins = [_port(f"/dev/ttyUSB{i}", 0x0403, 0x6010, "FT1") for i in (0, 1)]  # FT2232
    with pytest.raises(PortUnavailable, match="by-path"):
        resolve_port("usb:0403:6010:FT1", comports=lambda: twins)


@pytest.mark.parametrize("spec", ["usb:", "usb:0403", "usb:xyz:6001", "usb:12345:1"])
def test_malformed_usb_identity_is_a_config_error(spec: str) -> None:
    with pytest.raises(PortSpecError, match="usb:VID:PID"):
        resolve_port(spec, comports=lambda: FAKE_PORTS)
    with pytest.raises(PortSpecError):
        SerialTransport(spec, SerialSettings())


def test_paths_are_resolved_through_symlinks(tmp_path: Path) -> None:
    (tmp_path / "ttyUSB1").touch()
    (tmp_path / "by-id").symlink_to(tmp_path / "ttyUSB1")
    assert resolve_port(str(tmp_path / "by-id")) == str(tmp_path / "ttyUSB1")
    assert resolve_port("socket://h:1") == "socket://h:1"


def test_bad_settings_are_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="parity"):
        SerialTransport("/dev/null", SerialSettings(parity="Q"))


async def test_usb_identity_unresolvable_is_reported_through_run() -> None:
    # the real enumeration: no USB bus on CI, and certainly not this device
    sink, t = Sink(), transport_for("usb:dead:beef:NOPE")
    async with running(t, sink):
        reason = await sink.expect("disconnected")
    assert reason == "no serial port with USB id dead:beef (serial NOPE) is present"


# --- URL ports -----------------------------------------------------------------


async def test_socket_url_data_flows_and_peer_close_disconnects() -> None:
    peers: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()

    async def accept(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await peers.put((r, w))

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    url = f"socket://127.0.0.1:{port}"
    sink, t = Sink(), transport_for(url)
    try:
        async with running(t, sink):
            assert await sink.expect("connected") == {"port": url, "spec": url}
            reader, writer = await asyncio.wait_for(peers.get(), GUARD)
            writer.write(b"from the network device")
            await writer.drain()
            await sink.wait_data(23)
            assert bytes(sink.data) == b"from the network device"

            assert t.write(b"to it")
            assert await asyncio.wait_for(reader.readexactly(5), GUARD) == b"to it"
            assert bytes(sink.sent) == b"to it"

            writer.close()
            await writer.wait_closed()
            reason = await sink.expect("disconnected")
            assert "socket disconnected" in reason
            assert not t.connected
            # ...and it dials again by itself
            assert await sink.expect("connected") == {"port": url, "spec": url}
            _, again = await asyncio.wait_for(peers.get(), GUARD)
            again.close()
    finally:
        server.close()
        await server.wait_closed()


async def test_loop_url_without_fd_uses_threads() -> None:
    sink, t = Sink(), transport_for("loop://")
    async with running(t, sink):
        await sink.expect("connected")
        assert {th.name for th in threading.enumerate()} >= {
            "serial-read loop://",
            "serial-write loop://",
        }
        assert t.write(b"echo me")
        await sink.wait_data(7)  # loop:// echoes what is written
        assert bytes(sink.data) == b"echo me"
        assert bytes(sink.sent) == b"echo me"
    assert not [th for th in threading.enumerate() if th.name.startswith("serial-")]


async def test_still_down_for_a_new_reason_is_told_once_a_repeat_only_logged(
    tmp_path: Path, pauses: Pauses
) -> None:
    """The device runner shows the current reason (no new event): ``tablectl devices`` never
    shows why the port failed an hour ago when it now fails for something else."""
    where = tmp_path / "ttyUSB-gone"
    sink, t = Sink(), transport_for(str(where))
    async with running(t, sink):
        missing = await sink.expect("disconnected")
        await pauses.next()
        pauses.release()  # the same failure again: the log's, not the sink's
        await pauses.next()
        where.write_text("")  # now something is there, but no serial port
        pauses.release()
        other = await sink.expect("disconnected")
        await pauses.next()
    assert other != missing and sink.disconnects == [missing, other]
