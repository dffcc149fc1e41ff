"""The dealer's GPIO panel (``drivers/gpio_panel.py``, ``drivers/gpio/``): debouncing, and the
panel on gpiozero's MockFactory through the real pipeline, table and journal.

MockPin does not emulate ``bounce_time`` (and the panel does not use it): bounce is made by
toggling a mock pin, and the debouncer is tested on its own with injected time. Callbacks
arrive on gpiozero's side and reach the loop through ``call_soon_threadsafe``; tests wait for
committed events, never for a fixed time. The pin factory is fresh for every test.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.gpio.debounce import Debouncer, Press, Release
from drivers.gpio.options import GpioPanelOptions, pin_key
from drivers.gpio_panel import GpioPanelDriver, GpioPanelProtocol
from drivers.readings import Malformed, ShoeInserted, ShoeRemoved, Unknown
from drivers.sim.gpio_panel import drive_active

# == the debouncer (pure) ===========================================================================


def feed(deb: Debouncer, edges: list[tuple[bool, float]], end: float) -> list[Press | Release]:
    out: list[Press | Release] = []
    for active, t in edges:
        out += deb.edge(active, t)
    out += deb.advance(end)
    return out


def test_a_clean_press_counts_after_the_debounce_time():
    d = Debouncer(0.05)
    assert d.edge(True, 1.0) == []
    assert d.deadline == pytest.approx(1.05)
    assert d.advance(1.049) == []
    [p] = d.advance(1.05)
    assert isinstance(p, Press) and p.at == pytest.approx(1.05) and p.since == 1.0
    assert d.edge(False, 1.3) == []
    [r] = d.advance(2.0)
    assert isinstance(r, Release) and r.at == pytest.approx(1.35) and r.held == pytest.approx(0.3)
    assert d.deadline is None


def test_a_bounce_train_is_one_press_and_one_release():
    d = Debouncer(0.05)
    press = [(True, 0.0), (False, 0.002), (True, 0.004), (False, 0.007), (True, 0.01)]
    release = [(False, 0.5), (True, 0.501), (False, 0.503)]
    out = feed(d, press + release, 1.0)
    assert [type(x) for x in out] == [Press, Release]
    assert out[0].since == 0.01 and out[0].edges == 5
    assert out[1].at == pytest.approx(0.553) and out[1].edges == 8


def test_a_glitch_shorter_than_the_debounce_is_nothing():
    d = Debouncer(0.05)
    assert feed(d, [(True, 0.0), (False, 0.01)], 5.0) == []


def test_a_glitch_while_held_does_not_press_again():
    d = Debouncer(0.05)
    out = feed(d, [(True, 0.0), (False, 0.5), (True, 0.51)], 2.0)
    assert [type(x) for x in out] == [Press]


def test_hold_a_press_shorter_than_hold_is_nothing_a_long_one_counts_when_held_long_enough():
    d = Debouncer(0.05, hold=1.0)
    assert feed(d, [(True, 0.0), (False, 0.9)], 3.0) == []
    out = d.edge(True, 4.0) + d.advance(4.999)
    assert out == []
    [p] = d.advance(5.0)
    assert p.at == pytest.approx(5.0) and p.since == 4.0


def test_a_button_held_at_start_must_be_released_before_it_presses():
    d = Debouncer(0.05, level=True, now=0.0)
    assert d.advance(10.0) == []
    out = feed(d, [(False, 10.0), (True, 11.0)], 12.0)
    assert [type(x) for x in out] == [Release, Press]


def test_zero_debounce_counts_at_once():
    d = Debouncer(0.0)
    [p] = d.edge(True, 1.0)
    assert p.at == 1.0
    [r] = d.edge(False, 1.2)
    assert r.held == pytest.approx(0.2)


def test_time_going_backwards_is_taken_as_the_latest_time():
    d = Debouncer(0.05)
    d.edge(True, 1.0)
    [p] = d.advance(1.1)
    assert p.at == pytest.approx(1.05)
    assert d.edge(False, 1.09) == []  # handed over late: taken at 1.1
    [r] = d.advance(1.2)
    assert r.at == pytest.approx(1.15)


def test_negative_times_are_refused():
    with pytest.raises(ValueError):
        Debouncer(-0.1)


# -- properties -------------------------------------------------------------------------------------

debounces = st.floats(min_value=0.001, max_value=0.2)


@st.composite
def bounce_press(draw: Any) -> tuple[float, float, list[tuple[bool, float]], float]:
    """A press whose bounces (on press and on release) are all shorter than the debounce."""
    db = draw(debounces)
    hold = draw(st.sampled_from([0.0, 0.0, db / 2, db * 3]))
    gap = st.floats(min_value=db / 100, max_value=db * 0.95)
    t = draw(st.floats(min_value=0, max_value=100))
    edges: list[tuple[bool, float]] = []
    n_press = draw(st.integers(min_value=0, max_value=8))
    level = True
    edges.append((True, t))
    for _ in range(n_press * 2):
        t += draw(gap)
        level = not level
        edges.append((level, t))
    t += max(db, hold) + draw(st.floats(min_value=0.001, max_value=2))  # held down, steady
    edges.append((False, t))
    level = False
    for _ in range(draw(st.integers(min_value=0, max_value=8)) * 2):
        t += draw(gap)
        level = not level
        edges.append((level, t))
    return db, hold, edges, t + db + 0.001


@settings(max_examples=300, deadline=None)
@given(bounce_press())
def test_property_a_bounce_train_gives_one_press_and_one_release(case):
    db, hold, edges, end = case
    out = feed(Debouncer(db, hold), edges, end)
    assert [type(x) for x in out] == [Press, Release]


@settings(max_examples=300, deadline=None)
@given(
    hold=st.floats(min_value=0.01, max_value=5),
    frac=st.floats(min_value=0.0, max_value=0.99),
    start=st.floats(min_value=0, max_value=1000),
)
def test_property_a_press_shorter_than_hold_gives_none(hold, frac, start):
    d = Debouncer(min(0.05, hold), hold)
    assert feed(d, [(True, start), (False, start + hold * frac)], start + hold + 10) == []


@st.composite
def signals(draw: Any) -> tuple[float, float, list[tuple[bool, float]], list[float]]:
    db = draw(st.floats(min_value=0.0, max_value=0.1))
    hold = draw(st.sampled_from([0.0, 0.05, 0.3]))
    gaps = draw(st.lists(st.floats(min_value=0.0, max_value=0.5), min_size=0, max_size=40))
    t, level, edges = 0.0, False, []
    for g in gaps:
        t += g
        level = not level
        edges.append((level, t))
    polls = draw(st.lists(st.floats(min_value=0, max_value=t + 1), max_size=20))
    return db, hold, edges, sorted(polls)


def model(db: float, hold: float, edges: list[tuple[bool, float]], end: float) -> list[tuple]:
    """The specification, by intervals: a press for an active stretch of at least
    max(db, hold) while released; a release for an inactive stretch of at least db while
    pressed."""
    need = max(db, hold)
    out: list[tuple] = []
    pressed = False
    points = [*edges, (None, end)]
    for (level, t0), (_, t1) in itertools.pairwise(points):
        length = t1 - t0
        if level and not pressed and length >= need:
            pressed = True
            out.append(("press", t0 + need))
        elif not level and pressed and length >= db:
            pressed = False
            out.append(("release", t0 + db))
    return out


@settings(max_examples=400, deadline=None)
@given(signals())
def test_property_the_debouncer_meets_its_specification_whenever_it_is_polled(case):
    db, hold, edges, polls = case
    end = (edges[-1][1] if edges else 0) + 1
    plain = feed(Debouncer(db, hold), edges, end)
    # the same edges, with advance() called at arbitrary moments in between
    d = Debouncer(db, hold)
    polled: list[Press | Release] = []
    pending = list(polls)
    for active, t in edges:
        while pending and pending[0] <= t:
            polled += d.advance(pending.pop(0))
        polled += d.edge(active, t)
    polled += d.advance(end)
    assert polled == plain
    got = [("press" if isinstance(x, Press) else "release", x.at) for x in plain]
    want = model(db, hold, edges, end)
    assert [k for k, _ in got] == [k for k, _ in want]
    for (_, a), (_, b) in zip(got, want, strict=True):
        assert a == pytest.approx(b)
    # presses and releases alternate, a press first
    assert all(isinstance(x, Press if i % 2 == 0 else Release) for i, x in enumerate(plain))


# == options and protocol =================================================================================


def test_pins_are_compared_by_what_they_are():
    assert pin_key(17) == pin_key("17") == pin_key("GPIO17") == pin_key("bcm17") == "GPIO17"
    assert pin_key("BOARD11") == "BOARD11"


@pytest.mark.parametrize(
    ("opts", "why"),
    [
        ({"close_betting": 17, "cut_card": "GPIO17"}, "one pin, one owner"),
        ({"close_betting": 17, "light_red": "BCM17"}, "one pin, one owner"),
        ({}, "no pins configured"),
        ({"close_betting": -1}, "negative"),
        ({"close_betting": 17, "debounce": 2}, "<= 1"),
        ({"close_betting": 17, "role": "croupier"}, "croupier"),
        ({"close_betting": 17, "bounce_time": 0.1}, "bounce_time"),
    ],
)
def test_bad_options_are_refused(opts, why):
    with pytest.raises(msgspec.ValidationError, match=why):
        msgspec.convert(opts, GpioPanelOptions)


def test_a_config_with_a_pin_used_twice_is_refused_naming_the_device(tmp_path):
    from daemon.runtime.config import ConfigError, load

    cfg = tmp_path / "t.toml"
    cfg.write_text(
        '[table]\nid = "t"\ngame = "baccarat"\n[[devices]]\nname = "panel"\n'
        'driver = "gpio-panel"\nport = "gpio"\n[devices.options]\n'
        'close_betting = 17\nnew_shoe = "GPIO17"\n'
    )
    with pytest.raises(ConfigError) as e:
        load(cfg)
    assert "devices[0].options" in str(e.value) and "one pin, one owner" in str(e.value)


def test_the_protocol_turns_switch_lines_into_readings():
    p = GpioPanelProtocol()
    got = p.feed(b"shoe removed\nshoe pre", 0.0) + p.feed(b"sent\nhello\n", 0.1)
    assert [type(r) for r in got] == [ShoeRemoved, ShoeInserted, Unknown]
    assert p.feed(b"x" * 100, 0.2) and isinstance(p.feed(b"\n", 0.3), list)
    assert all(isinstance(r, Malformed) for r in p.feed(b"y" * 70, 0.4))


# == the panel on mock pins, through the real pipeline ===================================================

OPTIONS = {
    "close_betting": 17,
    "cut_card": 18,
    "card_exposed": 19,
    "request_void": 20,
    "void_role": "supervisor",  # the rig's void button is wired under a key switch
    "new_shoe": 21,
    "shoe_present": 22,
    "panel_sense": 5,
    "light_green": 23,
    "light_red": 24,
    "light_amber": 25,
    "debounce": 0.02,
    "void_hold": 0.2,
    "blink": 0.04,
}


@pytest.fixture
def factory():
    """A fresh MockFactory as gpiozero's default (what GPIOZERO_PIN_FACTORY=mock gives)."""
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory

    old = Device.pin_factory
    f = MockFactory()
    Device.pin_factory = f
    yield f
    f.reset()
    Device.pin_factory = old


