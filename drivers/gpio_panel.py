"""The dealer's GPIO panel: buttons, a shoe-presence switch and a stack light, through gpiozero.

A panel on the table has up to five buttons (close betting, cut card out,
card exposed, request void, new shoe), a switch under the shoe, an optional
*sense* line that the panel's cable ties to ground (so an unplugged panel is
seen), and a three-colour stack light. The page is
``docs/protocols/gpio-panel.md``; the parts, one job each, are in ``drivers/gpio/``
(options, debounce, pins, inputs, lights, the runtime). This module is the
driver: its protocol, and where the pin factory is chosen.

**The pin factory** is chosen in one place, :func:`choose_pin_factory`, called
at every opening of the pins. With ``pin_factory = "auto"`` it is gpiozero's own
choice (``Device.pin_factory``, else the ``GPIOZERO_PIN_FACTORY`` environment
variable, else its default order); ``port = "sim"`` gives the panel a private
``MockFactory`` (:meth:`GpioPanelDriver.panel`). gpiozero's own factories drive
real pins only on a Raspberry Pi; on any other PC opening fails with
``BadPinFactory`` or ``PinUnknownPi``, which the panel reports as ``disconnected``
with the fix. ``pin_factory = "gpiod"`` drives the gpiochip named by ``chip``
through libgpiod (``drivers/gpiod_pins.py``, any Linux PC): the same gpiozero
devices, a new factory for every opening, and a chip that goes away is a lost
panel. :class:`~drivers.gpio.panel.GpioPanel` is all the daemon sees.

What the buttons ask the table (``daemon/table/buttons.py``) and what the stack light
says (``daemon/table/stack_light.py``) are the daemon's: the driver reports
:class:`~drivers.readings.ButtonPressed` and shows the lights it is told.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from drivers.base import Driver, Protocol
from drivers.framing import LineFramer
from drivers.gpio.options import GpioPanelOptions
from drivers.gpio.panel import GpioPanel
from drivers.gpio.pins import PanelUnavailable, explain
from drivers.readings import Reading, ShoeInserted, ShoeRemoved, Unknown

# == the protocol: shoe switch lines → readings ==========================================


class GpioPanelProtocol(Protocol):
    """The panel's runtime reports its switch as text lines (``shoe present`` / ``shoe removed``),
    so a trace shows them and a capture replays them; buttons are commands, not readings."""

    def __init__(self) -> None:
        self.framer = LineFramer(max_line=64)

    def feed(self, data: bytes, now: float) -> list[Reading]:
        out: list[Reading] = []
        for item in self.framer.lines(data, out):
            if item == b"shoe removed":
                out.append(ShoeRemoved(frame=item))
            elif item == b"shoe present":
                out.append(ShoeInserted(frame=item))
            else:
                out.append(Unknown(frame=item, reason="not a panel line"))
        return out

    def eof(self) -> list[Reading]:
        return list(self.framer.eof())


# == the pin factory ========================================================================


def choose_pin_factory(
    port: str, o: GpioPanelOptions, lost: Callable[[str], None]
) -> tuple[Any, bool]:
    """The pin factory for one opening of a panel's pins, and whether it is that opening's own.

    The one place a backend is chosen: called at every opening, so a factory that
    appears later (a library installed, the environment fixed, a chip plugged back in)
    is found by the next retry. An opening's own factory (gpiod's: one chip, one edge
    thread) is closed with its pins; gpiozero's shared one is gpiozero's to keep.
    ``lost(reason)`` may be called from any thread when the pins are gone (the chip was
    unplugged): the panel closes and reopens. Raises :class:`PanelUnavailable` saying why
    there is none.
    """
    from gpiozero import Device

    if port != "gpio":
        raise PanelUnavailable(
            f"port {port!r}: a gpio-panel's port is \"gpio\" (gpiozero chooses the pins' "
            'backend) or "sim" (mock pins)'
        )
    if o.pin_factory == "gpiod":
        from drivers import gpiod_pins

        try:
            f = gpiod_pins.GpiodFactory(o.chip or gpiod_pins.DEFAULT_CHIP)
        except Exception as e:
            raise PanelUnavailable(gpiod_pins.explain(e)) from None
        f.when_lost = lost
        return f, True
    # gpiozero's own mechanism: Device.pin_factory, else $GPIOZERO_PIN_FACTORY, else its order.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            Device.ensure_pin_factory()
        except Exception as e:
            raise PanelUnavailable(explain(e, [str(w.message) for w in caught])) from None
    return Device.pin_factory, False


# == the driver =====================================================================================


class GpioPanelDriver(Driver):
    name = "gpio-panel"
    transport = "gpio"
    Options = GpioPanelOptions
    maturity = "experimental"

    def protocol(self) -> GpioPanelProtocol:
        return GpioPanelProtocol()

    def panel(
        self,
        submit: Callable[..., Any] | None,
        *,
        name: str = "panel",
        port: str = "gpio",
        sim: Mapping[str, Any] | None = None,
        pin_factory: Any = None,
        reconnect_min: float = 0.1,
        reconnect_max: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> GpioPanel:
        """The runtime for this panel: the daemon runs it as the device's transport.

        ``port = "sim"``: private mock pins (gpiozero's ``MockFactory``) and the
        simulated dealer of ``sim`` (``[devices.sim]``, ``drivers/sim/gpio_panel.py``).
        """
        assert isinstance(self.options, GpioPanelOptions)
        dealer = None
        if port == "sim":
            from gpiozero.pins.mock import MockFactory

            dealer = self.simulator(dict(sim or {}))
            if pin_factory is None:
                pin_factory = MockFactory()
        return GpioPanel(
            self.options,
            submit,
            choose_factory=choose_pin_factory,
            name=name,
            port=port,
            dealer=dealer,
            pin_factory=pin_factory,
            reconnect_min=reconnect_min,
            reconnect_max=reconnect_max,
            clock=clock,
        )
