"""How the daemon opens one configured device: one small factory per transport kind.

A driver names its kind (``Driver.transport``: serial, usb, gpio); ``port = "sim"``
swaps the device for its simulator. :data:`FACTORIES` maps each (kind, simulated)
pair to the function that builds that device's transport, so ``daemon/runtime/app.py`` only
wires, and a new kind of transport is one function and one row here. The config
check asks :func:`transport_problem`, so a driver whose kind no factory opens is
refused when the config is loaded, naming the device and the kinds there are.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_args

from daemon.table.buttons import button_submit
from daemon.table.stack_light import follow as follow_light
from drivers.base import Driver, GpioDriver, TransportKind, UsbDriver
from drivers.serial import SerialSettings, SerialTransport

if TYPE_CHECKING:
    from daemon.runtime.config import DeviceConfig
    from daemon.runtime.devices import DeviceRunner
    from daemon.table import TableState
    from drivers.sim.base import Simulator


@dataclass(frozen=True, slots=True)
class Wiring:
    """What a factory may use of the daemon: nothing else reaches it."""

    submit: Callable[..., Any]  # the pipeline's: an Input in, a future out when asked
    state: Callable[[], TableState]  # the committed table state now
    #: the game's summary of the state now (``Game.summary``), for a simulator that resumes
    #: where the table is; None when the game has none
    summary: Callable[[], Mapping[str, Any]] | None
    listen: Callable[[Callable[[Sequence[Any]], None]], None]  # follow every commit's events
    spawn: Callable[[Coroutine[Any, Any, None], str], None]  # a task that runs until shutdown
    closing: Callable[[Callable[[], None]], None]  # called after the journal is closed
    mono: Callable[[], float]


#: builds one device's transport; may hang simulators, listeners and link hooks on the way
Factory = Callable[["DeviceConfig", Driver, "DeviceRunner", Wiring], Any]


class DeviceStartError(Exception):
    """A device the daemon cannot open the way its driver says (a config check missed it)."""


def _simulator(dc: DeviceConfig, driver: Driver, w: Wiring, link: Any = None) -> Simulator:
    """The driver's simulator (on ``link`` when it speaks over one), following the table."""
    sim = driver.simulator(dc.sim)
    if link is not None:
        sim.attach(link)  # before it resumes: a resumed simulator may have a frame due
    w.listen(sim.on_events)
    if w.summary is not None:
        sim.resume(w.summary())  # drivers.sim.base.Simulator: a no-op unless it resumes
    return sim


def serial_port(dc: DeviceConfig, driver: Driver, runner: DeviceRunner, w: Wiring) -> Any:
    """A serial port (a path, a pyserial URL, ``usb:VID:PID``), at the driver's line settings
    unless the config says otherwise."""
    return _serial(dc.port, dc, driver, w)


def _serial(port: str, dc: DeviceConfig, driver: Driver, w: Wiring) -> SerialTransport:
    d = driver.serial_defaults
    settings = SerialSettings(
        baudrate=dc.baudrate or d.baudrate,
        bytesize=dc.bytesize or d.bytesize,
        parity=dc.parity or d.parity,
        stopbits=dc.stopbits or d.stopbits,
    )
    return SerialTransport(port, settings, reconnect_max=dc.reconnect_max, clock=w.mono)


def serial_sim(dc: DeviceConfig, driver: Driver, runner: DeviceRunner, w: Wiring) -> Any:
    """The driver's simulator on a pty, opened like a real serial port."""
    from drivers.sim.pty import PtyLink

    link = PtyLink()
    sim = _simulator(dc, driver, w, link)
    w.closing(link.close)
    runner.on_link.append(lambda up: link.opened.set() if up else link.opened.clear())
    w.spawn(sim.run(), f"sim:{dc.name}")
    return _serial(link.path, dc, driver, w)


def usb_device(dc: DeviceConfig, driver: Driver, runner: DeviceRunner, w: Wiring) -> Any:
    """A USB interface found by the driver's options (vid, pid, serial) at every connect."""
    return _usb(dc, driver, w, None)