class _Sink:
    """The device runner as the panel's sink, waking ``Rig.until`` after each call it handled.

    The runner does all the work; this only says that something changed (a reason for
    being down can change with no event: the first failed open is none).
    """

    def __init__(self, runner: Any, changed: Callable[[], None]) -> None:
        self.runner = runner
        self.changed = changed

    def on_connected(self, info: dict[str, Any]) -> None:
        self.runner.on_connected(info)
        self.changed()

    def on_data(self, data: bytes, mono: float) -> None:
        self.runner.on_data(data, mono)
        self.changed()

    def on_disconnected(self, reason: str) -> None:
        self.runner.on_disconnected(reason)
        self.changed()


class Rig:
    """A table (baccarat, no start burn), its journal and pipeline, and the panel on it."""

    def __init__(self, tmp_path: Path, devices: tuple[str, ...] = ("panel",)) -> None:
        from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
        from daemon.journal import Journal
        from daemon.pipeline.pipeline import Pipeline
        from daemon.runtime.devices import DeviceRunner
        from daemon.table import Table

        self.table = Table(BaccaratTable(BaccaratRules(start_burn="none")), list(devices))
        self.journal = Journal(tmp_path / "journal.sqlite", "t1")
        self.pipeline = Pipeline(self.table, self.journal)
        self.pipeline.recover()
        self.events: list[Any] = []
        #: set by every callback that can change what a test waits for (see until)
        self._changed = asyncio.Event()
        self.pipeline.listeners.append(self._seen)
        self.DeviceRunner = DeviceRunner
        self.tasks: list[asyncio.Task[Any]] = []
        self.panel: Any = None
        self.runner: Any = None
        self.closed = False

    def _seen(self, events: Any) -> None:
        self.events.extend(events)
        self._changed.set()

    def _poke(self, *_: Any) -> None:
        self._changed.set()

    def _watch_panel(self) -> None:
        """Wake :meth:`until` from every callback that changes the panel or its runner.

        What a test waits for changes only in loop callbacks: a committed event (the
        pipeline's listeners), a decided press, release, shoe or sense change (the
        panel's watchers), an edge or a debounce timer that decided nothing yet (the
        inputs' ``changed``), the link coming and going or a new reason for being
        down (the sink, wrapped below), and a button's reply (the submit, wrapped in
        :meth:`start`). Each only sets an event after doing its own work.
        """
        self.panel.watchers.append(self._poke)
        inputs = self.panel._inputs
        changed = inputs.changed

        def observed(inp: Any, outs: Any) -> None:
            changed(inp, outs)
            self._poke()

        inputs.changed = observed

    def _submit(self, submit: Callable[..., Any]) -> Callable[..., Any]:
        """The panel's submit, waking :meth:`until` once the panel has read the reply."""

        def send(*args: Any, **kw: Any) -> Any:
            fut = submit(*args, **kw)
            if isinstance(fut, asyncio.Future):
                # the panel adds its own done-callback after this returns; call_soon puts the
                # wake-up after it
                loop = asyncio.get_running_loop()
                fut.add_done_callback(lambda _: loop.call_soon(self._poke))
            return fut

        return send

    async def start(self, options: dict[str, Any] | None = None, **panel_kw: Any) -> None:
        self.tasks.append(asyncio.create_task(self.pipeline.run()))
        await self.pipeline.started({"version": "0.1.0", "pid": 1, "recovered_seq": 0})
        driver = GpioPanelDriver(msgspec.convert(options or OPTIONS, GpioPanelOptions))
        self.runner = self.DeviceRunner("panel", driver, self.pipeline.submit)
        from daemon.table.buttons import button_submit
        from daemon.table.stack_light import follow

        self.panel = driver.panel(
            self._submit(button_submit(self.pipeline.submit, "panel")), name="panel", **panel_kw
        )
        self._watch_panel()
        # the light, as the daemon wires it
        follow(self.panel, lambda: self.pipeline.state, self.pipeline.listeners.append)
        if self.panel.dealer is not None:
            self.pipeline.listeners.append(self.panel.dealer.on_events)
        self.runner.transport = self.panel  # as the daemon's _attach does
        self.tasks.append(asyncio.create_task(self.panel.run(_Sink(self.runner, self._poke))))

    async def until(self, pred: Callable[[], bool], timeout: float = 20.0) -> None:
        """Wait until ``pred()`` holds, re-checking it after each change (never on a timer).

        ``timeout`` only bounds a test that would otherwise hang; it is no assertion on speed.
        """
        try:
            async with asyncio.timeout(timeout):
                while not pred():
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            types = [(e.type, e.data.get("reason") or e.data.get("name")) for e in self.events]
            raise AssertionError(f"condition not met; events: {types}") from None

    def of(self, type_: str) -> list[Any]:
        return [e for e in self.events if e.type == type_]

    async def command(self, name: str, role: str = "supervisor", **args: Any) -> None:
        from daemon.table import Command

        fut = self.pipeline.submit(Command(name, args, "tester", role), reply=True)
        assert fut is not None
        d = await fut
        assert d.refused is None, d.refused

    async def betting_open(self) -> None:
        await self.command("shoe.new")
        await self.command("betting.open")

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.panel is not None:
            await self.panel.close()
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.pipeline.drain()
        self.pipeline.close()
        self.journal.close()


