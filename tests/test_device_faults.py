"""Device faults through the real stack: a pty, the real SerialTransport and DeviceRunner.

Every serial driver registered under ``tabled.drivers`` is played by hand on a
real pty behind a ``by-id``-style symlink, with the transport and the runner
exactly as the daemon wires them (``daemon/runtime/app.py``), in-process on one
asyncio loop. The runner's ``submit`` puts every table input (readings and
health changes) on a queue the test awaits; nothing here sleeps to wait for
something (every wait is on an event or a queue, with :data:`GUARD` as a
safety net against a hang).

What each driver does with its own commands echoed back (a loopback cable, a
terminal server with echo on) is pinned in :data:`SPECS` (``echo``):

* ``cammegh-ss2`` sends ``*V`` and ``*q 1``: their echoes *are* well-formed SS2
  replies (``*V`` with no text, ``*q 1``), matched to the commands that asked,
  so they become two ``DeviceReply`` readings and the device's identity reads
  as the empty string. Nothing raises and nothing is a result.
* ``cammegh-m360`` sends ``*X`` (ask the level): the echo is a ``DeviceReply``
  to ``*X`` with empty text.
* ``dice-ref`` and ``shuffler-ref`` send a version request: its echo is a frame
  with a good checksum but no fields, so it is one counted ``Malformed``.
* ``shoe-line`` and ``tile-line`` send nothing, so there is nothing to echo (skipped).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest

from daemon.runtime.devices import DeviceRunner
from daemon.table import DeviceHealth, DeviceReading, Input
from drivers.base import Driver, load_drivers
from drivers.dice_readings import DiceResult
from drivers.dice_ref import encode_frame as dice_frame
from drivers.framing import encode_stx_frame as shuffler_frame
from drivers.noise import DEFAULT_RULE, NoiseMeter
from drivers.readings import CardDrawn, DeviceReply, LineNoise, Malformed, Reading, WheelStatus
from drivers.serial import READ_SIZE, SerialSettings, SerialTransport
from drivers.shuffler_readings import ShufflerDoorOpen
from drivers.sim.pty import PtyLink
from drivers.tile_readings import TileDrawn

GUARD = 10.0  # seconds: only a hang ever reaches it
FLOOD = 1 << 20  # 1 MiB of garbage
#: bytes a protocol may hold between two reads (the largest line bound is Cammegh's 512).
BUFFER_BOUND = 1024


@dataclass(frozen=True)
class Spec:
    """How to talk to one driver: a valid frame, what it decodes to, half of a frame."""

    driver: str
    options: dict[str, Any]
    frame: bytes
    kind: type[Reading]
    half: bytes
    #: what the echo of the driver's own on-connect commands becomes:
    #: ``(replies as (command, text), malformed count)``; None: it sends nothing.
    echo: tuple[list[tuple[str, str]], int] | None = None
    more: list[bytes] = field(default_factory=list)


SPECS: dict[str, Spec] = {
    "shoe-line": Spec(
        "shoe-line",
        {},
        b"TH\r\n",
        CardDrawn,
        half=b"T",
        more=[b"AS\r\n", b"9D\r\n", b"KC\r\n", b"2H\r\n"],
    ),
    "tile-line": Spec(
        "tile-line",
        {},
        b"9p\r\n",
        TileDrawn,
        half=b"9",
        more=[b"wd\r\n", b"1p\r\n", b"5z\r\n", b"3p\r\n"],
    ),
    "cammegh-ss2": Spec(
        "cammegh-ss2",
        {},
        b"*X;2;002;31;0;146;1\r\n",
        WheelStatus,
        half=b"*X;2;002;3",
        echo=([("*V", ""), ("*q 1", "1")], 0),
    ),
    "cammegh-m360": Spec(
        "cammegh-m360",
        {"level": "advanced"},
        b"*X;2;002;31;0;146;1\r\n",
        WheelStatus,
        half=b"*X;2;002;3",
        echo=([("*X", "")], 0),
    ),
    "dice-ref": Spec(
        "dice-ref",
        {},
        dice_frame(b"R", bytes([3, 5, 6])),
        DiceResult,
        half=dice_frame(b"R", bytes([3, 5, 6]))[:4],
        echo=([], 1),
    ),
    "shuffler-ref": Spec(
        "shuffler-ref",
        {"poll_interval": None},
        shuffler_frame(b"O;OPEN"),
        ShufflerDoorOpen,
        half=shuffler_frame(b"O;OPEN")[:4],
        echo=([], 1),
    ),
}

REGISTERED = load_drivers()


def serial_drivers() -> list[Any]:
    """Every spec, skipped with a reason when its driver is not registered (or not serial)."""
    out = []
    for name in SPECS:
        marks = []
        if name not in REGISTERED:
            marks.append(pytest.mark.skip(reason=f"driver {name!r} has no tabled.drivers entry"))
        elif REGISTERED[name].transport != "serial":
            marks.append(pytest.mark.skip(reason=f"driver {name!r} is not a serial driver"))
        out.append(pytest.param(name, marks=marks, id=name))
    return out


def test_every_registered_serial_driver_has_a_spec():
    """A new serial driver must be added here, or it escapes these fault tests."""
    serial = {n for n, cls in REGISTERED.items() if cls.transport == "serial"}
    assert serial <= set(SPECS), f"no fault spec for {sorted(serial - set(SPECS))}"


def make_driver(name: str) -> Driver:
    cls = REGISTERED[name]
    return cls(msgspec.convert(SPECS[name].options, cls.Options))


def garbage(n: int, seed: int = 1) -> bytes:
    """Line noise as a wire makes it: random bytes, letters, digits, CR and LF included.

    Some of it decodes (a short alphanumeric line is an unreadable card code, a wheel's
    bare reply): no line without a checksum can be proven free of noise. What holds is
    that the line is seen to be noisy before any of it is believed (``drivers/noise.py``).
    It ends with CR LF so the frame after it starts on a fresh line.
    """
    return random.Random(seed).randbytes(n - 2) + b"\r\n"


def buffered(obj: Any, depth: int = 0, seen: set[int] | None = None) -> int:
    """Bytes a protocol holds: every bytearray/bytes/list reachable from it, two levels down."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 2:
        return 0
    seen.add(id(obj))
    if isinstance(obj, bytes | bytearray | list | str):
        return len(obj)
    if not type(obj).__module__.startswith("drivers."):
        return 0
    names = list(getattr(obj, "__dict__", {}))
    for klass in type(obj).__mro__:
        names += list(getattr(klass, "__slots__", ()))
    return sum(buffered(getattr(obj, n, None), depth + 1, seen) for n in set(names))


