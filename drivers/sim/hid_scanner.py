"""A simulated keyboard-wedge card scanner, for ``port = "sim"``.

USB does not go over a pty, so the scanner is simulated one level lower than
the serial devices: :class:`~drivers.sim.usb_backend.ScannerBackend` is a pyusb
backend that shows one HID boot keyboard, as libusb would, and the daemon's real
:class:`drivers.usb.UsbTransport` reads it exactly as it reads a real scanner.
What a boot keyboard sends is in :mod:`drivers.sim.hid_keyboard`.

The dealer drawing the cards is :class:`drivers.sim.shoe.ShoeSimulator`: the
same seeded shoe, the same way of following the table's events (burn on
``shoe.started`` until ``shoe.burn``, deal on ``betting.closed`` until
``hand.result``) and the same injected dealer errors. Only the output
differs: where the shoe writes a line to a pty, the scanner types the code
as key press and release reports and then Enter. A byte no key types (the
shoe's "garbage" error) is typed as a key the driver does not map, so the
code is dropped whole, as a misread barcode typing junk would be.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from drivers.framing import LineFramer
from drivers.hid_scanner import HidScannerOptions
from drivers.sim.hid_keyboard import BOOT_KEYBOARD_REPORT_DESCRIPTOR, key_reports
from drivers.sim.shoe import Options, ShoeSimulator
from drivers.sim.usb_backend import ScannerBackend

__all__ = ["BOOT_KEYBOARD_REPORT_DESCRIPTOR", "ScannerBackend", "ScannerSimulator", "key_reports"]

log = structlog.get_logger("sim.hid_scanner")


class _Keyboard:
    """The simulator's link: the shoe simulator writes code lines to it, and the
    scanner types them, one code per line, on the backend's endpoint."""

    def __init__(self, backend: ScannerBackend) -> None:
        self.backend = backend
        #: set by the owner while the transport holds the interface (its ``on_connected``);
        #: the dealer waits for it before every card.
        self.opened = asyncio.Event()
        self.codes_typed = 0
        self._lines = LineFramer(max_line=256)

    def write(self, data: bytes) -> None:
        for line in self._lines.lines(data, []):
            if self.backend.type_reports(key_reports(line)):
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
        made = super().from_options(
            shoe,
            o,
            vendor_id=shoe.vid,
            product_id=shoe.pid,
            serial=shoe.serial,
            interface=shoe.interface,
            endpoint=shoe.endpoint,
        )
        assert isinstance(made, ScannerSimulator)
        return made

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