@pytest.fixture
async def rig(tmp_path, factory):
    r = Rig(tmp_path, ("panel", "shoe"))
    yield r
    await r.close()


def press(pin: Any) -> None:
    drive_active(pin, True, pull_up=True)


def release(pin: Any) -> None:
    drive_active(pin, False, pull_up=True)


async def changes(pin: Any, n: int, timeout: float = 5.0) -> bool:
    """True once an output pin changed ``n`` more times (a blink runs on gpiozero's thread).

    MockPin records each change in ``_change_state``; wrapped for the wait, it tells the
    loop as each one is recorded, so nothing polls. False if ``timeout`` passes first.
    """
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    target = len(pin.states) + n
    record = pin._change_state

    def told() -> None:
        if not done.done() and len(pin.states) >= target:
            done.set_result(True)

    def counted(value: bool) -> bool:
        changed: bool = record(value)
        try:
            loop.call_soon_threadsafe(told)
        except RuntimeError:  # the loop closed after the wait: nobody is told
            pass
        return changed

    pin._change_state = counted
    try:
        told()
        await asyncio.wait_for(done, timeout)
        return True
    except TimeoutError:
        return False
    finally:
        del pin._change_state


def states(pin: Any) -> list[bool]:
    return [bool(s.state) for s in pin.states]


