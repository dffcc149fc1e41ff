"""The panel's runtime: the daemon's transport for a ``gpio`` device.

One link is one opening of the panel's pins. :class:`GpioPanel` is a
:class:`~drivers.transport.Reconnecting` like the serial and USB transports: a
failure (no pin factory, not a Pi, a pin in use, a lamp that raises) closes every
pin, reports ``disconnected`` with the reason and reopens with backoff. While a
link is up it turns debounced presses into :class:`~drivers.readings.ButtonPressed`
readings for ``submit`` (the daemon makes each a table command:
``daemon/table/buttons.py``), the shoe switch into text lines for the device runner
(``shoe present`` / ``shoe removed``, decoded by the driver's protocol so traces
show them), the sense line into connected/disconnected, and shows the lights it is
told (:meth:`GpioPanel.set_lights`).

The pin factory is not chosen here: the driver (``drivers/gpio_panel.py``) passes a
``choose_factory`` called at every opening; a factory made for one opening (gpiod's)
is closed with it, and may say from its own thread that the pins are gone.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog

from drivers.gpio.debounce import Press, Release
from drivers.gpio.inputs import Input, Inputs
from drivers.gpio.lights import Lamps, LightMode, SetLights
from drivers.gpio.options import BUTTONS, LIGHTS, GpioPanelOptions
from drivers.gpio.pins import PanelUnavailable, open_pins, quiet_close
from drivers.readings import ButtonPressed
from drivers.transport import Reconnecting

log = structlog.get_logger("gpio-panel")


@dataclass(frozen=True, slots=True)
class PanelEvent:
    """What the panel saw, for watchers (``tablectl gpio test``): a debounced input change."""

    kind: Literal["press", "release", "shoe", "sense"]
    name: str
    mono: float
    held: float | None = None
    edges: int = 0
    state: bool | None = None


@dataclass(slots=True)
class _Counters:
    presses: dict[str, int] = field(default_factory=dict)
    commands: int = 0
    refused: int = 0


class _PinLink:
    """One opening of the pins, as :class:`~drivers.transport.Reconnecting` sees a link."""

    got_data = False  # a panel's health is its pins, not traffic: only time resets the backoff

    def __init__(self, panel: GpioPanel, loop: asyncio.AbstractEventLoop) -> None:
        self.panel = panel
        self.loop = loop
        self.lost: asyncio.Future[str | None] = loop.create_future()
        #: a pin factory made for this opening alone (gpiod's), closed with it
        self.own_factory: Any = None

    @property
    def alive(self) -> bool:
        return not self.lost.done() and self.panel.plugged is not False

    def start(self) -> None:
        pass

    def write(self, data: bytes) -> bool:
        return False

    def fail(self, reason: str | None) -> None:
        if not self.lost.done():
            self.lost.set_result(reason)

    def fail_soon(self, reason: str) -> None:
        """From any thread (a pin factory's): the pins are gone."""
        try:
            self.loop.call_soon_threadsafe(self.fail, reason)
        except RuntimeError:  # the loop is closed: the daemon is gone
            pass

    def close_factory(self) -> None:
        f, self.own_factory = self.own_factory, None
        if f is not None:
            quiet_close(f)  # its chip and edge thread

    async def aclose(self) -> None:
        self.fail(None)
        self.panel._close_pins()
        self.close_factory()


class GpioPanel(Reconnecting):
    """The daemon's transport for a ``gpio`` device: ``run(sink)``, ``close()``, ``write()``.

    ``sink`` is the device's runner (``on_connected`` / ``on_data`` /
    ``on_disconnected``): health and the shoe switch go through it like any
    device's. Buttons go to ``submit`` as :class:`~drivers.readings.ButtonPressed` readings,
    like a control command. The lamps show what :meth:`set_lights` last said.
    """

    noun = "gpio panel"

    def __init__(
        self,
        options: GpioPanelOptions,
        submit: Callable[..., Any] | None = None,
        *,
        choose_factory: Callable[[str, GpioPanelOptions, Callable[[str], None]], tuple[Any, bool]],
        name: str = "panel",
        port: str = "gpio",
        dealer: Any = None,
        pin_factory: Any = None,
        reconnect_min: float = 0.1,
        reconnect_max: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            reconnect_min=reconnect_min,
            reconnect_max=reconnect_max,
            clock=clock,
            log=log.bind(device=name, port=port),
        )
        self.o = options
        self.submit = submit
        self.name = name
        self.port = port
        self.mono = clock
        self._choose = choose_factory
        self._factory_given = pin_factory
        #: the simulated dealer of a ``port = "sim"`` panel (``drivers/sim/gpio_panel.py``)
        self.dealer = dealer
        if dealer is not None:
            dealer.attach(self)
        self.factory: Any = None
        self._inputs = Inputs(clock, self._handle)
        self.lamps = Lamps(options)
        self.watchers: list[Callable[[PanelEvent], None]] = []
        self.counters = _Counters()
        self.last_command: dict[str, Any] | None = None
        self.plugged: bool | None = None
        self._sink: Any = None

    # -- status ------------------------------------------------------------------------------

    @property
    def inputs(self) -> dict[str, Input]:
        """The open input lines (none while the pins are closed)."""
        return self._inputs.lines

    @property
    def gen(self) -> int:
        """This opening of the pins (a timer set for an earlier one is dropped)."""
        return self._inputs.gen

    @property
    def leds(self) -> dict[str, Any]:
        return self.lamps.leds

    @property
    def lights(self) -> dict[str, LightMode]:
        return self.lamps.modes

    @property
    def factory_name(self) -> str | None:
        return None if self.factory is None else type(self.factory).__name__

    def status(self) -> dict[str, Any]:
        shoe = self.inputs.get("shoe_present")
        lights = self.lights
        return {
            "pin_factory": self.factory_name,
            "lights": {c: lights[c] for c in LIGHTS if f"light_{c}" in self.o.pins()},
            "buttons": {
                b: {
                    "pin": pin,
                    "presses": self.counters.presses.get(b, 0),
                    "held": bool(self.inputs[b].debouncer.pressed) if b in self.inputs else None,
                }
                for b, pin in self.o.pins().items()
                if b in BUTTONS
            },
            "shoe_present": None if shoe is None else bool(shoe.debouncer.pressed) != shoe.invert,
            "panel_plugged": self.plugged,
            "commands": self.counters.commands,
            "refused": self.counters.refused,
            "last_command": self.last_command,
        }

    def status_detail(self) -> dict[str, Any]:
        """The panel's lights and buttons, shown by ``tablectl devices``."""
        return {"panel": self.status()}

    # -- transport ------------------------------------------------------------------------------

    def write(self, data: bytes) -> bool:
        """A panel takes no bytes."""
        return False

    async def _connect(self, sink: Any) -> _PinLink:
        """Open every pin, or raise :class:`~drivers.gpio.pins.PanelUnavailable` saying why."""
        self._sink = sink
        self._close_pins()
        link = _PinLink(self, asyncio.get_running_loop())
        f = self._factory_given
        if f is None:
            f, own = self._choose(self.port, self.o, link.fail_soon)
            link.own_factory = f if own else None
        self.factory = f
        try:
            made = open_pins(self.o, f)
        except PanelUnavailable:
            link.close_factory()
            raise
        if self.dealer is not None:
            self.dealer.start_levels(made)
        self._link = link  # edges handled while opening may already fail it
        self._inputs.open(self.o, made, link.loop)
        self.lamps.open(made)
        sense = self.inputs.get("panel_sense")
        self.plugged = None if sense is None else bool(sense.debouncer.pressed)
        return link

    def _info(self, link: _PinLink) -> dict[str, Any]:
        return {"port": self._port_text()}

    def _announce(self, sink: Any, link: _PinLink) -> None:
        """Up, unless the sense line says the cable is out; then the lights as told."""
        above = {
            name: role
            for name, role in (("buttons", self.o.role), ("request_void", self.o.void_role))
            if role == "supervisor"
        }
        if above:
            self._log.warning(
                "gpio panel: buttons act as supervisor by config; the buttons must be "
                "wired under the supervisor's key switch",
                **above,
            )
        if self.plugged is False:
            self._log.info("gpio panel open", pin_factory=self.factory_name)
            sink.on_disconnected(self._unplugged_reason())
        else:
            super()._announce(sink, link)
        self._show()

    def _close_pins(self) -> None:
        self._inputs.close()
        self.lamps.close()

    def _fail(self, reason: str) -> None:
        link = self._link
        if isinstance(link, _PinLink):
            link.fail(reason)

    def _port_text(self) -> str:
        return f"{self.port} ({self.factory_name})"

    def _unplugged_reason(self) -> str:
        return (
            f"panel unplugged: the sense line (pin {self.o.panel_sense!r}) reads open; "
            "check the panel's cable and connector"
        )

    # -- inputs: what each debounced change means ---------------------------------------------------

    def _handle(self, inp: Input, outs: list[Press | Release]) -> None:
        for x in outs:
            if inp.name == "panel_sense":
                self._sense(isinstance(x, Press), x.at)
            elif inp.name == "shoe_present":
                present = isinstance(x, Press) != inp.invert
                self._tell(PanelEvent("shoe", inp.name, x.at, edges=x.edges, state=present))
                if self.plugged is not False and self._sink is not None:
                    line = b"shoe present\n" if present else b"shoe removed\n"
                    self._sink.on_data(line, x.at)
            elif isinstance(x, Press):
                self._press(inp, x)
            else:
                self._tell(PanelEvent("release", inp.name, x.at, held=x.held, edges=x.edges))

    def _sense(self, plugged: bool, at: float) -> None:
        self.plugged = plugged
        self._tell(PanelEvent("sense", "panel_sense", at, state=plugged))
        if self._sink is None:
            return
        if plugged:
            self._log.info("gpio panel plugged in")
            self._sink.on_connected({"port": self._port_text()})
            self.lamps.forget()
            self._show()
        else:
            self._log.warning("gpio panel unplugged")
            self._sink.on_disconnected(self._unplugged_reason())

    def _press(self, inp: Input, x: Press) -> None:
        self.counters.presses[inp.name] = self.counters.presses.get(inp.name, 0) + 1
        self._tell(PanelEvent("press", inp.name, x.at, held=x.at - x.since, edges=x.edges))
        if self.plugged is False or self.submit is None:
            return
        role = self.o.role_of(inp.name)
        press = ButtonPressed(button=inp.name, role=role, held=x.at - x.since, at=x.at)
        self.counters.commands += 1
        self.last_command = {"button": inp.name, "role": role, "result": None}
        self._log.info("button", button=inp.name, role=role)
        fut = self.submit(press, reply=True)
        if isinstance(fut, asyncio.Future):
            fut.add_done_callback(functools.partial(self._replied, dict(self.last_command)))

    def _replied(self, record: dict[str, Any], fut: asyncio.Future[Any]) -> None:
        if fut.cancelled():
            return
        exc = fut.exception()
        refused = str(exc) if exc is not None else getattr(fut.result(), "refused", None)
        if (
            refused is not None
            and record["button"] == "request_void"
            and record["role"] != "supervisor"
        ):
            refused += (
                '; the void button acts as supervisor only with void_role = "supervisor", set '
                "when it is wired under the supervisor's key switch"
            )
        record["result"] = "accepted" if refused is None else f"refused: {refused}"
        if refused is not None:
            self.counters.refused += 1
            self._log.warning("button refused", button=record["button"], reason=refused)
        self.last_command = record

    def _tell(self, ev: PanelEvent) -> None:
        for w in self.watchers:
            try:
                w(ev)
            except Exception:
                self._log.exception("panel watcher failed")

    # -- the light: shown as told ---------------------------------------------------------------------

    def set_lights(self, lights: SetLights) -> None:
        """The daemon's word on the stack light (``daemon/table/stack_light.py``); kept across reopens."""
        self.lamps.tell(lights)
        self._show()

    def set_light(self, color: str, mode: LightMode) -> None:
        """A technician's override (``tablectl gpio test``); ``release_lights()`` hands back."""
        self.lamps.override(color, mode)
        self._show()

    def release_lights(self) -> None:
        self.lamps.release()
        self._show()

    def _show(self) -> None:
        if not self.lamps.leds or not isinstance(self._link, _PinLink) or self._link.lost.done():
            return
        problem = self.lamps.show()
        if problem is not None:
            self._fail(problem)

    # -- mock pins (demos, tests, ``tablectl gpio test --mock``) ------------------------------------

    def mock_pin(self, name: str) -> Any:
        """The MockPin of an input (``close_betting``, ``shoe_present``, …) to drive by hand."""
        inp = self.inputs.get(name)
        if inp is None:
            raise KeyError(f"{name!r} is not an open input (open: {', '.join(self.inputs)})")
        pin = inp.device.pin
        if not hasattr(pin, "drive_low"):
            raise TypeError("only mock pins can be driven by hand")
        return pin
