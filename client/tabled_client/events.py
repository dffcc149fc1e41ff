"""Every tabled event type as a typed msgspec Struct: one tagged union on ``type``.

The daemon builds each event's ``data`` through these Structs (``daemon/journal/events.py``
``draft``), and the JSON Schema (``docs/events.schema.json``, shipped in the package) is
generated from them (``python -m tabled_client.schema``), so what a table publishes, what this
module decodes and what the schema says cannot drift.

A field that some events of a type carry and others do not is ``UNSET`` when absent: it is
not in the bytes, not ``null``. Unknown fields are ignored when decoding, so a newer table
that adds a field (a compatible change, ``v`` stays) still decodes.

This module is the client's one import for events; the work is split by job:

- ``base``: ``Data``, ``ResultData``, what every Struct builds on;
- ``table_events``, ``shoe_events``, ``round_events``: the shared catalogue (``catalogue``),
  the types of the table and of the shoe and round procedures;
- ``games``: each in-repository game's own types, kept in its folder and carried here;
- ``registry``: the envelope, ``DATA``/``VARIANTS``/``EVENTS``, :func:`register`, :func:`decode`;
- ``check``: :func:`check_data`, the daemon's check of each event, and its fast path.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from tabled_client import games, round_events, shoe_events, table_events
from tabled_client.base import SCHEMA_VERSION, Data, Hex64, ResultData
from tabled_client.check import _in_steps, _quick, _quick_fields, check_data
from tabled_client.registry import (
    DATA,
    EVENTS,
    VARIANTS,
    Event,
    UnknownEventType,
    any_event,
    decode,
    pick,
    register,
)

__all__ = [
    "DATA",
    "EVENTS",
    "SCHEMA_VERSION",
    "VARIANTS",
    "Data",
    "Event",
    "Hex64",
    "ResultData",
    "UnknownEventType",
    "_in_steps",
    "_quick",
    "_quick_fields",
    "check_data",
    "decode",
    "pick",
    "register",
]

# every Struct by its name (``events.HeldCard``, ``events.BaccaratResultData``) and every
# envelope class (``events.CardDealt``), as one catalogue module had them
for _module in (table_events, shoe_events, round_events, *games.modules()):
    globals().update(
        {k: v for k, v in vars(_module).items() if isinstance(v, type) and issubclass(v, Struct)}
    )
globals().update({cls.__name__: cls for cls in EVENTS.values()})


def __getattr__(name: str) -> Any:
    """``AnyEvent``: the tagged union of every event type registered now (a type registered
    after this module loaded is in it): ``msgspec.json.decode(raw, type=AnyEvent)``."""
    if name == "AnyEvent":
        return any_event()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