def went(pin: Any, seq: list[bool]) -> bool:
    """The pin's history holds ``seq`` in order (as a subsequence of its changes)."""
    it = iter(states(pin))
    return all(any(s == want for s in it) for want in seq)


async def plugged_in(rig: Rig, factory: Any) -> None:
    """The panel opened on the mock pins: plug its cable in (sense line to ground)."""
    await rig.until(lambda: rig.panel.inputs)
    press(factory.pin(5))
    await rig.until(lambda: rig.runner.health == "ok")


async def test_a_button_press_closes_betting_like_a_control_command(rig, factory):
    await rig.start()
    await plugged_in(rig, factory)
    await rig.betting_open()
    pin = factory.pin(17)
    press(pin)
    await rig.until(lambda: rig.of("betting.closed"))
    release(pin)
    cmd = [e for e in rig.of("operator.command") if e.data["name"] == "betting.close"]
    assert len(cmd) == 1
    assert cmd[0].data | {} == {
        "name": "betting.close",
        "args": {},
        "actor": "panel",
        "role": "dealer",
        "source": "button",
    }
    assert rig.pipeline.state.game.phase == "dealing"
    await rig.until(lambda: (rig.panel.last_command or {}).get("result") == "accepted")


async def test_a_bouncing_button_gives_one_command(rig, factory):
    await rig.start()
    await plugged_in(rig, factory)
    await rig.betting_open()
    pin = factory.pin(17)
    for _ in range(5):  # five fast toggles, ending pressed: MockPin has no bounce_time
        press(pin)
        release(pin)
    press(pin)
    await rig.until(lambda: rig.of("betting.closed"))
    for _ in range(5):
        release(pin)
        press(pin)
    release(pin)
    inp = rig.panel.inputs["close_betting"]
    await rig.until(lambda: not inp.debouncer.pressed and inp.debouncer.deadline is None)
    await rig.pipeline.mark()
    assert [e.data["name"] for e in rig.of("operator.command")].count("betting.close") == 1
    assert rig.panel.counters.presses == {"close_betting": 1}
    assert inp.edges == 22


