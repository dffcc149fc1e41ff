"""The typed ``[devices.sim]`` table every simulator declares, and the checks they share.

Each simulator module names its options as a msgspec struct (``Options``), like a
driver's ``Options``: read once, when the config is checked (``daemon/runtime/config.py``
checks the table against the struct, key by key), so a bad value is a config error
naming ``devices[N].sim.<key>`` and what is wrong, never a simulator that spins
(``pace = -1``), never wakes (``pace = inf``) or silently ignores a typo.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated

import msgspec

#: a time in seconds: zero or more, at most a day (``inf`` would be a simulator that never wakes)
Seconds = Annotated[float, msgspec.Meta(ge=0, le=86400)]
#: a whole number, zero or more (a seed, a count, a code)
Count = Annotated[int, msgspec.Meta(ge=0)]


class SimOptions(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A simulator's ``[devices.sim]``: unknown keys are refused, as everywhere in a config."""


def known(key: str, values: Iterable[str], allowed: Sequence[str], what: str) -> None:
    """Each of ``values`` (a list of fault names) is one ``allowed``, or a ValueError naming the key."""
    for v in values:
        if v not in allowed:
            raise ValueError(f"{key}: unknown {what} {v!r} (known: {', '.join(allowed)})")
