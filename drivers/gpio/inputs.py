"""The panel's input lines: edges from gpiozero's threads, debounced on the event loop.

gpiozero calls back on its own threads. Each edge is stamped with the monotonic
time there (when it happened, not when the loop got to it) and handed to the
loop with ``call_soon_threadsafe``; the line's :class:`~drivers.gpio.debounce.Debouncer`
runs on the loop, and one timer per line wakes it at its next deadline, so
nothing polls. Each opening of the pins is a generation: an edge or a timer from
pins closed since is dropped.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from drivers.gpio.debounce import Debouncer, Press, Release
from drivers.gpio.options import BUTTONS, GpioPanelOptions, Pin
from drivers.gpio.pins import quiet_close


@dataclass(slots=True)
class Input:
    """One open input line and its debouncer."""

    name: str
    pin: Pin
    device: Any
    debouncer: Debouncer
    #: True when the line reads active for the opposite of what its name says
    #: (a shoe switch that opens while the shoe sits on it)
    invert: bool = False
    timer: asyncio.TimerHandle | None = None
    #: raw edges seen since the pins opened (a worn contact bounces more)
    edges: int = 0


#: called on the loop with a line and what its debouncer decided
Changed = Callable[[Input, list[Press | Release]], None]


class Inputs:
    """The open input lines of one panel; :meth:`open` and :meth:`close` once per link."""

    def __init__(self, clock: Callable[[], float], changed: Changed) -> None:
        self.mono = clock
        self.changed = changed
        self.lines: dict[str, Input] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._gen = 0

    @property
    def gen(self) -> int:
        """This opening's generation: a timer set for it is dropped once the pins close."""
        return self._gen

    def open(
        self,
        o: GpioPanelOptions,
        made: list[tuple[str, Pin, Any]],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """Watch every input among ``made`` (lights are skipped), from their levels now."""
        self.close()
        self._loop = loop
        self._gen += 1
        now = self.mono()
        for name, pin, dev in made:
            if name.startswith("light_"):
                continue
            invert = name == "shoe_present" and o.shoe_present_when == "open"
            hold = o.hold_of(name) if name in BUTTONS else 0.0
            deb = Debouncer(o.debounce, hold, level=bool(dev.is_active), now=now)
            self.lines[name] = Input(name, pin, dev, deb, invert=invert)
        for name, inp in self.lines.items():
            inp.device.when_activated = functools.partial(self._post, name, self._gen, True)
            inp.device.when_deactivated = functools.partial(self._post, name, self._gen, False)
            # an edge between reading the level and setting the callbacks
            level = bool(inp.device.is_active)
            if level != inp.debouncer.level:
                self._edge(name, self._gen, level, now)

    def close(self) -> None:
        """Stop watching and release every input pin."""
        self._gen += 1
        for inp in self.lines.values():
            if inp.timer is not None:
                inp.timer.cancel()
            inp.device.when_activated = None
            inp.device.when_deactivated = None
            quiet_close(inp.device)
        self.lines = {}

    def _post(self, name: str, gen: int, active: bool) -> None:
        """Runs on gpiozero's thread: stamp the edge now, handle it on the loop."""
        now = self.mono()
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._edge, name, gen, active, now)
        except RuntimeError:  # the loop is closed: the daemon is gone
            pass

    def _edge(self, name: str, gen: int, active: bool, now: float) -> None:
        inp = self.lines.get(name)
        if gen != self._gen or inp is None:
            return  # an edge from pins closed since
        inp.edges += 1
        self.changed(inp, inp.debouncer.edge(active, now))
        self._arm(inp)

    def _due(self, name: str, gen: int) -> None:
        inp = self.lines.get(name)
        if gen != self._gen or inp is None:
            return
        inp.timer = None
        self.changed(inp, inp.debouncer.advance(self.mono()))
        self._arm(inp)

    def _arm(self, inp: Input) -> None:
        if inp.timer is not None:
            inp.timer.cancel()
            inp.timer = None
        dl = inp.debouncer.deadline
        if dl is not None and self._loop is not None:
            inp.timer = self._loop.call_later(
                max(0.0, dl - self.mono()), self._due, inp.name, self._gen
            )
