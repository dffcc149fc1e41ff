"""The stack light's lamps: each shows the mode it is told, and nothing decides here.

What the light means (green while betting is open, amber for an alarm…) is the
table's and lives daemon-side (``daemon/table/stack_light.py``), which sends a
:class:`SetLights` after every commit. The lamps remember what they were told, so
a panel that reopens (or is plugged back in) shows it again at once. A
technician's override (``tablectl gpio test``) wins until it is released.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from drivers.gpio.options import LIGHTS, GpioPanelOptions, Pin
from drivers.gpio.pins import explain, quiet_close

LightMode = Literal["off", "on", "blink"]


class SetLights(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The daemon's command to the stack light: each lamp's mode."""

    green: LightMode = "off"
    red: LightMode = "off"
    amber: LightMode = "off"

    def modes(self) -> dict[str, LightMode]:
        return {c: getattr(self, c) for c in LIGHTS}


class Lamps:
    """One panel's lamps: the LEDs while its pins are open, and the modes they should show."""

    def __init__(self, o: GpioPanelOptions) -> None:
        self.o = o
        self.leds: dict[str, Any] = {}
        #: what the daemon last said (dark until it says anything)
        self.told: dict[str, LightMode] = dict.fromkeys(LIGHTS, "off")
        #: a technician's override (``tablectl gpio test``): these modes win over the table's
        self.manual: dict[str, LightMode] | None = None
        #: modes written to the pins since they opened (all are rewritten after a reopen)
        self._shown: dict[str, LightMode] = {}

    @property
    def modes(self) -> dict[str, LightMode]:
        return dict(self.manual) if self.manual is not None else dict(self.told)

    def open(self, made: list[tuple[str, Pin, Any]]) -> None:
        """Take the lights among ``made``; nothing is shown until :meth:`show`."""
        self.leds = {name[6:]: dev for name, _, dev in made if name.startswith("light_")}
        self._shown = {}

    def close(self) -> None:
        """Dark, and released: a stopped daemon leaves no lamp lit."""
        for led in self.leds.values():
            try:
                led.off()
            except Exception:
                pass
            quiet_close(led)
        self.leds = {}
        self._shown = {}

    def forget(self) -> None:
        """Write every lamp again at the next :meth:`show` (the panel was unplugged)."""
        self._shown = {}

    def tell(self, lights: SetLights) -> None:
        self.told = lights.modes()

    def override(self, color: str, mode: LightMode) -> None:
        if color not in LIGHTS:
            raise ValueError(f"no light {color!r} (lights: {', '.join(LIGHTS)})")
        if self.manual is None:
            self.manual = dict(self.told)
        self.manual[color] = mode

    def release(self) -> None:
        self.manual = None

    def show(self) -> str | None:
        """Write each lamp whose mode changed; the reason when a pin fails (None: all shown)."""
        half = self.o.blink / 2
        for color, mode in self.modes.items():
            led = self.leds.get(color)
            if led is None or self._shown.get(color) == mode:
                continue
            try:
                if mode == "on":
                    led.on()
                elif mode == "off":
                    led.off()
                else:
                    led.blink(on_time=half, off_time=half, background=True)
            except Exception as e:
                return f"light {color} (pin {getattr(self.o, 'light_' + color)!r}): {explain(e)}"
            self._shown[color] = mode
        return None
