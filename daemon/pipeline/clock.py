"""The daemon's injected time: the wall clock for event times, the monotonic clock for
readings and deadlines, and the boot the monotonic clock belongs to.

Its own module because every part that keeps time takes it from here (the pipeline,
the liveness reports, the tests' fake clocks): nothing of the table reads a clock
itself (``docs/architecture.md``, decide/apply).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


def boot_id() -> str | None:
    """This boot's id (Linux): which monotonic clock a saved ``mono`` was read on."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


@dataclass(slots=True)
class Clock:
    """Injected time: wall clock for event times, monotonic for readings and deadlines.

    ``boot`` names the monotonic clock: it restarts at every boot, so a monotonic time
    saved in the state means something only on the boot that took it.
    """

    wall: Callable[[], float] = time.time
    mono: Callable[[], float] = time.monotonic
    boot: Callable[[], str | None] = boot_id
