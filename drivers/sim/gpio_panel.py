"""A panel without hardware (``port = "sim"``): mock pins that start as a real panel's, and a
simulated dealer who presses close betting and lifts the shoe.

The panel runs on a private gpiozero ``MockFactory``; everything below drives its
MockPins, exactly as a finger or a shoe on the switch would, so the real debounce,
sense line and shoe switch code runs (``tests/captures/gpio-panel/studio-trace.log``
was recorded this way).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Annotated, Any

import msgspec

from drivers.gpio.options import GpioPanelOptions, Pin
from drivers.sim.options import SimOptions


class Options(SimOptions):
    """``[devices.sim]`` of a ``port = "sim"`` panel: mock pins, their levels at start."""

    #: a shoe sits on the switch when the daemon starts.
    shoe_present: bool = True
    #: the panel's cable is plugged in when the daemon starts.
    panel_plugged: bool = True
    #: a simulated dealer presses close betting this many seconds after betting opens
    #: (None: nobody presses the mock buttons).
    close_betting_after: Annotated[float, msgspec.Meta(gt=0)] | None = None
    #: the simulated dealer lifts the shoe off its switch for a second after every Nth
    #: result (None: never), so the switch's lines show in a trace
    lift_shoe_every: Annotated[int, msgspec.Meta(ge=1)] | None = None


def drive_active(pin: Any, active: bool, pull_up: bool) -> None:
    """Drive a MockPin to the level that reads ``active`` (pull-up inputs are active low)."""
    if active == pull_up:
        pin.drive_low()
    else:
        pin.drive_high()


class PanelDealer:
    """The simulated dealer at a mock panel: start levels, then presses and shoe lifts.

    A pipeline listener (:meth:`on_events`); the panel it drives is given by
    :meth:`attach` (duck-typed: its open ``inputs`` and their generation ``gen``).
    """

    def __init__(self, o: GpioPanelOptions, sim: Options) -> None:
        self.o = o
        self.sim = sim
        self.panel: Any = None
        self._results = 0  # hand results seen, for the shoe lifts

    def attach(self, panel: Any) -> None:
        self.panel = panel

    def start_levels(self, made: list[tuple[str, Pin, Any]]) -> None:
        """Mock pins start as a real panel would: shoe on its switch, cable plugged in."""
        want = {"shoe_present": self.sim.shoe_present, "panel_sense": self.sim.panel_plugged}
        for name, _, dev in made:
            if name in want:
                active = want[name] != (
                    name == "shoe_present" and self.o.shoe_present_when == "open"
                )
                drive_active(dev.pin, active, self.o.pull_up)

    def on_events(self, events: Sequence[Any]) -> None:
        """After each commit: press close betting after betting opens; lift the shoe."""
        inputs = {} if self.panel is None else self.panel.inputs
        if not inputs:
            return
        loop = asyncio.get_running_loop()
        gen = self.panel.gen
        after = self.sim.close_betting_after
        if after is not None and "close_betting" in inputs:
            if any(getattr(ev, "type", None) == "betting.opened" for ev in events):
                loop.call_later(after, self._press, "close_betting", gen)
        every = self.sim.lift_shoe_every
        if every is not None and "shoe_present" in inputs:
            for ev in events:
                if getattr(ev, "type", None) == "hand.result":
                    self._results += 1
                    if self._results % every == 0:
                        loop.call_later(0.3, self._shoe, False, gen)
                        loop.call_later(1.3, self._shoe, True, gen)

    def _input(self, name: str, gen: int) -> Any:
        """The open input ``name`` of this opening of the pins (None once they closed)."""
        if self.panel is None or gen != self.panel.gen:
            return None
        return self.panel.inputs.get(name)

    def _shoe(self, present: bool, gen: int) -> None:
        """The simulated dealer lifts the shoe off its switch, or puts it back."""
        inp = self._input("shoe_present", gen)
        if inp is not None:
            active = present != (self.o.shoe_present_when == "open")
            drive_active(inp.device.pin, active, self.o.pull_up)

    def _press(self, name: str, gen: int) -> None:
        """The simulated dealer's finger on a mock button: down for the hold, then up."""
        inp = self._input(name, gen)
        if inp is None:
            return
        drive_active(inp.device.pin, True, self.o.pull_up)
        hold = max(self.o.debounce, self.o.hold_of(name)) + 0.05
        asyncio.get_running_loop().call_later(hold, self._release, name, gen)

    def _release(self, name: str, gen: int) -> None:
        inp = self._input(name, gen)
        if inp is not None:
            drive_active(inp.device.pin, False, self.o.pull_up)


def simulate(driver_options: Any, sim: Options) -> PanelDealer:
    """The registry's factory (:data:`drivers.sim.SIMULATORS`)."""
    return PanelDealer(driver_options, sim)
