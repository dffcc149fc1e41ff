"""The serial transport: moves bytes between a serial port and a sink, never parses them.

One :class:`SerialTransport` owns one configured port for the daemon's whole
life. ``run()`` resolves the port, opens it, pumps bytes, and on any loss
closes it, tells the sink and reopens it with capped exponential backoff, by
itself, until cancelled.

Three port forms (see :func:`resolve_port`):

* a path, preferably ``/dev/serial/by-id/…``; symlinks are resolved again at
  every (re)connect, because after a replug the same name points elsewhere;
* a pyserial URL (``socket://``, ``rfc2217://``, ``spy://``, ``loop://``…);
* ``usb:VID:PID[:SERIAL]``, looked up in the USB enumeration at every
  (re)connect, so ttyUSB0 → ttyUSB1 renumbering doesn't matter.

I/O, by form:

* paths: pyserial opens and configures the port (``exclusive=True``,
  ``timeout=0``), then the loop watches the raw fd with ``add_reader`` and the
  transport uses ``os.read``/``os.write`` directly: no thread, no polling.
* URLs with a usable ``fileno()`` (``socket://``, ``spy://``): the loop watches
  that fd, but reading and writing go through the pyserial object, because its
  methods add behaviour a raw fd would bypass (spy's hex dump, for one).
* URLs without one (``loop://``, ``rfc2217://``): there is no fd to watch, so
  a reader thread blocks in ``read()`` with a short timeout and a writer thread
  drains a queue; both hand results to the loop with ``call_soon_threadsafe``.

Every sink callback runs on the loop thread. An exception raised by the sink
is a bug in the daemon, not a device problem: it closes the port and
propagates out of ``run()``.

By job: this module is the transport's life (resolve, open, pump, lose, reopen);
:mod:`drivers.serial_ports` resolves port names and words open failures for a
technician; :mod:`drivers.serial_links` holds the two ways of doing I/O (an fd the
loop watches, a pyserial object behind threads), the two halves of one contract.
"""

from __future__ import annotations

import asyncio
import os
import termios
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import msgspec
import serial
import serial.tools.list_ports
import structlog

from drivers.serial_links import (
    MAX_PENDING,
    READ_SIZE,
    THREAD_READ_TIMEOUT,
    FdLink,
    Link,
    ThreadLink,
    quiet_close,
    usable_fileno,
)
from drivers.serial_ports import (
    BARE_TTY_RE,
    PortSpecError,
    PortUnavailable,
    is_url,
    open_failure,
    parse_usb_spec,
    resolve_port,
)
from drivers.transport import Reconnecting

__all__ = [
    "MAX_PENDING",
    "READ_SIZE",
    "PortSpecError",
    "PortUnavailable",
    "SerialSettings",
    "SerialTransport",
    "TransportSink",
    "is_url",
    "parse_usb_spec",
    "resolve_port",
]


class TransportSink(Protocol):
    """Where a transport reports. Called on the loop thread only."""

    def on_connected(self, info: dict[str, Any]) -> None:
        """The port is open: ``{"port": resolved path or URL, "spec": configured port}``."""

    def on_data(self, data: bytes, mono: float) -> None:
        """Bytes read, with the transport's clock reading when they were read."""

    def on_disconnected(self, reason: str) -> None:
        """The link was lost, or the first attempt to open it failed (human-readable reason)."""

    def on_sent(self, data: bytes, mono: float) -> None:
        """Bytes actually written to the port (may be called from inside ``write()``)."""


class SerialSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Line settings. Ignored by ptys and sockets, applied by real UARTs."""

    baudrate: int = 9600
    bytesize: int = 8
    parity: str = "N"
    stopbits: float | int = 1


class SerialTransport(Reconnecting):
    """One serial port, kept open: reconnects by itself with capped exponential backoff."""

    def __init__(
        self,
        port: str,
        settings: SerialSettings,
        *,
        reconnect_min: float = 0.1,
        reconnect_max: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            reconnect_min=reconnect_min,
            reconnect_max=reconnect_max,
            clock=clock,
            log=structlog.get_logger(__name__).bind(port=port),
        )
        parse_usb_spec(port)  # a malformed usb: spec is a config error, not a retry
        try:  # validates the settings as pyserial will apply them, without opening
            serial.Serial(
                baudrate=settings.baudrate,
                bytesize=settings.bytesize,
                parity=settings.parity,
                stopbits=settings.stopbits,
            )
        except ValueError as exc:
            raise ValueError(f"serial settings for {port}: {exc}") from None
        self.port = port
        self.settings = settings
        #: bytes refused by write() because MAX_PENDING was reached.
        self.bytes_dropped = 0
        self._overflow_reported = False
        if BARE_TTY_RE.match(port):
            self._log.warning(
                "serial port named by kernel number; it can change after a replug",
                hint="use /dev/serial/by-id/… or usb:VID:PID:SERIAL",
            )

    def write(self, data: bytes) -> bool:
        """Queue bytes for the device; False (nothing queued) when not connected or full."""
        link = self._link
        if link is None or not link.alive:
            return False
        return link.write(bytes(data))

    noun = "serial port"

    def _on_link(self, link: Link) -> None:
        self._overflow_reported = False

    def _info(self, link: Link) -> dict[str, Any]:
        return {"port": link.target, "spec": self.port}

    async def _connect(self, sink: TransportSink) -> Link:
        spec = self.port
        if parse_usb_spec(spec) is not None:  # enumeration reads sysfs: keep it off the loop
            target = await asyncio.to_thread(resolve_port, spec)
        else:
            target = resolve_port(spec)
        if is_url(target):
            ser, fd = await self._open_url(target)
            if fd is None:
                return ThreadLink(self, ser, target, sink)
            return FdLink(self, ser, target, sink, fd=fd, raw=False)
        ser = self._configured(serial.Serial())
        ser.port = target
        try:
            ser.open()
        except (OSError, termios.error) as exc:
            raise PortUnavailable(open_failure(spec, target, exc)) from None
        try:
            fd = ser.fileno()
            self._low_latency(ser)
            # pyserial leaves VMIN=0, VTIME=0: an empty non-blocking read then
            # returns b'' instead of EAGAIN, indistinguishable from a hangup.
            # VMIN=1 makes b'' mean end of file only.
            attrs = termios.tcgetattr(fd)
            attrs[6][termios.VMIN] = 1
            attrs[6][termios.VTIME] = 0
            termios.tcsetattr(fd, termios.TCSANOW, attrs)
            os.set_blocking(fd, False)
        except (OSError, termios.error) as exc:
            quiet_close(ser)
            raise PortUnavailable(f"cannot set up {target}: {exc}") from None
        return FdLink(self, ser, target, sink, fd=fd, raw=True)

    def _configured(self, ser: Any) -> Any:
        s = self.settings
        ser.baudrate = s.baudrate
        ser.bytesize = s.bytesize
        ser.parity = s.parity
        ser.stopbits = s.stopbits
        ser.exclusive = True
        ser.timeout = 0
        ser.write_timeout = 0
        return ser

    def _low_latency(self, ser: Any) -> None:
        """FTDI adapters batch reads for 16 ms by default; ask for 1 ms. Best effort:
        ptys and other drivers refuse the ioctl (ValueError/OSError), which is fine."""
        try:
            ser.set_low_latency_mode(True)
        except (ValueError, OSError, NotImplementedError, AttributeError) as exc:
            self._log.debug("low latency mode not available", reason=str(exc))

    async def _open_url(self, target: str) -> tuple[Any, int | None]:
        """Open a URL port in a thread: socket:// connects and rfc2217:// negotiates,
        both blocking. If cancelled meanwhile, the port is closed when the open ends."""

        def open_sync() -> tuple[Any, int | None]:
            try:
                ser = self._configured(serial.serial_for_url(target, do_not_open=True))
                ser.open()
            except (OSError, ValueError, termios.error) as exc:
                raise PortUnavailable(open_failure(target, target, exc)) from None
            fd = usable_fileno(ser)
            if fd is None:
                ser.timeout = THREAD_READ_TIMEOUT
                ser.write_timeout = None
            elif isinstance(ser, serial.Serial):  # spy:// and friends wrap a real tty
                self._low_latency(ser)
            return ser, fd

        fut = asyncio.get_running_loop().run_in_executor(None, open_sync)
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:

            def drop(f: asyncio.Future[tuple[Any, int | None]]) -> None:
                if not f.cancelled() and f.exception() is None:
                    threading.Thread(target=quiet_close, args=(f.result()[0],)).start()

            fut.add_done_callback(drop)
            raise

    def _dropped(self, n: int, pending: int) -> None:
        self.bytes_dropped += n
        if not self._overflow_reported:
            self._overflow_reported = True
            self._log.warning(
                "serial output not drained: dropping writes until it is",
                pending=pending,
                dropped=n,
                limit=MAX_PENDING,
            )

    def _drained(self) -> None:
        self._overflow_reported = False