async def test_a_press_refused_by_the_table_is_logged_not_journaled(rig, factory):
    await rig.start()
    await plugged_in(rig, factory)
    press(factory.pin(17))  # betting is not open: no shoe yet
    await rig.until(lambda: (rig.panel.last_command or {}).get("result"))
    assert rig.panel.last_command["result"].startswith("refused: betting is not open")
    assert not [e for e in rig.of("operator.command") if e.data["name"] == "betting.close"]
    assert rig.panel.counters.refused == 1


async def test_the_void_button_needs_its_hold_and_submits_hand_void_as_supervisor(rig, factory):
    await rig.start()
    await plugged_in(rig, factory)
    await rig.betting_open()
    pin = factory.pin(20)
    press(pin)
    release(pin)  # a brush of the hand: far shorter than void_hold
    inp = rig.panel.inputs["request_void"]
    await rig.until(lambda: inp.edges == 2 and inp.debouncer.deadline is None)
    assert rig.panel.counters.presses == {}
    press(pin)
    await rig.until(lambda: rig.of("hand.void"))
    release(pin)
    [cmd] = [e for e in rig.of("operator.command") if e.data["name"] == "hand.void"]
    assert cmd.data["role"] == "supervisor" and cmd.data["source"] == "button"
    held = rig.panel.counters.presses["request_void"]
    assert held == 1


async def test_the_void_button_is_a_dealers_unless_the_config_says_key_switch(rig, factory):
    """Default void_role: the button asks as a dealer, the table refuses, and says how to change it."""
    await rig.start({k: v for k, v in OPTIONS.items() if k != "void_role"})
    await plugged_in(rig, factory)
    await rig.betting_open()
    pin = factory.pin(20)
    press(pin)
    await rig.until(lambda: (rig.panel.last_command or {}).get("result"))
    release(pin)
    result = rig.panel.last_command["result"]
    assert rig.panel.last_command["role"] == "dealer"
    assert result.startswith("refused: hand.void needs the supervisor role; you are dealer")
    assert 'void_role = "supervisor"' in result and "key switch" in result
    assert not rig.of("hand.void")


async def test_the_stack_light_follows_the_game(rig, factory):
    green, red, amber = factory.pin(23), factory.pin(24), factory.pin(25)
    await rig.start()
    await plugged_in(rig, factory)
    # the shoe device is not connected yet: a device fault, amber steady; no shoe: red
    await rig.until(lambda: rig.panel.lights == {"green": "off", "red": "on", "amber": "on"})
    assert red.state and amber.state and not green.state
    from daemon.table import DeviceHealth

    rig.pipeline.submit(DeviceHealth("shoe", "ok", "test", time.monotonic()))
    await rig.until(lambda: rig.panel.lights["amber"] == "off")
    assert not amber.state
    await rig.betting_open()
    await rig.until(lambda: rig.panel.lights["green"] == "on")
    assert green.state and not red.state
    press(factory.pin(17))
    await rig.until(lambda: rig.of("betting.closed"))
    release(factory.pin(17))
    await rig.until(lambda: rig.panel.lights["red"] == "on")
    assert red.state and not green.state
    # the shoe cannot read a card: a supervisor alarm, amber blinks
    from daemon.table import DeviceReading
    from drivers.readings import CardUnreadable

    rig.pipeline.submit(DeviceReading("shoe", CardUnreadable(code="??"), time.monotonic()))
    await rig.until(lambda: rig.of("alarm.raised"))
    assert rig.of("alarm.raised")[0].data["severity"] == "supervisor"
    await rig.until(lambda: rig.panel.lights["amber"] == "blink")
    assert await changes(amber, 4), "amber does not blink"
    # the recorded histories: red, then green with betting, red again; amber on, off, blinking
    assert went(green, [False, True, False])
    assert went(red, [True, False, True])
    assert went(amber, [True, False, True, False, True, False])
    status = rig.runner.status()
    assert status["panel"]["lights"] == {"green": "off", "red": "on", "amber": "blink"}


