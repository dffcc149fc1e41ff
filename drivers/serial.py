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

Why long: the three port forms need two ways of doing I/O (an fd the loop watches, a
pyserial object behind threads) under one life of resolve, open, pump, lose and reopen;
the links are the two halves of one contract and the transport the only user of both.
Resolving a port and the open-failure messages a technician reads sit beside them.
"""

from __future__ import annotations

import asyncio
import errno
import os
import queue
import re
import termios
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import msgspec
import serial
import serial.tools.list_ports
import structlog

from drivers.transport import Reconnecting, Unavailable

#: bytes asked of one ``os.read``; a pty hands out at most ~4 KiB per read anyway.
READ_SIZE = 4096
#: unwritten output kept per connection. A device that stops reading for
#: 64 KiB of commands is broken; more buffering would only hide it.
MAX_PENDING = 64 * 1024
#: a connection that lasted this long (seconds) was healthy: backoff starts over.
#: read timeout of the reader thread for ports without an fd; it bounds how
#: long closing such a port waits for the thread, it is not a polling period.
THREAD_READ_TIMEOUT = 0.1

_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_USB_RE = re.compile(r"^usb:([0-9a-f]{1,4}):([0-9a-f]{1,4})(?::(.+))?$", re.IGNORECASE)
_BARE_TTY_RE = re.compile(r"^/dev/tty(USB|ACM)\d+$")


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


def _open_failure(spec: str, target: str, exc: BaseException) -> str:
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


def _usable_fileno(ser: Any) -> int | None:
    try:
        fd = ser.fileno()
    except (AttributeError, NotImplementedError, OSError, ValueError):
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


def _quiet_close(ser: Any) -> None:
    try:
        ser.close()
    except Exception:  # closing a dead port may fail; it is being dropped anyway
        pass


class _Link:
    """One open connection. A fresh one per (re)connect, so no state survives a loss."""

    def __init__(self, owner: SerialTransport, ser: Any, target: str, sink: TransportSink) -> None:
        self.owner = owner
        self.ser = ser
        self.target = target
        #: how reasons name the port: the configured name and what it resolved to.
        self.where = owner.port if owner.port == target else f"{owner.port} -> {target}"
        self.sink = sink
        self.loop = asyncio.get_running_loop()
        #: resolves with the loss reason, None after close(), or the sink's exception.
        self.lost: asyncio.Future[str | None] = self.loop.create_future()
        self.got_data = False

    @property
    def alive(self) -> bool:
        return not self.lost.done()

    def start(self) -> None:
        raise NotImplementedError

    def write(self, data: bytes) -> bool:
        raise NotImplementedError

    def _unwatch(self) -> None:
        """Stop every loop callback on this link."""

    async def aclose(self) -> None:
        raise NotImplementedError

    def _fail(self, reason: str) -> None:
        # Unwatch at once: a hung-up fd stays readable forever.
        self._unwatch()
        if not self.lost.done():
            self.lost.set_result(reason)

    def _crash(self, exc: BaseException) -> None:
        self._unwatch()
        if not self.lost.done():
            self.lost.set_exception(exc)

    def _deliver(self, data: bytes) -> None:
        if not self.alive:
            return
        self.got_data = True
        try:
            self.sink.on_data(data, self.owner._clock())
        except Exception as exc:
            self._crash(exc)

    def _sent(self, data: bytes) -> None:
        try:
            self.sink.on_sent(data, self.owner._clock())
        except Exception as exc:
            self._crash(exc)


class _FdLink(_Link):
    """A port with a file descriptor, watched by the loop.

    ``raw`` (paths): ``os.read``/``os.write`` on the fd. Otherwise (URLs with
    an fd) the pyserial object's own ``read``/``write``, called only once the
    fd is ready: with ``write_timeout=0`` pyserial spins on EAGAIN.
    """

    def __init__(
        self,
        owner: SerialTransport,
        ser: Any,
        target: str,
        sink: TransportSink,
        *,
        fd: int,
        raw: bool,
    ) -> None:
        super().__init__(owner, ser, target, sink)
        self.fd = fd
        self.raw = raw
        self.out = bytearray()
        self._reading = False
        self._writing = False

    def start(self) -> None:
        self.loop.add_reader(self.fd, self._on_readable)
        self._reading = True

    def _unwatch(self) -> None:
        if self._reading:
            self.loop.remove_reader(self.fd)
            self._reading = False
        if self._writing:
            self.loop.remove_writer(self.fd)
            self._writing = False

    def _on_readable(self) -> None:
        try:
            data = os.read(self.fd, READ_SIZE) if self.raw else self.ser.read(READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:  # EIO after an unplug; SerialException is an OSError too
            self._fail(f"device lost: {self.where} ({exc})")
            return
        if not data:
            if self.raw:
                # VMIN=1 (set at open) makes an empty non-blocking read EAGAIN,
                # so b'' here is end of file: the tty was hung up.
                self._fail(f"device hung up: {self.where} (unplugged, or the other end closed)")
            return
        self._deliver(data)

    def write(self, data: bytes) -> bool:
        if not self.alive:
            return False
        if len(self.out) + len(data) > MAX_PENDING:
            self.owner._dropped(len(data), len(self.out))
            return False
        if not data:
            return True
        if self.raw and not self.out:
            n = self._send(data)
            if n is None:
                return False
            data = data[n:]
            if not data:
                return True
        self.out += data
        if not self._writing:
            self.loop.add_writer(self.fd, self._on_writable)
            self._writing = True
        return True

    def _send(self, chunk: bytes) -> int | None:
        """Write what the port takes now; None when the link died."""
        try:
            n = os.write(self.fd, chunk) if self.raw else self.ser.write(chunk)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError as exc:
            self._fail(f"write failed: {self.where} ({exc})")
            return None
        n = n or 0
        if n:
            self._sent(chunk[:n])
        return n

    def _on_writable(self) -> None:
        n = self._send(bytes(self.out))
        if n is None or not self.alive:
            return
        del self.out[:n]
        if not self.out:
            self.loop.remove_writer(self.fd)
            self._writing = False
            self.owner._drained()

    async def aclose(self) -> None:
        self._unwatch()
        self.out.clear()
        if not self.lost.done():
            self.lost.set_result(None)
        if self.raw:
            _quiet_close(self.ser)  # a tty closes at once
        else:
            # socket:// sleeps 0.3 s in close(); rfc2217 talks to the server.
            await asyncio.shield(asyncio.to_thread(_quiet_close, self.ser))


class _ThreadLink(_Link):
    """A port object without a file descriptor (``loop://``, ``rfc2217://``).

    There is nothing for the loop to watch, so one thread blocks in ``read()``
    (with a short timeout, so it notices close) and one in ``write()``; both
    report to the loop with ``call_soon_threadsafe``.
    """

    def __init__(self, owner: SerialTransport, ser: Any, target: str, sink: TransportSink) -> None:
        super().__init__(owner, ser, target, sink)
        self.pending = 0
        self._stop = threading.Event()
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._read_loop, name=f"serial-read {target}", daemon=True),
            threading.Thread(target=self._write_loop, name=f"serial-write {target}", daemon=True),
        ]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self._stop.set()

    def _read_loop(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.ser.read(self.ser.in_waiting or 1)
            except Exception as exc:
                if not self._stop.is_set():
                    self._post(self._fail, f"device lost: {self.where} ({exc})")
                return
            if data:
                self._post(self._deliver, data)

    def _write_loop(self) -> None:
        while (chunk := self._queue.get()) is not None:
            try:
                self.ser.write(chunk)
            except Exception as exc:
                if not self._stop.is_set():
                    self._post(self._fail, f"write failed: {self.where} ({exc})")
                return
            self._post(self._written, chunk)

    def _written(self, chunk: bytes) -> None:
        self.pending -= len(chunk)
        if self.alive:
            self._sent(chunk)
            if not self.pending:
                self.owner._drained()

    def write(self, data: bytes) -> bool:
        if not self.alive:
            return False
        if self.pending + len(data) > MAX_PENDING:
            self.owner._dropped(len(data), self.pending)
            return False
        if data:
            self.pending += len(data)
            self._queue.put(data)
        return True

    async def aclose(self) -> None:
        if not self.lost.done():
            self.lost.set_result(None)
        self._stop.set()
        self._queue.put(None)
        cancel = getattr(self.ser, "cancel_read", None)
        if cancel is not None:
            try:
                cancel()
            except Exception:
                pass

        def finish() -> None:
            for t in self._threads:
                if t.is_alive():
                    t.join(timeout=2 * THREAD_READ_TIMEOUT + 5)
            _quiet_close(self.ser)

        await asyncio.shield(asyncio.to_thread(finish))


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
        if _BARE_TTY_RE.match(port):
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

    def _on_link(self, link: _Link) -> None:
        self._overflow_reported = False

    def _info(self, link: _Link) -> dict[str, Any]:
        return {"port": link.target, "spec": self.port}

    async def _connect(self, sink: TransportSink) -> _Link:
        spec = self.port
        if parse_usb_spec(spec) is not None:  # enumeration reads sysfs: keep it off the loop
            target = await asyncio.to_thread(resolve_port, spec)
        else:
            target = resolve_port(spec)
        if is_url(target):
            ser, fd = await self._open_url(target)
            if fd is None:
                return _ThreadLink(self, ser, target, sink)
            return _FdLink(self, ser, target, sink, fd=fd, raw=False)
        ser = self._configured(serial.Serial())
        ser.port = target
        try:
            ser.open()
        except (OSError, termios.error) as exc:
            raise PortUnavailable(_open_failure(spec, target, exc)) from None
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
            _quiet_close(ser)
            raise PortUnavailable(f"cannot set up {target}: {exc}") from None
        return _FdLink(self, ser, target, sink, fd=fd, raw=True)

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
                raise PortUnavailable(_open_failure(target, target, exc)) from None
            fd = _usable_fileno(ser)
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
                    threading.Thread(target=_quiet_close, args=(f.result()[0],)).start()

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
