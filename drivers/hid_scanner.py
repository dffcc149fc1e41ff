"""USB HID barcode card scanners: keyboard-wedge scanners read through libusb.

Live baccarat studios read cards with barcode scanners that present
themselves as USB keyboards: each scan types a short code and Enter
(``docs/protocols/sources.md``, after
``ikigai-kevin-k/studio-sdp-mirror`` ``src/refactor/proto/hid.py``). The
daemon takes the interface from the kernel's keyboard driver, so scans never
type into a console, and reads the keyboard's reports itself
(:class:`drivers.usb.UsbTransport`).

Sources, cited in comments as:

* [hid] *Device Class Definition for HID 1.11*, appendix B.1 (the boot
  keyboard report: modifier byte, reserved byte, six key usages) and
  appendix C (keys are reported while held; a key is "pressed" when its usage
  appears, so rollover and held keys are told apart by comparing reports);
* [hut] *HID Usage Tables 1.5*, §10 Keyboard/Keypad page 0x07 (usages
  0x04–0x1D letters, 0x1E–0x27 digits 1–9 and 0, 0x28 Enter, 0x58 keypad
  Enter, 0x01 ErrorRollOver, 0xE0–0xE7 modifiers), US layout for shifted digits;
* [ours] a decision of this driver, listed in ``docs/protocols/hid-scanner.md``.

A finished code means exactly what the same line means from the serial shoe:
both go through :func:`drivers.shoe_line.line_reading`, which decodes with
:mod:`drivers.card_codes`. A code that was not typed cleanly (an unknown key,
a rollover error, too long, cut off by an unplug) is dropped whole, as a
counted :class:`~drivers.readings.Malformed`, never a partial card.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

import msgspec

from drivers.base import Driver, Protocol
from drivers.card_codes import CardCodeOptions, Encoding, RepeatFilter
from drivers.readings import BadgeRead, Malformed, Reading
from drivers.shoe_line import line_reading

if TYPE_CHECKING:
    from drivers.usb import UsbTransport

#: bytes in a boot keyboard report [hid].
REPORT_SIZE: Final = 8
#: modifier bits for left and right shift [hid].
SHIFT: Final = 0x02 | 0x20
#: Enter and keypad Enter end a code [hut].
ENTER: Final = frozenset({0x28, 0x58})
#: ErrorRollOver, POSTFail, ErrorUndefined: the key array is not valid [hut].
ERROR_USAGES: Final = frozenset({0x01, 0x02, 0x03})
#: modifier usages, which some keyboards also list in the key array [hut].
MODIFIER_USAGES: Final = range(0xE0, 0xE8)
#: longest code kept; the serial shoe's line bound [ours].
MAX_CODE: Final = 64

_LETTERS: Final = {0x04 + i: chr(ord("a") + i) for i in range(26)}
_DIGITS: Final = "1234567890"
_SHIFTED_DIGITS: Final = "!@#$%^&*()"  # US layout [hut]


def key_char(usage: int, shift: bool) -> str | None:
    """The character a US keyboard types for ``usage``; None for a key we don't map."""
    if usage in _LETTERS:
        c = _LETTERS[usage]
        return c.upper() if shift else c
    if 0x1E <= usage <= 0x27:
        i = usage - 0x1E
        return _SHIFTED_DIGITS[i] if shift else _DIGITS[i]
    return None


def _usb_id(value: int | str, what: str) -> int:
    """A USB id from config: an int (TOML ``0x05e0``) or a hex string as lsusb prints it."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a number or a hex string, got {value!r}")
    if isinstance(value, str):
        text = value.strip().lower().removeprefix("0x")
        if not (1 <= len(text) <= 4) or any(c not in "0123456789abcdef" for c in text):
            raise ValueError(
                f"{what} {value!r} is not a 4-digit hex USB id (as lsusb shows it, e.g. '05e0')"
            )
        return int(text, 16)
    if not 0 <= value <= 0xFFFF:
        raise ValueError(f"{what} {value} is out of range 0..0xffff")
    return value


class HidScannerOptions(CardCodeOptions, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Which scanner (by USB identity, never by bus address) and what its codes mean."""

    vendor_id: int | str
    product_id: int | str
    #: the USB serial number, needed only when two scanners of one model are plugged in.
    serial: str | None = None
    interface: Annotated[int, msgspec.Meta(ge=0, le=255)] = 0
    #: the IN endpoint address (e.g. 0x81); default: the interface's first interrupt IN.
    endpoint: Annotated[int, msgspec.Meta(ge=0x81, le=0x8F)] | None = None
    #: keyboard-wedge scanners in studios type suit then rank (``HT``, ``SA``);
    #: the other code options are the serial shoe's (:class:`CardCodeOptions`).
    encoding: Encoding = "suit-rank"
    #: ``cards``: each code is a card (the studio's scanner); ``badges``: each code is a staff
    #: badge, a dealer signing in or out at the table (``docs/operations.md``) [ours].
    reads: Literal["cards", "badges"] = "cards"
    #: how long one blocking read waits; it bounds how long stopping takes.
    read_timeout_ms: Annotated[int, msgspec.Meta(ge=10, le=10_000)] = 500

    def __post_init__(self) -> None:
        # Normalised once, so the rest of the code sees ints (msgspec turns the
        # ValueError into a validation error naming the option).
        msgspec.structs.force_setattr(self, "vendor_id", _usb_id(self.vendor_id, "vendor_id"))
        msgspec.structs.force_setattr(self, "product_id", _usb_id(self.product_id, "product_id"))

    @property
    def vid(self) -> int:
        return int(self.vendor_id)

    @property
    def pid(self) -> int:
        return int(self.product_id)


