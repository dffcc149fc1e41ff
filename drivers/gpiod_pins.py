"""gpiozero pins on any Linux gpiochip, through libgpiod (the ``gpiod`` package, v2 API).

gpiozero's own factories reach a Raspberry Pi only: they need the Pi's board revision to
name the pins, and fail on an x86 table PC whose GPIO header is a gpiochip (a Super-I/O's
lines, a USB GPIO adapter, an FTDI CBUS). This is a gpiozero pin factory like
``gpiozero.pins.lgpio`` — a :class:`~gpiozero.Factory` that makes
:class:`~gpiozero.pins.pi.PiPin` s — so the panel keeps gpiozero's devices
(``DigitalInputDevice``, ``LED``) and the same panel config runs on both; only the factory
and its chip differ (``pin_factory = "gpiod"``, ``chip``).

Pins are the chip's line offsets, named ``GPIO<n>``, ``<n>`` and ``BCM<n>`` (on a Pi's
gpiochip the offsets are the BCM numbers, so a Pi's config reads the same lines), plus the
line's own name when the chip gives one (``gpioinfo`` shows them). Board names (``BOARD11``,
``J8:11``) need a Pi's header map and are not known here.

One line request per pin, so a pin is configured, reconfigured and released on its own:
direction, bias (``pull``: up, down, floating), the kernel's debounce (``bounce``,
gpiozero's ``bounce_time``) and edge detection (``edges``). Edge events come with the
kernel's CLOCK_MONOTONIC timestamps; one thread per factory blocks in ``poll(2)`` on every
request's descriptor (and a wake-up pipe) and hands each edge to gpiozero's ``when_changed``
with that timestamp — gpiozero's callbacks run on that thread, as they do on lgpio's.

A chip that goes away (a USB adapter unplugged) is reported once: the kernel answers a
request's poll with ``POLLHUP``/``POLLERR`` and its reads and writes with ``ENODEV``; either
one marks the factory :attr:`~GpiodFactory.lost` and calls :attr:`~GpiodFactory.when_lost`
with the reason. The user of the factory (the panel) then closes it and opens a new one when
the chip is back: a factory is one opening of one chip.

A pin factory is three parts that share one chip's lifetime and its loss: the factory
(the chip, the pins' names) and the pin (gpiozero's property protocol over a line request)
are here, the edge thread in :mod:`drivers.gpiod_edges`.
"""

from __future__ import annotations

import errno
import re
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import gpiod
from gpiod.line import Bias, Direction, Edge, Value
from gpiozero.exc import (
    PinFixedPull,
    PinInvalidBounce,
    PinInvalidEdges,
    PinInvalidFunction,
    PinInvalidPin,
    PinInvalidPull,
    PinSetInput,
)
from gpiozero.pins import BoardInfo, Factory, HeaderInfo, PinInfo
from gpiozero.pins.pi import PiPin
from gpiozero.threads import GPIOThread

from drivers.gpiod_edges import GONE, EdgeThread

#: the consumer name ``gpioinfo`` shows for lines tabled holds
CONSUMER = "tabled"
#: the chip when the config names none (the first one, as lgpio's default)
DEFAULT_CHIP = "/dev/gpiochip0"

_PULLS = {"up": Bias.PULL_UP, "down": Bias.PULL_DOWN, "floating": Bias.DISABLED}
_EDGES = {"both": Edge.BOTH, "rising": Edge.RISING, "falling": Edge.FALLING, "none": Edge.NONE}


class ChipLost(OSError):
    """The factory's chip went away; the message says when and why."""