class Rig:
    """One device as the daemon runs it: pty (device end) → SerialTransport → DeviceRunner."""

    def __init__(self, tmp: Path, name: str, driver: Driver, stale_after: float | None = None):
        self.link = PtyLink(link=tmp / "by-id" / f"usb-{name}-if00-port0")
        self.inputs: asyncio.Queue[Input] = asyncio.Queue()
        self.runner = DeviceRunner(name, driver, self.inputs.put_nowait, stale_after=stale_after)
        d = driver.serial_defaults
        self.transport = SerialTransport(
            self.link.path,
            SerialSettings(d.baudrate, d.bytesize, d.parity, d.stopbits),
            reconnect_min=0.01,
            reconnect_max=0.05,
        )
        self.runner.transport = self.transport
        self.runner.spec = self.link.path
        self.runner.on_link.append(
            lambda up: self.link.opened.set() if up else self.link.opened.clear()
        )
        self.max_buffered = 0
        self._rx = asyncio.Event()
        self.runner.taps.append(self._tap)
        self._task: asyncio.Task[None] | None = None

    def _tap(self, direction: str, data: bytes, mono: float) -> None:
        if direction == "rx":
            # called before the protocol sees ``data``: what it holds after the previous read
            self.max_buffered = max(self.max_buffered, buffered(self.runner.protocol))
            self._rx.set()

    @property
    def name(self) -> str:
        return self.runner.name

    async def start(self) -> DeviceHealth:
        self._task = asyncio.create_task(self.transport.run(self.runner))
        return await self.health("ok")

    async def next(self) -> Input:
        return await asyncio.wait_for(self.inputs.get(), GUARD)

    async def health(self, want: str) -> DeviceHealth:
        """The next input, which must be a health change to ``want``."""
        got = await self.next()
        assert isinstance(got, DeviceHealth), f"{self.name}: expected health {want}, got {got!r}"
        assert got.health == want, f"{self.name}: expected {want}, got {got!r}"
        return got

    async def reading(self) -> Reading:
        got = await self.next()
        assert isinstance(got, DeviceReading), f"{self.name}: expected a reading, got {got!r}"
        return got.reading

    def pending(self) -> list[Input]:
        out = []
        while not self.inputs.empty():
            out.append(self.inputs.get_nowait())
        return out

    async def received(self, n: int) -> None:
        """Until the runner has been handed ``n`` bytes in total (and has fed them all)."""

        async def until() -> None:
            while self.runner.counters.bytes_in < n:
                self._rx.clear()
                await self._rx.wait()
            await asyncio.sleep(0)  # the tap runs before the feed: let on_data finish

        await asyncio.wait_for(until(), GUARD)

    async def send(self, data: bytes) -> None:
        await asyncio.wait_for(self.link.opened.wait(), GUARD)
        self.link.write(data)

    async def close(self) -> None:
        await self.transport.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.runner.close()
        self.link.close()


