"""The USB transport: moves reports between one USB interface and a sink, never parses them.

It has the shape of :class:`drivers.serial.SerialTransport` (``run(sink)``
until cancelled, ``write()``, ``connected``, ``close()``, ``reconnects``), so
the daemon runs both the same way. ``run()`` finds the device by vendor and
product id (and serial number, when two alike are plugged in), takes its
interface from the kernel, reads it, and on any loss lets it go, tells the
sink and finds it again with capped exponential backoff. A replugged device
re-enumerates at a new address; it is found again because it is looked up by
identity at every attempt, never by address.

Facts this is built on, and where they come from:

* pyusb's blocking ``read()`` raises ``USBTimeoutError`` when nothing came
  within the timeout, ``USBError`` with errno ENODEV after an unplug, and
  EACCES ("Access denied (insufficient permissions)") when the device node is
  not open to us (pyusb 1.3.1 ``usb/backend/libusb1.py``, its error table).
* A kernel driver (usbhid for a keyboard-wedge scanner) holds the interface
  until detached; claiming it before that fails with EBUSY. Detach, claim,
  and on the way out release, reattach and dispose
  (``docs/testing.md``, field failure #5; pyusb issues
  #357, #315).
* Permission problems are the commonest field failure (field failure #3;
  pyusb issue #237): the reason names the udev rule that fixes it.
* Reads block, so one thread per device reads with a timeout and hands each
  report to the loop with ``call_soon_threadsafe``. A timeout is silence,
  not an error; it only bounds how long closing waits for the thread
  (``docs/testing.md``, field failure #12).
* libusb-1.0 is a system library that a fresh Debian image lacks
  (``docs/testing.md``): pyusb then raises ``NoBackendError``, reported
  here with the package to install. Tests pass their own backend
  (``usb.backend.IBackend``), which needs no libusb at all.

Every sink callback runs on the loop thread. An exception raised by the sink
is a bug in the daemon, not a device problem: it ends ``run()``.

Why long: the pyusb and kernel facts above are each a few lines of error mapping or
detach/claim/release/reattach/dispose, and each belongs beside the one step of the
transport's life that needs it; the reader thread and the loop share one link object.
"""

from __future__ import annotations

import asyncio
import errno
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
import usb.core
import usb.util

from drivers.serial import TransportSink
from drivers.transport import Reconnecting, Unavailable

__all__ = ["UDEV_RULES", "DeviceUnavailable", "UsbTransport"]

#: the udev rules file shipped with tabled that opens USB devices to the service.
#: where ``tabled-setup install`` puts the shipped udev rules
UDEV_RULES = "/etc/udev/rules.d/99-tabled.rules"
#: a connection that lasted this long (seconds) was healthy: backoff starts over.
#: what closing waits for the reader thread beyond one read timeout.
JOIN_MARGIN = 2.0

_NO_LIBUSB = "libusb-1.0 is not installed: apt install libusb-1.0-0"
# libusb error codes, as pyusb passes them on (usb/backend/libusb1.py).
_LIBUSB_ACCESS = -3
_LIBUSB_NO_DEVICE = -4
_LIBUSB_BUSY = -6


class DeviceUnavailable(Unavailable):
    """The device can't be used right now; the message is the reason a technician reads."""


def _code(exc: BaseException) -> int | None:
    return getattr(exc, "errno", None)


def _access_denied(exc: BaseException) -> bool:
    return (
        _code(exc) in (errno.EACCES, errno.EPERM)
        or getattr(exc, "backend_error_code", None) == _LIBUSB_ACCESS
        or "access denied" in str(exc).lower()
    )


def _gone(exc: BaseException) -> bool:
    return (
        _code(exc) == errno.ENODEV or getattr(exc, "backend_error_code", None) == _LIBUSB_NO_DEVICE
    )


def _busy(exc: BaseException) -> bool:
    return _code(exc) == errno.EBUSY or getattr(exc, "backend_error_code", None) == _LIBUSB_BUSY


