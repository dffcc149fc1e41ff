"""The USB HID barcode scanner: keyboard reports → cards, and the USB transport around it.

The protocol is fed recorded boot-keyboard reports. The transport runs
against a fake backend at pyusb's own backend interface (``usb.backend.IBackend``)
through the real pyusb ``Device``/``util`` code, so no libusb is needed
(``docs/testing.md``, USB: pyusb asks endpoint
descriptors by index, ``intr_read`` fills the caller's array, timeouts and
unplugs are ``USBTimeoutError``/``USBError`` with libusb's codes).

Nothing sleeps to synchronise: tests wait on what the code under test causes,
with ``asyncio.wait_for`` only as a guard against a hang.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import errno
import threading
import time
from collections import deque
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
import usb.backend
import usb.core
from hypothesis import given, settings
from hypothesis import strategies as st
from runner_inputs import Inputs

from daemon.runtime.devices import DeviceRunner
from drivers.card_codes import encode
from drivers.cards import DECK
from drivers.hid_scanner import (
    HidKeyboardProtocol,
    HidScannerDriver,
    HidScannerOptions,
)
from drivers.readings import CardDrawn, CardUnreadable, CutCardOut, Malformed, Reading
from drivers.shoe_line import line_reading
from drivers.usb import UsbTransport

GUARD = 5.0  # seconds: only a hang ever reaches it
VID, PID = 0x05E0, 0x1200

# --- keyboard reports ------------------------------------------------------------------

LSHIFT, RSHIFT = 0x02, 0x20
ENTER, KP_ENTER = 0x28, 0x58
MINUS = 0x2D  # '-': a key the scanner protocol does not map


def usage_of(ch: str) -> tuple[int, bool]:
    """(usage, shift) a US keyboard uses to type ``ch``."""
    if ch == "\n":
        return ENTER, False
    if ch.isalpha():
        return 0x04 + ord(ch.lower()) - ord("a"), ch.isupper()
    if ch in "1234567890":
        return 0x1E + "1234567890".index(ch), False
    return 0x1E + "!@#$%^&*()".index(ch), True


def rep(*keys: int, mod: int = 0) -> bytes:
    """One boot keyboard report: modifiers, reserved, six key slots."""
    assert len(keys) <= 6
    return bytes([mod, 0, *keys, *([0] * (6 - len(keys)))])


RELEASE = rep()


def typed(text: str) -> list[bytes]:
    """What a scanner sends for ``text``: each key pressed then released."""
    out = []
    for ch in text:
        usage, shift = usage_of(ch)
        out += [rep(usage, mod=LSHIFT if shift else 0), RELEASE]
    return out


def opts(**kw: Any) -> HidScannerOptions:
    return msgspec.convert({"vendor_id": VID, "product_id": PID, **kw}, HidScannerOptions)


def feed_all(p: HidKeyboardProtocol, reports: list[bytes], t0: float = 0.0) -> list[Reading]:
    out: list[Reading] = []
    for i, r in enumerate(reports):
        out += p.feed(r, t0 + i * 0.01)
    return out


# --- protocol ----------------------------------------------------------------------------


def test_suit_rank_scan() -> None:
    p = HidKeyboardProtocol(opts())
    assert feed_all(p, typed("SA\n")) == [CardDrawn(frame=b"SA", card="AS")]


def test_ten_with_shift_rank_suit() -> None:
    p = HidKeyboardProtocol(opts(encoding="rank-suit"))
    reports = [rep(0x1E), RELEASE, rep(0x27), RELEASE, rep(0x0B, mod=RSHIFT), RELEASE]
    reports += [rep(KP_ENTER), RELEASE]
    assert feed_all(p, reports) == [CardDrawn(frame=b"10H", card="TH")]


def test_boxed_code() -> None:
    p = HidKeyboardProtocol(opts(encoding="boxed"))
    assert feed_all(p, typed("A3020\n")) == [CardDrawn(frame=b"A3020", card="2C", box="player")]


def test_unshifted_letters_still_decode() -> None:
    # Caps lock is host state, not in the report: a scanner set to lower case types "sa".
    p = HidKeyboardProtocol(opts())
    assert feed_all(p, typed("sa\n")) == [CardDrawn(frame=b"sa", card="AS")]


def test_key_rollover() -> None:
    # A is pressed before S is released, and Enter before A is released.
    p = HidKeyboardProtocol(opts())
    reports = [
        rep(0x16, mod=LSHIFT),
        rep(0x16, 0x04, mod=LSHIFT),
        rep(0x04, mod=LSHIFT),
        rep(0x04, ENTER),
        rep(ENTER),
        RELEASE,
    ]
    assert feed_all(p, reports) == [CardDrawn(frame=b"SA", card="AS")]


def test_report_without_release_does_not_double_a_key() -> None:
    p = HidKeyboardProtocol(opts())
    held = [rep(0x16, mod=LSHIFT), rep(0x16, mod=LSHIFT), rep(0x16, mod=LSHIFT)]
    assert feed_all(p, [*held, RELEASE, *typed("A\n")]) == [CardDrawn(frame=b"SA", card="AS")]


def test_same_key_released_in_between_types_twice() -> None:
    p = HidKeyboardProtocol(opts())
    assert feed_all(p, typed("SS\n")) == [CardUnreadable(frame=b"SS", code="SS")]


def test_unknown_usage_drops_the_code_and_the_next_scan_works() -> None:
    p = HidKeyboardProtocol(opts())
    reports = [*typed("S"), rep(MINUS), RELEASE, *typed("A\n"), *typed("HK\n")]
    got = feed_all(p, reports)
    assert got[0] == Malformed(frame=b"SA", reason="code dropped: unknown key usage 0x2D")
    assert got[1:] == [CardDrawn(frame=b"HK", card="KH")]
    assert p.unknown_usages == 1


def test_error_rollover_report_is_counted_and_spoils_the_code() -> None:
    p = HidKeyboardProtocol(opts())
    rollover = bytes([0, 0, 1, 1, 1, 1, 1, 1])
    got = feed_all(p, [*typed("S"), rollover, *typed("A\n"), *typed("DQ\n")])
    assert p.rollover_reports == 1
    assert isinstance(got[0], Malformed) and "rollover" in got[0].reason
    assert got[1:] == [CardDrawn(frame=b"DQ", card="QD")]


def test_error_rollover_keeps_the_held_keys() -> None:
    # S held across the error report: it is not typed again when the error clears.
    p = HidKeyboardProtocol(opts())
    p.feed(rep(0x16, mod=LSHIFT), 0)
    p.feed(bytes([0, 0, 1, 1, 1, 1, 1, 1]), 0)
    assert p._held == frozenset({0x16})


@pytest.mark.parametrize("report", [b"", b"\x00" * 7, b"\x00" * 9, b"\x02\x00\x04"])
def test_report_of_wrong_length_is_malformed(report: bytes) -> None:
    p = HidKeyboardProtocol(opts())
    (r,) = p.feed(report, 0)
    assert isinstance(r, Malformed) and "expected 8" in r.reason


def test_bare_enter_and_modifier_only_reports_are_nothing() -> None:
    p = HidKeyboardProtocol(opts())
    assert feed_all(p, [rep(mod=LSHIFT), rep(0xE1, mod=LSHIFT), RELEASE, rep(ENTER), RELEASE]) == []


def test_eof_drops_a_half_typed_code() -> None:
    p = HidKeyboardProtocol(opts())
    assert feed_all(p, typed("S")) == []
    (r,) = p.eof()
    assert isinstance(r, Malformed) and "cut short" in r.reason and r.frame == b"S"
    assert p.eof() == []
    assert feed_all(p, typed("SA\n")) == [CardDrawn(frame=b"SA", card="AS")]


def test_marker_codes_mean_what_they_mean_on_the_shoe() -> None:
    p = HidKeyboardProtocol(opts())
    got = feed_all(p, typed("CUT\nERR\nSA!\n"))
    assert got == [
        CutCardOut(frame=b"CUT"),
        CardUnreadable(frame=b"ERR", code="ERR"),
        CardDrawn(frame=b"SA!", card="AS", face_up=True),
    ]


def test_drop_repeats_within_the_window() -> None:
    p = HidKeyboardProtocol(opts(drop_repeats=True, repeat_window=0.5))
    scan = typed("SA\n")
    got = feed_all(p, scan, 0.0) + feed_all(p, scan, 0.2) + feed_all(p, scan, 5.0)
    assert [r.card for r in got if isinstance(r, CardDrawn)] == ["AS", "AS"]
    assert p.repeats_dropped == 1


def test_a_code_without_enter_is_bounded() -> None:
    p = HidKeyboardProtocol(opts())
    got = feed_all(p, typed("AB" * 40 + "\n"))
    assert len(got) == 1 and isinstance(got[0], Malformed) and "longer than" in got[0].reason


def test_options_validate_usb_ids() -> None:
    assert opts(vendor_id="0x05E0", product_id="1200").vid == 0x05E0
    assert opts(product_id="1200").pid == 0x1200
    for bad in ({"vendor_id": "scanner"}, {"vendor_id": 0x10000}, {"endpoint": 0x01}):
        with pytest.raises(msgspec.ValidationError):
            opts(**bad)


@given(st.lists(st.binary(min_size=0, max_size=12), max_size=40))
def test_random_reports_never_raise(reports: list[bytes]) -> None:
    p = HidKeyboardProtocol(opts())
    for r in feed_all(p, reports) + p.eof():
        assert isinstance(r, Reading)


@given(st.lists(st.binary(min_size=8, max_size=8), max_size=60))
def test_random_whole_reports_never_make_a_card_from_a_spoiled_code(reports: list[bytes]) -> None:
    p = HidKeyboardProtocol(opts())
    for r in feed_all(p, reports):
        if isinstance(r, CardDrawn):
            assert len(r.frame) in (2, 3)


CODES = st.one_of(
    st.sampled_from(DECK).map(lambda c: encode(c, "suit-rank")),
    st.sampled_from(DECK).map(lambda c: c[1] + ("10" if c[0] == "T" else c[0])),
)


@st.composite
def typing_of(draw: st.DrawFn, text: str) -> list[bytes]:
    """``text`` and Enter, typed every way a keyboard may report it: keys held over
    several reports, the next key pressed before the last is released, shift
    pressed in a report of its own, left or right shift, keypad Enter."""
    out: list[bytes] = []
    held: int | None = None
    for ch in text + "\n":
        usage, shift = usage_of(ch)
        if ch == "\n":
            usage = draw(st.sampled_from((ENTER, KP_ENTER)))
        mod = draw(st.sampled_from((LSHIFT, RSHIFT, LSHIFT | RSHIFT))) if shift else 0
        roll = held is not None and held != usage and draw(st.booleans())
        if held is not None and not roll:
            out.append(RELEASE)
        if shift and draw(st.booleans()):
            out.append(rep(*([held] if roll and held else []), mod=mod))
        out.append(rep(held, usage, mod=mod) if roll and held else rep(usage, mod=mod))
        if roll:
            out.append(rep(usage, mod=mod))
        out += [out[-1]] * draw(st.integers(0, 2))
        held = usage
    out.append(RELEASE)
    return out


@given(st.data())
@settings(max_examples=300)
def test_a_code_decodes_the_same_however_it_is_reported(data: st.DataObject) -> None:
    text = data.draw(CODES)
    reports = data.draw(typing_of(text))
    o = opts()
    p = HidKeyboardProtocol(o)
    assert feed_all(p, reports) == [line_reading(text.encode(), o)]
    assert isinstance(line_reading(text.encode(), o), CardDrawn)


# --- a fake pyusb backend ------------------------------------------------------------------

_UNPLUG = object()
#: HID class descriptor of a boot keyboard (HID 1.11, report descriptor of 63 bytes).
_HID_DESCRIPTOR = [9, 0x21, 0x11, 0x01, 0x00, 0x01, 0x22, 0x3F, 0x00]


def _enodev() -> usb.core.USBError:
    return usb.core.USBError("No such device (it may have been disconnected)", -4, errno.ENODEV)


class FakeScanner:
    """One plugged-in keyboard-wedge scanner: one enumeration (a replug is a new one)."""

    def __init__(
        self,
        *,
        address: int = 5,
        bus: int = 1,
        serial: str | None = "SCN-0001",
        kernel_driver: bool = True,
        configured: bool = True,
        access_denied: bool = False,
        busy: bool = False,
        boot_stall: bool = False,
    ) -> None:
        self.address, self.bus, self.serial = address, bus, serial
        self.boot_stall = boot_stall
        self.kernel_driver = kernel_driver
        self.configuration = 1 if configured else 0
        self.access_denied = access_denied
        self.busy = busy
        self.enumerable = True
        self.plugged = True
        self.claimed: set[int] = set()
        self.open_handles = 0
        self.calls: list[str] = []
        self.cond = threading.Condition()
        self.queue: deque[Any] = deque()

    def push(self, *reports: bytes) -> None:
        with self.cond:
            self.queue.extend(reports)
            self.cond.notify_all()

    def type(self, text: str) -> None:
        self.push(*typed(text))

    def unplug(self) -> None:
        """Pulled out after what was pushed so far has been read."""
        with self.cond:
            self.enumerable = False
            self.queue.append(_UNPLUG)
            self.cond.notify_all()

    def check(self) -> None:
        if not self.plugged:
            raise _enodev()


class FakeHandle:
    def __init__(self, dev: FakeScanner) -> None:
        self.dev = dev


class FakeBackend(usb.backend.IBackend):
    """Just enough of a libusb for a boot keyboard: one configuration, one
    interface, one interrupt IN endpoint 0x81 of 8 bytes."""

    def __init__(self, *scanners: FakeScanner) -> None:
        super().__init__()
        self.scanners = list(scanners)

    def plug(self, scanner: FakeScanner) -> None:
        self.scanners.append(scanner)

    def enumerate_devices(self) -> Iterator[FakeScanner]:
        return iter([s for s in self.scanners if s.enumerable])

    def get_device_descriptor(self, dev: FakeScanner) -> Any:
        return SimpleNamespace(
            bLength=18,
            bDescriptorType=1,
            bcdUSB=0x0200,
            bDeviceClass=0,
            bDeviceSubClass=0,
            bDeviceProtocol=0,
            bMaxPacketSize0=8,
            idVendor=VID,
            idProduct=PID,
            bcdDevice=0x0100,
            iManufacturer=0,
            iProduct=0,
            iSerialNumber=3 if dev.serial else 0,
            bNumConfigurations=1,
            address=dev.address,
            bus=dev.bus,
            port_number=1,
            port_numbers=(1,),
            speed=2,
        )

    def get_configuration_descriptor(self, dev: FakeScanner, config: int) -> Any:
        if config != 0:
            raise IndexError(config)
        return SimpleNamespace(
            bLength=9,
            bDescriptorType=2,
            wTotalLength=34,
            bNumInterfaces=1,
            bConfigurationValue=1,
            iConfiguration=0,
            bmAttributes=0xA0,
            bMaxPower=50,
            extra_descriptors=[],
        )

    def get_interface_descriptor(self, dev: FakeScanner, intf: int, alt: int, config: int) -> Any:
        if (intf, alt, config) != (0, 0, 0):
            raise IndexError((intf, alt, config))
        return SimpleNamespace(
            bLength=9,
            bDescriptorType=4,
            bInterfaceNumber=0,
            bAlternateSetting=0,
            bNumEndpoints=1,
            bInterfaceClass=3,  # HID
            bInterfaceSubClass=1,  # boot
            bInterfaceProtocol=1,  # keyboard
            iInterface=0,
            extra_descriptors=_HID_DESCRIPTOR,
        )

    def get_endpoint_descriptor(
        self, dev: FakeScanner, ep: int, intf: int, alt: int, config: int
    ) -> Any:
        if (ep, intf, alt, config) != (0, 0, 0, 0):  # an index, not an address
            raise IndexError((ep, intf, alt, config))
        return SimpleNamespace(
            bLength=7,
            bDescriptorType=5,
            bEndpointAddress=0x81,
            bmAttributes=0x03,  # interrupt
            wMaxPacketSize=8,
            bInterval=10,
            bRefresh=0,
            bSynchAddress=0,
            extra_descriptors=[],
        )

    def open_device(self, dev: FakeScanner) -> FakeHandle:
        dev.check()
        if dev.access_denied:
            raise usb.core.USBError("Access denied (insufficient permissions)", -3, errno.EACCES)
        dev.open_handles += 1
        dev.calls.append("open")
        return FakeHandle(dev)

    def close_device(self, h: FakeHandle) -> None:
        h.dev.open_handles -= 1
        h.dev.calls.append("close")

    def set_configuration(self, h: FakeHandle, value: int) -> None:
        h.dev.check()
        h.dev.calls.append(f"set_configuration {value}")
        h.dev.configuration = value

    def get_configuration(self, h: FakeHandle) -> int:
        h.dev.check()
        return h.dev.configuration

    def claim_interface(self, h: FakeHandle, intf: int) -> None:
        h.dev.check()
        if h.dev.kernel_driver or h.dev.busy:
            raise usb.core.USBError("Resource busy", -6, errno.EBUSY)
        h.dev.claimed.add(intf)
        h.dev.calls.append(f"claim {intf}")

    def release_interface(self, h: FakeHandle, intf: int) -> None:
        h.dev.calls.append(f"release {intf}")
        h.dev.claimed.discard(intf)
        h.dev.check()

    def is_kernel_driver_active(self, h: FakeHandle, intf: int) -> bool:
        h.dev.check()
        return h.dev.kernel_driver

    def detach_kernel_driver(self, h: FakeHandle, intf: int) -> None:
        h.dev.check()
        h.dev.kernel_driver = False
        h.dev.calls.append(f"detach {intf}")

    def attach_kernel_driver(self, h: FakeHandle, intf: int) -> None:
        h.dev.check()
        if intf in h.dev.claimed:
            raise usb.core.USBError("Resource busy", -6, errno.EBUSY)
        h.dev.kernel_driver = True
        h.dev.calls.append(f"attach {intf}")

    def ctrl_transfer(
        self,
        h: FakeHandle,
        bmRequestType: int,
        bRequest: int,
        wValue: int,
        wIndex: int,
        data: array.array,
        timeout: int,
    ) -> int:
        h.dev.check()
        if (bmRequestType, bRequest, wValue, wIndex) == (0x21, 0x0B, 0, 0):  # SET_PROTOCOL(boot)
            if h.dev.boot_stall:
                raise usb.core.USBError("Pipe error", -9, errno.EPIPE)
            h.dev.calls.append("set_protocol boot")
            return 0
        if (bmRequestType, bRequest, wValue >> 8) != (0x80, 0x06, 0x03):  # GET_DESCRIPTOR(STRING)
            raise usb.core.USBError("Pipe error", -9, errno.EPIPE)
        index = wValue & 0xFF
        if index == 0:
            desc = bytes([4, 3, 0x09, 0x04])  # one langid: en-US
        elif index == 3 and h.dev.serial:
            text = h.dev.serial.encode("utf-16-le")
            desc = bytes([2 + len(text), 3]) + text
        else:
            raise usb.core.USBError("Pipe error", -9, errno.EPIPE)
        n = min(len(desc), len(data))
        data[:n] = array.array("B", desc[:n])
        return n

    def intr_read(self, h: FakeHandle, ep: int, intf: int, buff: array.array, timeout: int) -> int:
        dev = h.dev
        with dev.cond:
            end = time.monotonic() + timeout / 1000
            while not dev.queue:
                dev.check()
                left = end - time.monotonic()
                if left <= 0:
                    raise usb.core.USBTimeoutError("Operation timed out", -7, errno.ETIMEDOUT)
                dev.cond.wait(left)
            item = dev.queue.popleft()
        if item is _UNPLUG:
            dev.plugged = False
            dev.claimed.clear()
            raise _enodev()
        if isinstance(item, BaseException):
            raise item
        n = min(len(item), len(buff))
        buff[:n] = array.array("B", item[:n])
        return n


# --- the transport -------------------------------------------------------------------------


class Sink:
    """A bare TransportSink recording every callback."""

    def __init__(self) -> None:
        self.events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.data: list[bytes] = []
        self.threads: set[str] = set()

    def on_connected(self, info: dict[str, Any]) -> None:
        self.events.put_nowait(("connected", info))

    def on_disconnected(self, reason: str) -> None:
        self.events.put_nowait(("disconnected", reason))

    def on_data(self, data: bytes, mono: float) -> None:
        self.threads.add(threading.current_thread().name)
        self.data.append(data)
        self.events.put_nowait(("data", data))

    def on_sent(self, data: bytes, mono: float) -> None:
        raise AssertionError("a scanner is never written to")

    async def expect(self, kind: str) -> Any:
        got, value = await asyncio.wait_for(self.events.get(), GUARD)
        assert got == kind, f"expected {kind}, got {got}: {value!r}"
        return value


def transport(backend: FakeBackend, **kw: Any) -> UsbTransport:
    kw.setdefault("read_timeout_ms", 20)
    kw.setdefault("reconnect_min", 0.01)
    kw.setdefault("reconnect_max", 0.05)
    return UsbTransport(VID, PID, kw.pop("serial", None), backend=backend, **kw)


@contextlib.asynccontextmanager
async def running(t: UsbTransport, sink: Any):
    task = asyncio.create_task(t.run(sink))
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def reader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("usb-read")]


async def test_reports_arrive_one_by_one_on_the_loop_thread() -> None:
    scanner = FakeScanner()
    sink = Sink()
    async with running(transport(FakeBackend(scanner)), sink):
        info = await sink.expect("connected")
        assert info["port"] == "/dev/bus/usb/001/005" and info["spec"] == "usb:05e0:1200"
        scanner.type("SA")
        for want in typed("SA"):
            assert await sink.expect("data") == want
    assert sink.threads == {threading.current_thread().name}
    assert not reader_threads()


async def test_kernel_driver_detached_on_claim_and_reattached_on_close() -> None:
    scanner = FakeScanner(kernel_driver=True)
    sink = Sink()
    t = transport(FakeBackend(scanner))
    async with running(t, sink):
        info = await sink.expect("connected")
        assert info["kernel_driver_detached"]  # the sysfs name, or "kernel driver"
        assert scanner.claimed == {0} and not scanner.kernel_driver
        assert t.connected and t.write(b"x") is False
    assert not reader_threads()  # cancelled: the reader ended within a read timeout
    assert not t.connected
    assert scanner.kernel_driver and scanner.claimed == set() and scanner.open_handles == 0
    calls = scanner.calls
    assert calls.index("detach 0") < calls.index("claim 0") < calls.index("release 0")
    assert calls.index("release 0") < calls.index("attach 0") < len(calls) - 1
    assert calls[-1] == "close"
    assert not any(c.startswith("set_configuration") for c in calls)
    assert "set_protocol boot" not in calls  # a bare UsbTransport leaves the protocol alone


async def test_no_kernel_driver_nothing_to_reattach() -> None:
    scanner = FakeScanner(kernel_driver=False)
    sink = Sink()
    async with running(transport(FakeBackend(scanner)), sink):
        assert (await sink.expect("connected"))["kernel_driver_detached"] is None
    assert "attach 0" not in scanner.calls and not scanner.kernel_driver


async def test_unconfigured_device_gets_its_configuration() -> None:
    scanner = FakeScanner(configured=False)
    sink = Sink()
    async with running(transport(FakeBackend(scanner)), sink):
        await sink.expect("connected")
    assert "set_configuration 1" in scanner.calls


async def test_a_device_refusing_boot_protocol_is_still_read() -> None:
    scanner = FakeScanner(boot_stall=True)
    sink = Sink()
    async with running(transport(FakeBackend(scanner), boot_protocol=True), sink):
        await sink.expect("connected")
        scanner.push(rep(0x16))
        assert await sink.expect("data") == rep(0x16)


async def test_access_denied_names_the_udev_rule() -> None:
    sink = Sink()
    async with running(transport(FakeBackend(FakeScanner(access_denied=True))), sink):
        reason = await sink.expect("disconnected")
    assert "access denied" in reason and "/dev/bus/usb/001/005" in reason
    assert "/etc/udev/rules.d/99-tabled.rules" in reason and "plugdev" in reason
    assert 'ATTR{idVendor}=="05e0"' in reason and 'ATTR{idProduct}=="1200"' in reason


async def test_busy_interface_is_reported() -> None:
    sink = Sink()
    scanner = FakeScanner(kernel_driver=False, busy=True)
    async with running(transport(FakeBackend(scanner)), sink):
        reason = await sink.expect("disconnected")
    assert "busy" in reason and "interface 0" in reason
    assert scanner.open_handles == 0


async def test_no_libusb_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_backend(**kw: Any) -> Any:
        raise usb.core.NoBackendError("No backend available")

    monkeypatch.setattr(usb.core, "find", no_backend)
    sink = Sink()
    async with running(UsbTransport(VID, PID, read_timeout_ms=20), sink):
        reason = await sink.expect("disconnected")
    assert reason == "libusb-1.0 is not installed: apt install libusb-1.0-0"


async def test_absent_device_then_plugged_in() -> None:
    backend = FakeBackend()
    sink = Sink()
    t = transport(backend)
    async with running(t, sink):
        assert await sink.expect("disconnected") == "no USB device usb:05e0:1200 is present"
        backend.plug(FakeScanner(address=9))
        assert (await sink.expect("connected"))["port"] == "/dev/bus/usb/001/009"
    assert t.reconnects == 0


async def test_two_alike_need_a_serial_number() -> None:
    a, b = FakeScanner(address=5, serial="A1"), FakeScanner(address=6, serial="B2")
    sink = Sink()
    async with running(transport(FakeBackend(a, b)), sink):
        reason = await sink.expect("disconnected")
    assert "2 USB devices have id 05e0:1200" in reason and "serial" in reason
    sink = Sink()
    async with running(transport(FakeBackend(a, b), serial="b2"), sink):
        assert (await sink.expect("connected"))["port"] == "/dev/bus/usb/001/006"
    assert b.calls[-1] == "close" and a.open_handles == 0
    sink = Sink()
    async with running(transport(FakeBackend(a, b), serial="C3"), sink):
        reason = await sink.expect("disconnected")
    assert "no USB device usb:05e0:1200:C3" in reason and "serial A1" in reason


async def test_close_ends_run() -> None:
    scanner = FakeScanner()
    sink = Sink()
    t = transport(FakeBackend(scanner))
    task = asyncio.create_task(t.run(sink))
    await sink.expect("connected")
    await t.close()
    await asyncio.wait_for(task, GUARD)
    assert not reader_threads() and scanner.kernel_driver and scanner.open_handles == 0


# --- through the daemon's DeviceRunner --------------------------------------------------------


async def test_unplug_mid_code_then_replug_at_a_new_address() -> None:
    first = FakeScanner(address=5)
    backend = FakeBackend(first)
    driver = HidScannerDriver(opts(read_timeout_ms=20))
    inputs = Inputs()
    runner = DeviceRunner("scanner", driver, inputs)
    t = driver.usb_transport(reconnect_min=0.01, reconnect_max=0.05, backend=backend)
    runner.transport = t
    async with running(t, runner):
        await inputs.until(lambda: inputs.health() == [("ok", "/dev/bus/usb/001/005")])
        first.type("SA\n")
        await inputs.until(lambda: inputs.cards() == ["AS"])

        first.type("H1")  # the cable is pulled half way through "H10"
        first.unplug()
        await inputs.until(lambda: len(inputs.health()) == 2)
        assert inputs.health()[1] == ("disconnected", None)
        assert "unplugged" in runner.reason
        assert runner.counters.malformed == 1
        assert runner.last_malformed is not None and "cut short" in runner.last_malformed[0]
        assert inputs.cards() == ["AS"]  # never a partial card (H1 would be the ace)

        backend.plug(FakeScanner(address=6))  # re-enumerated at a new address
        await inputs.until(lambda: len(inputs.health()) == 3)
        assert inputs.health()[2] == ("ok", "/dev/bus/usb/001/006")
        assert t.reconnects == 1 and runner.counters.reconnects == 1
        backend.scanners[-1].type("H10\n")
        await inputs.until(lambda: inputs.cards() == ["AS", "TH"])
    assert not reader_threads()
    assert backend.scanners[-1].kernel_driver  # the live one got its driver back
    assert "set_protocol boot" in first.calls  # the driver asks for 8-byte boot reports
