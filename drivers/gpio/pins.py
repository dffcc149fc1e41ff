"""The panel's pins as gpiozero devices: opened together or not at all, and why not.

Every failure becomes :class:`PanelUnavailable` with a reason a technician can act
on (the option, the pin and the fix): the panel then stays ``disconnected`` and
retries, like any transport whose device is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from drivers.gpio.options import GpioPanelOptions, Pin, pin_arg
from drivers.transport import Unavailable

NOT_A_PI = (
    "gpiozero drives real pins only on a Raspberry Pi: on a Pi install lgpio "
    "(apt install python3-lgpio, or pip install lgpio) or set GPIOZERO_PIN_FACTORY; "
    'on any other Linux PC set pin_factory = "gpiod" (libgpiod) and chip (gpiodetect lists '
    "the chips); "
    'for a demo without pins use port = "sim"'
)


class PanelUnavailable(Unavailable):
    """The panel's pins could not be opened; the message says why and what to do."""


def explain(exc: BaseException, fallbacks: Sequence[str] = ()) -> str:
    """A technician's reason for a gpiozero failure, naming the fix."""
    from gpiozero.exc import BadPinFactory, GPIOPinInUse, PinInvalidPin, PinUnknownPi

    tried = f" (tried: {'; '.join(fallbacks)})" if fallbacks else ""
    if isinstance(exc, BadPinFactory):
        return f"no GPIO pin factory: {exc}{tried}. {NOT_A_PI}"
    if isinstance(exc, PinUnknownPi):
        return f"not a Raspberry Pi ({exc}). {NOT_A_PI}"
    if isinstance(exc, ModuleNotFoundError):
        return f"GPIO library missing ({exc}). {NOT_A_PI}"
    if isinstance(exc, GPIOPinInUse):
        return f"{exc}: one pin, one owner; is `tablectl gpio test` or another program using the panel?"
    if isinstance(exc, PinInvalidPin):
        return f"{exc} on this board; check the pin names in the device's options"
    return f"{type(exc).__name__}: {exc}"


def open_pins(o: GpioPanelOptions, factory: Any) -> list[tuple[str, Pin, Any]]:
    """Every configured pin as a gpiozero device (option name, pin, device), in option order.

    All or nothing: when one pin fails, those already open are closed again, so a
    failed attempt reserves nothing.
    """
    from gpiozero import LED, DigitalInputDevice

    made: list[tuple[str, Pin, Any]] = []
    try:
        for name, pin in o.pins().items():
            arg = pin_arg(pin)
            try:
                if name.startswith("light_"):
                    dev = LED(
                        arg, active_high=o.active_high, initial_value=False, pin_factory=factory
                    )
                else:
                    # Buttons too: debounce and hold are the Debouncer's, so gpiozero's
                    # Button (whose hold thread delays close while a button is held) adds
                    # nothing.
                    dev = DigitalInputDevice(
                        arg, pull_up=o.pull_up, bounce_time=None, pin_factory=factory
                    )
            except Exception as e:
                raise PanelUnavailable(f"{name} (pin {pin!r}): {explain(e)}") from None
            made.append((name, pin, dev))
    except PanelUnavailable:
        for _, _, dev in made:
            quiet_close(dev)
        raise
    return made


def quiet_close(dev: Any) -> None:
    """Close a gpiozero device that may already be broken: closing must never raise."""
    try:
        dev.close()
    except Exception:
        pass
