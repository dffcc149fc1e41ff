"""The USB card scanner through the real libusb, against a scanner umockdev emulates.

Every other scanner test uses a fake pyusb backend. This one takes the
production path: :class:`drivers.usb.UsbTransport` with no backend given, so
pyusb loads libusb-1.0, and libusb enumerates sysfs, opens
``/dev/bus/usb/BBB/DDD`` and talks usbfs ioctls. umockdev
(``umockdev-wrapper``, an ``LD_PRELOAD`` library) redirects ``/sys`` and
``/dev`` to a test bed built from ``tests/umockdev/hid-scanner.umockdev`` and
hands every ioctl on the device node to :class:`UsbfsScanner`, a Python model
of the kernel's usbfs in front of a HID boot keyboard (a keyboard-wedge
scanner, here 1209:0001 serial ``UMOCK-0001``). That model is written after
libusb's own umockdev test (``libusb/libusb`` ``tests/umockdev.c``) and the
kernel's usbfs rules (``drivers/usb/core/devio.c``); see
``docs/testing.md``, USB for the recipe.

The preload library must be in place before the process starts, so
:func:`test_hid_scanner_through_libusb_and_umockdev` re-runs this file under
``umockdev-wrapper`` in a child pytest that collects only ``inner_*``
functions (``-o python_functions=inner_*``): a plain ``pytest`` run never
collects :func:`inner_scanner_over_libusb`, and the child never collects the
outer test. When umockdev, PyGObject or libusb is missing the outer test
skips, naming what to install; with ``TABLED_REQUIRE_UMOCKDEV=1`` it fails
instead (for CI, where it must run).

Nothing sleeps to synchronise: the scenario waits on what the code under test
causes (health changes, readings), with a guard only against a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes.util
import errno
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from runner_inputs import Inputs

from daemon.runtime.devices import DeviceRunner
from drivers.hid_scanner import HidScannerDriver, HidScannerOptions

ROOT = Path(__file__).resolve().parent.parent
DEVICE_FILE = Path(__file__).resolve().parent / "umockdev" / "hid-scanner.umockdev"
INNER_ENV = "TABLED_UMOCKDEV_INNER"
REQUIRE_ENV = "TABLED_REQUIRE_UMOCKDEV"
APT = "apt install umockdev gir1.2-umockdev-1.0 libusb-1.0-0"
PIP = "pip install 'pygobject<3.51' (it builds against apt libgirepository1.0-dev libcairo2-dev)"
GUARD = 5.0  # seconds for one awaited step: only a hang ever reaches it
INNER_TIMEOUT = 60.0  # seconds for the whole child run (it takes about 2)

VID, PID, SERIAL = 0x1209, 0x0001, "UMOCK-0001"
BUS = 1


# --- the outer test: run the inner one under umockdev-wrapper ---------------------------------


def _missing() -> str | None:
    """What is not installed for this test, as the reason to show; None when all is there."""
    if shutil.which("umockdev-wrapper") is None:
        return f"umockdev not installed: {APT}; {PIP}"
    if ctypes.util.find_library("usb-1.0") is None:
        return f"libusb-1.0 not installed: {APT}"
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gi; gi.require_version('UMockdev', '1.0'); from gi.repository import UMockdev",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        if "No module named 'gi'" in probe.stderr:
            return f"PyGObject not installed in this venv ({last}): {PIP}"
        return f"umockdev's GObject bindings not usable ({last}): apt install gir1.2-umockdev-1.0"
    return None


def test_hid_scanner_through_libusb_and_umockdev() -> None:
    reason = _missing()
    if reason is not None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {reason}")
        pytest.skip(reason)
    child = subprocess.run(
        [
            "umockdev-wrapper",
            sys.executable,
            "-m",
            "pytest",
            f"{Path(__file__).resolve()}::inner_scanner_over_libusb",
            "-o",
            "python_functions=inner_*",
            "-p",
            "no:cacheprovider",
            "-q",
            "--no-header",
        ],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"} | {INNER_ENV: "1"},
        capture_output=True,
        text=True,
        timeout=INNER_TIMEOUT,
    )
    output = f"--- stdout\n{child.stdout}\n--- stderr\n{child.stderr}"
    assert child.returncode == 0, f"the run under umockdev-wrapper failed:\n{output}"
    assert re.search(r"\b1 passed\b", child.stdout), f"the inner test did not run:\n{output}"


# --- the emulated scanner: usbfs ioctls as the kernel answers them -----------------------------


def _ioc(direction: int, nr: int, size: int) -> int:
    """A usbfs ioctl number (``linux/usbdevice_fs.h``, ``asm-generic/ioctl.h``)."""
    return (direction << 30) | (size << 16) | (ord("U") << 8) | nr


_NONE, _WRITE, _READ = 0, 1, 2
#: sizes are those of the structs on a 64-bit kernel (usbdevfs_urb: 56 bytes).
IOCTLS = {
    _ioc(_READ, 5, 4): "SETCONFIGURATION",
    _ioc(_WRITE, 8, 260): "GETDRIVER",
    _ioc(_READ, 10, 56): "SUBMITURB",
    _ioc(_NONE, 11, 0): "DISCARDURB",
    _ioc(_WRITE, 13, 8): "REAPURBNDELAY",
    _ioc(_READ, 15, 4): "CLAIMINTERFACE",
    _ioc(_READ, 16, 4): "RELEASEINTERFACE",
    _ioc(_READ | _WRITE, 18, 16): "IOCTL",
    _ioc(_READ, 26, 4): "GET_CAPABILITIES",
}
#: the ioctl codes USBDEVFS_IOCTL carries to detach and re-attach a kernel driver.
USBDEVFS_DISCONNECT, USBDEVFS_CONNECT = _ioc(_NONE, 22, 0), _ioc(_NONE, 23, 0)
#: ZERO_PACKET | BULK_CONTINUATION | NO_PACKET_SIZE_LIM | REAP_AFTER_DISCONNECT
CAPABILITIES = 0x01 | 0x02 | 0x04 | 0x10
URB_INTERRUPT, URB_CONTROL = 1, 2
URB_SIZE = 56  # struct usbdevfs_urb on 64-bit: type, endpoint, status @4, flags @8,
#                buffer @16, buffer_length @24, actual_length @28, …
SETUP = 8  # a control URB's buffer starts with the 8-byte setup packet
IN_EP = 0x81


def _parse_device_file(text: str) -> tuple[bytes, dict[str, str]]:
    """The descriptors and the sysfs attributes of the first device in a .umockdev file."""
    first = text.split("\n\n", 1)[0]
    attrs = {
        k: v.replace("\\n", "").strip()
        for k, v in re.findall(r"^A: ([^=]+)=(.*)$", first, re.MULTILINE)
    }
    (hexdesc,) = re.findall(r"^H: descriptors=([0-9A-Fa-f]+)$", first, re.MULTILINE)
    return bytes.fromhex(hexdesc), attrs


class _Urb:
    """One submitted URB: its struct and buffer, resolved in the client's memory."""

    __slots__ = ("buf", "data", "endpoint", "length", "type")

    def __init__(self, data: Any, buf: Any, type_: int, endpoint: int, length: int) -> None:
        self.data, self.buf = data, buf
        self.type, self.endpoint, self.length = type_, endpoint, length

    def finish(self, status: int, payload: bytes = b"", offset: int = 0) -> None:
        if payload:
            self.buf.update(offset, list(payload))
        self.data.update(4, list(struct.pack("<i", status)))
        self.data.update(28, list(struct.pack("<i", len(payload))))


