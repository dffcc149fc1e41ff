"""The gpiod pin factory (``drivers/gpiod_pins.py``) on simulated gpiochips.

No gpio-sim here (docs/testing.md, GPIO): the chips are simulated at libgpiod's own
interface, the ``gpiod`` package's ``_ext`` (``tests/fake_gpiochip.py``), so the
``gpiod`` Python layer, gpiozero's devices, the factory and its edge thread all run
for real. Edges cross threads as they do on hardware; tests wait on an event set by
the callback, with a bound that only ends a hung test, never on the wall clock.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest
from fake_gpiochip import SimKernel
from gpiod import _ext
from gpiozero import LED, Button, DigitalInputDevice
from gpiozero.exc import PinInvalidPin
from test_gpio_panel import OPTIONS, Rig

from drivers import gpiod_pins
from drivers.gpio.options import GpioPanelOptions
from drivers.gpiod_pins import ChipLost, GpiodFactory, find_chip

HUNG = 10.0  # seconds before a test that waits for an edge gives up: a hang, not a timing


@pytest.fixture
def kernel(monkeypatch, tmp_path) -> SimKernel:
    k = SimKernel()
    k.install(monkeypatch)
    return k


@pytest.fixture
def chip(kernel, tmp_path):
    path = str(tmp_path / "gpiochip0")
    Path(path).touch()
    return kernel.add_chip(path, "it87-gpio", 32, names={7: "SHOE_SW", 17: "GPIO17"})


@pytest.fixture
def factory(chip):
    f = GpiodFactory(chip.path)
    yield f
    f.close()


class Edges:
    """Callbacks from the factory's edge thread, waited for on the test's thread."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.cond = threading.Condition()
        self.keep: list[Any] = []  # gpiozero holds callbacks by weak reference

    def __call__(self, kind: str) -> Any:
        def record(*args: Any) -> None:
            with self.cond:
                self.seen.append((kind, args))
                self.cond.notify_all()

        self.keep.append(record)
        return record

    def wait(self, n: int) -> list[str]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.seen) >= n, HUNG), self.seen
            return [k for k, _ in self.seen]


def request_of(chip, offset):
    return chip.lines[offset].request


# == the factory ==================================================================================


def test_pins_are_line_offsets_by_number_gpio_name_and_line_name(factory, chip):
    assert factory.pin(17) is factory.pin("GPIO17") is factory.pin("17") is factory.pin("BCM17")
    assert factory.pin("SHOE_SW") is factory.pin(7)
    assert factory.pin(f"{factory.name}:3") is factory.pin(3)
    with pytest.raises(PinInvalidPin, match=r"not a line of .*gpiochip0 \[it87-gpio\].*0-31"):
        factory.pin(32)
    assert factory.board_info.description.startswith("gpiochip0 [it87-gpio]")


def test_a_chip_is_found_by_label_or_name_and_a_missing_one_says_which_exist(kernel, tmp_path):
    for n, label in ((0, "INT34C6:00"), (4, "ftdi-cbus")):
        (tmp_path / f"gpiochip{n}").touch()
        kernel.add_chip(str(tmp_path / f"gpiochip{n}"), label, 4)
    assert find_chip("ftdi-cbus", tmp_path) == str(tmp_path / "gpiochip4")
    assert find_chip("gpiochip0", tmp_path) == str(tmp_path / "gpiochip0")
    with pytest.raises(
        FileNotFoundError, match=r"gpiochip0 \[INT34C6:00\], gpiochip4 \[ftdi-cbus\]"
    ):
        find_chip("cp2112", tmp_path)
    f = GpiodFactory("ftdi-cbus", devdir=tmp_path)
    assert (f.path, f.label) == (str(tmp_path / "gpiochip4"), "ftdi-cbus")
    f.close()


