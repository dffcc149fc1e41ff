"""A fake pyusb backend showing one HID boot keyboard, as libusb would: the simulated scanner's USB side.

USB does not go over a pty, so the scanner is simulated one level lower than
the serial devices: :class:`ScannerBackend` is a pyusb backend
(``usb.backend.IBackend``) that shows one HID boot keyboard, as libusb would.
The daemon's real :class:`drivers.usb.UsbTransport` finds it with
``usb.core.find``, detaches its (simulated) kernel driver, claims its
interface, asks for boot reports and reads 8-byte reports from its interrupt
IN endpoint in its reader thread, exactly as it does with a real scanner
through libusb.

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
import errno
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, Final

import usb.backend
import usb.core

from drivers.sim.hid_keyboard import (
    BOOT_KEYBOARD_REPORT_DESCRIPTOR,
    HID_DESCRIPTOR,
    RELEASE,
    configuration_descriptor,
    descriptor_bytes,
    device_descriptor,
    endpoint_descriptor,
    interface_descriptor,
)

__all__ = ["ScannerBackend"]

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
        return device_descriptor(self, dev.address)

    def get_configuration_descriptor(self, dev: _Enumeration, config: int) -> Any:
        return configuration_descriptor(config)

    def get_interface_descriptor(self, dev: _Enumeration, intf: int, alt: int, config: int) -> Any:
        return interface_descriptor(self, intf, alt, config)

    def get_endpoint_descriptor(
        self, dev: _Enumeration, ep: int, intf: int, alt: int, config: int
    ) -> Any:
        return endpoint_descriptor(self, ep, intf, alt, config)

    def _descriptor_bytes(self, kind: int, index: int, dev: _Enumeration) -> bytes:
        answer = descriptor_bytes(self, kind, index)
        if answer is None:
            raise _error(_PIPE)
        return answer

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
