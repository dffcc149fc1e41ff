"""What every transport shares: stay connected, say so, back off between attempts.

A serial port, a USB interface and a GPIO panel open differently but fail
alike: the link is lost, the device goes ``disconnected``, and the transport
retries with capped exponential backoff until the device is back — with
``on_disconnected`` once per outage and per new reason, not once per retry
(field failure #2 in ``docs/testing.md``: "reports connected but nothing
flows"; the device runner makes only the first an event, a new reason is shown).
A subclass says how to open one link (:meth:`Reconnecting._connect`) and
what to tell the sink about it (:meth:`Reconnecting._info`, or all of
:meth:`Reconnecting._announce`).
"""

from __future__ import annotations

import abc
import asyncio
import random
import time
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

#: a link that lasted this long (or carried data) resets the backoff.
STABLE_AFTER = 5.0
#: backoff jitter: ±20 % of each delay
JITTER = 0.2


class Unavailable(Exception):
    """The device cannot be opened now; the message is the reason shown to technicians."""


class Sink(Protocol):
    def on_connected(self, info: dict[str, Any]) -> None: ...

    def on_disconnected(self, reason: str) -> None: ...


class Link(Protocol):
    """One open connection: started once, ``lost`` resolves with a reason (None: closed)."""

    got_data: bool
    lost: asyncio.Future[str | None]

    @property
    def alive(self) -> bool: ...

    def start(self) -> None: ...

    def write(self, data: bytes) -> bool: ...

    async def aclose(self) -> None: ...


class Reconnecting(abc.ABC):
    #: how logs name the thing: "serial port", "USB device"
    noun: ClassVar[str] = "device"

    def __init__(
        self,
        *,
        reconnect_min: float,
        reconnect_max: float,
        clock: Callable[[], float] = time.monotonic,
        log: Any,
    ) -> None:
        if not 0 < reconnect_min <= reconnect_max:
            raise ValueError(
                f"need 0 < reconnect_min <= reconnect_max, got {reconnect_min}, {reconnect_max}"
            )
        self.reconnect_min = reconnect_min
        self.reconnect_max = reconnect_max
        self._clock = clock
        self._log = log
        #: successful re-opens after the first open.
        self.reconnects = 0
        self._link: Any = None
        self._running = False
        self._closed = False
        self._stop = asyncio.Event()
        #: set by close() and by retry_now(): ends the backoff wait early
        self._wake = asyncio.Event()
        #: each backoff is the delay times a factor in [1 - jitter, 1 + jitter], so fifty
        #: table PCs that lost power together do not retry in step
        self.jitter = JITTER
        self.rng = random.Random()

    @abc.abstractmethod
    async def _connect(self, sink: Any) -> Any:
        """Open one link, or raise :class:`Unavailable` saying why not."""

    @abc.abstractmethod
    def _info(self, link: Any) -> dict[str, Any]:
        """What ``on_connected`` tells the sink (at least ``port``)."""

    def _on_link(self, link: Any) -> None:  # noqa: B027 - optional hook
        """A new link is up (per-link state to reset)."""

    def _announce(self, sink: Any, link: Any) -> None:
        """Tell the sink the link is up (a GPIO panel whose cable is out says otherwise)."""
        info = self._info(link)
        self._log.info(f"{self.noun} connected", device=info.get("port"))
        sink.on_connected(info)

    @property
    def connected(self) -> bool:
        return self._link is not None and self._link.alive

    async def close(self) -> None:
        """Stop for good: end ``run()`` and close the link."""
        self._closed = True
        self._stop.set()
        self._wake.set()
        link, self._link = self._link, None
        if link is not None:
            await link.aclose()

    async def run(self, sink: Any) -> None:
        """Keep the device connected until cancelled or closed.

        ``on_disconnected`` is called when a live link is lost, when the very
        first attempt fails and when an attempt fails for a new reason; an attempt
        that fails as the last did only goes to the log (warning when the reason
        changes, debug when it repeats), so a long outage is one event, not one
        per retry.
        """
        if self._running:
            raise RuntimeError(f"{type(self).__name__}.run() is already running")
        self._running = True
        delay = self.reconnect_min
        attempts = 0
        ever_connected = False
        last_reason: str | None = None
        try:
            while not self._closed:
                try:
                    link = await self._connect(sink)
                except Unavailable as exc:
                    reason = str(exc)
                    if attempts == 0 or reason != last_reason:
                        # still down for a new reason: shown to technicians, not a new event
                        sink.on_disconnected(reason)
                    # a new reason is worth `journalctl -p warning`; a repeat is noise
                    log = self._log.warning if reason != last_reason else self._log.debug
                    log(f"{self.noun} unavailable", reason=reason, retry_in=delay)
                    last_reason = reason
                    attempts += 1
                    if await self._pause(delay):
                        return
                    delay = min(delay * 2, self.reconnect_max)
                    continue
                if self._closed:  # close() came while the link was opening
                    await link.aclose()
                    return
                attempts += 1
                last_reason = None
                if ever_connected:
                    self.reconnects += 1
                ever_connected = True
                started = self._clock()
                self._on_link(link)
                self._link = link
                link.start()
                self._announce(sink, link)
                reason = await link.lost  # raises what the sink raised
                if reason is None:  # close() was called
                    return
                self._link = None
                await link.aclose()
                if self._closed:
                    return
                self._log.warning(f"{self.noun} disconnected", reason=reason)
                sink.on_disconnected(reason)
                if link.got_data or self._clock() - started > STABLE_AFTER:
                    delay = self.reconnect_min
                if await self._pause(delay):
                    return
                delay = min(delay * 2, self.reconnect_max)
        finally:
            self._running = False
            link, self._link = self._link, None
            if link is not None:
                await link.aclose()

    def retry_now(self) -> None:
        """A matching device appeared (udev): end the backoff wait and try at once.

        Call from the loop's thread (the hotplug watcher uses ``call_soon_threadsafe``).
        """
        self._wake.set()

    def backoff(self, delay: float) -> float:
        """The jittered wait for a nominal ``delay``, never below ``reconnect_min``."""
        factor = 1.0 + self.jitter * (2.0 * self.rng.random() - 1.0)
        return max(self.reconnect_min, delay * factor)

    async def _pause(self, delay: float) -> bool:
        """The backoff timer; True when close() was called meanwhile.

        retry_now() ends it early (False: try again now); the backoff without udev
        stays what it was.
        """
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), self.backoff(delay))
        except TimeoutError:
            return False
        return self._closed