def find_chip(chip: str, devdir: Path = Path("/dev")) -> str:
    """A chip's device path from a path (``/dev/gpiochip0``), a name (``gpiochip0``) or its
    label (``gpiodetect`` shows it in brackets): a label survives a USB adapter coming
    back as another ``gpiochipN``."""
    if chip.startswith("/"):
        return chip
    if re.fullmatch(r"gpiochip\d+", chip):
        return str(devdir / chip)
    seen = []
    for path in sorted(devdir.glob("gpiochip*")):
        if not gpiod.is_gpiochip_device(str(path)):
            continue
        try:
            with gpiod.Chip(str(path)) as c:
                label = c.get_info().label
        except OSError:
            continue
        if label == chip:
            return str(path)
        seen.append(f"{path.name} [{label}]")
    found = ", ".join(seen) or "none"
    raise FileNotFoundError(errno.ENOENT, f"no gpiochip labelled {chip!r} (chips: {found})")


def explain(exc: BaseException) -> str:
    """A technician's reason for a chip that would not open, naming the fix."""
    if isinstance(exc, FileNotFoundError):
        return (
            f"gpiochip not found: {exc.strerror or exc}{' ' + exc.filename if exc.filename else ''}"
            "; is the GPIO adapter plugged in? `gpiodetect` lists the chips and their labels "
            "(the device's chip option)"
        )
    if isinstance(exc, PermissionError):
        return (
            f"no access to {exc.filename or 'the gpiochip'}: the tabled user needs group gpio "
            "(the udev rules give /dev/gpiochip* to it) and the unit's SupplementaryGroups=gpio"
        )
    if isinstance(exc, OSError) and exc.errno == errno.ENOTTY:
        return f"{exc.filename or 'the chip'} is not a gpiochip (check the device's chip option)"
    return f"{type(exc).__name__}: {exc}"


class GpiodFactory(Factory):
    """Pins on one gpiochip. ``chip``: a path, a ``gpiochipN`` name or a label.

    Raises ``OSError`` when the chip cannot be opened (``FileNotFoundError``,
    ``PermissionError``: the reason is in the message).
    """

    def __init__(
        self,
        chip: str = "/dev/gpiochip0",
        *,
        devdir: Path = Path("/dev"),
        consumer: str = CONSUMER,
    ) -> None:
        super().__init__()
        self.path = find_chip(chip, devdir)
        self.consumer = consumer
        self._chip: gpiod.Chip | None = gpiod.Chip(self.path)
        info = self._chip.get_info()
        self.name: str = info.name
        self.label: str = info.label
        self.num_lines: int = info.num_lines
        self._board = self._make_board()
        self.pins: dict[PinInfo, GpiodPin] = {}
        self.pin_class = GpiodPin
        #: the reason the chip was lost, once it was
        self.lost: str | None = None
        #: called once (on the edge thread, or on the thread whose read or write failed)
        #: with the reason, when the chip goes away
        self.when_lost: Callable[[str], None] | None = None
        self._lost_lock = threading.Lock()
        self._edges = EdgeThread(self)

    def __repr__(self) -> str:
        return f"<GpiodFactory {self.path} [{self.label}]>"

    def _make_board(self) -> BoardInfo:
        assert self._chip is not None
        pins = {}
        for offset in range(self.num_lines):
            names: set[Any] = {offset, str(offset), f"GPIO{offset}", f"BCM{offset}"}
            names.add(f"{self.name}:{offset}")
            line = self._chip.get_line_info(offset).name
            # a line's own name, unless it would read as another line's number
            if line and not re.fullmatch(r"(?:GPIO|BCM)?\d+", line, re.IGNORECASE):
                names.add(line)
            elif line and line.upper() in (f"GPIO{offset}", f"BCM{offset}"):
                names.add(line)
            pins[offset + 1] = PinInfo(
                number=offset + 1,
                name=f"GPIO{offset}",
                names=frozenset(names),
                pull="",
                row=offset + 1,
                col=1,
                interfaces=frozenset({"gpio"}),
            )
        header = HeaderInfo(name=self.name, rows=self.num_lines, columns=1, pins=pins)
        # a chip is no Pi: of a board's facts it knows its name and its one header
        facts: dict[str, Any] = dict.fromkeys(BoardInfo._fields)
        facts |= {"model": f"{self.name} [{self.label}]", "pcb_revision": "", "board": ""}
        return BoardInfo(**(facts | {"headers": {self.name: header}}))

    def _get_board_info(self) -> BoardInfo:
        return self._board

    def pin(self, name: Any) -> GpiodPin:
        for _header, info in self._board.find_pin(name):
            pin = self.pins.get(info)
            if pin is None:
                pin = self.pins[info] = self.pin_class(self, info)
            return pin
        raise PinInvalidPin(
            f"{name!r} is not a line of {self.path} [{self.label}] "
            f"(lines 0-{self.num_lines - 1}, as GPIO<n>, <n> or the line's name)"
        )

    def ticks(self) -> float:
        # the clock edge events are stamped with (gpiod's default event clock)
        return time.monotonic()

    def ticks_diff(self, later: float, earlier: float) -> float:
        return later - earlier

    def close(self) -> None:
        self._edges.stop()
        for pin in list(self.pins.values()):
            pin.close()
        self.pins.clear()
        if self._chip is not None:
            try:
                self._chip.close()
            except OSError:
                pass
            self._chip = None

    def request(self, offset: int, settings: gpiod.LineSettings) -> gpiod.LineRequest:
        """One line, requested with ``settings``; a chip gone is reported as lost."""
        if self._chip is None:
            raise ChipLost(errno.ENODEV, f"{self.path}: the pin factory is closed")
        try:
            return self._chip.request_lines({offset: settings}, consumer=self.consumer)
        except OSError as e:
            raise self._os_error(e, f"request line {offset}") from None

    def _os_error(self, e: OSError, what: str) -> OSError:
        """``e`` as the technician should read it; a chip gone is reported lost."""
        if e.errno in GONE:
            reason = f"{self.path} [{self.label}] is gone ({what}: {e.strerror or e})"
            self._lose(reason)
            return ChipLost(e.errno, reason)
        if e.errno == errno.EBUSY:
            return OSError(
                e.errno,
                f"{self.path} line {what.rsplit(' ', 1)[-1]} is held by another program "
                "(gpioinfo shows its consumer): one pin, one owner",
            )
        return e

    def _lose(self, reason: str) -> None:
        with self._lost_lock:
            if self.lost is not None:
                return
            self.lost = reason
        self._edges.stop()
        hook = self.when_lost
        if hook is not None:
            hook(reason)