class UsbfsScanner:
    """usbfs in front of one HID boot keyboard, for one enumeration (one plug-in).

    What it reproduces, after the kernel's ``drivers/usb/core/devio.c``: usbhid
    holds the interface from plug-in (GETDRIVER names it, claiming fails with
    EBUSY until USBDEVFS_DISCONNECT detaches it, USBDEVFS_CONNECT re-attaches
    it after release); control URBs answer GET_DESCRIPTOR (device,
    configuration, strings), SET_PROTOCOL, GET_PROTOCOL and SET_IDLE, and stall
    (-EPIPE) on anything else; an interrupt IN URB on 0x81 completes with the
    next typed report, and stays in flight until one is typed, discarded
    (reaped with -ENOENT) or the device is unplugged (reaped with -ESHUTDOWN,
    then every ioctl fails with ENODEV). Keys typed while usbhid holds the
    interface go to the console: they are counted as lost, as in
    ``drivers/sim/hid_scanner.py``.

    Handlers run on umockdev's ioctl thread; the test types and unplugs from
    the loop thread, hence the lock.
    """

    def __init__(self, device_file: str) -> None:
        self.descriptors, attrs = _parse_device_file(device_file)
        self.strings = {1: attrs["manufacturer"], 2: attrs["product"], 3: attrs["serial"]}
        self.lock = threading.Lock()
        self.kernel_driver: str | None = "usbhid"
        self.claimed: set[int] = set()
        self.configuration = int(attrs["bConfigurationValue"])
        self.protocol = 1  # HID 1.11 §7.2.6: report protocol after reset
        self.in_flight: list[_Urb] = []
        self.done: deque[_Urb] = deque()
        self.reports: deque[bytes] = deque()
        self.reports_read = 0
        self.reports_lost = 0
        self.gone = False
        self.seen: Counter[str] = Counter()
        self.control: list[tuple[int, int, int, int, int]] = []
        self.unknown: list[str] = []
        self.errors: list[str] = []
        #: called after every ioctl answered, from umockdev's thread (the scenario's wake-up).
        self.notify: Callable[[], None] = lambda: None

    # -- the test's side ----------------------------------------------------------------

    def type(self, reports: list[bytes]) -> None:
        with self.lock:
            if 0 not in self.claimed:
                self.reports_lost += len(reports)
                return
            self.reports.extend(reports)

    def unplug(self) -> None:
        with self.lock:
            self.gone = True
            for urb in self.in_flight:
                urb.finish(-errno.ESHUTDOWN)
                self.done.append(urb)
            self.in_flight.clear()

    # -- umockdev's side ----------------------------------------------------------------

    def handle_ioctl(self, _handler: Any, client: Any) -> bool:
        request = client.get_request()
        name = IOCTLS.get(request)
        if name is None:
            self.unknown.append(hex(request))
            return False  # umockdev answers ENOTTY, as the kernel does
        try:
            with self.lock:
                self.seen[name] += 1
                if self.gone and name != "REAPURBNDELAY":
                    result = (-1, errno.ENODEV)  # devio.c: only reaping works after a disconnect
                else:
                    result = getattr(self, f"_{name.lower()}")(client.get_arg())
        except Exception as exc:  # a bug here must fail the test, not hang libusb
            self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            result = (-1, errno.EIO)
        client.complete(*result)
        try:
            self.notify()
        except Exception as exc:
            self.errors.append(f"notify: {type(exc).__name__}: {exc}")
        return True

    @property
    def reading(self) -> bool:
        """A read of the keyboard's reports is in flight (submitted, not complete)."""
        with self.lock:
            return any(u.endpoint == IN_EP for u in self.in_flight)

    @staticmethod
    def _u32(arg: Any, size: int = 4) -> tuple[Any, int]:
        data = arg.resolve(0, size)
        return data, struct.unpack_from("<I", bytes(data.retrieve()))[0]

    def _get_capabilities(self, arg: Any) -> tuple[int, int]:
        arg.resolve(0, 4).update(0, list(struct.pack("<I", CAPABILITIES)))
        return 0, 0

    def _setconfiguration(self, arg: Any) -> tuple[int, int]:
        _, value = self._u32(arg)
        if value != 1:
            return -1, errno.EINVAL
        self.configuration = value
        return 0, 0

    def _getdriver(self, arg: Any) -> tuple[int, int]:
        data, interface = self._u32(arg, 260)
        if interface != 0 or self.kernel_driver is None:
            return -1, errno.ENODATA
        data.update(4, list(self.kernel_driver.encode() + b"\0"))
        return 0, 0

    def _ioctl(self, arg: Any) -> tuple[int, int]:
        ifno, code = struct.unpack_from("<iI", bytes(arg.resolve(0, 16).retrieve()))
        if ifno != 0:
            return -1, errno.EINVAL
        if code == USBDEVFS_DISCONNECT:
            if self.kernel_driver is None:
                return -1, errno.ENODATA
            self.kernel_driver = None
            return 0, 0
        if code == USBDEVFS_CONNECT:
            if 0 in self.claimed:
                return -1, errno.EBUSY
            self.kernel_driver = "usbhid"
            return 1, 0  # device_attach(): 1 when a driver bound
        return -1, errno.ENOTTY

    def _claiminterface(self, arg: Any) -> tuple[int, int]:
        _, interface = self._u32(arg)
        if interface != 0:
            return -1, errno.ENOENT
        if self.kernel_driver is not None:
            return -1, errno.EBUSY
        self.claimed.add(0)
        return 0, 0

    def _releaseinterface(self, arg: Any) -> tuple[int, int]:
        _, interface = self._u32(arg)
        if interface not in self.claimed:
            return -1, errno.EINVAL
        self.claimed.discard(interface)
        return 0, 0

    def _submiturb(self, arg: Any) -> tuple[int, int]:
        data = arg.resolve(0, URB_SIZE)
        raw = bytes(data.retrieve())
        type_, endpoint = raw[0], raw[1]
        (length,) = struct.unpack_from("<i", raw, 24)
        buf = data.resolve(16, length)
        urb = _Urb(data, buf, type_, endpoint, length)
        if type_ == URB_CONTROL and length >= SETUP:
            self._control(urb, bytes(buf.retrieve())[:SETUP])
            self.done.append(urb)
            return 0, 0
        if type_ == URB_INTERRUPT and endpoint == IN_EP and length > 0:
            if 0 not in self.claimed:  # usbfs claims on first I/O; usbhid holds it here
                return -1, errno.EBUSY
            self.in_flight.append(urb)
            return 0, 0
        return -1, errno.EINVAL

    def _control(self, urb: _Urb, setup: bytes) -> None:
        request_type, request, value, index, length = struct.unpack("<BBHHH", setup)
        self.control.append((request_type, request, value, index, length))
        reply: bytes | None = None
        if (request_type, request) == (0x80, 0x06):  # GET_DESCRIPTOR (standard, device)
            kind, number = value >> 8, value & 0xFF
            if kind == 1:
                reply = self.descriptors[:18]
            elif kind == 2 and number == 0:
                reply = self.descriptors[18:]
            elif kind == 3 and number == 0:
                reply = bytes([4, 3, 0x09, 0x04])  # one language: US English
            elif kind == 3 and number in self.strings:
                text = self.strings[number].encode("utf-16-le")
                reply = bytes([2 + len(text), 3]) + text
        elif (request_type, request) == (0x21, 0x0B) and index == 0:  # HID SET_PROTOCOL
            self.protocol, reply = value, b""
        elif (request_type, request) == (0xA1, 0x03) and index == 0:  # HID GET_PROTOCOL
            reply = bytes([self.protocol])
        elif (request_type, request) == (0x21, 0x0A) and index == 0:  # HID SET_IDLE
            reply = b""
        if reply is None:
            urb.finish(-errno.EPIPE)  # a stall: the device does not know the request
        else:
            urb.finish(0, reply[:length], SETUP)

    def _reap(self) -> _Urb | None:
        if self.done:
            return self.done.popleft()
        if self.reports:
            for urb in self.in_flight:
                if urb.endpoint == IN_EP:
                    self.in_flight.remove(urb)
                    urb.finish(0, self.reports.popleft()[: urb.length])
                    self.reports_read += 1
                    return urb
        return None

    def _reapurbndelay(self, arg: Any) -> tuple[int, int]:
        urb = self._reap()
        if urb is None:
            return -1, errno.ENODEV if self.gone else errno.EAGAIN
        arg.resolve(0, 8).set_ptr(0, urb.data)
        return 0, 0

    def _discardurb(self, arg: Any) -> tuple[int, int]:
        (address,) = struct.unpack("<Q", bytes(arg.retrieve())[:8])
        for urb in self.in_flight:
            if urb.data.client_addr == address:
                self.in_flight.remove(urb)
                urb.finish(-errno.ENOENT)
                self.done.append(urb)
                return 0, 0
        return -1, errno.EINVAL  # already complete: libusb then reaps it


