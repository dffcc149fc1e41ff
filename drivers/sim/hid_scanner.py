"""A simulated keyboard-wedge card scanner behind a fake pyusb backend, for ``port = "sim"``.

USB does not go over a pty, so the scanner is simulated one level lower than
the serial devices: :class:`ScannerBackend` is a pyusb backend
(``usb.backend.IBackend``) that shows one HID boot keyboard, as libusb would.
The daemon's real :class:`drivers.usb.UsbTransport` finds it with
``usb.core.find``, detaches its (simulated) kernel driver, claims its
interface, asks for boot reports and reads 8-byte reports from its interrupt
IN endpoint in its reader thread, exactly as it does with a real scanner
through libusb.

The dealer drawing the cards is :class:`drivers.sim.shoe.ShoeSimulator`: the
same seeded shoe, the same way of following the table's events (burn on
``shoe.started`` until ``shoe.burn``, deal on ``betting.closed`` until
``hand.result``) and the same injected dealer errors. Only the output
differs: where the shoe writes a line to a pty, the scanner types the code
as key press and release reports and then Enter. A byte no key types (the
shoe's "garbage" error) is typed as a key the driver does not map, so the
code is dropped whole, as a misread barcode typing junk would be.

What the backend reproduces, and where each rule comes from:

* descriptors of a low-speed HID boot keyboard (*HID 1.11* appendix B.1 and
  E.6): one configuration, one interface (class 3, subclass 1, protocol 1)
  numbered as configured, one interrupt IN endpoint of 8 bytes, the 63-byte
  boot keyboard report descriptor, string descriptors (manufacturer,
  product and, when configured, the serial number);
* libusb's errors as pyusb raises them (``usb/backend/libusb1.py``):
  ``USBTimeoutError(…, -7, ETIMEDOUT)`` when a read gets nothing within its
  timeout, ``USBError(…, -4, ENODEV)`` on everything after an unplug,
  ``-6 EBUSY`` for claiming an interface a kernel driver or another handle
  holds, ``-5 ENOENT`` for an interface, endpoint or driver that isn't
  there, ``-9 EPIPE`` (a stall) for a control request the device doesn't
  know, ``-8 EOVERFLOW`` for a buffer smaller than the report;
* the kernel: usbhid binds the keyboard interface when it is plugged in,
  closing a handle releases what it claimed, and keys typed while no
  program holds the interface go to the kernel's keyboard, not to us
  (counted in :attr:`ScannerBackend.reports_lost`);
* a read blocks the caller's thread on a :class:`threading.Condition` until
  a report is queued, the device is unplugged or the timeout passes: no
  polling loop;
* an unplug fails every handle and wakes a blocked read at once; a replug
  is a new enumeration at a new bus address, with the kernel driver bound
  again and nothing claimed.

Not reproduced: the endpoint's polling interval (queued reports are handed
out as fast as they are read), usbfs's auto-claim on I/O, partial transfers,
LED output reports changing anything, suspend.

Why long: pyusb's backend interface (``IBackend``) is wide — enumeration, descriptors,
open and claim, control and interrupt transfers, kernel-driver calls — and usb.core calls
all of it to find, claim and read one keyboard; each method is short and follows one of
the rules above, and they share one simulated device's state.
"""

from __future__ import annotations

import array
import asyncio
import errno
import re
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from types import SimpleNamespace
from typing import Any, Final

import structlog
import usb.backend
import usb.core

from drivers.hid_scanner import REPORT_SIZE, HidScannerOptions, key_char
from drivers.sim.shoe import Options, ShoeSimulator

__all__ = ["BOOT_KEYBOARD_REPORT_DESCRIPTOR", "ScannerBackend", "ScannerSimulator", "key_reports"]

log = structlog.get_logger("sim.hid_scanner")

