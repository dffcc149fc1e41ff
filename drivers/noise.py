"""Line noise: a wire that carries mostly garbage is not believed. Sans-I/O.

Most of our protocols have no checksum (a card code line, a wheel's status
line), so some garbage on a noisy wire (a wrong baud rate, a bad cable or
ground, a terminal server spewing) is bound to look like a frame: a megabyte
of random bytes makes a couple of dozen short codes that look like a card.
One garbage line is a glitch; most of the last few lines being garbage is the
signature of a noisy link. The meter takes each line's verdict in order and
says when the line turned noisy; the table then raises a latched alarm and
holds what the device reads for a supervisor (``docs/reliability.md``, line
noise). What it cannot do is prove a single line clean: a card code in the
first lines of a burst, before the meter trips, is judged alone.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from drivers.readings import LineNoise, Malformed, Reading


@dataclass(frozen=True, slots=True)
class NoiseRule:
    """Noisy: at least ``limit`` malformed among the last ``lines`` lines of ``window`` s.

    The default, 6 of 8, stays clear of the busiest healthy traffic we have: the real
    SS2 capture alternates status frames with malformed vendor lines (4 of 8).
    """

    limit: int = 6
    lines: int = 8
    window: float = 60.0


DEFAULT_RULE = NoiseRule()


class NoiseMeter:
    """One device's line verdicts; trips once per burst, quiet again after clean lines."""

    __slots__ = ("_recent", "bursts", "noisy", "rule")

    def __init__(self, rule: NoiseRule) -> None:
        self.rule = rule
        self._recent: deque[tuple[float, Reading]] = deque(maxlen=rule.lines)
        self.noisy = False
        self.bursts = 0

    def reading(self, r: Reading, mono: float) -> LineNoise | None:
        """Count one reading's line; a :class:`LineNoise` when it makes the line noisy."""
        q = self._recent
        q.append((mono, r))
        while mono - q[0][0] > self.rule.window:
            q.popleft()
        bad = sum(1 for _, x in q if isinstance(x, Malformed))
        if self.noisy:
            self.noisy = bad > 0  # quiet again once the last lines are all clean
            return None
        if bad < self.rule.limit:
            return None
        self.noisy = True
        self.bursts += 1
        recent = tuple(
            x.frame.decode("ascii", "backslashreplace")
            for _, x in q
            if not isinstance(x, Malformed)
        )
        return LineNoise(frame=r.frame, malformed=bad, lines=len(q), recent=recent)


def rule_for(limit: int | None) -> NoiseRule | None:
    """A device's ``noise_limit``: None the default rule, 0 no meter."""
    if limit is None:
        return DEFAULT_RULE
    return NoiseRule(limit=limit) if limit > 0 else None
