"""The dealer's GPIO panel: buttons, a shoe-presence switch and a stack light, through gpiozero.

A panel on the table has up to five buttons (close betting, cut card out,
card exposed, request void, new shoe), a switch under the shoe, an optional
*sense* line that the panel's cable ties to ground (so an unplugged panel is
seen), and a three-colour stack light. The page is
``docs/protocols/gpio-panel.md``.

Three parts, two of them pure:

* :class:`Debouncer` — edges in (with monotonic times, injected), presses and
  releases out. MockPin does not emulate gpiozero's ``bounce_time`` and real
  contacts bounce, so debounce and hold times live here, tested on their own.
* :func:`light_for` (:class:`StackLight`) — the table's state in, the light
  out: green while betting is open, red otherwise (no more bets, dealing),
  amber for an alarm or a device fault, blinking amber when an alarm needs a
  supervisor. The light follows the committed table state, never a button.
* :class:`GpioPanel` — the runtime, the daemon's "transport" for a ``gpio``
  driver: it opens gpiozero devices on the configured pins, hands their
  edges (which arrive on gpiozero's threads) to the loop with
  ``call_soon_threadsafe``, turns presses into :class:`ButtonPressed` readings
  (the daemon makes each a table command with source ``button``: ``daemon/buttons.py``), turns the shoe
  switch into ``ShoeRemoved``/``ShoeInserted`` readings through the device
  runner, drives the light from committed events, and reopens with backoff
  after a failure.

With ``pin_factory = "auto"`` gpiozero chooses its pin factory itself
(``Device.pin_factory``, else the ``GPIOZERO_PIN_FACTORY`` environment
variable, else its default order); ``port = "sim"`` gives the panel a private
``MockFactory`` for demos. gpiozero's own factories drive real pins only on a
Raspberry Pi; on any other PC opening fails with ``BadPinFactory`` or
``PinUnknownPi``, which the panel reports as ``disconnected`` with the fix.
``pin_factory = "gpiod"`` drives the gpiochip named by ``chip`` through
libgpiod (``drivers/gpiod_pins.py``, any Linux PC): the same gpiozero devices,
a new factory for every opening, and a chip that goes away is a lost panel.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Final, Literal

import msgspec
import structlog

from drivers.base import Driver, LineFramer, Protocol
from drivers.readings import (
    ButtonPressed,
    Malformed,
    Reading,
    ShoeInserted,
    ShoeRemoved,
    Unknown,
)

log = structlog.get_logger("gpio-panel")

Pin = int | str
Role = Literal["viewer", "dealer", "supervisor", "technician"]
LightMode = Literal["off", "on", "blink"]

#: button option → (table command, its arguments); the role comes from the options.
#: the dealer's buttons; what each asks the table is the daemon's (``daemon/buttons.py``)
BUTTONS: Final = ("close_betting", "cut_card", "card_exposed", "request_void", "new_shoe")
LIGHTS: Final = ("green", "red", "amber")
#: inputs that are not buttons: the shoe switch and the panel's cable sense line.
SWITCHES: Final = ("shoe_present", "panel_sense")

#: a connection that lasted this long (seconds) was healthy: backoff starts over.
STABLE_AFTER = 5.0

NOT_A_PI = (
    "gpiozero drives real pins only on a Raspberry Pi: on a Pi install lgpio "
    "(apt install python3-lgpio, or pip install lgpio) or set GPIOZERO_PIN_FACTORY; "
    'on any other Linux PC set pin_factory = "gpiod" (libgpiod) and chip (gpiodetect lists '
    "the chips); "
    'for a demo without pins use port = "sim"'
)


def pin_key(pin: Pin) -> str:
    """A pin's name for comparing two options: 17, "17", "GPIO17" and "BCM17" are one pin."""
    if isinstance(pin, int):
        return f"GPIO{pin}"
    s = pin.strip().upper()
    m = re.fullmatch(r"(?:GPIO|BCM)?(\d+)", s)
    return f"GPIO{int(m.group(1))}" if m else s