#: HID 1.11 appendix E.6: the boot keyboard's report descriptor (63 bytes).
BOOT_KEYBOARD_REPORT_DESCRIPTOR: Final = bytes(
    [
        0x05, 0x01, 0x09, 0x06, 0xA1, 0x01,  # Generic Desktop, Keyboard, Collection (Application)
        0x05, 0x07, 0x19, 0xE0, 0x29, 0xE7,  # Key Codes, usages 0xE0–0xE7 (modifiers)
        0x15, 0x00, 0x25, 0x01, 0x75, 0x01, 0x95, 0x08, 0x81, 0x02,  # 8 bits: modifier byte
        0x95, 0x01, 0x75, 0x08, 0x81, 0x01,  # 1 byte constant: reserved
        0x95, 0x05, 0x75, 0x01, 0x05, 0x08, 0x19, 0x01, 0x29, 0x05, 0x91, 0x02,  # 5 LEDs out
        0x95, 0x01, 0x75, 0x03, 0x91, 0x01,  # 3 bits LED padding
        0x95, 0x06, 0x75, 0x08, 0x15, 0x00, 0x25, 0x65,  # 6 bytes, 0–101
        0x05, 0x07, 0x19, 0x00, 0x29, 0x65, 0x81, 0x00,  # Key Codes, array: the key slots
        0xC0,  # End Collection
    ]
)  # fmt: skip

#: the HID class descriptor that follows the interface descriptor (HID 1.11 §6.2.1).
HID_DESCRIPTOR: Final = bytes(
    [9, 0x21, 0x11, 0x01, 0x00, 0x01, 0x22, len(BOOT_KEYBOARD_REPORT_DESCRIPTOR), 0x00]
)

LEFT_SHIFT: Final = 0x02
KEY_ENTER: Final = 0x28
RELEASE: Final = bytes(REPORT_SIZE)
#: keys the driver does not map ([hut] 0x2D '-' … 0x38 '/'), typed for a byte no key types.
_UNMAPPED: Final = range(0x2D, 0x39)

# libusb error codes and how pyusb raises them (usb/backend/libusb1.py: its strerror and errno tables).
_IO, _NO_DEVICE, _NOT_FOUND, _BUSY, _TIMEOUT, _OVERFLOW, _PIPE = -1, -4, -5, -6, -7, -8, -9
_LIBUSB: Final = {
    _IO: ("Input/output error", errno.EIO),
    _NO_DEVICE: ("No such device (it may have been disconnected)", errno.ENODEV),
    _NOT_FOUND: ("Entity not found", errno.ENOENT),
    _BUSY: ("Resource busy", errno.EBUSY),
    _TIMEOUT: ("Operation timed out", errno.ETIMEDOUT),
    _OVERFLOW: ("Overflow", errno.EOVERFLOW),
    _PIPE: ("Pipe error", errno.EPIPE),
}


def _error(code: int) -> usb.core.USBError:
    text, err = _LIBUSB[code]
    cls = usb.core.USBTimeoutError if code == _TIMEOUT else usb.core.USBError
    return cls(text, code, err)


def _keymap() -> dict[str, tuple[int, bool]]:
    """Character → (usage, shift), the inverse of the driver's own US key table."""
    out: dict[str, tuple[int, bool]] = {}
    for usage in range(0x04, 0x28):
        for shift in (False, True):
            ch = key_char(usage, shift)
            if ch is not None:
                out.setdefault(ch, (usage, shift))
    return out


KEYS: Final = _keymap()


def _report(usage: int = 0, modifiers: int = 0) -> bytes:
    return bytes([modifiers, 0, usage, 0, 0, 0, 0, 0])


def key_reports(code: bytes) -> list[bytes]:
    """The boot keyboard reports a scanner sends for one code: every key pressed
    (with Shift in the same report when it needs it) and released, then Enter."""
    out: list[bytes] = []
    for b in code:
        usage, shift = KEYS.get(chr(b), (_UNMAPPED[b % len(_UNMAPPED)], False))
        out += [_report(usage, LEFT_SHIFT if shift else 0), RELEASE]
    out += [_report(KEY_ENTER), RELEASE]
    return out