def usb_sim(dc: DeviceConfig, driver: Driver, runner: DeviceRunner, w: Wiring) -> Any:
    """No pty: the simulator is the transport's pyusb backend; it types only while the
    interface is held (``drivers/sim/hid_scanner.py``)."""
    sim = _simulator(dc, driver, w)
    w.closing(sim.close)
    runner.on_link.append(lambda up: sim.opened.set() if up else sim.opened.clear())
    w.spawn(sim.run(), f"sim:{dc.name}")
    return _usb(dc, driver, w, sim.backend)


def _usb(dc: DeviceConfig, driver: Driver, w: Wiring, backend: Any) -> Any:
    if not isinstance(driver, UsbDriver):
        raise DeviceStartError(f"{dc.name}: driver {driver.name!r} has no usb_transport()")
    return driver.usb_transport(reconnect_max=dc.reconnect_max, clock=w.mono, backend=backend)


def gpio_panel(dc: DeviceConfig, driver: Driver, runner: DeviceRunner, w: Wiring) -> Any:
    """The panel is its own transport (mock pins for ``port = "sim"``): buttons submit
    commands, the shoe switch reads through the runner, the light shows what
    ``daemon/table/stack_light.py`` makes of each commit."""
    if not isinstance(driver, GpioDriver):
        raise DeviceStartError(f"{dc.name}: driver {driver.name!r} has no panel()")
    panel = driver.panel(
        button_submit(w.submit, dc.name),
        name=dc.name,
        port=dc.port,
        sim=dc.sim,
        reconnect_max=dc.reconnect_max,
        clock=w.mono,
    )
    follow_light(panel, w.state, w.listen)
    if panel.dealer is not None:  # port = "sim": the simulated dealer follows the table
        w.listen(panel.dealer.on_events)
    return panel


#: (transport kind, ``port = "sim"``) → the factory that opens such a device
FACTORIES: dict[tuple[str, bool], Factory] = {
    ("serial", False): serial_port,
    ("serial", True): serial_sim,
    ("usb", False): usb_device,
    ("usb", True): usb_sim,
    ("gpio", False): gpio_panel,
    ("gpio", True): gpio_panel,
}

#: the protocol a driver of a kind meets besides :class:`~drivers.base.Driver`'s own, and
#: its method (:class:`~drivers.base.UsbDriver`, :class:`~drivers.base.GpioDriver`)
NEEDS: dict[str, tuple[type, str]] = {
    "usb": (UsbDriver, "usb_transport"),
    "gpio": (GpioDriver, "panel"),
}

#: every kind a driver may name (``drivers.base.TransportKind``)
KINDS: tuple[str, ...] = get_args(TransportKind)


def transport_problem(driver: type[Driver] | Driver, port: str) -> str | None:
    """Why the daemon could not open this driver's device on ``port``, or None (the config
    check asks, so the refusal comes before the daemon starts)."""
    kind = driver.transport
    if (kind, False) not in FACTORIES:
        known = ", ".join(sorted({k for k, _ in FACTORIES}))
        return (
            f"driver {driver.name!r} uses transport {kind!r}, which tabled cannot open "
            f"(transports: {known})"
        )
    if (kind, port == "sim") not in FACTORIES:
        return f"driver {driver.name!r}: tabled has no simulated {kind} transport"
    needs = NEEDS.get(kind)
    cls = driver if isinstance(driver, type) else type(driver)
    if needs is not None and not issubclass(cls, needs[0]):
        return f"driver {driver.name!r} uses transport {kind!r} but has no {needs[1]}()"
    return None


def start_device(dc: DeviceConfig, driver: Driver, runner: DeviceRunner, w: Wiring) -> Any:
    """The transport of one device, built by its kind's factory."""
    problem = transport_problem(driver, dc.port)
    if problem is not None:
        raise DeviceStartError(f"{dc.name}: {problem}")
    return FACTORIES[(driver.transport, dc.port == "sim")](dc, driver, runner, w)