def _pin_arg(pin: Pin) -> Pin:
    """What gpiozero is given: a bare number as an int (BCM numbering), names as written."""
    if isinstance(pin, str) and pin.strip().isdigit():
        return int(pin.strip())
    return pin


# == options =====================================================================


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
        names = [*BUTTONS, *SWITCHES, *(f"light_{c}" for c in LIGHTS)]
        for name in names:
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
        names = [*BUTTONS, *SWITCHES, *(f"light_{c}" for c in LIGHTS)]
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def hold_of(self, button: str) -> float:
        return self.void_hold if button == "request_void" else self.hold


class GpioPanelSim(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
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


# == debouncing (pure) ===============================================================


@dataclass(frozen=True, slots=True)
class Press:
    """A debounced press: the line went active at ``since`` and counted at ``at``."""

    at: float
    since: float
    edges: int  # raw edges seen since the last release (1 or 2 for a clean contact)


@dataclass(frozen=True, slots=True)
class Release:
    at: float
    held: float  # seconds from the line going active to it going inactive
    edges: int  # raw edges seen during the press and its release


class Debouncer:
    """One contact: raw edges with their times in, :class:`Press` / :class:`Release` out.

    A press counts once the line has been active, without a break, for
    ``max(debounce, hold)`` seconds; a release once it has been inactive for
    ``debounce``. So a bounce train shorter than ``debounce`` is one press,
    a glitch shorter than ``debounce`` is nothing, a press shorter than
    ``hold`` is nothing, and a glitch while held does not press again. The
    price is ``debounce`` seconds of latency, on purpose: a spike on a long
    cable must never close betting.

    Time is an argument, never read: :meth:`edge` takes the edge's time,
    :meth:`advance` the time now, and :attr:`deadline` says when something
    may next become due, so the caller sets one timer instead of polling.
    The output does not depend on when (or whether) :meth:`advance` is
    called between edges. Times that go backwards (an edge handed over late
    by another thread) are taken as the latest time seen.
    """

    __slots__ = ("_edges", "_last", "changed_at", "debounce", "hold", "level", "pressed", "since")

    def __init__(
        self, debounce: float, hold: float = 0.0, *, level: bool = False, now: float = 0.0
    ) -> None:
        if debounce < 0 or hold < 0:
            raise ValueError("debounce and hold must not be negative")
        self.debounce = debounce
        self.hold = hold
        #: the raw line: True while active (pressed, closed).
        self.level = level
        self.changed_at = now
        #: the debounced state; a line already active at start counts as held,
        #: so a stuck button must be released before it can press.
        self.pressed = level
        self.since = now
        self._last = now
        self._edges = 0

    @property
    def need(self) -> float:
        return max(self.debounce, self.hold)

    @property
    def deadline(self) -> float | None:
        if not self.pressed and self.level:
            return self.changed_at + self.need
        if self.pressed and not self.level:
            return self.changed_at + self.debounce
        return None

    def advance(self, now: float) -> list[Press | Release]:
        now = max(now, self._last)
        self._last = now
        out: list[Press | Release] = []
        if not self.pressed and self.level and now - self.changed_at >= self.need:
            self.pressed = True
            self.since = self.changed_at
            out.append(
                Press(at=self.changed_at + self.need, since=self.changed_at, edges=self._edges)
            )
        elif self.pressed and not self.level and now - self.changed_at >= self.debounce:
            self.pressed = False
            out.append(
                Release(
                    at=self.changed_at + self.debounce,
                    held=self.changed_at - self.since,
                    edges=self._edges,
                )
            )
            self._edges = 0
        return out

    def edge(self, active: bool, now: float) -> list[Press | Release]:
        out = self.advance(now)
        if active != self.level:
            self.level = active
            self.changed_at = self._last
            self._edges += 1
            out += self.advance(self._last)  # debounce 0: due at once
        return out


# == the stack light (pure) ============================================================


def _severity(alarm: Any) -> str:
    if isinstance(alarm, Mapping):
        return str(alarm.get("severity", "supervisor"))
    return str(getattr(alarm, "severity", "supervisor"))


class StackLight:
    """The table's state → each lamp's mode. Pure; :meth:`update` only remembers the last."""

    def __init__(self) -> None:
        self.lights: dict[str, LightMode] = dict.fromkeys(LIGHTS, "off")

    @staticmethod
    def light_for(
        summary: Mapping[str, Any] | None,
        alarms: Iterable[Any],
        devices: Mapping[str, str],
    ) -> dict[str, LightMode]:
        """Green while betting is open; red otherwise (no more bets, dealing, between hands);
        amber for a device that is not ``ok`` or any latched alarm; amber blinks while an
        alarm needs a supervisor. No game state (None): red and green stay dark."""
        phase = None if summary is None else summary.get("phase")
        severities = [_severity(a) for a in alarms]
        green: LightMode = "on" if phase == "betting" else "off"
        red: LightMode = "on" if phase is not None and phase != "betting" else "off"
        amber: LightMode = "off"
        if severities or any(h != "ok" for h in devices.values()):
            amber = "on"
        if any(s == "supervisor" for s in severities):
            amber = "blink"
        return {"green": green, "red": red, "amber": amber}

    def update(
        self, summary: Mapping[str, Any] | None, alarms: Iterable[Any], devices: Mapping[str, str]
    ) -> dict[str, LightMode]:
        """The lamps that change (name → new mode); empty when none does."""
        new = self.light_for(summary, alarms, devices)
        changed = {k: v for k, v in new.items() if self.lights.get(k) != v}
        self.lights = new
        return changed


light_for = StackLight.light_for


# == the protocol: shoe switch lines → readings ==========================================


class GpioPanelProtocol(Protocol):
    """The panel's runtime reports its switch as text lines (``shoe present`` / ``shoe removed``),
    so a trace shows them and a capture replays them; buttons are commands, not readings."""

    def __init__(self) -> None:
        self.framer = LineFramer(max_line=64)

    def feed(self, data: bytes, now: float) -> list[Reading]:
        out: list[Reading] = []
        for item in self.framer.feed(data):
            if isinstance(item, Malformed):
                out.append(item)
            elif item == b"shoe removed":
                out.append(ShoeRemoved(frame=item))
            elif item == b"shoe present":
                out.append(ShoeInserted(frame=item))
            else:
                out.append(Unknown(frame=item, reason="not a panel line"))
        return out

    def eof(self) -> list[Reading]:
        return list(self.framer.eof())


# == the runtime ============================================================================


class PanelUnavailable(Exception):
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
class _Input:
    name: str
    pin: Pin
    device: Any
    debouncer: Debouncer
    invert: bool = False
    timer: asyncio.TimerHandle | None = None
    edges: int = 0


@dataclass(slots=True)
class _Counters:
    presses: dict[str, int] = field(default_factory=dict)
    commands: int = 0
    refused: int = 0


class GpioPanel:
    """The daemon's transport for a ``gpio`` device: ``run(sink)``, ``close()``, ``write()``.

    ``sink`` is the device's runner (``on_connected`` / ``on_data`` /
    ``on_disconnected``): health and the shoe switch go through it like any
    device's. Buttons go to ``submit`` as :class:`~drivers.readings.ButtonPressed` readings,
    like a control command. ``on_events`` (a pipeline listener) and
    ``refresh(state)`` drive the light from the committed table state.
    """

    def __init__(
        self,
        options: GpioPanelOptions,
        submit: Callable[..., Any] | None = None,
        *,
        name: str = "panel",
        port: str = "gpio",
        sim: GpioPanelSim | None = None,
        pin_factory: Any = None,
        state: Callable[[], Any] | None = None,
        summary: Callable[[Any], Mapping[str, Any]] | None = None,
        reconnect_min: float = 0.1,
        reconnect_max: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < reconnect_min <= reconnect_max:
            raise ValueError("need 0 < reconnect_min <= reconnect_max")
        self.o = options
        self.submit = submit
        self.name = name
        self.port = port
        self.sim = sim if sim is not None else (GpioPanelSim() if port == "sim" else None)
        self._factory_given = pin_factory
        self._state_fn = state
        self._summary = summary
        self.reconnect_min = reconnect_min
        self.reconnect_max = reconnect_max
        self.mono = clock
        self.factory: Any = None
        self.inputs: dict[str, _Input] = {}
        self.leds: dict[str, Any] = {}
        self.stack = StackLight()
        #: lamp modes written to the pins in this connection (rewritten after a reopen)
        self._shown: dict[str, LightMode] = {}
        #: a technician's override (``tablectl gpio test``): these modes win over the table's
        self.manual: dict[str, LightMode] | None = None
        self.watchers: list[Callable[[PanelEvent], None]] = []
        self.counters = _Counters()
        self.last_command: dict[str, Any] | None = None
        self.plugged: bool | None = None
        self.reconnects = 0
        self._sink: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._gen = 0
        self._results = 0  # hand results seen, for the simulated dealer's shoe lifts
        self._open_now = False
        self._running = False
        self._closed = False
        self._stop = asyncio.Event()
        self._lost: asyncio.Future[str | None] | None = None
        self._log = log.bind(device=name, port=port)

    # -- status ------------------------------------------------------------------------------

    @property
    def lights(self) -> dict[str, LightMode]:
        return dict(self.manual) if self.manual is not None else dict(self.stack.lights)

    @property
    def factory_name(self) -> str | None:
        return None if self.factory is None else type(self.factory).__name__

    def status(self) -> dict[str, Any]:
        shoe = self.inputs.get("shoe_present")
        return {
            "pin_factory": self.factory_name,
            "lights": {c: self.lights[c] for c in LIGHTS if f"light_{c}" in self.o.pins()},
            "buttons": {
                b: {
                    "pin": pin,
                    "presses": self.counters.presses.get(b, 0),
                    "held": bool(self.inputs[b].debouncer.pressed) if b in self.inputs else None,
                }
                for b, pin in self.o.pins().items()
                if b in BUTTONS
            },
            "shoe_present": None if shoe is None else self._switch_state(shoe),
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

    @property
    def connected(self) -> bool:
        return self._open_now and self.plugged is not False

    async def close(self) -> None:
        self._closed = True
        self._stop.set()
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(None)

    async def run(self, sink: Any) -> None:
        """Open the pins and keep them open until cancelled or closed; reopen with backoff."""
        if self._running:
            raise RuntimeError(f"GpioPanel({self.name!r}).run() is already running")
        self._running = True
        self._loop = asyncio.get_running_loop()
        self._sink = sink
        delay = self.reconnect_min
        attempts = 0
        last_reason: str | None = None
        ever = False
        try:
            while not self._closed:
                try:
                    self._open()
                except PanelUnavailable as e:
                    reason = str(e)
                    if attempts == 0 or reason != last_reason:
                        sink.on_disconnected(reason)
                    (self._log.warning if reason != last_reason else self._log.debug)(
                        "gpio panel unavailable", reason=reason, retry_in=delay
                    )
                    last_reason = reason
                    attempts += 1
                    if await self._pause(delay):
                        return
                    delay = min(delay * 2, self.reconnect_max)
                    continue
                attempts += 1
                last_reason = None
                if ever:
                    self.reconnects += 1
                ever = True
                started = self.mono()
                self._lost = self._loop.create_future()
                self._log.info("gpio panel open", pin_factory=self.factory_name)
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
                    sink.on_disconnected(self._unplugged_reason())
                else:
                    sink.on_connected({"port": self._port_text()})
                if self._state_fn is not None:
                    self.refresh(self._state_fn())
                else:
                    self._show()
                reason = await self._lost
                self._close_devices()
                if reason is None or self._closed:
                    return
                self._log.warning("gpio panel lost", reason=reason)
                sink.on_disconnected(reason)
                if self.mono() - started > STABLE_AFTER:
                    delay = self.reconnect_min
                if await self._pause(delay):
                    return
                delay = min(delay * 2, self.reconnect_max)
        finally:
            self._running = False
            self._close_devices()
            if self.o.pin_factory == "gpiod" and self.factory is not None:
                _quiet_close(self.factory)  # its chip and edge thread

    async def _pause(self, delay: float) -> bool:
        try:
            await asyncio.wait_for(self._stop.wait(), delay)
        except TimeoutError:
            return False
        return True

    def _port_text(self) -> str:
        return f"{self.port} ({self.factory_name})"

    def _unplugged_reason(self) -> str:
        return (
            f"panel unplugged: the sense line (pin {self.o.panel_sense!r}) reads open; "
            "check the panel's cable and connector"
        )

    # -- opening and closing the pins -------------------------------------------------------------

    def _pick_factory(self) -> Any:
        from gpiozero import Device

        if self._factory_given is not None:
            return self._factory_given
        if self.port == "sim":
            from gpiozero.pins.mock import MockFactory

            self._factory_given = MockFactory()
            return self._factory_given
        if self.o.pin_factory == "gpiod" and self.port == "gpio":
            from drivers import gpiod_pins

            if self.factory is not None:  # the last opening's chip: a factory is one opening
                _quiet_close(self.factory)
            try:
                f = gpiod_pins.GpiodFactory(self.o.chip or gpiod_pins.DEFAULT_CHIP)
            except Exception as e:
                raise PanelUnavailable(gpiod_pins.explain(e)) from None
            f.when_lost = functools.partial(self._chip_lost, f)
            return f
        if self.port != "gpio":
            raise PanelUnavailable(
                f"port {self.port!r}: a gpio-panel's port is \"gpio\" (gpiozero chooses the pins' "
                'backend) or "sim" (mock pins)'
            )
        # gpiozero's own mechanism: Device.pin_factory, else $GPIOZERO_PIN_FACTORY, else its order.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                Device.ensure_pin_factory()
            except Exception as e:
                raise PanelUnavailable(explain(e, [str(w.message) for w in caught])) from None
        return Device.pin_factory

    def _open(self) -> None:
        from gpiozero import LED, DigitalInputDevice

        self._close_devices()
        self.factory = f = self._pick_factory()
        self._gen += 1
        o = self.o
        now = self.mono()
        made: list[tuple[str, Pin, Any]] = []
        try:
            for name, pin in o.pins().items():
                arg = _pin_arg(pin)
                try:
                    if name.startswith("light_"):
                        dev = LED(
                            arg, active_high=o.active_high, initial_value=False, pin_factory=f
                        )
                    else:
                        # Buttons too: debounce and hold are the Debouncer's, so gpiozero's
                        # Button (whose hold thread delays close while a button is held) adds
                        # nothing.
                        dev = DigitalInputDevice(
                            arg, pull_up=o.pull_up, bounce_time=None, pin_factory=f
                        )
                except Exception as e:
                    raise PanelUnavailable(f"{name} (pin {pin!r}): {explain(e)}") from None
                made.append((name, pin, dev))
        except PanelUnavailable:
            for _, _, dev in made:
                _quiet_close(dev)
            raise
        if self.sim is not None and self.port == "sim":
            self._sim_levels(made)
        for name, pin, dev in made:
            if name.startswith("light_"):
                self.leds[name[6:]] = dev
                continue
            invert = name == "shoe_present" and o.shoe_present_when == "open"
            hold = o.hold_of(name) if name in BUTTONS else 0.0
            deb = Debouncer(o.debounce, hold, level=bool(dev.is_active), now=now)
            self.inputs[name] = _Input(name, pin, dev, deb, invert=invert)
        for name, inp in self.inputs.items():
            inp.device.when_activated = functools.partial(self._post, name, self._gen, True)
            inp.device.when_deactivated = functools.partial(self._post, name, self._gen, False)
            # an edge between reading the level and setting the callbacks
            level = bool(inp.device.is_active)
            if level != inp.debouncer.level:
                self._edge(name, self._gen, level, now)
        sense = self.inputs.get("panel_sense")
        self.plugged = None if sense is None else bool(sense.debouncer.pressed)
        self._shown = {}
        self._open_now = True

    def _sim_levels(self, made: list[tuple[str, Pin, Any]]) -> None:
        """Mock pins start as a real panel would: shoe on its switch, cable plugged in."""
        assert self.sim is not None
        want = {"shoe_present": self.sim.shoe_present, "panel_sense": self.sim.panel_plugged}
        for name, _, dev in made:
            if name in want:
                active = want[name] != (
                    name == "shoe_present" and self.o.shoe_present_when == "open"
                )
                drive_active(dev.pin, active, self.o.pull_up)

    def _close_devices(self) -> None:
        self._open_now = False
        self._gen += 1
        for inp in self.inputs.values():
            if inp.timer is not None:
                inp.timer.cancel()
            inp.device.when_activated = None
            inp.device.when_deactivated = None
            _quiet_close(inp.device)
        for led in self.leds.values():
            try:
                led.off()
            except Exception:
                pass
            _quiet_close(led)
        self.inputs = {}
        self.leds = {}
        self._shown = {}

    def _fail(self, reason: str) -> None:
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(reason)

    def _chip_lost(self, factory: Any, reason: str) -> None:
        """A gpiod factory's chip went away (on its edge thread, or a failing write)."""

        def lost() -> None:
            if factory is self.factory:
                self._fail(reason)

        if self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(lost)
            except RuntimeError:  # the loop is closed: the daemon is gone
                pass

    # -- edges: gpiozero's thread → the loop → the debouncer ----------------------------------------

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
        inp = self.inputs.get(name)
        if gen != self._gen or inp is None:
            return  # an edge from pins closed since
        inp.edges += 1
        self._handle(inp, inp.debouncer.edge(active, now))
        self._arm(inp)

    def _due(self, name: str, gen: int) -> None:
        inp = self.inputs.get(name)
        if gen != self._gen or inp is None:
            return
        inp.timer = None
        self._handle(inp, inp.debouncer.advance(self.mono()))
        self._arm(inp)

    def _arm(self, inp: _Input) -> None:
        if inp.timer is not None:
            inp.timer.cancel()
            inp.timer = None
        dl = inp.debouncer.deadline
        if dl is not None and self._loop is not None:
            inp.timer = self._loop.call_later(
                max(0.0, dl - self.mono()), self._due, inp.name, self._gen
            )

    def _handle(self, inp: _Input, outs: list[Press | Release]) -> None:
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
            self._shown = {}
            self._show()
        else:
            self._log.warning("gpio panel unplugged")
            self._sink.on_disconnected(self._unplugged_reason())

    def _press(self, inp: _Input, x: Press) -> None:
        self.counters.presses[inp.name] = self.counters.presses.get(inp.name, 0) + 1
        self._tell(PanelEvent("press", inp.name, x.at, held=x.at - x.since, edges=x.edges))
        if self.plugged is False or self.submit is None:
            return
        role = self.o.void_role if inp.name == "request_void" else self.o.role
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

    def _switch_state(self, inp: _Input) -> bool:
        return bool(inp.debouncer.pressed) != inp.invert

    # -- the light ----------------------------------------------------------------------------------

    def on_events(self, events: Sequence[Any]) -> None:
        """A pipeline listener: after each commit, the light follows the table's state."""
        if self._state_fn is not None and events:
            self.refresh(self._state_fn())
        after = None if self.sim is None else self.sim.close_betting_after
        if after is not None and self._loop is not None and "close_betting" in self.inputs:
            if any(getattr(ev, "type", None) == "betting.opened" for ev in events):
                self._loop.call_later(after, self._sim_press, "close_betting", self._gen)
        every = None if self.sim is None else self.sim.lift_shoe_every
        if every is not None and self._loop is not None and "shoe_present" in self.inputs:
            for ev in events:
                if getattr(ev, "type", None) == "hand.result":
                    self._results += 1
                    if self._results % every == 0:
                        self._loop.call_later(0.3, self._sim_shoe, False, self._gen)
                        self._loop.call_later(1.3, self._sim_shoe, True, self._gen)

    def _sim_shoe(self, present: bool, gen: int) -> None:
        """The simulated dealer lifts the shoe off its switch, or puts it back."""
        inp = self.inputs.get("shoe_present")
        if gen == self._gen and inp is not None:
            active = present != (self.o.shoe_present_when == "open")
            drive_active(inp.device.pin, active, self.o.pull_up)

    def _sim_press(self, name: str, gen: int) -> None:
        """The simulated dealer's finger on a mock button: down for the hold, then up."""
        inp = self.inputs.get(name)
        if gen != self._gen or inp is None or self._loop is None:
            return
        drive_active(inp.device.pin, True, self.o.pull_up)
        hold = max(self.o.debounce, self.o.hold_of(name)) + 0.05
        self._loop.call_later(hold, self._sim_release, name, gen)

    def _sim_release(self, name: str, gen: int) -> None:
        inp = self.inputs.get(name)
        if gen == self._gen and inp is not None:
            drive_active(inp.device.pin, False, self.o.pull_up)

    def refresh(self, state: Any) -> None:
        """Set the light from a :class:`~daemon.table.TableState` (the pipeline's state)."""
        game = getattr(state, "game", None)
        if game is None:
            summary = None
        elif self._summary is not None:
            summary = self._summary(game)
        else:
            summary = {"phase": getattr(game, "phase", None)}
        alarms = list(getattr(state, "alarms", {}).values())
        self.stack.update(summary, alarms, getattr(state, "devices", {}))
        self._show()

    def set_light(self, color: str, mode: LightMode) -> None:
        """A technician's override (``tablectl gpio test``); ``release_lights()`` hands back."""
        if color not in LIGHTS:
            raise ValueError(f"no light {color!r} (lights: {', '.join(LIGHTS)})")
        if self.manual is None:
            self.manual = dict(self.stack.lights)
        self.manual[color] = mode
        self._show()

    def release_lights(self) -> None:
        self.manual = None
        self._show()

    def _show(self) -> None:
        if not self._open_now:
            return
        half = self.o.blink / 2
        for color, mode in self.lights.items():
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
                self._fail(
                    f"light {color} (pin {getattr(self.o, 'light_' + color)!r}): {explain(e)}"
                )
                return
            self._shown[color] = mode

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


def drive_active(pin: Any, active: bool, pull_up: bool) -> None:
    """Drive a MockPin to the level that reads ``active`` (pull-up inputs are active low)."""
    if active == pull_up:
        pin.drive_low()
    else:
        pin.drive_high()


def _quiet_close(dev: Any) -> None:
    try:
        dev.close()
    except Exception:
        pass


# == the driver =====================================================================================


class GpioPanelDriver(Driver):
    name = "gpio-panel"
    transport = "gpio"
    Options = GpioPanelOptions
    maturity = "experimental"
    Sim: ClassVar[type[GpioPanelSim]] = GpioPanelSim

    def protocol(self) -> GpioPanelProtocol:
        return GpioPanelProtocol()

    def simulator(self, options: dict[str, Any]) -> GpioPanelSim:
        """``port = "sim"``: mock pins (gpiozero's MockFactory); ``options`` are their start levels."""
        return msgspec.convert(options, GpioPanelSim)

    def panel(
        self,
        submit: Callable[..., Any] | None,
        *,
        name: str = "panel",
        port: str = "gpio",
        sim: Mapping[str, Any] | None = None,
        state: Callable[[], Any] | None = None,
        summary: Callable[[Any], Mapping[str, Any]] | None = None,
        pin_factory: Any = None,
        reconnect_min: float = 0.1,
        reconnect_max: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> GpioPanel:
        """The runtime for this panel: the daemon runs it as the device's transport."""
        assert isinstance(self.options, GpioPanelOptions)
        return GpioPanel(
            self.options,
            submit,
            name=name,
            port=port,
            sim=self.simulator(dict(sim or {})) if port == "sim" else None,
            pin_factory=pin_factory,
            state=state,
            summary=summary,
            reconnect_min=reconnect_min,
            reconnect_max=reconnect_max,
            clock=clock,
        )
