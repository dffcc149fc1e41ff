"""Hotplug: when udev says a device appeared, the disconnected devices retry at once.

Without it a replugged shoe waits out its backoff (up to ``reconnect_max``, 30 s).
pyudev's monitor runs in its own thread and hands each ``add`` event of the
subsystems our devices use (tty, usb, gpio) to the loop; every transport that is
not connected then retries now (an open is cheap, and the transport itself decides
whether the new node is its port — a udev symlink, an identity, a path). Where udev
is not running (containers, CI) nothing changes: the backoff, now jittered, stays.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("tabled")

SUBSYSTEMS = ("tty", "usb", "gpio")
UDEV_CONTROL = Path("/run/udev/control")


class Hotplug:
    def __init__(
        self, loop: asyncio.AbstractEventLoop, transports: Callable[[], Iterable[Any]]
    ) -> None:
        self.loop = loop
        self.transports = transports
        self.observer: Any = None
        self.nudges = 0

    def start(self) -> bool:
        """Watch udev; False (and a log line saying so) when it cannot."""
        if not UDEV_CONTROL.exists():
            log.info("udev is not running here: devices retry on their backoff only")
            return False
        try:
            import pyudev

            monitor = pyudev.Monitor.from_netlink(pyudev.Context())
            for s in SUBSYSTEMS:
                monitor.filter_by(s)
            self.observer = pyudev.MonitorObserver(monitor, callback=self._event, name="udev")
            self.observer.start()
        except Exception as e:  # no libudev, no netlink (sandbox): the backoff still works
            log.warning("cannot watch udev: devices retry on their backoff only", error=str(e))
            return False
        log.info("watching udev for devices", subsystems=list(SUBSYSTEMS))
        return True

    def _event(self, device: Any) -> None:  # pyudev's thread
        if device.action == "add":
            self.loop.call_soon_threadsafe(self.nudge, device.device_node or device.sys_path)

    def nudge(self, what: str | None = None) -> int:
        """Tell every disconnected transport to retry now; how many were told."""
        n = 0
        for t in self.transports():
            if t is not None and not getattr(t, "connected", True) and hasattr(t, "retry_now"):
                t.retry_now()
                n += 1
        self.nudges += 1
        if n:
            log.info("udev: a device appeared, retrying now", device=what, retried=n)
        return n

    def close(self) -> None:
        if self.observer is not None:
            self.observer.stop()
            self.observer = None