@pytest.fixture
async def rigs(tmp_path: Path):
    made: list[Rig] = []

    def make(name: str, driver: Driver | None = None, **kw: Any) -> Rig:
        r = Rig(tmp_path, f"{name}-{len(made)}", driver or make_driver(name), **kw)
        made.append(r)
        return r

    yield make
    for r in made:
        await r.close()


async def round_trips(bystander: Rig, n: int, during: Callable[[], bool]) -> list[bool]:
    """``n`` shoe cards, each sent once the previous one arrived; for each, ``during()`` then."""
    seen = []
    for i in range(n):
        code = SPECS["shoe-line"].more[i % 4]
        await bystander.send(code)
        r = await bystander.reading()
        assert isinstance(r, CardDrawn) and r.frame == code.rstrip(b"\r\n")
        seen.append(during())
    return seen


# --- unplug, replug -------------------------------------------------------------------------


@pytest.mark.parametrize("name", serial_drivers())
async def test_unplug_replug_while_another_device_keeps_delivering(rigs, name):
    spec = SPECS[name]
    dev, other = rigs(name), rigs("shoe-line")
    first = await dev.start()
    await other.start()
    await dev.send(spec.frame)
    assert isinstance(await dev.reading(), spec.kind)

    dev.link.hangup()  # the USB-serial adapter is pulled out
    down = await dev.health("disconnected")
    assert "hung up" in down.reason
    assert dev.runner.health == "disconnected"
    # the other device is served while this one is away
    assert await round_trips(other, 3, lambda: dev.runner.health == "disconnected") == [True] * 3

    dev.link.reopen()  # plugged back: a new /dev/pts/N behind the same by-id name
    up = await dev.health("ok")
    assert up.info["port"] == dev.link.slave_path != first.info["port"]
    assert dev.runner.counters.reconnects == 1 and dev.transport.reconnects == 1
    await dev.send(spec.frame)
    assert isinstance(await dev.reading(), spec.kind)  # a fresh protocol decodes again
    assert dev.pending() == []
    assert other.pending() == [] and other.runner.counters.reconnects == 0


# --- silence ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", serial_drivers())
async def test_silence_is_stale_then_traffic_resumes(rigs, name):
    spec = SPECS[name]
    dev = rigs(name, stale_after=0.2)
    ok = await dev.start()
    stale = await dev.health("stale")  # nothing said for stale_after: the timer fires
    assert stale.reason == "no frame for 0.2 s"
    assert stale.mono - ok.mono >= 0.2 * 0.99  # never before the configured silence
    assert dev.runner.status()["health"] == "stale"
    await dev.send(spec.frame)
    back = await dev.health("ok")
    assert back.reason == "traffic resumed"
    assert isinstance(await dev.reading(), spec.kind)
    assert dev.pending() == []


# --- a flood of garbage -------------------------------------------------------------------


def test_the_noise_is_caught_before_anything_in_it_is_believed():
    """The flood's own guarantee, checked on the protocols directly (no pty): it has letters,
    digits and line ends, and every protocol's meter trips before any reading it makes."""
    flood = garbage(FLOOD)
    assert flood.count(b"\n") + flood.count(b"\r") > 4000
    assert sum(chr(c).isalnum() for c in flood if c < 128) > FLOOD // 8
    for name in SPECS:
        if name not in REGISTERED:
            continue
        p, meter = make_driver(name).protocol(), NoiseMeter(DEFAULT_RULE)
        out = p.feed(flood, 0.0) + p.eof()
        first = next(i for i, r in enumerate(out) if meter.reading(r, 0.0) is not None)
        assert all(isinstance(r, Malformed) for r in out[: first + 1]), name


