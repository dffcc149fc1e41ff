"""The edge thread of a gpiod pin factory: one thread, blocked in ``poll(2)`` on every line
request of one chip and a wake-up pipe, hands each kernel edge event to its pin and marks
the chip lost on a hang-up or ``ENODEV``.

It is :mod:`drivers.gpiod_pins`' third part, apart from the factory and the pin it serves:
it calls their chip-loss and edge entry points (``_lose``, ``_os_error``, ``_live``,
``_edge``), which stay private to the pin factory's two modules.
"""

from __future__ import annotations

import errno
import os
import select
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from drivers.gpiod_pins import GpiodFactory, GpiodPin

#: errors that mean the chip is gone, not that one call failed
GONE = (errno.ENODEV, errno.ENXIO, errno.EBADF, errno.EIO)


class EdgeThread:
    """One thread per factory, blocked in poll(2) on every line request and a wake-up
    pipe: edges go to their pin, a hang-up or ``ENODEV`` marks the chip lost. Started
    with the first pin, stopped when the factory closes or loses its chip."""

    def __init__(self, factory: GpiodFactory) -> None:
        self.factory = factory
        self._pins: dict[int, GpiodPin] = {}
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._stopping = False
        self._thread: threading.Thread | None = None

    def watch(self, pin: GpiodPin) -> None:
        fd = pin.fd
        if fd is None:
            return
        with self._lock:
            if self._stopping:
                return
            self._pins[fd] = pin
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"gpiod:{self.factory.path}", daemon=True
                )
                self._thread.start()
        self.changed()

    def unwatch(self, pin: GpiodPin) -> None:
        with self._lock:
            for fd, p in list(self._pins.items()):
                if p is pin:
                    del self._pins[fd]
        self.changed()

    def changed(self) -> None:
        """The set of pins or what they wait for changed: the thread polls again."""
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):
            pass  # a wake-up is already pending, or the pipe is closed

    def stop(self) -> None:
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            thread = self._thread
        self.changed()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as e:  # edges no longer flow: never quietly, the chip counts as lost
            self.factory._lose(f"{self.factory.path}: the edge thread failed: {e!r}")

    def _loop(self) -> None:
        while True:
            with self._lock:
                if self._stopping:
                    return
                pins = dict(self._pins)
            poller = select.poll()
            poller.register(self._wake_r, select.POLLIN)
            for fd, pin in pins.items():
                poller.register(fd, select.POLLIN if pin._detecting else 0)
            for fd, ev in poller.poll():
                if fd == self._wake_r:
                    try:
                        while os.read(self._wake_r, 64):
                            pass
                    except BlockingIOError:
                        pass
                    continue
                pin = pins[fd]
                if pin.fd != fd:
                    continue  # closed since the poll began
                if ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    self.factory._lose(
                        f"{self.factory.path} [{self.factory.label}] is gone "
                        f"(line {pin._offset}: the kernel hung up its request)"
                    )
                    return
                if ev & select.POLLIN:
                    try:
                        events = pin._live().read_edge_events()
                    except OSError as e:
                        if pin.fd is None:
                            continue  # closed while we read
                        self.factory._os_error(e, f"read edges of line {pin._offset}")
                        if e.errno in GONE:
                            return
                        raise
                    for event in events:
                        pin._edge(event)
