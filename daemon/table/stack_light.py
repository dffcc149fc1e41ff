"""What the dealer's stack light says: the committed table state in, each lamp's mode out.

The meaning is the table's, not the wiring's, so it lives daemon-side; the panel
driver only shows what it is told (:class:`~drivers.gpio.lights.SetLights`,
``docs/protocols/gpio-panel.md``). The light follows the committed state, never a
button: after every commit it is recomputed from the game's ``phase`` (every game's
State has one; ``"betting"`` while bets are taken), the latched alarms and the
devices' health, so it reads the same in every game.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from drivers.gpio.lights import LightMode, SetLights


def _severity(alarm: Any) -> str:
    if isinstance(alarm, Mapping):
        return str(alarm.get("severity", "supervisor"))
    return str(getattr(alarm, "severity", "supervisor"))


def light_for(phase: str | None, alarms: Iterable[Any], devices: Mapping[str, str]) -> SetLights:
    """Green while betting is open; red otherwise (no more bets, dealing, between hands);
    amber for a device that is not ``ok`` or any latched alarm; amber blinks while an
    alarm needs a supervisor. No game state (None): red and green stay dark."""
    severities = [_severity(a) for a in alarms]
    green: LightMode = "on" if phase == "betting" else "off"
    red: LightMode = "on" if phase is not None and phase != "betting" else "off"
    amber: LightMode = "off"
    if severities or any(h != "ok" for h in devices.values()):
        amber = "on"
    if any(s == "supervisor" for s in severities):
        amber = "blink"
    return SetLights(green=green, red=red, amber=amber)


def light_of(state: Any) -> SetLights:
    """The light for a :class:`~daemon.table.TableState`."""
    game = getattr(state, "game", None)
    phase = None if game is None else getattr(game, "phase", None)
    return light_for(phase, list(state.alarms.values()), state.devices)


class StackLight:
    """A pipeline listener that keeps one panel's light on the table's state.

    ``tell`` is the panel's :meth:`~drivers.gpio.panel.GpioPanel.set_lights`; it is
    called at :meth:`refresh` and after a commit that changes a lamp, never otherwise.
    """

    def __init__(self, tell: Callable[[SetLights], None], state: Callable[[], Any]) -> None:
        self.tell = tell
        self.state = state
        self.lights: SetLights | None = None

    def refresh(self) -> SetLights:
        new = light_of(self.state())
        if new != self.lights:
            self.lights = new
            self.tell(new)
        return new

    def on_events(self, events: Sequence[Any]) -> None:
        if events:
            self.refresh()


def follow(
    panel: Any, state: Callable[[], Any], listen: Callable[[Callable[[Sequence[Any]], None]], None]
) -> StackLight:
    """Keep ``panel``'s light on the committed ``state`` from now on: ``listen`` hangs the light
    on every commit (the daemon's wiring, ``daemon/runtime/transports.py``)."""
    light = StackLight(panel.set_lights, state)
    light.refresh()
    listen(light.on_events)
    return light