class Plug:
    """The scanner plugged in at one bus address of the umockdev test bed."""

    def __init__(self, testbed: Any, devnum: int, notify: Callable[[], None]) -> None:
        from gi.repository import UMockdev

        text = DEVICE_FILE.read_text()
        if devnum != 5:  # the file describes the first plug-in, at 001/005
            text = text.replace("001/005", f"001/{devnum:03d}")
            text = text.replace("DEVNUM=005", f"DEVNUM={devnum:03d}")
            text = text.replace("devnum=5\\n", f"devnum={devnum}\\n")
        self.testbed = testbed
        self.node = f"/dev/bus/usb/{BUS:03d}/{devnum:03d}"
        #: the device, then its interface: added in this order, removed in the reverse
        self.syspaths = ["/sys" + p for p in re.findall(r"^P: (.+)$", text, re.MULTILINE)]
        self.model = UsbfsScanner(text)
        self.model.notify = notify
        self.handler = UMockdev.IoctlBase()
        self.handler.connect("handle-ioctl", self.model.handle_ioctl)
        # the handler first, so the node answers as soon as the device appears
        # (libusb tests/umockdev.c does the same)
        assert testbed.attach_ioctl(self.node, self.handler)
        assert testbed.add_from_string(text)
        for path in self.syspaths:
            testbed.uevent(path, "add")

    def unplug(self) -> None:
        self.model.unplug()
        for path in reversed(self.syspaths):
            self.testbed.uevent(path, "remove")
            self.testbed.remove_device(path)


