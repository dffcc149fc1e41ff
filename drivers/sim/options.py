"""The checks every simulator's ``[devices.sim]`` numbers share.

A simulator option is read once, when the config is checked (``daemon/config.py``
starts the simulator's ``from_options``), so a bad value is a config error naming
``devices[N].sim`` and the key, never a simulator that spins (``pace = -1``) or
never wakes (``pace = inf``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def seconds(sim: Mapping[str, Any], key: str, default: float) -> float:
    """A time in seconds: a finite number, zero or more."""
    v = sim.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
        raise ValueError(f"{key}: expected a number of seconds >= 0, got {v!r}")
    return float(v)


def count(sim: Mapping[str, Any], key: str, default: int) -> int:
    """A whole number, zero or more (a seed, a count, a code)."""
    v = sim.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{key}: expected a whole number >= 0, got {v!r}")
    return v
