"""The driver API: sans-I/O protocols, byte transports, and the plugin registry.

A driver plugin is one class registered under the entry-point group
``tabled.drivers`` (the project's own drivers are registered the same way a
third party's would be). It names its transport, validates its own options,
and makes a fresh :class:`Protocol` for every connection. Protocols never
do I/O and never raise on bad input: garbage becomes a counted
:class:`~drivers.readings.Malformed` reading.
"""

from __future__ import annotations

import abc
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import msgspec

from drivers.plugins import EntryPoint, entry_points
from drivers.readings import Reading

if typing.TYPE_CHECKING:
    from drivers.sim.base import Simulator

TransportKind = Literal["serial", "usb", "gpio"]


class NoOptions(msgspec.Struct, forbid_unknown_fields=True):
    """Options of a driver that takes none."""


class Protocol(abc.ABC):
    """Bytes in, readings out; commands in, bytes out. No I/O, no clock."""

    @abc.abstractmethod
    def feed(self, data: bytes, now: float) -> list[Reading]:
        """Take received bytes (any split) and return the readings completed by them.

        ``now`` is the monotonic time the bytes arrived: protocols with
        timing rules (repeat suppression, reply timeouts) get time as an
        argument, never from a clock, so captures replay exactly.
        """

    def sent(self, data: bytes, now: float) -> list[Reading]:
        """Note bytes the daemon wrote, so replies can be matched to what asked."""
        return []

    def eof(self) -> list[Reading]:
        """The link went down: a half frame left in the buffer is reported, not kept."""
        return []

    #: the protocol's own counters a technician should see (``tablectl devices``)
    STATS: tuple[str, ...] = ()

    def stats(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.STATS}


class SerialDefaults(msgspec.Struct, frozen=True):
    baudrate: int = 9600
    bytesize: int = 8
    parity: str = "N"
    stopbits: float = 1


