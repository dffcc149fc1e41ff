"""A panel's options: which pin is which button, switch and lamp, and how they read.

Pins are named as gpiozero names them; two names for one pin (17, "GPIO17",
"BCM17") are caught at config load, so one pin never has two owners.
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal

import msgspec

Pin = int | str
Role = Literal["viewer", "dealer", "supervisor", "technician"]

#: the dealer's buttons; what each asks the table is the daemon's (``daemon/table/buttons.py``)
BUTTONS: Final = ("close_betting", "cut_card", "card_exposed", "request_void", "new_shoe")
#: the stack light's lamps, top to bottom
LIGHTS: Final = ("green", "red", "amber")
#: inputs that are not buttons: the shoe switch and the panel's cable sense line.
SWITCHES: Final = ("shoe_present", "panel_sense")


def pin_key(pin: Pin) -> str:
    """A pin's name for comparing two options: 17, "17", "GPIO17" and "BCM17" are one pin."""
    if isinstance(pin, int):
        return f"GPIO{pin}"
    s = pin.strip().upper()
    m = re.fullmatch(r"(?:GPIO|BCM)?(\d+)", s)
    return f"GPIO{int(m.group(1))}" if m else s


def pin_arg(pin: Pin) -> Pin:
    """What gpiozero is given: a bare number as an int (BCM numbering), names as written."""
    if isinstance(pin, str) and pin.strip().isdigit():
        return int(pin.strip())
    return pin


class GpioPanelOptions(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Pins by name (gpiozero's names: 17, "GPIO17", "BOARD11", "J8:11"); every pin optional."""

    close_betting: Pin | None = None
    cut_card: Pin | None = None
    card_exposed: Pin | None = None
    request_void: Pin | None = None
    new_shoe: Pin | None = None
    #: the switch under the shoe: edges become ``shoe.removed`` / ``shoe.inserted``.
    shoe_present: Pin | None = None
    #: ``closed``: the switch closes (reads active) while a shoe sits on it; ``open``: the reverse.
    shoe_present_when: Literal["closed", "open"] = "closed"
    #: a line the panel's cable ties to ground: it reads released when the panel is unplugged.
    panel_sense: Pin | None = None
    light_green: Pin | None = None
    light_red: Pin | None = None
    light_amber: Pin | None = None
    #: seconds a contact must be steady before its new state counts (bounce is ignored).
    debounce: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.05
    #: seconds a button must be held before it counts (0: a debounced press is enough).
    hold: Annotated[float, msgspec.Meta(ge=0, le=10)] = 0.0
    #: the void button's hold, longer so a void is never a brush of the hand.
    void_hold: Annotated[float, msgspec.Meta(ge=0, le=10)] = 1.0
    #: inputs use the Pi's pull-up (a button connects the pin to ground) or pull-down.
    pull_up: bool = True
    #: lights: True when a high pin lights the lamp (most relay boards: False).
    active_high: bool = True
    #: seconds of one blink cycle (half on, half off).
    blink: Annotated[float, msgspec.Meta(gt=0, le=10)] = 1.0
    #: the role of the panel's buttons at the table.
    role: Role = "dealer"
    #: the void button's role. ``hand.void`` needs a supervisor, and a button anyone at
    #: the table can press is a dealer's: so the default is ``dealer`` (every void from
    #: the button is refused, and says why). ``"supervisor"`` is a choice the config
    #: makes when the button is wired under the supervisor's key switch.
    void_role: Role = "dealer"
    #: the pins' backend: ``auto``, gpiozero's own choice (a Raspberry Pi); ``gpiod``, the
    #: gpiochip ``chip`` through libgpiod (any Linux PC: drivers/gpiod_pins.py)
    pin_factory: Literal["auto", "gpiod"] = "auto"
    #: with ``pin_factory = "gpiod"``: the chip's path, ``gpiochipN`` name or label
    #: (``gpiodetect`` shows them; a label survives a USB adapter's new number)
    chip: str | None = None

    def __post_init__(self) -> None:
        if self.chip is not None and self.pin_factory != "gpiod":
            raise ValueError(
                'chip: only with pin_factory = "gpiod" (gpiozero\'s own factories choose '
                "their chip)"
            )
        if self.chip is not None and not self.chip.strip():
            raise ValueError('chip: empty; give a path ("/dev/gpiochip0"), a name or a label')
        used: dict[str, str] = {}
        for name in _PIN_OPTIONS:
            pin = getattr(self, name)
            if pin is None:
                continue
            if isinstance(pin, int) and pin < 0:
                raise ValueError(f"{name}: pin {pin} is negative")
            if isinstance(pin, str) and not pin.strip():
                raise ValueError(f"{name}: empty pin name")
            k = pin_key(pin)
            if k in used:
                raise ValueError(f"{name} and {used[k]} both use pin {pin!r}: one pin, one owner")
            used[k] = name
        if not used:
            raise ValueError("no pins configured: name at least one button, switch or light")

    def pins(self) -> dict[str, Pin]:
        """Every configured input and light: option name → pin."""
        return {n: getattr(self, n) for n in _PIN_OPTIONS if getattr(self, n) is not None}

    def hold_of(self, button: str) -> float:
        return self.void_hold if button == "request_void" else self.hold

    def role_of(self, button: str) -> Role:
        """The role a press of ``button`` asks as."""
        return self.void_role if button == "request_void" else self.role


_PIN_OPTIONS: Final = (*BUTTONS, *SWITCHES, *(f"light_{c}" for c in LIGHTS))