# --- the scenario, under umockdev-wrapper -------------------------------------------------------

USAGE = {chr(ord("A") + i): 0x04 + i for i in range(26)} | {
    d: 0x1E + i for i, d in enumerate("1234567890")
}
ENTER, LEFT_SHIFT = 0x28, 0x02


def typed(code: str) -> list[bytes]:
    """Boot keyboard reports (HID 1.11 appendix B.1) for a scan of ``code``: each key
    pressed (Shift in the same report for a capital) and released, then Enter."""
    out: list[bytes] = []
    for ch in code:
        shift = LEFT_SHIFT if ch.isupper() else 0
        out += [bytes([shift, 0, USAGE[ch.upper()], 0, 0, 0, 0, 0]), bytes(8)]
    return [*out, bytes([0, 0, ENTER, 0, 0, 0, 0, 0]), bytes(8)]


@contextlib.contextmanager
def _umockdev() -> Iterator[Any]:
    import gi

    gi.require_version("UMockdev", "1.0")
    from gi.repository import UMockdev

    testbed = UMockdev.Testbed.new()
    try:
        yield testbed
    finally:
        testbed.clear()


async def _scenario(testbed: Any) -> tuple[Plug, Plug]:
    inputs = Inputs()
    loop = asyncio.get_running_loop()

    def wake() -> None:  # from umockdev's thread, after each ioctl it answered
        with contextlib.suppress(RuntimeError):  # the loop has closed
            loop.call_soon_threadsafe(inputs.changed.set)

    first = Plug(testbed, 5, wake)
    options = msgspec.convert(
        {"vendor_id": VID, "product_id": PID, "serial": SERIAL, "read_timeout_ms": 100},
        HidScannerOptions,
    )
    driver = HidScannerDriver(options)
    runner = DeviceRunner("scanner", driver, inputs)
    transport = driver.usb_transport(reconnect_min=0.05, reconnect_max=0.2)  # no backend: libusb
    runner.transport = transport
    task = asyncio.create_task(transport.run(runner))
    try:
        await inputs.until(lambda: bool(inputs.health()))
        assert inputs.health() == [("ok", first.node)], runner.reason
        m = first.model
        # found by its serial number (string descriptors over control URBs), usbhid
        # detached, the interface claimed, the keyboard switched to boot reports
        assert any(c[:4] == (0x80, 0x06, 0x0303, 0x0409) for c in m.control), m.control
        assert m.kernel_driver is None and m.claimed == {0} and m.protocol == 0

        # nothing scanned for a while: libusb's timeout discards the read, the next one follows
        await inputs.until(lambda: m.seen["DISCARDURB"] >= 1 and m.reading)
        assert inputs.health() == [("ok", first.node)]

        m.type(typed("SA") + typed("H10"))
        await inputs.until(lambda: len(inputs.cards()) == 2)
        assert inputs.cards() == ["AS", "TH"]
        assert m.reports_lost == 0

        await inputs.until(lambda: m.reading)
        first.unplug()  # the read in flight ends with -ESHUTDOWN, then ENODEV; remove uevents
        await inputs.until(lambda: len(inputs.health()) == 2)
        assert inputs.health()[1] == ("disconnected", None)
        assert runner.health == "disconnected" and "unplugged" in runner.reason, runner.reason

        second = Plug(testbed, 6, wake)  # plugged in again: a new address, found by identity
        await inputs.until(lambda: len(inputs.health()) == 3)
        assert inputs.health()[2] == ("ok", second.node), runner.reason
        assert transport.reconnects == 1 and second.model.kernel_driver is None
        second.model.type(typed("DK"))
        await inputs.until(lambda: len(inputs.cards()) == 3)
        assert inputs.cards() == ["AS", "TH", "KD"]
        assert runner.counters.malformed == 0
    finally:
        await transport.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return first, second


def inner_scanner_over_libusb() -> None:
    """Collected only by the child run ``test_hid_scanner_through_libusb_and_umockdev`` starts."""
    if os.environ.get(INNER_ENV) != "1" or "libumockdev-preload" not in os.environ.get(
        "LD_PRELOAD", ""
    ):
        pytest.fail(
            "run only under umockdev-wrapper, by test_hid_scanner_through_libusb_and_umockdev"
        )
    with _umockdev() as testbed:
        first, second = asyncio.run(_scenario(testbed))
    for plug in (first, second):
        m = plug.model
        assert not m.errors and not m.unknown, (m.errors, m.unknown)
    # given back on close: released, usbhid re-attached
    assert second.model.claimed == set() and second.model.kernel_driver == "usbhid"
    used = set(first.model.seen) | set(second.model.seen)
    assert {"GET_CAPABILITIES", "GETDRIVER", "IOCTL", "CLAIMINTERFACE", "RELEASEINTERFACE"} <= used
    assert {"SUBMITURB", "REAPURBNDELAY", "DISCARDURB"} <= used, (
        first.model.seen,
        second.model.seen,
    )