def _text(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _node(dev: Any) -> str:
    """The device node a technician can look at (and whose mode matters)."""
    bus, address = getattr(dev, "bus", None), getattr(dev, "address", None)
    if bus is None or address is None:
        return "an unknown bus address"
    return f"/dev/bus/usb/{bus:03d}/{address:03d}"


def _kernel_driver_name(dev: Any, config: int, interface: int) -> str | None:
    """Which kernel driver holds the interface, from sysfs; None where that can't be told."""
    try:
        ports = ".".join(str(p) for p in dev.port_numbers)
        link = f"/sys/bus/usb/devices/{dev.bus}-{ports}:{config}.{interface}/driver"
        return os.path.basename(os.readlink(link))
    except (OSError, TypeError, ValueError, AttributeError):
        return None


def _quiet_dispose(dev: Any) -> None:
    try:
        usb.util.dispose_resources(dev)
    except usb.core.USBError:  # an unplugged device may refuse; it is being dropped anyway
        pass


@dataclass(slots=True)
class _Opened:
    """One claimed interface, ready to read."""

    dev: Any
    interface: int
    endpoint: int
    size: int
    node: str
    #: the name of the kernel driver we detached (or "kernel driver"), None if none was bound.
    detached: str | None


class _Link:
    """One connection. A fresh one per (re)connect, so no state survives a loss."""

    def __init__(self, owner: UsbTransport, opened: _Opened, sink: TransportSink) -> None:
        self.owner = owner
        self.opened = opened
        self.sink = sink
        self.where = f"{owner.spec} at {opened.node}"
        self.loop = asyncio.get_running_loop()
        #: resolves with the loss reason, None after close(), or the sink's exception.
        self.lost: asyncio.Future[str | None] = self.loop.create_future()
        self.got_data = False
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._read_loop, name=f"usb-read {owner.spec}", daemon=True
        )

    @property
    def alive(self) -> bool:
        return not self.lost.done()

    def start(self) -> None:
        self._thread.start()

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self._stop.set()

    def _read_loop(self) -> None:
        o = self.opened
        timeout = self.owner.read_timeout_ms
        clock = self.owner._clock
        while not self._stop.is_set():
            try:
                data = o.dev.read(o.endpoint, o.size, timeout)
            except usb.core.USBTimeoutError:
                continue  # nothing scanned: silence, not an error
            except Exception as exc:  # USBError, or pyusb's ValueError on a vanished endpoint
                if not self._stop.is_set():
                    self._post(self._fail, self._read_failure(exc))
                return
            mono = clock()
            if len(data):
                self._post(self._deliver, bytes(data), mono)

    def _read_failure(self, exc: BaseException) -> str:
        if _gone(exc):
            return f"USB device unplugged: {self.where} ({_text(exc)})"
        return f"USB read failed: {self.where} ({_text(exc)})"

    def _fail(self, reason: str) -> None:
        if not self.lost.done():
            self.lost.set_result(reason)

    def _deliver(self, data: bytes, mono: float) -> None:
        if not self.alive:
            return
        self.got_data = True
        try:
            self.sink.on_data(data, mono)
        except Exception as exc:
            if not self.lost.done():
                self.lost.set_exception(exc)

    async def aclose(self) -> None:
        """Stop the reader (within one read timeout), then give the interface back."""
        if not self.lost.done():
            self.lost.set_result(None)
        self._stop.set()
        join = self.owner.read_timeout_ms / 1000 + JOIN_MARGIN

        def finish() -> None:
            if self._thread.is_alive():
                self._thread.join(timeout=join)
            if self._thread.is_alive():
                self.owner._log.warning("USB reader thread did not stop", timeout=join)
            self.owner._release(self.opened)

        await asyncio.shield(asyncio.to_thread(finish))