async def test_the_shoe_switch_reports_removed_and_inserted(rig, factory):
    await rig.start()
    await plugged_in(rig, factory)
    shoe = factory.pin(22)
    press(shoe)  # a shoe put on the switch
    await rig.until(lambda: rig.of("shoe.inserted"))
    release(shoe)
    press(shoe)  # lifted for a moment only: a bounce, nothing
    release(shoe)
    await rig.until(lambda: rig.of("shoe.removed"))
    await rig.pipeline.mark()
    assert len(rig.of("shoe.removed")) == 1 and len(rig.of("shoe.inserted")) == 1
    assert rig.of("shoe.removed")[0].data["device"] == "panel"
    assert rig.runner.counters.frames == 2
    assert rig.runner.status()["panel"]["shoe_present"] is False


async def test_an_unplugged_panel_is_reported_and_its_buttons_ignored(rig, factory):
    await rig.start()
    await plugged_in(rig, factory)
    await rig.betting_open()
    sense = factory.pin(5)
    release(sense)  # the cable is pulled: the sense line reads open
    await rig.until(lambda: rig.of("device.disconnected"))
    ev = [e for e in rig.of("device.disconnected") if e.data["device"] == "panel"][-1]
    assert "panel unplugged" in ev.data["reason"] and "cable" in ev.data["reason"]
    # a real press (held past the debounce, so the panel counts it): nothing may come of it
    inp = rig.panel.inputs["close_betting"]
    press(factory.pin(17))
    await rig.until(lambda: rig.panel.counters.presses.get("close_betting") == 1)
    release(factory.pin(17))
    await rig.until(lambda: not inp.debouncer.pressed and inp.debouncer.deadline is None)
    await rig.pipeline.mark()
    assert not rig.of("betting.closed")
    press(sense)
    await rig.until(lambda: len([e for e in rig.of("device.connected")]) >= 2)
    assert rig.runner.health == "ok" and rig.runner.counters.reconnects == 1


async def test_no_pin_factory_is_reported_with_the_fix_then_retried(tmp_path, monkeypatch):
    """gpiozero's own mechanism: an x86 PC has no factory; once one exists, the panel opens."""
    from gpiozero import Device

    old = Device.pin_factory
    Device.pin_factory = None
    monkeypatch.setenv("GPIOZERO_PIN_FACTORY", "no-such-factory")
    r = Rig(tmp_path)
    try:
        await r.start(OPTIONS | {"panel_sense": None}, reconnect_min=0.05, reconnect_max=0.05)
        # a first open that fails is no event (the table starts with the device disconnected):
        # the device's status says why
        await r.until(lambda: "no-such-factory" in r.runner.reason)
        reason = r.runner.status()["reason"]
        assert "no-such-factory" in reason and "Raspberry Pi" in reason and "libgpiod" in reason
        assert r.runner.health == "disconnected"
        monkeypatch.setenv("GPIOZERO_PIN_FACTORY", "mock")
        await r.until(lambda: r.of("device.connected"))
        assert type(Device.pin_factory).__name__ == "MockFactory"
        assert r.runner.status()["port"] == "gpio (MockFactory)"
    finally:
        await r.close()
        if Device.pin_factory is not None:
            Device.pin_factory.reset()
        Device.pin_factory = old


async def test_a_gpio_hotplug_makes_a_panel_without_pins_retry_at_once(tmp_path, monkeypatch):
    """The panel is a Reconnecting like the serial and USB transports: udev's nudge ends its
    backoff (a minute here, far beyond the wait), so a GPIO chip that appears is used at once."""
    from gpiozero import Device

    from daemon.runtime.hotplug import Hotplug

    old = Device.pin_factory
    Device.pin_factory = None
    monkeypatch.setenv("GPIOZERO_PIN_FACTORY", "no-such-factory")
    r = Rig(tmp_path)
    try:
        await r.start(OPTIONS | {"panel_sense": None}, reconnect_min=60, reconnect_max=60)
        await r.until(lambda: "no-such-factory" in r.runner.reason)
        monkeypatch.setenv("GPIOZERO_PIN_FACTORY", "mock")
        hotplug = Hotplug(asyncio.get_running_loop(), lambda: [r.panel])
        assert hotplug.nudge("/dev/gpiochip0") == 1
        await r.until(lambda: r.of("device.connected"))
        assert r.runner.health == "ok" and hotplug.nudge() == 0  # connected: not told again
    finally:
        await r.close()
        if Device.pin_factory is not None:
            Device.pin_factory.reset()
        Device.pin_factory = old


async def test_not_a_pi_is_reported_naming_the_option(tmp_path, factory):
    from gpiozero.exc import PinUnknownPi
    from gpiozero.pins.mock import MockFactory

    class NotAPi(MockFactory):
        def pin(self, name, pin_class=None, **kwargs):
            raise PinUnknownPi("unable to locate Pi revision in /proc/device-tree or /proc/cpuinfo")

    r = Rig(tmp_path)
    try:
        await r.start(pin_factory=NotAPi(), reconnect_min=0.05, reconnect_max=0.05)
        await r.until(lambda: "Raspberry" in r.runner.reason)
        reason = r.runner.reason
        assert reason.startswith("close_betting (pin 17): not a Raspberry Pi")
        assert "GPIOZERO_PIN_FACTORY" in reason
    finally:
        await r.close()


