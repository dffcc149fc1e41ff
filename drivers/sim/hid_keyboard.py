"""What a HID boot keyboard is on the wire: its descriptors and the reports it types.

Pure data and functions (*HID 1.11* appendix B.1 and E.6, chapter 9 of *USB 2.0*), so
the simulated backend (:mod:`drivers.sim.usb_backend`) only keeps state and the rules
of libusb; a descriptor is read here against the specification in one place.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Final, Protocol

from drivers.hid_scanner import REPORT_SIZE, key_char

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


class Identity(Protocol):
    """Who the keyboard says it is: the backend's configured identity."""

    vendor_id: int
    product_id: int
    serial: str | None
    interface: int
    endpoint: int
    bus: int
    manufacturer: str
    product: str


def device_descriptor(self: Identity, address: int) -> Any:
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
        address=address,
        bus=self.bus,
        port_number=None,  # no sysfs path to look the kernel driver up by
        port_numbers=None,
        speed=1,  # LIBUSB_SPEED_LOW, as keyboards are
    )


def configuration_descriptor(config: int) -> Any:
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


def interface_descriptor(self: Identity, intf: int, alt: int, config: int) -> Any:
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


def endpoint_descriptor(self: Identity, ep: int, intf: int, alt: int, config: int) -> Any:
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


def descriptor_bytes(self: Identity, kind: int, index: int) -> bytes | None:
    """GET_DESCRIPTOR's answer, as the device sends it over endpoint 0 (None: it stalls)."""
    if kind == 1 and index == 0:
        return (
            bytes([18, 1, 0x00, 0x02, 0, 0, 0, 8])
            + self.vendor_id.to_bytes(2, "little")
            + self.product_id.to_bytes(2, "little")
            + bytes([0x00, 0x01, 1, 2, 3 if self.serial else 0, 1])
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
    return None