class _Enumeration:
    """One appearance of the scanner on the bus: what pyusb calls ``dev`` for this backend."""

    __slots__ = ("address", "present")

    def __init__(self, address: int) -> None:
        self.address = address
        self.present = True

    def __repr__(self) -> str:
        return f"<simulated scanner at address {self.address}{'' if self.present else ', gone'}>"


class _Handle:
    """An open device handle (``libusb_device_handle``)."""

    __slots__ = ("dev", "open")

    def __init__(self, dev: _Enumeration) -> None:
        self.dev = dev
        self.open = True


class ScannerBackend(usb.backend.IBackend):
    """One simulated USB HID boot keyboard (a keyboard-wedge scanner), as libusb shows it.

    The device side (:meth:`type_reports`, :meth:`unplug`, :meth:`replug`) is
    called from the simulator's asyncio loop; the backend side (the
    ``IBackend`` methods) from pyusb in the transport's threads. Every piece
    of state is guarded by one condition, which a blocked read waits on.
    """

    def __init__(
        self,
        vendor_id: int,
        product_id: int,
        serial: str | None = None,
        *,
        interface: int = 0,
        endpoint: int = 0x81,
        bus: int = 1,
        address: int = 7,
        manufacturer: str = "tabled",
        product: str = "Simulated HID card scanner",
    ) -> None:
        super().__init__()
        if not 0x81 <= endpoint <= 0x8F:
            raise ValueError(f"endpoint 0x{endpoint:02x} is not an IN endpoint address")
        if not 2 <= address <= 127:
            raise ValueError(f"USB address {address} is out of range 2..127")
        self.vendor_id = vendor_id
        self.product_id = product_id
        self.serial = serial
        self.interface = interface
        self.endpoint = endpoint
        self.bus = bus
        self.manufacturer = manufacturer
        self.product = product
        self._cond = threading.Condition()
        self._dev: _Enumeration | None = _Enumeration(address)
        self._address = address
        self._queue: deque[bytes] = deque()
        self._claimed_by: _Handle | None = None
        # the device's state, as the kernel and the device itself hold it after a plug-in
        self.kernel_driver_bound = True  # usbhid binds a boot keyboard
        self.configuration = 1  # the kernel configures a new device
        self.protocol = 1  # HID 1.11 §7.2.6: a device comes up in report protocol
        self.idle = 125  # HID 1.11 §7.2.4: 500 ms, the keyboard default, in 4 ms units
        self.leds = 0
        #: bookkeeping: handles open now, and every operation by name
        self.open_handles = 0
        self.calls: deque[str] = deque(maxlen=200)
        self.enumerations = 1
        #: reports typed while no program held the interface (they went to the kernel).
        self.reports_lost = 0
        #: reports handed out by ``intr_read``.
        self.reports_read = 0

    # -- the device side ----------------------------------------------------------------------

    @property
    def plugged(self) -> bool:
        return self._dev is not None

    @property
    def address(self) -> int:
        """The bus address of the current (or last) enumeration."""
        return self._address

    @property
    def node(self) -> str:
        return f"/dev/bus/usb/{self.bus:03d}/{self._address:03d}"

    @property
    def claimed(self) -> bool:
        """A program holds the keyboard interface (it reads what is typed)."""
        return self._claimed_by is not None

    def type_reports(self, reports: Iterable[bytes]) -> bool:
        """Queue reports on the interrupt endpoint. A key typed while unplugged goes
        nowhere, and while no program holds the interface it goes to the kernel's
        keyboard: both are dropped and counted. True if they were queued."""
        reports = list(reports)
        with self._cond:
            if self._dev is None or self._claimed_by is None:
                self.reports_lost += len(reports)
                return False
            self._queue.extend(reports)
            self._cond.notify_all()
        return True

    def unplug(self) -> None:
        """Pull the cable: every handle fails with ENODEV from now on, a blocked read
        at once; reports not read yet are lost."""
        with self._cond:
            if self._dev is None:
                return
            self._dev.present = False
            self._dev = None
            self._queue.clear()
            self._claimed_by = None
            self.kernel_driver_bound = False
            self.calls.append("unplug")
            self._cond.notify_all()

    def replug(self) -> None:
        """Plug in again (unplugging first if needed): a new enumeration at the next
        free bus address, configured, with the kernel's driver bound and nothing claimed."""
        with self._cond:
            if self._dev is not None:
                self.unplug()
            self._address = self._address + 1 if self._address < 127 else 2
            self._dev = _Enumeration(self._address)
            self.enumerations += 1
            self.kernel_driver_bound = True
            self.configuration = 1
            self.protocol = 1
            self.idle = 125
            self.leds = 0
            self.calls.append(f"plug {self._address}")
            self._cond.notify_all()

    # -- helpers, called with the lock held -------------------------------------------------------

    def _live(self, h: _Handle) -> None:
        if not h.open:
            raise _error(_IO)  # libusb would use freed memory; a clean error instead
        if not h.dev.present:
            raise _error(_NO_DEVICE)

    def _check_interface(self, intf: int) -> None:
        if intf != self.interface or self.configuration == 0:
            raise _error(_NOT_FOUND)

    # -- IBackend: enumeration and descriptors ----------------------------------------------------

    def enumerate_devices(self) -> Iterator[_Enumeration]:
        with self._cond:
            return iter([self._dev] if self._dev is not None else [])

    def get_parent(self, dev: _Enumeration) -> None:
        return None  # the root hub is not simulated

    def get_device_descriptor(self, dev: _Enumeration) -> Any:
        return SimpleNamespace(
            bLength=18,
            bDescriptorType=1,
            bcdUSB=0x0200,
            bDeviceClass=0,  # the class is per interface
            bDeviceSubClass=0,
            bDeviceProtocol=0,
            bMaxPacketSize0=8,  # low speed
            idVendor=self.vendor_id,
            idProduct=self.product_id,
            bcdDevice=0x0100,
            iManufacturer=1,
            iProduct=2,
            iSerialNumber=3 if self.serial else 0,
            bNumConfigurations=1,
            address=dev.address,
            bus=self.bus,
            port_number=None,  # no sysfs path to look the kernel driver up by
            port_numbers=None,
            speed=1,  # LIBUSB_SPEED_LOW, as keyboards are
        )

    def get_configuration_descriptor(self, dev: _Enumeration, config: int) -> Any:
        if config != 0:
            raise IndexError(f"configuration index {config} out of range")
        return SimpleNamespace(
            bLength=9,
            bDescriptorType=2,
            wTotalLength=9 + 9 + len(HID_DESCRIPTOR) + 7,
            bNumInterfaces=1,
            bConfigurationValue=1,
            iConfiguration=0,
            bmAttributes=0xA0,  # bus powered, remote wakeup
            bMaxPower=50,  # 100 mA
            extra_descriptors=[],
        )

    def get_interface_descriptor(self, dev: _Enumeration, intf: int, alt: int, config: int) -> Any:
        if (intf, alt, config) != (0, 0, 0):  # indices, as libusb1 takes them
            raise IndexError(f"interface index {intf}, alternate {alt}, configuration {config}")
        return SimpleNamespace(
            bLength=9,
            bDescriptorType=4,
            bInterfaceNumber=self.interface,
            bAlternateSetting=0,
            bNumEndpoints=1,
            bInterfaceClass=3,  # HID
            bInterfaceSubClass=1,  # boot interface
            bInterfaceProtocol=1,  # keyboard
            iInterface=0,
            extra_descriptors=list(HID_DESCRIPTOR),
        )

    def get_endpoint_descriptor(
        self, dev: _Enumeration, ep: int, intf: int, alt: int, config: int
    ) -> Any:
        if (ep, intf, alt, config) != (0, 0, 0, 0):
            raise IndexError(f"endpoint index {ep} out of range")
        return SimpleNamespace(
            bLength=7,
            bDescriptorType=5,
            bEndpointAddress=self.endpoint,
            bmAttributes=0x03,  # interrupt
            wMaxPacketSize=REPORT_SIZE,
            bInterval=10,
            bRefresh=0,
            bSynchAddress=0,
            extra_descriptors=[],
        )

    def _descriptor_bytes(self, kind: int, index: int, dev: _Enumeration) -> bytes:
        """GET_DESCRIPTOR's answer, as the device sends it over endpoint 0."""
        if kind == 1 and index == 0:
            d = self.get_device_descriptor(dev)
            return (
                bytes([18, 1, 0x00, 0x02, 0, 0, 0, 8])
                + self.vendor_id.to_bytes(2, "little")
                + self.product_id.to_bytes(2, "little")
                + bytes([0x00, 0x01, 1, 2, d.iSerialNumber, 1])
            )
        if kind == 2 and index == 0:
            total = 9 + 9 + len(HID_DESCRIPTOR) + 7
            return (
                bytes([9, 2, total & 0xFF, total >> 8, 1, 1, 0, 0xA0, 50])
                + bytes([9, 4, self.interface, 0, 1, 3, 1, 1, 0])
                + HID_DESCRIPTOR
                + bytes([7, 5, self.endpoint, 0x03, REPORT_SIZE, 0, 10])
            )
        if kind == 3:
            if index == 0:
                return bytes([4, 3, 0x09, 0x04])  # one language: en-US
            text = {1: self.manufacturer, 2: self.product, 3: self.serial}.get(index)
            if text:
                raw = text.encode("utf-16-le")
                return bytes([2 + len(raw), 3]) + raw
        raise _error(_PIPE)

    # -- IBackend: handles, configuration, interfaces ---------------------------------------------

    def open_device(self, dev: _Enumeration) -> _Handle:
        with self._cond:
            if not dev.present:
                raise _error(_NO_DEVICE)
            self.open_handles += 1
            self.calls.append("open")
            return _Handle(dev)

    def close_device(self, dev_handle: _Handle) -> None:
        with self._cond:
            if not dev_handle.open:
                return
            dev_handle.open = False
            self.open_handles -= 1
            if self._claimed_by is dev_handle:  # closing the usbfs fd releases its claims
                self._claimed_by = None
            self.calls.append("close")

    def set_configuration(self, dev_handle: _Handle, config_value: int) -> None:
        with self._cond:
            self._live(dev_handle)
            if config_value not in (0, 1):
                raise _error(_NOT_FOUND)
            if self._claimed_by is not None or self.kernel_driver_bound:
                # libusb on Linux: changing the configuration under a bound interface is EBUSY
                if config_value != self.configuration:
                    raise _error(_BUSY)
            self.configuration = config_value
            self.calls.append(f"set_configuration {config_value}")

    def get_configuration(self, dev_handle: _Handle) -> int:
        with self._cond:
            self._live(dev_handle)
            return self.configuration

    def set_interface_altsetting(self, dev_handle: _Handle, intf: int, altsetting: int) -> None:
        with self._cond:
            self._live(dev_handle)
            self._check_interface(intf)
            if altsetting != 0:
                raise _error(_NOT_FOUND)

    def claim_interface(self, dev_handle: _Handle, intf: int) -> None:
        with self._cond:
            self._live(dev_handle)
            self._check_interface(intf)
            if self._claimed_by is dev_handle:
                return
            if self.kernel_driver_bound or self._claimed_by is not None:
                raise _error(_BUSY)
            self._claimed_by = dev_handle
            self._queue.clear()  # what was typed before went to the kernel's keyboard
            self.calls.append(f"claim {intf}")

    def release_interface(self, dev_handle: _Handle, intf: int) -> None:
        with self._cond:
            self._live(dev_handle)
            if intf != self.interface or self._claimed_by is not dev_handle:
                raise _error(_NOT_FOUND)
            self._claimed_by = None
            self.calls.append(f"release {intf}")

    def is_kernel_driver_active(self, dev_handle: _Handle, intf: int) -> bool:
        with self._cond:
            self._live(dev_handle)
            self._check_interface(intf)
            return self.kernel_driver_bound

    def detach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        with self._cond:
            self._live(dev_handle)
            self._check_interface(intf)
            if not self.kernel_driver_bound:
                raise _error(_NOT_FOUND)
            self.kernel_driver_bound = False
            self.calls.append(f"detach {intf}")

    def attach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        with self._cond:
            self._live(dev_handle)
            self._check_interface(intf)
            if self._claimed_by is not None or self.kernel_driver_bound:
                raise _error(_BUSY)
            self.kernel_driver_bound = True
            self.calls.append(f"attach {intf}")

    def clear_halt(self, dev_handle: _Handle, ep: int) -> None:
        with self._cond:
            self._live(dev_handle)
            if ep not in (0, self.endpoint):
                raise _error(_NOT_FOUND)

    def reset_device(self, dev_handle: _Handle) -> None:
        with self._cond:
            self._live(dev_handle)
            self.protocol = 1
            self.idle = 125
            self.leds = 0
            self._queue.clear()
            self.calls.append("reset")

    # -- IBackend: transfers --------------------------------------------------------------------

    def ctrl_transfer(
        self,
        dev_handle: _Handle,
        bmRequestType: int,
        bRequest: int,
        wValue: int,
        wIndex: int,
        data: array.array[int],
        timeout: int,
    ) -> int:
        with self._cond:
            self._live(dev_handle)
            answer = self._control(dev_handle, bmRequestType, bRequest, wValue, wIndex, data)
        if bmRequestType & 0x80:  # IN: the answer fills the caller's buffer
            n = min(len(answer), len(data))
            data[:n] = array.array("B", answer[:n])
            return n
        return len(data)

    def _control(
        self, h: _Handle, req_type: int, req: int, value: int, index: int, data: array.array[int]
    ) -> bytes:
        kind, desc_index = value >> 8, value & 0xFF
        if (req_type, req) == (0x80, 0x06):  # standard GET_DESCRIPTOR, device
            return self._descriptor_bytes(kind, desc_index, h.dev)
        if (req_type, req) == (0x80, 0x00):  # GET_STATUS: bus powered, no remote wakeup armed
            return bytes([0, 0])
        if (req_type, req) == (0x80, 0x08):  # GET_CONFIGURATION
            return bytes([self.configuration])
        if req_type & 0x1F == 0x01 and index & 0xFF != self.interface:
            raise _error(_PIPE)  # an interface request to an interface the device lacks
        if (req_type, req) == (0x81, 0x06):  # standard GET_DESCRIPTOR, interface: HID class
            if kind == 0x21:
                return HID_DESCRIPTOR
            if kind == 0x22:
                return BOOT_KEYBOARD_REPORT_DESCRIPTOR
        elif (req_type, req) == (0x21, 0x0B) and value in (0, 1):  # HID SET_PROTOCOL
            self.protocol = value
            self.calls.append("set_protocol " + ("boot" if value == 0 else "report"))
            return b""
        elif (req_type, req) == (0xA1, 0x03):  # HID GET_PROTOCOL
            return bytes([self.protocol])
        elif (req_type, req) == (0x21, 0x0A):  # HID SET_IDLE
            self.idle = value >> 8
            return b""
        elif (req_type, req) == (0xA1, 0x02):  # HID GET_IDLE
            return bytes([self.idle])
        elif (req_type, req) == (0x21, 0x09) and kind == 0x02:  # HID SET_REPORT (output): LEDs
            self.leds = data[0] if len(data) else 0
            return b""
        elif (req_type, req) == (0xA1, 0x01) and kind == 0x01:  # HID GET_REPORT (input)
            return RELEASE
        raise _error(_PIPE)  # anything else stalls

    def intr_read(
        self, dev_handle: _Handle, ep: int, intf: int, buff: array.array[int], timeout: int
    ) -> int:
        """The next queued report; blocks up to ``timeout`` ms (0: forever) like libusb."""
        deadline = time.monotonic() + timeout / 1000 if timeout > 0 else None
        with self._cond:
            while True:
                self._live(dev_handle)
                if ep != self.endpoint or intf != self.interface:
                    raise _error(_NOT_FOUND)
                if self._queue and self._claimed_by is dev_handle:
                    report = self._queue.popleft()
                    break
                if deadline is None:
                    self._cond.wait()
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _error(_TIMEOUT)
                self._cond.wait(left)
            self.reports_read += 1
        if len(buff) < len(report):
            raise _error(_OVERFLOW)  # libusb: the device sent more than the buffer holds
        buff[: len(report)] = array.array("B", report)
        return len(report)

    def intr_write(
        self, dev_handle: _Handle, ep: int, intf: int, data: array.array[int], timeout: int
    ) -> int:
        with self._cond:
            self._live(dev_handle)
        raise _error(_NOT_FOUND)  # a boot keyboard has no interrupt OUT endpoint