def test_a_missing_chip_is_explained_with_the_fix(kernel, tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        GpiodFactory(str(tmp_path / "gpiochip9"))
    text = gpiod_pins.explain(e.value)
    assert "gpiochip9" in text and "gpiodetect" in text and "chip option" in text


def test_an_input_with_pull_up_reads_its_contact_and_fires_both_edges(factory, chip):
    b = DigitalInputDevice(17, pull_up=True, pin_factory=factory)
    s = chip.settings(17)
    assert (s.direction, s.bias, s.edge_detection) == (
        _ext.DIRECTION_INPUT,
        _ext.BIAS_PULL_UP,
        _ext.EDGE_BOTH,
    )
    assert chip.lines[17].request.consumer == "tabled"
    assert not b.is_active  # the pull-up holds the open contact high: released
    edges = Edges()
    b.when_activated = edges("pressed")
    b.when_deactivated = edges("released")
    chip.drive(17, False)  # the button connects the pin to ground
    assert edges.wait(1) == ["pressed"] and b.is_active
    chip.drive(17, None)  # let go: the pull-up again
    assert edges.wait(2) == ["pressed", "released"] and not b.is_active
    b.close()
    assert chip.lines[17].request is None  # released to the kernel


def test_pull_down_and_floating_reach_the_kernel(factory, chip):
    d = DigitalInputDevice(4, pull_up=False, pin_factory=factory)
    assert chip.settings(4).bias == _ext.BIAS_PULL_DOWN
    assert not d.is_active
    chip.drive(4, True)
    assert d.value == 1
    d.close()
    f = DigitalInputDevice(5, pull_up=None, active_state=True, pin_factory=factory)
    assert chip.settings(5).bias == _ext.BIAS_DISABLED
    f.close()


def test_bounce_time_is_the_kernels_debounce(factory, chip, kernel):
    b = Button(6, bounce_time=0.02, pin_factory=factory)
    assert chip.settings(6).debounce_period == 20_000  # microseconds
    edges = Edges()
    b.when_pressed = edges("pressed")
    b.when_released = edges("released")
    for level in (False, True, False, True, False):  # a contact bouncing for 4 ms
        chip.drive(6, level)
        kernel.advance(0.001)
    assert edges.seen == []  # nothing counts before the line is steady for 20 ms
    kernel.advance(0.02)
    assert edges.wait(1) == ["pressed"]
    chip.drive(6, None)
    kernel.advance(0.005)
    chip.drive(6, False)  # a 5 ms glitch while held: nothing
    kernel.advance(0.03)
    chip.drive(6, None)
    kernel.advance(0.03)
    assert edges.wait(2) == ["pressed", "released"]
    assert len(edges.seen) == 2
    b.close()


def test_edges_can_be_only_rising_or_falling(factory, chip):
    pin = factory.pin(9)
    pin.input_with_pull("down")
    pin.edges = "rising"
    edges = Edges()
    pin.when_changed = edges("changed")
    assert chip.settings(9).edge_detection == _ext.EDGE_RISING
    chip.drive(9, True)
    chip.drive(9, False)
    chip.drive(9, True)
    edges.wait(2)
    assert [args[1] for _, args in edges.seen] == [1, 1]  # both rising, no falling
    pin.when_changed = None
    assert chip.settings(9).edge_detection == _ext.EDGE_NONE


def test_edges_carry_the_kernels_timestamp_as_ticks(factory, chip, kernel):
    pin = factory.pin(10)
    pin.input_with_pull("down")
    edges = Edges()
    pin.when_changed = edges("changed")
    kernel.advance(2.5)
    chip.drive(10, True)
    edges.wait(1)
    ticks, state = edges.seen[0][1]
    assert (ticks, state) == (kernel.now_ns / 1e9, 1)


def test_an_led_drives_its_line_active_low_included(factory, chip):
    led = LED(12, active_high=False, initial_value=False, pin_factory=factory)
    assert chip.settings(12).direction == _ext.DIRECTION_OUTPUT
    assert chip.level(12)  # off on a relay board: the line high
    led.on()
    assert not chip.level(12)
    led.off()
    assert chip.level(12)
    led.close()


def test_a_line_held_by_another_program_says_so(factory, chip):
    import gpiod

    other = gpiod.request_lines(chip.path, {13: None}, consumer="pintest")
    with pytest.raises(OSError, match=r"held by another program.*gpioinfo"):
        DigitalInputDevice(13, pin_factory=factory)
    other.release()
    DigitalInputDevice(13, pin_factory=factory).close()


def test_an_unplugged_chip_is_lost_once_with_the_reason(factory, chip, kernel):
    b = DigitalInputDevice(17, pin_factory=factory)
    led = LED(12, pin_factory=factory)
    lost: list[str] = []
    done = threading.Event()
    factory.when_lost = lambda reason: (lost.append(reason), done.set())
    kernel.unplug(chip.path)
    assert done.wait(HUNG)
    # both requests hang up; whichever the poll names first is the reason, and only one
    assert len(lost) == 1 and factory.lost == lost[0]
    assert re.fullmatch(
        rf"{re.escape(chip.path)} \[it87-gpio\] is gone \(line (17|12): the kernel hung up its "
        r"request\)",
        lost[0],
    ), lost[0]
    with pytest.raises(ChipLost):
        led.on()
    with pytest.raises(ChipLost):
        b.value  # noqa: B018
    assert len(lost) == 1
    b.close()
    led.close()


def test_a_write_to_a_lost_chip_reports_it_even_without_inputs(factory, chip, kernel):
    led = LED(12, pin_factory=factory)
    lost: list[str] = []
    factory.when_lost = lost.append
    chip.gone = True  # gone, but no hang-up seen yet: the write finds out first
    with pytest.raises(ChipLost, match=r"is gone \(write line 12"):
        led.on()
    assert len(lost) == 1 and "write line 12" in lost[0]
    led.close()


def test_a_blinking_light_on_a_lost_chip_reports_it_without_a_traceback(factory, chip, monkeypatch):
    crashed: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", crashed.append)
    led = LED(12, pin_factory=factory)
    lost = threading.Event()
    factory.when_lost = lambda reason: lost.set()
    led.blink(on_time=0.01, off_time=0.01)  # gpiozero's own thread writes the line
    chip.gone = True  # no hang-up seen: the blink thread's next write finds out
    assert lost.wait(HUNG)
    led.close()  # stops and joins the blink thread
    assert crashed == [] and "write line 12" in (factory.lost or "")


def test_gpiozero_finds_the_factory_by_name(monkeypatch, chip):
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="gpiozero_pin_factories") if e.name == "gpiod"]
    assert ep.load() is GpiodFactory


