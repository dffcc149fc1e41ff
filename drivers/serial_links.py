"""The two halves of one open serial connection: a port with an fd the loop watches
(:class:`FdLink`) and a pyserial object behind a reader and a writer thread
(:class:`ThreadLink`), both under the contract of :class:`Link`.

A fresh link per (re)connect, so no state survives a loss; the transport
(:mod:`drivers.serial`) owns the life of resolve, open, pump, lose and reopen.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from drivers.serial import SerialTransport, TransportSink

#: bytes asked of one ``os.read``; a pty hands out at most ~4 KiB per read anyway.
READ_SIZE = 4096
#: unwritten output kept per connection. A device that stops reading for
#: 64 KiB of commands is broken; more buffering would only hide it.
MAX_PENDING = 64 * 1024
#: read timeout of the reader thread for ports without an fd; it bounds how
#: long closing such a port waits for the thread, it is not a polling period.
THREAD_READ_TIMEOUT = 0.1


def usable_fileno(ser: Any) -> int | None:
    try:
        fd = ser.fileno()
    except (AttributeError, NotImplementedError, OSError, ValueError):
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None


def quiet_close(ser: Any) -> None:
    try:
        ser.close()
    except Exception:  # closing a dead port may fail; it is being dropped anyway
        pass


class Link:
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


class FdLink(Link):
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
            quiet_close(self.ser)  # a tty closes at once
        else:
            # socket:// sleeps 0.3 s in close(); rfc2217 talks to the server.
            await asyncio.shield(asyncio.to_thread(quiet_close, self.ser))


class ThreadLink(Link):
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
            quiet_close(self.ser)

        await asyncio.shield(asyncio.to_thread(finish))