#: a device's reply as ``device.reply`` journals it: ``command`` (what asked), ``text``, ``device``
ReplyData = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A technician's session with a device (``tablectl wheel NAME``), declared by its driver
    so tablectl knows no vendor: the command texts sent through the table (journaled), how
    long the replies may take, when enough came back, and what they mean."""

    help: str
    #: tablectl's arguments → the command texts; ValueError names a bad argument
    commands: Callable[[Sequence[str]], list[str]]
    #: seconds to wait for the replies unless ``--wait`` says
    wait: float
    #: the replies so far → enough; None: one reply for each command sent
    done: Callable[[list[ReplyData]], bool] | None = None
    #: the replies → why they need attention (exit 1), or None: all is well
    verdict: Callable[[list[ReplyData]], str | None] | None = None


@dataclass(frozen=True, slots=True)
class ResultLog:
    """A device's own log of results, read a page at a time through the table, so a game can
    compare it with the journal (``tablectl wheel reconcile``)."""

    #: the page number → the command text that asks for that page
    page_command: Callable[[int], str]
    #: a reply (its ``command`` and ``text``) → the page's results, newest first; None: no page
    page: Callable[[str, str], list[int] | None]
    #: a reply's text → why the device gives no page now (said to the technician), or None
    busy: Callable[[str], str | None]


class Driver(abc.ABC):
    """A device model: its options, its protocol and how the daemon talks to it."""

    name: ClassVar[str]
    transport: ClassVar[TransportKind] = "serial"
    Options: ClassVar[type[msgspec.Struct]] = NoOptions
    serial_defaults: ClassVar[SerialDefaults] = SerialDefaults()
    #: seconds without a frame before the device is ``stale`` (None: never).
    stale_after: ClassVar[float | None] = None
    #: the driver's maturity, as NUT lists it: experimental, stable.
    maturity: ClassVar[str] = "experimental"
    #: a technician's commands by name (``tablectl device NAME --list``, as ``upscmd -l``):
    #: name → (the command text sent, journaled as ``device.command``; what it does)
    named_commands: ClassVar[Mapping[str, tuple[str, str]]] = {}
    #: the named command that shakes the dice (``tablectl device shake``); None: no shaker
    shake_command: ClassVar[str | None] = None
    #: a technician's sessions by name (``tablectl wheel NAME``): the device's own diagnostics
    diagnostics: ClassVar[Mapping[str, Diagnostic]] = {}
    #: the device's own log of results (``tablectl wheel reconcile``); None: it keeps none
    result_log: ClassVar[ResultLog | None] = None
    #: the typed ``[devices.sim]`` of a driver that simulates itself (the GPIO panel), for
    #: one ``drivers/sim/`` does not list; None: ``drivers.sim.options_type`` says
    Sim: ClassVar[type[msgspec.Struct] | None] = None

    def __init__(self, options: msgspec.Struct) -> None:
        self.options = options

    @abc.abstractmethod
    def protocol(self) -> Protocol:
        """A fresh protocol for one connection (no state survives a reconnect)."""

    def on_connect(self) -> list[bytes]:
        """Bytes to send right after the port opens (identify, enable output)."""
        return []

    def probe_commands(self) -> list[bytes]:
        """What ``tablectl probe`` asks after identifying the device: a status, and a
        self-test where the protocol has a quick one."""
        return []

    def poll(self) -> tuple[float, bytes] | None:
        """``(interval, command)`` for devices that must be polled, else None."""
        return None

    def encode_command(self, text: str) -> bytes:
        """A technician's command (``device.command``) as the wire takes it: by default the
        text and CR LF. A binary protocol raises ValueError naming what it cannot encode,
        so the daemon refuses it before it is journaled."""
        return text.encode("ascii", "replace") + b"\r\n"

    def void_acknowledgement(self) -> bytes | None:
        """What the device must hear after the table voided what it reported (an event of
        the game's ``acknowledged`` types carrying ``acknowledge``); None: nothing."""
        return None

    def lacks(self, capability: str) -> str | None:
        """Why this device, with these options, cannot inform ``capability`` (a house rule
        the game ``needs`` it for, ``drivers.readings.BALL_REVOLUTIONS``), or None: it can,
        or it is no device that would (the config check refuses the rule's key then)."""
        return None

    def simulator(self, options: dict[str, Any]) -> Simulator:
        """A simulator speaking this protocol on a pty, for ``port = "sim"`` (``drivers/sim/``):
        a :class:`drivers.sim.base.Simulator`, whose ``resume`` the daemon calls at start."""
        from drivers.sim import simulator_for

        return simulator_for(self.name, self.options, options)


@typing.runtime_checkable
class UsbDriver(typing.Protocol):
    """A ``transport = "usb"`` driver also builds its transport from its own options (vid,
    pid, interface): ``backend`` is a pyusb backend (a simulator's), None for libusb."""

    def usb_transport(
        self, *, reconnect_max: float, clock: Callable[[], float], backend: Any = None
    ) -> Any: ...


@typing.runtime_checkable
class GpioDriver(typing.Protocol):
    """A ``transport = "gpio"`` driver is its own transport: ``panel`` returns its runtime,
    run like any transport (``run(sink)``, ``write``), with mock pins for ``port = "sim"``;
    it shows the lights it is told (``set_lights``) and has a simulated ``dealer`` or None."""

    def panel(
        self,
        submit: Callable[..., Any] | None,
        *,
        name: str,
        port: str,
        sim: Any,
        reconnect_max: float,
        clock: Callable[[], float],
    ) -> Any: ...


class DriverError(Exception):
    pass


def _load(ep: EntryPoint) -> type[Driver]:
    cls = ep.load()
    if not (isinstance(cls, type) and issubclass(cls, Driver)):
        raise DriverError(f"entry point {ep.name!r} ({ep.value}) is not a tabled Driver")
    return cls


def load_drivers() -> dict[str, type[Driver]]:
    """Every installed driver plugin by the name a user types in the config, each loaded."""
    found: dict[str, type[Driver]] = {}
    for ep in entry_points(group="tabled.drivers"):
        found[ep.name] = _load(ep)
    return found


#: each installed driver's entry point by name, replaced by its class once loaded; None: not read
_registry: dict[str, Any] | None = None


def driver_class(name: str) -> type[Driver]:
    """The driver a config names; only it is loaded (a daemon imports its own devices'
    drivers, not the GPIO panel's or the USB scanner's when it has none)."""
    global _registry
    if _registry is None:
        _registry = {ep.name: ep for ep in entry_points(group="tabled.drivers")}
    try:
        found = _registry[name]
    except KeyError:
        known = ", ".join(sorted(_registry)) or "none installed"
        raise DriverError(f"unknown driver {name!r} (installed: {known})") from None
    if isinstance(found, EntryPoint):
        found = _registry[name] = _load(found)
    return found  # type: ignore[no-any-return]


ReadingSink = Callable[[Reading], None]