async def test_a_pin_held_by_another_owner_is_reported(tmp_path, factory):
    from gpiozero import LED

    other = LED(24)  # someone else's: one pin, one owner
    r = Rig(tmp_path)
    try:
        await r.start(reconnect_min=0.05, reconnect_max=0.05)
        await r.until(lambda: "light_red" in r.runner.reason)
        reason = r.runner.reason
        assert reason.startswith("light_red (pin 24)") and "one pin, one owner" in reason
        # nothing of the panel's stays reserved after the failed open
        other.close()
        await r.until(lambda: r.runner.health in ("ok",) or r.panel.inputs)
    finally:
        await r.close()


async def test_a_gpio_failure_while_running_closes_reports_and_reopens(tmp_path):
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory, MockPin

    class Flaky(MockPin):
        broken = False

        def _set_state(self, value):
            if Flaky.broken:
                raise OSError(5, "Input/output error")
            super()._set_state(value)

    f = MockFactory(pin_class=Flaky)
    old = Device.pin_factory
    Device.pin_factory = f
    r = Rig(tmp_path, ("panel", "shoe"))
    try:
        await r.start(OPTIONS | {"panel_sense": None}, reconnect_min=0.05, reconnect_max=0.05)
        await r.until(lambda: r.runner.health == "ok")
        Flaky.broken = True
        from daemon.table import DeviceHealth

        r.pipeline.submit(DeviceHealth("shoe", "ok", "test", time.monotonic()))  # amber goes off
        await r.until(lambda: r.of("device.disconnected"))
        reason = r.of("device.disconnected")[-1].data["reason"]
        assert reason.startswith("light amber (pin 25)") and "Input/output error" in reason
        Flaky.broken = False
        await r.until(lambda: r.runner.health == "ok")
        await r.until(lambda: not f.pin(25).state)  # the light is shown again after reopening
        assert r.runner.counters.reconnects == 1
    finally:
        Flaky.broken = False
        await r.close()
        f.reset()
        Device.pin_factory = old


async def test_closing_the_panel_releases_its_pins_and_darkens_the_light(rig, factory):
    await rig.start()
    await plugged_in(rig, factory)
    await rig.until(lambda: factory.pin(24).state)
    await rig.close()
    assert not factory.pin(24).state
    from gpiozero import Button

    Button(17).close()  # the pin is free again


async def test_a_sim_port_uses_private_mock_pins_with_a_shoe_and_a_cable(tmp_path, factory):
    r = Rig(tmp_path)
    try:
        await r.start(port="sim", sim={"shoe_present": True})
        await r.until(lambda: r.runner.health == "ok")
        assert r.panel.factory is not factory
        assert r.runner.status()["panel"]["shoe_present"] is True
        assert r.runner.status()["panel"]["panel_plugged"] is True
    finally:
        await r.close()


async def test_a_simulated_dealer_presses_close_betting_on_a_sim_panel(tmp_path, factory):
    r = Rig(tmp_path)
    try:
        await r.start(port="sim", sim={"close_betting_after": 0.05})
        await r.until(lambda: r.runner.health == "ok")
        await r.betting_open()
        await r.until(lambda: r.of("betting.closed"))
        [cmd] = [e for e in r.of("operator.command") if e.data["name"] == "betting.close"]
        assert cmd.data["source"] == "button" and cmd.data["actor"] == "panel"
    finally:
        await r.close()


def test_the_studio_config_has_a_mock_panel():
    from daemon_harness import ROOT

    from daemon.runtime.config import load

    s = load(ROOT / "config" / "baccarat-studio.toml")
    [panel] = [d for d in s.config.devices if d.driver == "gpio-panel"]
    assert panel.port == "sim"
    o = s.device_options[panel.name]
    assert isinstance(o, GpioPanelOptions) and o.close_betting is not None
    assert s.config.bus.publish.endswith(":7740") and s.config.bus.replay.endswith(":7741")


# == tablectl gpio test ============================================================================


def _panel_config(tmp_path: Path, port: str = "sim", extra: str = "") -> Path:
    run = tempfile.mkdtemp(prefix="td-", dir="/tmp")  # unix socket paths are short
    cfg = tmp_path / "panel.toml"
    cfg.write_text(
        f"""
[table]
id = "gp"
game = "baccarat"
state_dir = "{tmp_path / "state"}"
runtime_dir = "{run}"

[[devices]]
name = "panel"
driver = "gpio-panel"
port = "{port}"
[devices.options]
close_betting = 17
request_void = 27
void_role = "supervisor"
shoe_present = 22
light_green = 23
light_red = 24
light_amber = 25
debounce = 0.01
void_hold = 0.05
blink = 0.05
{extra}
"""
    )
    return cfg