# == the panel on it ==============================================================================


def test_the_options_choose_the_factory_and_a_stray_chip_is_an_error():
    o = msgspec.convert(OPTIONS | {"pin_factory": "gpiod", "chip": "ftdi-cbus"}, GpioPanelOptions)
    assert (o.pin_factory, o.chip) == ("gpiod", "ftdi-cbus")
    with pytest.raises(msgspec.ValidationError, match='chip: only with pin_factory = "gpiod"'):
        msgspec.convert(OPTIONS | {"chip": "/dev/gpiochip0"}, GpioPanelOptions)
    with pytest.raises(msgspec.ValidationError, match="chip: empty"):
        msgspec.convert(OPTIONS | {"pin_factory": "gpiod", "chip": " "}, GpioPanelOptions)
    with pytest.raises(msgspec.ValidationError, match="pin_factory"):
        msgspec.convert(OPTIONS | {"pin_factory": "lgpio2"}, GpioPanelOptions)


def test_a_config_with_a_bad_factory_names_the_file_and_key(tmp_path):
    from daemon.runtime.config import ConfigError, load

    demo = (Path(__file__).parents[1] / "config" / "baccarat-studio.toml").read_text()
    bad = demo.replace("blink = 1.0 ", 'chip = "/dev/gpiochip0"\nblink = 1.0 ', 1)
    assert bad != demo
    cfg = tmp_path / "studio.toml"
    cfg.write_text(bad)
    with pytest.raises(ConfigError) as e:
        load(cfg)
    text = str(e.value)
    assert str(cfg) in text or cfg.name in text or e.value.path == str(cfg)
    assert "options" in text and 'chip: only with pin_factory = "gpiod"' in text


async def gpiod_rig(tmp_path, kernel, chip) -> Rig:
    r = Rig(tmp_path, ("panel", "shoe"))
    opts = OPTIONS | {"pin_factory": "gpiod", "chip": chip.path}
    await r.start(opts, port="gpio", reconnect_min=0.05, reconnect_max=0.05)
    await r.until(lambda: r.panel.inputs)
    return r


async def test_the_panel_runs_on_a_gpiochip_buttons_switch_and_light(tmp_path, kernel, chip):
    r = await gpiod_rig(tmp_path, kernel, chip)
    try:
        assert r.panel.factory_name == "GpiodFactory"
        chip.drive(5, False)  # the panel's cable ties the sense line to ground
        await r.until(lambda: r.runner.health == "ok")
        chip.drive(22, False)  # a shoe put on its switch (the contact closes to ground)
        await r.until(lambda: r.of("shoe.inserted"))
        await r.betting_open()
        await r.until(lambda: r.panel.lights["green"] == "on")
        assert chip.level(23) and not chip.level(24)  # green lit, red dark: the lines
        chip.drive(17, False)  # close betting, pressed
        await r.until(lambda: r.of("betting.closed"))
        chip.drive(17, None)
        (cmd,) = [e for e in r.of("operator.command") if e.data.get("source") == "button"]
        assert cmd.data["name"] == "betting.close"
        await r.until(lambda: r.panel.lights["red"] == "on")
        assert chip.level(24) and not chip.level(23)
        chip.drive(22, None)  # the shoe lifted off: the pull-up opens the contact
        await r.until(lambda: r.of("shoe.removed"))
    finally:
        await r.close()
    assert all(line.request is None for line in chip.lines)  # every line released


async def test_an_unplugged_chip_is_a_lost_panel_that_comes_back(tmp_path, kernel, chip):
    r = await gpiod_rig(tmp_path, kernel, chip)
    try:
        chip.drive(5, False)
        await r.until(lambda: r.runner.health == "ok")
        kernel.unplug(chip.path)
        await r.until(lambda: r.of("device.disconnected"))
        reason = r.of("device.disconnected")[0].data["reason"]
        assert "it87-gpio] is gone" in reason
        # while it is away every retry finds no chip, and the reason names the fix
        await r.until(lambda: "gpiodetect" in (r.runner.status().get("reason") or ""))
        back = kernel.add_chip(chip.path, "it87-gpio", 32)
        back.drive(5, False)
        await r.until(lambda: r.runner.health == "ok")
        assert r.runner.counters.reconnects == 1
        await r.betting_open()
        back.drive(17, False)
        await r.until(lambda: r.of("betting.closed"))
    finally:
        await r.close()
