"""Simulated gpiochips behind libgpiod's own interface: the ``gpiod`` package's ``_ext``.

The CI machine has no gpio-sim (its kernel loads no modules and has no configfs: see
docs/testing.md, GPIO), so the gpiod pin factory is tested the way pyusb is: with a
fake at the library's own lower boundary, not a mock of our code. ``gpiod``'s Python
layer (``Chip``, ``LineRequest``, ``LineSettings``, the value and enum mapping) runs
for real; what this replaces is ``gpiod._ext``, the C binding whose calls are the
kernel's GPIO character-device uAPI one for one (``Chip``, ``LineConfig``,
``LineSettings``, ``Request``, ``is_gpiochip_device``). Its constants are the real ones.

What it models, as the kernel and gpio-sim do:

* a line's level: driven from outside (:meth:`SimChip.drive`, like gpio-sim's ``pull``
  attribute), else what its bias makes it (pull-up high, pull-down low, neither: low,
  gpio-sim's default), or its output value when it is an output;
* one owner per line (``EBUSY``), offsets in range (``EINVAL``);
* edge events for the requested edges, stamped with the simulated monotonic clock
  (injected: :attr:`SimKernel.now_ns`, :meth:`SimKernel.advance`), each request's
  descriptor readable while events wait (a real pipe, so ``poll(2)`` works);
* the kernel's debounce: with a ``debounce_period`` a change is reported only after
  the line has stayed at its new level that long, once, stamped when it counted;
* removal (:meth:`SimKernel.unplug`): the node goes, every open request's descriptor
  hangs up (``POLLHUP``) and its calls fail with ``ENODEV``.

What it does not model: other requests' consumers in ``LineInfo``, info events,
``event_buffer_size`` overflow, HTE clocks, drive modes.
"""

from __future__ import annotations

import errno
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import gpiod
from gpiod import _ext
from gpiod.line import Value

ACTIVE, INACTIVE = _ext.VALUE_ACTIVE, _ext.VALUE_INACTIVE


def _gone(path: str) -> OSError:
    return OSError(errno.ENODEV, os.strerror(errno.ENODEV), path)


@dataclass
class _Line:
    offset: int
    name: str
    external: bool | None = None  # driven from outside; None: floating
    request: FakeRequest | None = None
    settings: FakeLineSettings | None = None
    output: bool = False
    reported: bool = False  # the level the last edge event (or the request) reported
    pending_since: int | None = None  # debounce: the level changed at this time

    def level(self) -> bool:
        s = self.settings
        if s is not None and s.direction == _ext.DIRECTION_OUTPUT:
            return self.output != s.active_low
        if self.external is not None:
            return self.external
        bias = _ext.BIAS_DISABLED if s is None else s.bias
        return bias == _ext.BIAS_PULL_UP


@dataclass
class SimChip:
    kernel: SimKernel
    path: str
    name: str
    label: str
    lines: list[_Line] = field(default_factory=list)
    gone: bool = False

    # -- the outside world ----------------------------------------------------------------

    def drive(self, offset: int, level: bool | None) -> None:
        """A contact on the line: True high, False low, None let go (the bias decides)."""
        with self.kernel.lock:
            line = self.lines[offset]
            line.external = level
            self.kernel._changed(self, line)

    def level(self, offset: int) -> bool:
        """What a meter on the line reads (an output's level, an input's)."""
        with self.kernel.lock:
            return self.lines[offset].level()

    def settings(self, offset: int) -> FakeLineSettings | None:
        with self.kernel.lock:
            return self.lines[offset].settings