class HidKeyboardProtocol(Protocol):
    """Boot keyboard reports in, card readings out (one per Enter)."""

    STATS = ("repeats_dropped", "rollover_reports", "unknown_usages")

    @property
    def repeats_dropped(self) -> int:
        return self.repeats.dropped

    def __init__(self, options: HidScannerOptions) -> None:
        self.o = options
        self._held: frozenset[int] = frozenset()
        self._code: list[str] = []
        #: why the code being typed will be dropped at its Enter, if it will.
        self._spoiled: str | None = None
        self.repeats = RepeatFilter(options)
        self.rollover_reports = 0
        self.unknown_usages = 0

    def feed(self, data: bytes, now: float) -> list[Reading]:
        if len(data) != REPORT_SIZE:
            return [
                Malformed(
                    frame=bytes(data[:64]),
                    reason=f"keyboard report of {len(data)} bytes, expected {REPORT_SIZE}",
                )
            ]
        keys = data[2:]
        if any(k in ERROR_USAGES for k in keys):
            # The key array is void while the keyboard is in error [hut]: keys
            # pressed and released meanwhile are lost, so the code is too. The
            # held keys stay as they were, to compare the next good report with.
            self.rollover_reports += 1
            self._spoil("the keyboard reported a rollover error (keys may be lost)")
            return []
        shift = bool(data[0] & SHIFT)
        # New presses only, in slot order (press order on the keyboards we know [ours]):
        # a key still held from the previous report is not typed again [hid].
        held = frozenset(k for k in keys if k)
        pressed = [
            k for k in dict.fromkeys(keys) if k and k not in self._held and k not in MODIFIER_USAGES
        ]
        self._held = held
        out: list[Reading] = []
        for usage in pressed:
            if usage in ENTER:
                r = self._end(now)
                if r is not None:
                    out.append(r)
                continue
            ch = key_char(usage, shift)
            if ch is None:
                self.unknown_usages += 1
                self._spoil(f"unknown key usage 0x{usage:02X}")
            elif len(self._code) >= MAX_CODE:
                self._spoil(f"code longer than {MAX_CODE} characters")
            else:
                self._code.append(ch)
        return out

    def eof(self) -> list[Reading]:
        text = "".join(self._code)
        spoiled = self._spoiled
        self._reset()
        self._held = frozenset()
        self.repeats.reset()
        if not text and spoiled is None:
            return []
        why = f" ({spoiled})" if spoiled else ""
        return [
            Malformed(
                frame=text.encode("ascii"), reason=f"code cut short by end of link, no Enter{why}"
            )
        ]

    def _spoil(self, why: str) -> None:
        if self._spoiled is None:
            self._spoiled = why

    def _reset(self) -> None:
        self._code.clear()
        self._spoiled = None

    def _end(self, now: float) -> Reading | None:
        text = "".join(self._code)
        spoiled = self._spoiled
        self._reset()
        frame = text.encode("ascii")
        if spoiled is not None:
            return Malformed(frame=frame, reason=f"code dropped: {spoiled}")
        if not text:
            return None  # a bare Enter: nothing was scanned
        if self.repeats.repeat(text, now):
            return None
        if self.o.reads == "badges":
            return BadgeRead(frame=frame, code=text)
        return line_reading(frame, self.o)


class HidScannerDriver(Driver):
    name = "hid-scanner"
    transport = "usb"
    Options = HidScannerOptions
    maturity = "experimental"

    def protocol(self) -> HidKeyboardProtocol:
        assert isinstance(self.options, HidScannerOptions)
        return HidKeyboardProtocol(self.options)

    def usb_transport(
        self,
        *,
        reconnect_min: float = 0.1,
        reconnect_max: float = 30.0,
        clock: Any = time.monotonic,
        backend: Any = None,
    ) -> UsbTransport:
        """The transport for this scanner, from its options (``backend``: tests' fake pyusb backend)."""
        from drivers.usb import UsbTransport

        o = self.options
        assert isinstance(o, HidScannerOptions)
        return UsbTransport(
            o.vid,
            o.pid,
            o.serial,
            interface=o.interface,
            endpoint=o.endpoint,
            read_timeout_ms=o.read_timeout_ms,
            boot_protocol=True,
            reconnect_min=reconnect_min,
            reconnect_max=reconnect_max,
            clock=clock,
            backend=backend,
        )