def test_tablectl_gpio_test_mock_shows_presses_and_cycles_the_lights(tmp_path):
    from daemon_harness import tablectl

    cfg = _panel_config(tmp_path)
    p = tablectl(
        cfg,
        "--json",
        "gpio",
        "test",
        "--mock",
        "--press",
        "close_betting",
        "--press",
        "request_void",
        "--press",
        "shoe_present",
        "--light-seconds",
        "0.05",
    )
    assert p.returncode == 0, p.stderr
    recs = [json.loads(line) for line in p.stdout.splitlines()]
    presses = [(x["name"], x["command"], x["role"]) for x in recs if x["kind"] == "press"]
    assert presses == [
        ("close_betting", "betting.close", "dealer"),
        ("request_void", "hand.void", "supervisor"),
    ]
    assert [x["name"] for x in recs if x["kind"] == "release"] == ["close_betting", "request_void"]
    assert [x["present"] for x in recs if x["kind"] == "shoe"] == [False, True]
    modes = [(x["name"], x["mode"]) for x in recs if x["kind"] == "light"]
    assert modes == [(c, m) for c in ("green", "red", "amber") for m in ("on", "blink", "off")]
    changes = {x["name"]: x["changes"] for x in recs if x["kind"] == "light-pin"}
    assert all(n >= 3 for n in changes.values()), changes  # on, then blinking: off, on, …


def test_tablectl_gpio_test_usage_errors(tmp_path):
    from daemon_harness import tablectl

    cfg = _panel_config(tmp_path, port="gpio")
    p = tablectl(cfg, "gpio", "test", "--press", "close_betting")
    assert p.returncode == 2 and "--mock" in p.stderr
    p = tablectl(cfg, "gpio", "test", "--mock", "--press", "new_shoe")
    assert p.returncode == 2 and "no pin configured" in p.stderr
    p = tablectl(cfg, "gpio", "test", "--device", "nope")
    assert p.returncode == 2 and "no gpio-panel device named 'nope'" in p.stderr


def test_tablectl_gpio_test_without_pins_says_why(tmp_path):
    from daemon_harness import ROOT

    cfg = _panel_config(tmp_path, port="gpio")
    env = {k: v for k, v in os.environ.items() if k != "GPIOZERO_PIN_FACTORY"}
    env["GPIOZERO_PIN_FACTORY"] = "no-such-factory"
    import subprocess
    import sys

    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "daemon.ctl.cli",
            "--config",
            str(cfg),
            "gpio",
            "test",
            "--seconds",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert p.returncode == 1
    assert "panel not available" in p.stdout and "Raspberry Pi" in p.stdout


# == the daemon, end to end ============================================================================

PANEL_DEVICE = """
[[devices]]
name = "panel"
driver = "gpio-panel"
port = "gpio"
[devices.options]
close_betting = 17
shoe_present = 22
light_green = 23
light_red = 24
light_amber = 25
"""


def test_the_daemon_runs_a_panel_on_gpiozeros_mock_factory(tmp_path):
    from daemon_harness import Daemon, endpoints, tablectl, write_config

    from daemon.bus.subscriber import Follower

    cfg = write_config(tmp_path, extra="")
    cfg.write_text(cfg.read_text().replace("[bus]", PANEL_DEVICE + "\n[bus]", 1))
    d = Daemon(cfg, env={"GPIOZERO_PIN_FACTORY": "mock"})
    try:
        d.start()
        sub = Follower(*endpoints(cfg), table="it")
        try:
            sub.until(lambda e: e.type == "device.connected" and e.data["device"] == "panel")
        finally:
            sub.close()
        # the panel shows the light the daemon told it before it opened, as it says it is up
        p = tablectl(cfg, "--json", "devices")
        panel = {x["name"]: x for x in json.loads(p.stdout)["devices"]}["panel"]
        assert panel["health"] == "ok" and "on" in panel["panel"]["lights"].values(), p.stdout
        assert panel["port"] == "gpio (MockFactory)"
        assert set(panel["panel"]["lights"]) == {"green", "red", "amber"}
        assert panel["panel"]["buttons"]["close_betting"]["pin"] == 17
        # the daemon owns the pins: the technician's test refuses politely
        p = tablectl(cfg, "gpio", "test", "--seconds", "0")
        assert p.returncode == 1 and "one pin, one owner" in p.stderr
        assert d.stop() == 0
    finally:
        d.close()


def test_every_button_asks_the_table_something():
    """The panel's buttons (driver side) and what each asks (daemon side) stay in step."""
    from daemon.table.buttons import BUTTON_COMMANDS
    from drivers.gpio.options import BUTTONS

    assert set(BUTTON_COMMANDS) == set(BUTTONS)