class _Keyboard:
    """The simulator's link: the shoe simulator writes code lines to it, and the
    scanner types them, one code per line, on the backend's endpoint."""

    _LINE: Final = re.compile(rb"[\r\n]+")

    def __init__(self, backend: ScannerBackend) -> None:
        self.backend = backend
        #: set by the owner while the transport holds the interface (its ``on_connected``);
        #: the dealer waits for it before every card.
        self.opened = asyncio.Event()
        self.codes_typed = 0

    def write(self, data: bytes) -> None:
        for line in self._LINE.split(data):
            if line and self.backend.type_reports(key_reports(line)):
                self.codes_typed += 1


class ScannerSimulator(ShoeSimulator):
    """The dealer of :class:`ShoeSimulator`, scanning each card with a USB keyboard-wedge
    scanner instead of drawing it from a serial shoe. Hand :attr:`backend` to the
    transport and set :attr:`opened` while it is connected."""

    def __init__(
        self,
        *,
        vendor_id: int,
        product_id: int,
        serial: str | None = None,
        interface: int = 0,
        endpoint: int | None = None,
        encoding: str = "suit-rank",
        **shoe: Any,
    ) -> None:
        super().__init__(encoding=encoding, **shoe)
        self.backend = ScannerBackend(
            vendor_id, product_id, serial, interface=interface, endpoint=endpoint or 0x81
        )
        self.keyboard = _Keyboard(self.backend)
        self.link = self.keyboard
        self._closed = False

    @classmethod
    def from_options(cls, shoe: Any, o: Options) -> ScannerSimulator:  # type: ignore[override]
        """From the driver's options (identity, encoding, marker codes) and ``[devices.sim]``."""
        assert isinstance(shoe, HidScannerOptions)
        return cls(
            vendor_id=shoe.vid,
            product_id=shoe.pid,
            serial=shoe.serial,
            interface=shoe.interface,
            endpoint=shoe.endpoint,
            encoding=shoe.encoding,
            cut_card_code=shoe.cut_card_code,
            read_error_code=shoe.read_error_code,
            face_up_marker=shoe.face_up_marker,
            seed=o.seed,
            pace=o.pace,
            errors=o.errors,
            error_every=o.error_every,
        )

    @property
    def opened(self) -> asyncio.Event:
        """Set while the transport holds the interface: nothing is typed before."""
        return self.keyboard.opened

    def attach(self, link: Any) -> None:
        raise TypeError(
            "a simulated USB scanner types into its own pyusb backend (sim.backend), not a pty"
        )

    def unplug(self) -> None:
        """Pull the scanner's cable (the daemon sees ENODEV and reconnects when it is back)."""
        self.backend.unplug()
        self.keyboard.opened.clear()

    def replug(self) -> None:
        """Plug it in again: it re-enumerates at a new bus address."""
        if self._closed:
            raise RuntimeError("the simulated scanner is closed")
        self.backend.replug()

    def close(self) -> None:
        """Unplug for good (the daemon's shutdown). Idempotent."""
        self._closed = True
        self.unplug()


def simulate(driver_options: Any, sim: Options) -> ScannerSimulator:
    """The registry's factory (:data:`drivers.sim.SIMULATORS`)."""
    return ScannerSimulator.from_options(driver_options, sim)