class UsbTransport(Reconnecting):
    """One USB interface, kept claimed: re-found by identity with capped exponential backoff."""

    def __init__(
        self,
        vendor_id: int,
        product_id: int,
        serial: str | None = None,
        *,
        interface: int = 0,
        endpoint: int | None = None,
        read_timeout_ms: int = 500,
        boot_protocol: bool = False,
        reconnect_min: float = 0.1,
        reconnect_max: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        backend: Any = None,
    ) -> None:
        if read_timeout_ms <= 0:  # libusb takes 0 as "wait forever": close would hang
            raise ValueError(f"read_timeout_ms must be > 0, got {read_timeout_ms}")
        self.vendor_id = vendor_id
        self.product_id = product_id
        self.serial = serial
        self.interface = interface
        self.endpoint = endpoint
        self.read_timeout_ms = read_timeout_ms
        #: switch a boot-capable HID interface to boot reports after claiming it.
        self.boot_protocol = boot_protocol
        self.ident = f"{vendor_id:04x}:{product_id:04x}"
        #: how reasons and logs name the device: ``usb:VID:PID[:SERIAL]``.
        self.spec = f"usb:{self.ident}" + (f":{serial}" if serial else "")
        super().__init__(
            reconnect_min=reconnect_min,
            reconnect_max=reconnect_max,
            clock=clock,
            log=structlog.get_logger(__name__).bind(usb=self.spec),
        )
        self._backend = backend

    def write(self, data: bytes) -> bool:
        """Always False: this transport only reads (a keyboard-wedge scanner takes no
        output on its interrupt endpoint). It exists so the daemon treats transports alike."""
        return False

    noun = "USB device"

    def _info(self, link: _Link) -> dict[str, Any]:
        o = link.opened
        return {
            "port": o.node,
            "spec": self.spec,
            "interface": o.interface,
            "endpoint": o.endpoint,
            "kernel_driver_detached": o.detached,
        }

    async def _connect(self, sink: TransportSink) -> _Link:
        """Open in a thread (enumeration and claiming block). If cancelled meanwhile,
        the interface is given back as soon as the open ends."""
        fut = asyncio.get_running_loop().run_in_executor(None, self._open)
        try:
            opened = await asyncio.shield(fut)
        except asyncio.CancelledError:

            def drop(f: asyncio.Future[_Opened]) -> None:
                if not f.cancelled() and f.exception() is None:
                    threading.Thread(target=self._release, args=(f.result(),)).start()

            fut.add_done_callback(drop)
            raise
        return _Link(self, opened, sink)

    # -- blocking work, run in threads ------------------------------------------------------

    def _find(self) -> Any:
        try:
            found = list(
                usb.core.find(
                    find_all=True,
                    backend=self._backend,
                    idVendor=self.vendor_id,
                    idProduct=self.product_id,
                )
            )
        except usb.core.NoBackendError:
            raise DeviceUnavailable(_NO_LIBUSB) from None
        except usb.core.USBError as exc:
            raise DeviceUnavailable(f"cannot list USB devices: {_text(exc)}") from None
        if not found:
            raise DeviceUnavailable(f"no USB device {self.spec} is present")
        if self.serial is None:
            if len(found) > 1:
                nodes = ", ".join(_node(d) for d in found)
                raise DeviceUnavailable(
                    f"{len(found)} USB devices have id {self.ident} ({nodes}); "
                    "say which one with the serial option"
                )
            return found[0]
        seen: list[str] = []
        for dev in found:
            try:
                serial = dev.serial_number
            except usb.core.USBError as exc:
                if _access_denied(exc):
                    raise DeviceUnavailable(self._access_reason(dev)) from None
                seen.append(f"{_node(dev)}: unreadable ({_text(exc)})")
                continue
            except ValueError as exc:  # pyusb: "no langid (permission issue, …)"
                raise DeviceUnavailable(
                    f"cannot read the serial number of USB device {self.ident} at "
                    f"{_node(dev)} ({exc}); {self._udev_hint()}"
                ) from None
            if serial is not None and serial.casefold() == self.serial.casefold():
                for other in found:
                    if other is not dev:  # reading a serial number opened it
                        _quiet_dispose(other)
                return dev
            seen.append(f"{_node(dev)}: serial {serial or 'none'}")
        for dev in found:
            _quiet_dispose(dev)
        raise DeviceUnavailable(
            f"no USB device {self.spec} is present (id {self.ident} found with {'; '.join(seen)})"
        )

    def _open(self) -> _Opened:
        dev = self._find()
        node = _node(dev)
        detached: str | None = None
        try:
            try:
                cfg = dev.get_active_configuration()
            except usb.core.USBError as exc:
                if _access_denied(exc) or _gone(exc):
                    raise
                cfg = None  # unconfigured: only then set it, or other interfaces are reset
            if cfg is None:
                dev.set_configuration()
                cfg = dev.get_active_configuration()
            intf = usb.util.find_descriptor(
                cfg, bInterfaceNumber=self.interface, bAlternateSetting=0
            )
            if intf is None:
                have = sorted({i.bInterfaceNumber for i in cfg})
                raise DeviceUnavailable(
                    f"USB device {self.spec} at {node} has no interface {self.interface} "
                    f"(it has {', '.join(map(str, have)) or 'none'})"
                )
            ep = self._endpoint(intf, node)
            try:
                active = dev.is_kernel_driver_active(self.interface)
            except NotImplementedError:  # backends without kernel drivers (not Linux)
                active = False
            if active:
                name = _kernel_driver_name(dev, cfg.bConfigurationValue, self.interface)
                dev.detach_kernel_driver(self.interface)
                detached = name or "kernel driver"
                self._log.info(
                    "kernel driver detached from the USB interface",
                    driver=detached,
                    interface=self.interface,
                    node=node,
                    hint=f"a udev rule can keep it unbound: {UDEV_RULES}",
                )
            usb.util.claim_interface(dev, self.interface)
            if self.boot_protocol:
                self._set_boot_protocol(dev, intf)
        except DeviceUnavailable:
            self._release(_Opened(dev, self.interface, 0, 0, node, detached), claimed=False)
            raise
        except (usb.core.USBError, ValueError) as exc:
            self._release(_Opened(dev, self.interface, 0, 0, node, detached), claimed=False)
            raise DeviceUnavailable(self._open_failure(dev, exc)) from None
        return _Opened(
            dev, self.interface, ep.bEndpointAddress, ep.wMaxPacketSize or 8, node, detached
        )

    def _set_boot_protocol(self, dev: Any, intf: Any) -> None:
        """Ask a boot-capable HID interface for boot reports (HID 1.11 §7.2.6 SET_PROTOCOL):
        8-byte keyboard reports without a report id, whatever its report descriptor says.
        A device that refuses (a stall) keeps its own reports; only a lost device is an error."""
        if (intf.bInterfaceClass, intf.bInterfaceSubClass) != (3, 1):
            return
        try:
            dev.ctrl_transfer(0x21, 0x0B, 0, self.interface)
        except usb.core.USBError as exc:
            if _gone(exc) or _access_denied(exc):
                raise
            self._log.info(
                "device refused boot protocol; reading its own reports", reason=_text(exc)
            )

    def _endpoint(self, intf: Any, node: str) -> Any:
        def is_in(e: Any) -> bool:
            return usb.util.endpoint_direction(e.bEndpointAddress) == usb.util.ENDPOINT_IN

        if self.endpoint is not None:
            ep = usb.util.find_descriptor(intf, bEndpointAddress=self.endpoint)
            if ep is None or not is_in(ep):
                raise DeviceUnavailable(
                    f"interface {self.interface} of USB device {self.spec} at {node} has no "
                    f"IN endpoint 0x{self.endpoint:02x}"
                )
            return ep
        ep = usb.util.find_descriptor(
            intf,
            custom_match=lambda e: (
                is_in(e) and usb.util.endpoint_type(e.bmAttributes) == usb.util.ENDPOINT_TYPE_INTR
            ),
        )
        if ep is None:
            raise DeviceUnavailable(
                f"interface {self.interface} of USB device {self.spec} at {node} has no "
                "interrupt IN endpoint (is it the keyboard interface?)"
            )
        return ep

    def _open_failure(self, dev: Any, exc: BaseException) -> str:
        node = _node(dev)
        if _access_denied(exc):
            return self._access_reason(dev)
        if _gone(exc):
            return f"USB device {self.spec} went away while opening it ({node})"
        if _busy(exc):
            return (
                f"interface {self.interface} of USB device {self.spec} at {node} is busy: "
                "another program holds it, or a kernel driver that could not be detached"
            )
        return f"cannot open USB device {self.spec} at {node}: {_text(exc)}"

    def _udev_hint(self) -> str:
        return (
            f"install the udev rules (`tabled-setup install` writes {UDEV_RULES}), "
            f'set ATTR{{idVendor}}=="{self.vendor_id:04x}", '
            f'ATTR{{idProduct}}=="{self.product_id:04x}" in its USB HID scanner rule, run '
            "`udevadm control --reload && udevadm trigger` (or replug the device), and make "
            "sure the service user is in the plugdev group"
        )

    def _access_reason(self, dev: Any) -> str:
        return (
            f"access denied to USB device {self.spec} at {_node(dev)} (no permission to "
            f"open it); {self._udev_hint()}"
        )

    def _release(self, o: _Opened, *, claimed: bool = True) -> None:
        """Give the interface back: release, reattach what we detached, dispose.

        Every step may fail on an unplugged device; each failure is logged and
        the next step still runs, so nothing stays held.
        """
        dev = o.dev
        if claimed:
            try:
                usb.util.release_interface(dev, o.interface)
            except usb.core.USBError as exc:
                self._log.debug("releasing the USB interface failed", reason=_text(exc))
        if o.detached is not None:
            try:
                dev.attach_kernel_driver(o.interface)
                self._log.info("kernel driver reattached", driver=o.detached, node=o.node)
            except usb.core.USBError as exc:
                log = self._log.debug if _gone(exc) else self._log.warning
                log("kernel driver not reattached", driver=o.detached, reason=_text(exc))
            except NotImplementedError:
                pass
        try:
            usb.util.dispose_resources(dev)
        except usb.core.USBError as exc:
            self._log.debug("disposing of the USB device failed", reason=_text(exc))