class GpiodPin(PiPin):
    """One line of a gpiochip as a gpiozero pin. PiPin is gpiozero's base for a GPIO
    pin with edge callbacks (weak references, the enable/disable protocol); nothing
    in it is specific to a Pi but the ``GPIO<n>`` name, which this factory also uses."""

    def __init__(self, factory: GpiodFactory, info: PinInfo) -> None:
        super().__init__(factory, info)
        self._offset = self._number
        self._direction = Direction.INPUT
        self._output = Value.INACTIVE
        self._pull = "floating"
        self._bounce: float | None = None
        self._edges = "both"
        self._detecting = False
        self._request: gpiod.LineRequest | None = factory.request(self._offset, self._settings())
        factory._edges.watch(self)

    @property
    def fd(self) -> int | None:
        return None if self._request is None else self._request.fd

    def _settings(self) -> gpiod.LineSettings:
        out = self._direction == Direction.OUTPUT
        return gpiod.LineSettings(
            direction=self._direction,
            bias=Bias.AS_IS if out else _PULLS[self._pull],
            edge_detection=_EDGES[self._edges] if self._detecting and not out else Edge.NONE,
            debounce_period=timedelta(seconds=self._bounce or 0),
            output_value=self._output,
        )

    def _reconfigure(self) -> None:
        req = self._live()
        try:
            req.reconfigure_lines({self._offset: self._settings()})
        except OSError as e:
            raise self.factory._os_error(e, f"configure line {self._offset}") from None
        self.factory._edges.changed()

    def _live(self) -> gpiod.LineRequest:
        if self._request is None:
            raise ChipLost(errno.EBADF, f"{self!r} is closed")
        return self._request

    def close(self) -> None:
        self.when_changed = None
        req, self._request = self._request, None
        self.factory._edges.unwatch(self)
        if req is not None:
            try:
                req.release()
            except OSError:
                pass  # the chip is gone: nothing left to release

    # -- gpiozero's pin interface ------------------------------------------------------------

    def _get_function(self) -> str:
        return "output" if self._direction == Direction.OUTPUT else "input"

    def _set_function(self, value: str) -> None:
        want = {"input": Direction.INPUT, "output": Direction.OUTPUT}.get(value)
        if want is None:
            raise PinInvalidFunction(f'invalid function "{value}" for pin {self!r}')
        self._direction = want
        self._reconfigure()

    def output_with_state(self, state: Any) -> None:
        # one reconfiguration, so the line never shows the old level as an output
        self._direction = Direction.OUTPUT
        self._output = Value.ACTIVE if state else Value.INACTIVE
        self._reconfigure()

    def input_with_pull(self, pull: str) -> None:
        if pull not in _PULLS:
            raise PinInvalidPull(f'invalid pull "{pull}" for pin {self!r}')
        self._direction = Direction.INPUT
        self._pull = pull
        self._reconfigure()

    def _get_state(self) -> int:
        try:
            return int(self._live().get_value(self._offset) == Value.ACTIVE)
        except ChipLost:
            raise
        except OSError as e:
            raise self.factory._os_error(e, f"read line {self._offset}") from None

    def _set_state(self, value: Any) -> None:
        if self._direction != Direction.OUTPUT:
            raise PinSetInput(f"cannot set the state of input pin {self!r}")
        self._output = Value.ACTIVE if value else Value.INACTIVE
        try:
            self._live().set_value(self._offset, self._output)
        except OSError as e:
            err = (
                e
                if isinstance(e, ChipLost)
                else self.factory._os_error(e, f"write line {self._offset}")
            )
            if isinstance(err, ChipLost) and isinstance(threading.current_thread(), GPIOThread):
                # a blinking LED's own thread has no caller to tell (its exception would be a
                # traceback on stderr); the loss has gone to when_lost, and the LED is closed next
                return
            raise err from None

    def _get_pull(self) -> str:
        return self._pull

    def _set_pull(self, value: str) -> None:
        if self._direction != Direction.INPUT:
            raise PinFixedPull(f"cannot set the pull of output pin {self!r}")
        if value not in _PULLS:
            raise PinInvalidPull(f'invalid pull "{value}" for pin {self!r}')
        self._pull = value
        self._reconfigure()

    def _get_bounce(self) -> float | None:
        return self._bounce

    def _set_bounce(self, value: float | None) -> None:
        if value is not None and value < 0:
            raise PinInvalidBounce("bounce must be 0 or greater")
        self._bounce = value or None
        self._reconfigure()

    def _get_edges(self) -> str:
        return self._edges

    def _set_edges(self, value: str) -> None:
        if value not in _EDGES:
            raise PinInvalidEdges(f'invalid edges "{value}" for pin {self!r}')
        self._edges = value
        if self._detecting:
            self._reconfigure()

    def _enable_event_detect(self) -> None:
        self._detecting = True
        self._reconfigure()

    def _disable_event_detect(self) -> None:
        self._detecting = False
        if self._request is not None and self.factory.lost is None:
            self._reconfigure()

    def _edge(self, event: gpiod.EdgeEvent) -> None:
        """On the edge thread: one kernel edge event to gpiozero's ``when_changed``."""
        rising = event.event_type == gpiod.EdgeEvent.Type.RISING_EDGE
        with self._when_changed_lock:
            if self._when_changed is None:
                return  # detection was switched off while the event was on its way
            self._call_when_changed(event.timestamp_ns / 1e9, int(rising))
