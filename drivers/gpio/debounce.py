"""Debouncing, pure: one contact's raw edges with their times in, presses and releases out.

MockPin does not emulate gpiozero's ``bounce_time`` and real contacts bounce, so
debounce and hold times live here, tested on their own with injected time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Press:
    """A debounced press: the line went active at ``since`` and counted at ``at``."""

    at: float
    since: float
    edges: int  # raw edges seen since the last release (1 or 2 for a clean contact)


@dataclass(frozen=True, slots=True)
class Release:
    at: float
    held: float  # seconds from the line going active to it going inactive
    edges: int  # raw edges seen during the press and its release


class Debouncer:
    """One contact: raw edges with their times in, :class:`Press` / :class:`Release` out.

    A press counts once the line has been active, without a break, for
    ``max(debounce, hold)`` seconds; a release once it has been inactive for
    ``debounce``. So a bounce train shorter than ``debounce`` is one press,
    a glitch shorter than ``debounce`` is nothing, a press shorter than
    ``hold`` is nothing, and a glitch while held does not press again. The
    price is ``debounce`` seconds of latency, on purpose: a spike on a long
    cable must never close betting.

    Time is an argument, never read: :meth:`edge` takes the edge's time,
    :meth:`advance` the time now, and :attr:`deadline` says when something
    may next become due, so the caller sets one timer instead of polling.
    The output does not depend on when (or whether) :meth:`advance` is
    called between edges. Times that go backwards (an edge handed over late
    by another thread) are taken as the latest time seen.
    """

    __slots__ = ("_edges", "_last", "changed_at", "debounce", "hold", "level", "pressed", "since")

    def __init__(
        self, debounce: float, hold: float = 0.0, *, level: bool = False, now: float = 0.0
    ) -> None:
        if debounce < 0 or hold < 0:
            raise ValueError("debounce and hold must not be negative")
        self.debounce = debounce
        self.hold = hold
        #: the raw line: True while active (pressed, closed).
        self.level = level
        self.changed_at = now
        #: the debounced state; a line already active at start counts as held,
        #: so a stuck button must be released before it can press.
        self.pressed = level
        self.since = now
        self._last = now
        self._edges = 0

    @property
    def need(self) -> float:
        return max(self.debounce, self.hold)

    @property
    def deadline(self) -> float | None:
        if not self.pressed and self.level:
            return self.changed_at + self.need
        if self.pressed and not self.level:
            return self.changed_at + self.debounce
        return None

    def advance(self, now: float) -> list[Press | Release]:
        now = max(now, self._last)
        self._last = now
        out: list[Press | Release] = []
        if not self.pressed and self.level and now - self.changed_at >= self.need:
            self.pressed = True
            self.since = self.changed_at
            out.append(
                Press(at=self.changed_at + self.need, since=self.changed_at, edges=self._edges)
            )
        elif self.pressed and not self.level and now - self.changed_at >= self.debounce:
            self.pressed = False
            out.append(
                Release(
                    at=self.changed_at + self.debounce,
                    held=self.changed_at - self.since,
                    edges=self._edges,
                )
            )
            self._edges = 0
        return out

    def edge(self, active: bool, now: float) -> list[Press | Release]:
        out = self.advance(now)
        if active != self.level:
            self.level = active
            self.changed_at = self._last
            self._edges += 1
            out += self.advance(self._last)  # debounce 0: due at once
        return out