class SimKernel:
    """The simulated GPIO subsystem: chips by device path, one monotonic clock."""

    def __init__(self, now_ns: int = 1_000_000_000) -> None:
        self.chips: dict[str, SimChip] = {}
        self.now_ns = now_ns
        self.lock = threading.RLock()
        self.seqno = 0

    def add_chip(
        self, path: str, label: str, num_lines: int, names: dict[int, str] | None = None
    ) -> SimChip:
        with self.lock:
            name = os.path.basename(path)
            lines = [_Line(i, (names or {}).get(i, "")) for i in range(num_lines)]
            chip = self.chips[path] = SimChip(self, path, name, label, lines)
            return chip

    def unplug(self, path: str) -> None:
        """The chip goes away: its node, and every request's descriptor hangs up."""
        with self.lock:
            chip = self.chips.pop(path)
            chip.gone = True
            for line in chip.lines:
                if line.request is not None:
                    line.request._hang_up()

    def advance(self, seconds: float) -> None:
        """Time passes: debounced changes that stayed long enough are reported."""
        with self.lock:
            self.now_ns += int(seconds * 1e9)
            for chip in self.chips.values():
                for line in chip.lines:
                    self._settle(chip, line)

    def _changed(self, chip: SimChip, line: _Line) -> None:
        s = line.settings
        if line.request is None or s is None or s.direction == _ext.DIRECTION_OUTPUT:
            return
        if s.debounce_period:
            line.pending_since = self.now_ns if line.level() != line.reported else None
            self._settle(chip, line)
        else:
            self._report(line)

    def _settle(self, chip: SimChip, line: _Line) -> None:
        s = line.settings
        if line.pending_since is None or s is None:
            return
        if self.now_ns - line.pending_since >= s.debounce_period * 1000:
            line.pending_since = None
            self._report(line)

    def _report(self, line: _Line) -> None:
        level = line.level()
        if level == line.reported:
            return
        line.reported = level
        s = line.settings
        assert s is not None and line.request is not None
        rising = level != s.active_low
        want = {
            _ext.EDGE_BOTH: True,
            _ext.EDGE_RISING: rising,
            _ext.EDGE_FALLING: not rising,
        }.get(s.edge_detection, False)
        if want:
            self.seqno += 1
            kind = _ext.EDGE_EVENT_TYPE_RISING if rising else _ext.EDGE_EVENT_TYPE_FALLING
            line.request._queue(gpiod.EdgeEvent(kind, self.now_ns, line.offset, self.seqno, 0))

    # -- the _ext module, as gpiod's Python layer sees it -----------------------------------

    def install(self, monkeypatch: Any) -> None:
        kernel = self

        class Chip(FakeChip):
            def __init__(self, path: str) -> None:
                super().__init__(kernel, path)

        monkeypatch.setattr(_ext, "Chip", Chip)
        monkeypatch.setattr(_ext, "LineConfig", FakeLineConfig)
        monkeypatch.setattr(_ext, "LineSettings", FakeLineSettings)
        monkeypatch.setattr(_ext, "is_gpiochip_device", lambda path: path in kernel.chips)


@dataclass
class FakeLineSettings:
    direction: int = _ext.DIRECTION_AS_IS
    edge_detection: int = _ext.EDGE_NONE
    bias: int = _ext.BIAS_AS_IS
    drive: int = _ext.DRIVE_PUSH_PULL
    active_low: bool = False
    debounce_period: int = 0  # microseconds, as libgpiod takes it
    event_clock: int = _ext.CLOCK_MONOTONIC
    output_value: int = INACTIVE


class FakeLineConfig:
    def __init__(self) -> None:
        self.settings: dict[int, FakeLineSettings] = {}
        self.outputs: list[Value] | None = None

    def add_line_settings(self, offsets: list[int], settings: FakeLineSettings) -> None:
        for o in offsets:
            self.settings[o] = settings

    def set_output_values(self, values: list[Value]) -> None:
        self.outputs = list(values)


class FakeChip:
    def __init__(self, kernel: SimKernel, path: str) -> None:
        if path not in kernel.chips:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        self.kernel = kernel
        self.chip = kernel.chips[path]
        self._closed = False

    def _live(self) -> SimChip:
        if self.chip.gone:
            raise _gone(self.chip.path)
        return self.chip

    def get_info(self) -> gpiod.ChipInfo:
        c = self._live()
        return gpiod.ChipInfo(c.name, c.label, len(c.lines))

    def line_offset_from_id(self, id: str) -> int:
        for line in self._live().lines:
            if line.name == id:
                return line.offset
        raise FileNotFoundError(errno.ENOENT, "no line of that name", id)

    def get_line_info(self, offset: int, watch: bool) -> gpiod.LineInfo:
        with self.kernel.lock:
            line = self._live().lines[offset]
            s = line.settings or FakeLineSettings(direction=_ext.DIRECTION_INPUT)
            return gpiod.LineInfo(
                offset,
                line.name,
                line.request is not None,
                line.request.consumer if line.request else "",
                s.direction if s.direction != _ext.DIRECTION_AS_IS else _ext.DIRECTION_INPUT,
                s.active_low,
                s.bias if s.bias != _ext.BIAS_AS_IS else _ext.BIAS_UNKNOWN,
                s.drive,
                s.edge_detection,
                s.event_clock,
                bool(s.debounce_period),
                s.debounce_period,
            )

    def get_line_name(self, offset: int) -> str | None:
        return self._live().lines[offset].name or None

    def request_lines(
        self, line_cfg: FakeLineConfig, consumer: str | None, event_buffer_size: int | None
    ) -> FakeRequest:
        with self.kernel.lock:
            chip = self._live()
            for o in line_cfg.settings:
                if not 0 <= o < len(chip.lines):
                    raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
                if chip.lines[o].request is not None:
                    raise OSError(errno.EBUSY, os.strerror(errno.EBUSY))
            req = FakeRequest(self.kernel, chip, consumer or "?", sorted(line_cfg.settings))
            for o in req.offsets:
                line = chip.lines[o]
                line.request = req
                req._apply(line, line_cfg.settings[o])
                line.reported = line.level()
            return req

    def read_info_event(self) -> Any:
        raise NotImplementedError("info events are not simulated")

    def unwatch_line_info(self, line: int) -> None:
        pass

    def close(self) -> None:
        self._closed = True

    @property
    def path(self) -> str:
        return self.chip.path

    @property
    def fd(self) -> int:
        raise NotImplementedError("a simulated chip has no descriptor")


