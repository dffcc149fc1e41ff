"""The bus's frames that are not events: the heartbeat, the journal state, the replay's
request, end marker and error (``docs/events.md``), as Structs and a JSON Schema.

A backend in any language reads these beside the events, so they are part of the
contract: ``python -m tabled_client.frames`` prints their schema (committed once, as
``docs/bus.schema.json``, which the client's build puts in the package as
``bus.schema.json``: ``client/collect.py``); a test holds it to these Structs and validates
a live table's frames with it, in Python and in Node's ajv (strict Draft 2020-12).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import msgspec

from tabled_client.schema import _strict, write_or_print

SCHEMA_FILE = "bus.schema.json"

_Hex64 = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]
_Table = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]+$")]
_Time = Annotated[str, msgspec.Meta(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")]
_Seq = Annotated[int, msgspec.Meta(ge=0)]


class DeviceHealth(msgspec.Struct, frozen=True):
    health: Literal["ok", "stale", "disconnected"]
    frames: Annotated[int, msgspec.Meta(ge=0)]
    malformed: Annotated[int, msgspec.Meta(ge=0)]


class Checkpoint(msgspec.Struct, frozen=True):
    """The journal head signed by the table (``[security] checkpoint_key``)."""

    v: Literal["v1"]
    table: _Table
    journal_id: str
    seq: _Seq
    hash: _Hex64
    key_id: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{16}$")]
    sig: str


class HeartbeatData(msgspec.Struct, frozen=True):
    last_seq: _Seq
    last_hash: _Hex64
    journal_id: str
    devices: dict[str, DeviceHealth]
    alarms: Annotated[int, msgspec.Meta(ge=0)]
    journal_ok: bool
    checkpoint: Checkpoint | msgspec.UnsetType = msgspec.UNSET


class Heartbeat(msgspec.Struct, frozen=True, tag_field="type", tag="heartbeat"):
    """``<table>.heartbeat``, every ``[bus] heartbeat_interval`` seconds; never journaled."""

    v: Annotated[int, msgspec.Meta(ge=1)]
    table: _Table
    time: _Time
    mono: float
    data: HeartbeatData


class JournalStateData(msgspec.Struct, frozen=True):
    ok: bool
    error: str | None
    last_seq: _Seq


class JournalState(msgspec.Struct, frozen=True, tag_field="type", tag="journal.state"):
    """``<table>.journal.state``: commits started failing, or work again; never journaled."""

    v: Annotated[int, msgspec.Meta(ge=1)]
    table: _Table
    time: _Time
    data: JournalStateData


class ReplayRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a client sends the replay socket: one frame, at most 4096 bytes."""

    from_: Annotated[int, msgspec.Meta(ge=1)] = msgspec.field(name="from")
    to: Annotated[int, msgspec.Meta(ge=1)] | msgspec.UnsetType = msgspec.UNSET


class ReplayEnd(msgspec.Struct, frozen=True):
    """The frame after a replay's events: ``to`` is the last seq sent (``from - 1``: none)."""

    end: Literal[True]
    from_: Annotated[int, msgspec.Meta(ge=1)] = msgspec.field(name="from")
    to: _Seq = 0
    last_seq: _Seq = 0
    journal_id: str = ""


class ReplayError(msgspec.Struct, frozen=True):
    """One frame instead of events: what was wrong with the request, or ``busy: …``."""

    error: str


FRAMES = (Heartbeat, JournalState, ReplayRequest, ReplayEnd, ReplayError)


def generate() -> dict[str, Any]:
    (refs, defs) = msgspec.json.schema_components(FRAMES, ref_template="#/$defs/{name}")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "tabled bus frames that are not events",
        "description": "The heartbeat, the journal state, the replay's request, end marker "
        "and error frame (docs/events.md). Generated from tabled_client.frames; do not edit.",
        "anyOf": list(refs),
        "$defs": _strict(defs),
    }


def text() -> str:
    return json.dumps(generate(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    return write_or_print(argv, text(), "tabled_client.frames")


if __name__ == "__main__":
    raise SystemExit(main())
