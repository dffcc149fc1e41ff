"""Serial port names: what to open for a configured port, and why an open failed.

A port is a path (symlinks resolved again at every reconnect), a pyserial URL, or
``usb:VID:PID[:SERIAL]`` looked up in the USB enumeration at every reconnect; the
transport (:mod:`drivers.serial`) calls :func:`resolve_port` before each open, and
``tablectl ports`` / ``doctor`` call it to check a configuration.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable, Iterable
from typing import Any

import serial
import serial.tools.list_ports

from drivers.transport import Unavailable

_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_USB_RE = re.compile(r"^usb:([0-9a-f]{1,4}):([0-9a-f]{1,4})(?::(.+))?$", re.IGNORECASE)
BARE_TTY_RE = re.compile(r"^/dev/tty(USB|ACM)\d+$")


class PortUnavailable(Unavailable):
    """The port can't be used right now; the message is the reason a technician reads."""


class PortSpecError(ValueError):
    """The configured port is malformed: a configuration error, never retried."""


def is_url(spec: str) -> bool:
    return bool(_URL_RE.match(spec))


def parse_usb_spec(spec: str) -> tuple[int, int, str | None] | None:
    """``usb:VID:PID[:SERIAL]`` → ``(vid, pid, serial)``; None for other port forms."""
    if not spec.lower().startswith("usb:"):
        return None
    m = _USB_RE.match(spec)
    if m is None:
        raise PortSpecError(
            f"bad USB port {spec!r}: expected usb:VID:PID or usb:VID:PID:SERIAL "
            "with VID and PID in hex, e.g. usb:0403:6001:A50285BI"
        )
    return int(m[1], 16), int(m[2], 16), m[3]


def resolve_port(spec: str, *, comports: Callable[[], Iterable[Any]] | None = None) -> str:
    """What to open for ``spec`` right now: a device path or a URL.

    Called at every (re)connect, because the answer changes when a device is
    replugged. ``comports`` defaults to pyserial's enumeration; tests pass a
    fake returning objects with ``device``, ``vid``, ``pid``, ``serial_number``.
    Raises :class:`PortUnavailable` when a USB identity matches no port or
    several, and :class:`PortSpecError` when ``spec`` is malformed.
    """
    if is_url(spec):
        return spec
    usb = parse_usb_spec(spec)
    if usb is None:
        return os.path.realpath(spec)
    vid, pid, serial_number = usb
    ports = list((comports or serial.tools.list_ports.comports)())
    ident = f"{vid:04x}:{pid:04x}"
    want = f"USB id {ident}" + (f" (serial {serial_number})" if serial_number else "")
    matches = [
        p
        for p in ports
        if p.vid == vid
        and p.pid == pid
        and (
            serial_number is None or (p.serial_number or "").casefold() == serial_number.casefold()
        )
    ]
    if not matches:
        raise PortUnavailable(f"no serial port with {want} is present")
    if len(matches) > 1:
        listing = ", ".join(
            f"{p.device} (serial {p.serial_number or 'none'})"
            for p in sorted(matches, key=lambda p: p.device)
        )
        if serial_number is None:
            raise PortUnavailable(
                f"{len(matches)} serial ports have USB id {ident}: {listing}; "
                f"say which one by its serial number: usb:{ident}:<serial>"
            )
        raise PortUnavailable(
            f"{len(matches)} serial ports have {want}: {listing}; a multi-port adapter "
            "or adapters sharing a serial number: name the port by /dev/serial/by-id/…-ifNN "
            "or /dev/serial/by-path/ instead"
        )
    return str(matches[0].device)


def open_failure(spec: str, target: str, exc: BaseException) -> str:
    """A technician-readable reason for a failed open."""
    where = spec if spec == target else f"{spec} -> {target}"
    code = getattr(exc, "errno", None)
    if code in (errno.ENOENT, errno.ENODEV, errno.ENXIO):
        return f"port not present: {where} ({os.strerror(code)})"
    if code in (errno.EAGAIN, errno.EBUSY):
        # pyserial's exclusive=True is flock(LOCK_EX|LOCK_NB): EAGAIN when held.
        return f"port is in use by another process: {where}"
    if code in (errno.EACCES, errno.EPERM):
        return (
            f"permission denied opening {where} "
            "(the service user needs the port's group, e.g. dialout)"
        )
    msg = str(exc)
    return msg if target in msg else f"cannot open {where}: {msg}"