class FakeRequest:
    def __init__(self, kernel: SimKernel, chip: SimChip, consumer: str, offsets: list[int]):
        self.kernel = kernel
        self.chip = chip
        self.consumer = consumer
        self.offsets = offsets
        self._events: list[gpiod.EdgeEvent] = []
        self._r, self._w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._released = False
        #: every reconfiguration, for tests of what gpiozero asked the kernel
        self.history: list[dict[int, FakeLineSettings]] = []

    # -- the kernel side ------------------------------------------------------------------

    def _apply(self, line: _Line, s: FakeLineSettings) -> None:
        was_output = line.settings is not None and line.settings.direction == _ext.DIRECTION_OUTPUT
        line.settings = s
        if s.direction == _ext.DIRECTION_OUTPUT and not was_output:
            line.output = s.output_value == ACTIVE
        line.pending_since = None

    def _queue(self, event: gpiod.EdgeEvent) -> None:
        self._events.append(event)
        if self._w >= 0:
            os.write(self._w, b"e")

    def _hang_up(self) -> None:
        if self._w >= 0:
            os.close(self._w)  # the read end now polls POLLHUP
            self._w = -1

    def _check(self) -> None:
        if self._released:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        if self.chip.gone:
            raise _gone(self.chip.path)

    # -- _ext.Request ---------------------------------------------------------------------

    def release(self) -> None:
        with self.kernel.lock:
            if self._released:
                return
            self._released = True
            for o in self.offsets:
                line = self.chip.lines[o]
                if line.request is self:
                    line.request = None
                    line.settings = None
            self._hang_up()
            os.close(self._r)

    def get_values(self, offsets: list[int], values: list[Any]) -> None:
        with self.kernel.lock:
            self._check()
            for i, o in enumerate(offsets):
                line = self.chip.lines[o]
                s = line.settings
                active = line.level() != (s.active_low if s else False)
                values[i] = Value.ACTIVE if active else Value.INACTIVE

    def set_values(self, values: dict[int, Value]) -> None:
        with self.kernel.lock:
            self._check()
            for o, v in values.items():
                line = self.chip.lines[o]
                if line.settings is None or line.settings.direction != _ext.DIRECTION_OUTPUT:
                    raise OSError(errno.EPERM, "not an output line")
                line.output = v == Value.ACTIVE

    def reconfigure_lines(self, line_cfg: FakeLineConfig) -> None:
        with self.kernel.lock:
            self._check()
            self.history.append(dict(line_cfg.settings))
            for o, s in line_cfg.settings.items():
                line = self.chip.lines[o]
                self._apply(line, s)
                # a level changed by the new bias is an edge, as on a real line
                self.kernel._changed(self.chip, line)

    def read_edge_events(self, max_events: int | None) -> list[gpiod.EdgeEvent]:
        with self.kernel.lock:
            self._check()
            n = len(self._events) if max_events is None else max_events
            out, self._events = self._events[:n], self._events[n:]
            try:
                os.read(self._r, 4096)
            except BlockingIOError:
                pass
            if self._events:
                os.write(self._w, b"e")
            return out

    @property
    def chip_name(self) -> str:
        return self.chip.name

    @property
    def num_lines(self) -> int:
        return len(self.offsets)

    @property
    def fd(self) -> int:
        if self._released:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        return self._r  # still open after the chip went: it polls POLLHUP
