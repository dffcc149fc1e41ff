"""The SlingShot 2 simulator through a real pty, the real serial transport and the SS2 protocol.

Nothing sleeps to synchronise: every wait is for readings the simulator causes,
with ``asyncio.wait_for`` as a guard against a hang. The simulator steps every
few milliseconds of real time (``pace``) while its own clock says 500 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from wheel_harness import (
    BALL_IN_RIM,
    BALL_MISSING,
    BEFORE_GAME,
    COMPONENT_FAULT,
    LAUNCH_FAILED,
    NO_MORE_BETS,
    PLACE_BETS,
    SAME_DIRECTION,
    TABLE_CLOSED,
    WINNING_NUMBER,
)

from drivers.cammegh import SS2Driver, SS2Options, SS2Protocol, decode_log_page
from drivers.readings import DeviceReply, Reading, WheelFault, WheelStatus, WinningNumber
from drivers.serial import SerialSettings, SerialTransport
from drivers.sim.pty import PtyLink
from drivers.sim.wheel import FAULTS, WheelSimulator

GUARD = 20.0  # seconds: only a hang ever reaches it
FAST = {6: 0.5, 1: 0.5, 2: 1.0, 3: 1.5, 4: 1.5, 5: 1.0}


class Wire:
    """The daemon's end: the transport's sink, decoding with the real protocol."""

    def __init__(self, link: PtyLink) -> None:
        self.link = link
        self.proto = SS2Protocol()
        self.readings: list[Reading] = []
        self.transport: SerialTransport | None = None
        self._changed = asyncio.Event()

    def on_connected(self, info: dict[str, Any]) -> None:
        self.link.opened.set()  # the daemon opened the port: the wheel may talk

    def on_disconnected(self, reason: str) -> None:
        self.link.opened.clear()

    def on_data(self, data: bytes, mono: float) -> None:
        self.readings += self.proto.feed(data, mono)
        self._changed.set()

    def on_sent(self, data: bytes, mono: float) -> None:
        self.proto.sent(data, mono)

    def send(self, data: bytes) -> None:
        assert self.transport is not None and self.transport.write(data)

    async def until(self, pred: Callable[[list[Reading]], bool]) -> list[Reading]:
        async def wait() -> list[Reading]:
            while not pred(self.readings):
                self._changed.clear()
                await self._changed.wait()
            return self.readings

        return await asyncio.wait_for(wait(), GUARD)

    def statuses(self) -> list[WheelStatus]:
        return [r for r in self.readings if isinstance(r, WheelStatus)]


@contextlib.asynccontextmanager
async def wheel(**kw: Any) -> AsyncIterator[tuple[WheelSimulator, Wire]]:
    link = PtyLink()
    sim = WheelSimulator(pace=0.003, durations=FAST, **kw)
    sim.attach(link)
    wire = Wire(link)
    transport = SerialTransport(link.path, SerialSettings(), reconnect_min=0.01, reconnect_max=0.05)
    wire.transport = transport
    tasks = [asyncio.create_task(sim.run()), asyncio.create_task(transport.run(wire))]
    try:
        yield sim, wire
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await transport.close()
        link.close()


def states(wire: Wire) -> list[int]:
    """The states in the order the wheel went through them (repeats collapsed)."""
    out: list[int] = []
    for s in wire.statuses():
        if not out or out[-1] != s.state:
            out.append(s.state)
    return out


def results(rs: list[Reading]) -> int:
    return sum(1 for r in rs if isinstance(r, WheelStatus) and r.state == WINNING_NUMBER)


async def test_a_normal_spin_goes_through_every_state_with_the_number_line_before_the_number():
    async with wheel(seed=3) as (sim, wire):
        await wire.until(lambda rs: results(rs) >= 1)
    assert states(wire)[:6] == [
        TABLE_CLOSED,
        BEFORE_GAME,
        PLACE_BETS,
        BALL_IN_RIM,
        NO_MORE_BETS,
        WINNING_NUMBER,
    ]
    i = next(i for i, r in enumerate(wire.readings) if isinstance(r, WinningNumber))
    line = wire.readings[i]
    first5 = next(r for r in wire.readings[i:] if isinstance(r, WheelStatus))
    assert isinstance(line, WinningNumber) and first5.state == WINNING_NUMBER
    assert first5.last_number == line.number == sim.history[0]
    before = [r for r in wire.readings[:i] if isinstance(r, WheelStatus)]
    assert all(r.last_number is None for r in before)  # no number before the first result


async def test_status_frames_carry_a_counter_direction_and_speed():
    async with wheel(seed=3) as (_, wire):
        await wire.until(lambda rs: results(rs) >= 1 and rs[-1].state == PLACE_BETS)  # type: ignore[union-attr]
    st = wire.statuses()
    assert {s.spin for s in st} == {1, 2}
    assert {s.direction for s in st} == {"clockwise", "anticlockwise"}  # mode bit 1 reverses
    assert all(s.rpm == 0 for s in st if s.state == TABLE_CLOSED)
    assert all(
        15 <= s.rpm <= 19
        for s in st
        if s.state in (PLACE_BETS, BALL_IN_RIM, NO_MORE_BETS, WINNING_NUMBER)
    )


async def test_nothing_is_sent_before_the_port_is_opened():
    link = PtyLink()
    sim = WheelSimulator(pace=0.001)
    sim.attach(link)
    task = asyncio.create_task(sim.run())
    await asyncio.sleep(0.05)
    assert sim.sent == [] and sim.now == 0.0
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    link.close()


async def test_the_wheel_answers_commands():
    async with wheel(seed=3) as (sim, wire):
        await wire.until(lambda rs: len(rs) > 2)
        for cmd in (b"*V\r\n", b"*S\r\n", b"*T D\r\n", b"*T j 1 2\r\n", b"*O\r\n", b"*d g\r\n"):
            wire.send(cmd)
        await wire.until(lambda rs: sum(isinstance(r, DeviceReply) for r in rs) >= 6)
        wire.send(b"*P 0\r\n")  # idle (table closed): the log page and the self-test answer there
        await wire.until(
            lambda rs: rs[-1].state == TABLE_CLOSED if isinstance(rs[-1], WheelStatus) else False
        )
        wire.send(b"*s r 0\r\n")
        wire.send(b"*F\r\n")
        wire.send(b"*R\r\n")
        await wire.until(lambda rs: sum(isinstance(r, DeviceReply) for r in rs) >= 10)
    replies = {r.command: r.text for r in wire.readings if isinstance(r, DeviceReply)}
    assert replies["*V"].startswith("V2.50")
    assert replies["*S"] == "V2.50"
    assert replies["*T D"] == "d 15"
    assert replies["*T j 1 2"] == "OK"
    assert replies["*O"].split()[0] in "123456"
    assert replies["*d g"][:2] == "g " and replies["*d g"][4] == ":"
    assert replies["*P 0"] == "OK"
    assert replies["*F"] == "0"
    assert replies["*R"] == "OK"
    page = decode_log_page(replies["*s r 0"])  # the protocol verified its checksum
    assert page[: len(sim.history)] == sim.history[::-1] and page[-1] is None


async def test_r_acknowledges_a_miss_spin_and_the_wheel_restarts_the_game():
    async with wheel(seed=3, faults=["ball-direction"], fault_hold=60) as (_, wire):
        await wire.until(
            lambda rs: any(isinstance(r, WheelStatus) and r.flags & SAME_DIRECTION for r in rs)
        )
        wire.send(b"*R\r\n")
        await wire.until(lambda rs: results(rs) >= 1)
    assert any(isinstance(r, DeviceReply) and r.command == "*R" for r in wire.readings)
    # the miss-spin acknowledged: back before the game, and the same game again
    game = [BEFORE_GAME, PLACE_BETS, BALL_IN_RIM]
    assert states(wire)[:8] == [TABLE_CLOSED, *game, *game, NO_MORE_BETS]


def _shows(kind: str, rs: list[Reading]) -> bool:
    """Whether the readings show the injected fault, as the vendor describes it."""
    st = [r for r in rs if isinstance(r, WheelStatus)]
    pairs = list(itertools.pairwise(st))
    if kind == "ball-direction":
        return any(s.state == BALL_IN_RIM and s.flags & SAME_DIRECTION for s in st)
    if kind == "launch-failure":
        return (
            sum(1 for s in st if s.state == BALL_IN_RIM and s.flags & LAUNCH_FAILED) >= 6
        )  # held past 3 s
    if kind == "ball-missing":
        return (
            sum(1 for s in st if s.state == NO_MORE_BETS and s.flags & BALL_MISSING) >= 10
        )  # held past 5 s
    if kind == "no-number":
        return any(s.state == WINNING_NUMBER and s.last_number is None for s in st)
    if kind == "component-fault":
        return any(s.flags & COMPONENT_FAULT for s in st) and any(
            a.state == BALL_IN_RIM and b.state == TABLE_CLOSED for a, b in pairs
        )
    if kind == "fault-code":
        return any(isinstance(r, WheelFault) and r.code == 5 for r in rs)
    if kind == "drop-to-idle":
        return any(a.state == NO_MORE_BETS and b.state == TABLE_CLOSED for a, b in pairs)
    if kind == "counter-jump":
        return any(b.spin - a.spin == 5 for a, b in pairs)
    if kind == "impossible-state":
        return any(a.state == PLACE_BETS and b.state == WINNING_NUMBER for a, b in pairs)
    if kind == "repeat-number":
        lines = [r.number for r in rs if isinstance(r, WinningNumber)]
        return len(lines) >= 2 and lines[0] == lines[1]
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", FAULTS)
async def test_each_injected_fault_shows_on_the_wire(kind: str):
    async with wheel(seed=3, fault_hold=6.0) as (sim, wire):
        await wire.until(lambda rs: results(rs) >= 1)
        assert not _shows(kind, wire.readings) or kind == "counter-jump"
        sim.inject(kind)
        await wire.until(lambda rs: _shows(kind, rs))


async def test_the_driver_builds_the_simulator_from_the_config():
    sim = SS2Driver(SS2Options(double_zero=True)).simulator(
        {"seed": 4, "period": 0.5, "durations": {"2": 2.0}, "faults": ["no-number"]}
    )
    assert isinstance(sim, WheelSimulator)
    assert sim.double_zero and sim.durations[2] == 2.0 and sim.pending == ["no-number"]
    with pytest.raises(ValueError, match="unknown field `colour`"):
        SS2Driver(SS2Options()).simulator({"colour": "red"})
    with pytest.raises(ValueError, match="unknown wheel fault"):
        SS2Driver(SS2Options()).simulator({"faults": ["gremlins"]})
    with pytest.raises(ValueError, match="no state"):
        SS2Driver(SS2Options()).simulator({"durations": {"9": 1.0}})


def test_fault_every_picks_recoverable_faults_reproducibly():
    a, b = WheelSimulator(seed=9, fault_every=1), WheelSimulator(seed=9, fault_every=1)
    for _ in range(400):
        a.step()
        b.step()
    assert a.sent == b.sent and a.games > 5


def test_the_roulette_config_runs_and_a_plain_sub_sees_every_spin(tmp_path):
    """Acceptance: ``config/roulette.toml`` (ports and state moved, the wheel paced fast)
    as a real daemon process; a plain pyzmq SUB sees each spin start, close and settle."""
    import tempfile

    from daemon_harness import Daemon, Subscriber, free_port

    text = (Path(__file__).parents[1] / "config" / "roulette.toml").read_text()
    run = tempfile.mkdtemp(prefix="tr-", dir="/tmp")
    pub, rep = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    text = text.replace(
        'game = "roulette"\n',
        f'game = "roulette"\nstate_dir = "{tmp_path / "state"}"\nruntime_dir = "{run}"\n',
        1,
    )
    text = text.replace('"tcp://127.0.0.1:7710"', f'"{pub}"').replace(
        '"tcp://127.0.0.1:7711"', f'"{rep}"'
    )
    text = text.replace("period = 0.5", "period = 0.5\npace = 0.01")
    assert pub in text and "pace = 0.01" in text
    cfg = tmp_path / "roulette.toml"
    cfg.write_text(text)
    sub = Subscriber(pub)
    d = Daemon(cfg)
    seen: dict[int, set[str]] = {}
    try:
        d.start()
        wanted = ("spin.started", "betting.closed", "spin.result")

        def settled(m: tuple[bytes, dict[str, Any]]) -> bool:
            topic, ev = m
            assert topic == f"roulette-1.{ev['type']}".encode()
            if ev["type"] in wanted:
                seen.setdefault(ev["data"]["spin"], set()).add(ev["type"])
            return sum(1 for s in seen.values() if "spin.result" in s) >= 4

        for _ in sub.until(settled, 30):
            pass
    finally:
        sub.close()
        d.stop()
        d.close()
    full = sorted(s for s, types in seen.items() if "spin.result" in types)
    assert len(full) >= 4
    # a late joiner may miss the first spin's start; every later spin is complete
    assert all(seen[s] == set(wanted) for s in full[1:])
    assert full == list(range(full[0], full[0] + len(full)))