@pytest.mark.parametrize("name", serial_drivers())
async def test_flood_of_garbage_is_counted_bounded_and_the_other_device_is_served(rigs, name):
    spec = SPECS[name]
    dev, other = rigs(name), rigs("shoe-line")
    await dev.start()
    await other.start()
    await dev.send(spec.frame)
    assert isinstance(await dev.reading(), spec.kind)
    base = dev.runner.counters.bytes_in
    frames = dev.runner.counters.frames

    flood = garbage(FLOOD)
    await dev.send(flood)  # buffered by the pty link, written as the daemon reads
    # the other device is served while this one is being flooded
    still_flooding = await round_trips(
        other, 5, lambda: dev.runner.counters.bytes_in < base + len(flood)
    )
    assert still_flooding == [True] * 5, "the second device waited for the flood to end"
    await dev.received(base + len(flood))

    # the line is noisy before anything in the noise reaches the table: the table holds it
    got = dev.pending()
    assert got and isinstance(got[0], DeviceReading) and isinstance(got[0].reading, LineNoise)
    # at most the good frame sent just before the flood is among the recent lines
    assert len(got[0].reading.recent) <= 1 and dev.runner.status()["line_noisy"] is True
    assert not any(isinstance(x, DeviceHealth) for x in got)
    c = dev.runner.counters
    assert c.frames == frames + len(got) - 1
    assert c.malformed >= len(flood) // READ_SIZE, c.malformed  # at least one per read
    assert dev.runner.health == "ok"
    assert dev.max_buffered <= BUFFER_BOUND, f"{name} held {dev.max_buffered} bytes"
    assert buffered(dev.runner.protocol) <= BUFFER_BOUND

    await dev.send(spec.frame)  # a valid frame right after the flood still decodes
    assert isinstance(await dev.reading(), spec.kind)
    assert dev.pending() == []
    assert other.pending() == []


# --- a device that echoes what it is sent -------------------------------------------------


@pytest.mark.parametrize("name", serial_drivers())
async def test_echoing_device(rigs, name):
    spec = SPECS[name]
    driver = make_driver(name)
    sent = b"".join(driver.on_connect())
    if spec.echo is None or not sent:
        assert not sent and spec.echo is None
        pytest.skip(f"{name} sends nothing on connect: nothing to echo")
    dev = rigs(name, driver)

    async def echo() -> None:
        with contextlib.suppress(EOFError):
            while True:
                dev.link.write(await dev.link.read())

    echoer = asyncio.create_task(echo())
    try:
        await dev.start()
        await dev.received(len(sent))
        assert dev.runner.counters.bytes_out == len(sent)
        replies, malformed = spec.echo
        got = [x.reading for x in dev.pending() if isinstance(x, DeviceReading)]
        assert [(r.command, r.text) for r in got if isinstance(r, DeviceReply)] == replies
        assert len(got) == len(replies)  # nothing else: no result, no card
        c = dev.runner.counters
        assert (c.frames, c.malformed, c.unknown) == (len(replies), malformed, 0)
        if any(cmd == "*V" for cmd, _ in replies):
            assert dev.runner.identity == ""  # the echoed *V is taken as an empty identity
        await dev.send(spec.frame)  # the link and the protocol carry on
        assert isinstance(await dev.reading(), spec.kind)
    finally:
        echoer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await echoer


# --- half a frame -------------------------------------------------------------------------


@pytest.mark.parametrize("name", serial_drivers())
async def test_half_a_frame_then_silence_then_hangup_is_never_a_reading(rigs, name):
    spec = SPECS[name]
    dev = rigs(name)
    await dev.start()
    await dev.send(spec.frame)
    assert isinstance(await dev.reading(), spec.kind)
    malformed = dev.runner.counters.malformed

    await dev.send(spec.half)  # the device stops half-way through a frame
    await dev.received(len(spec.frame) + len(spec.half))  # fed before the hangup flushes it
    assert dev.pending() == []  # kept, not a reading
    assert dev.runner.counters.malformed == malformed

    dev.link.hangup()  # and then it goes away
    await dev.health("disconnected")
    assert dev.pending() == []  # the half frame never became a reading
    assert dev.runner.counters.malformed == malformed + 1
    reason, frame = dev.runner.last_malformed or ("", b"")
    assert "cut short" in reason and frame and frame in spec.half
