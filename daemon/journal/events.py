"""The event envelope, its canonical bytes and its hash chain.

Every event — journaled, published and replayed — is one envelope. Its
canonical JSON (keys sorted, no whitespace, UTF-8, msgspec's stable number
form) is the single byte form that is hashed, stored and published, so a
backend can recompute any hash from what it received. ``docs/events.md``
lists every type; adding a field is compatible, renaming or removing one
bumps :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any, Final

import msgspec
from tabled_client.events import check_data

SCHEMA_VERSION: Final = 1
GENESIS: Final = "0" * 64

_encoder = msgspec.json.Encoder(order="sorted")
_decoder = msgspec.json.Decoder()


#: A draft's ``data`` key whose value is journaled but never published nor hashed: a
#: secret the table must keep (the blackjack hole card) until an event reveals it.
SECRET: Final = "secret"


class Draft(msgspec.Struct, frozen=True):
    """An event the table decided, before the journal gives it a seq and hash."""

    type: str
    data: dict[str, Any]


def draft(type_: str, data: dict[str, Any]) -> Draft:
    """A draft whose ``data`` passed its type's Struct in ``tabled_client.events``.

    Every event the table decides goes through here, so the daemon can only publish what
    the shipped JSON Schema describes: an unknown type, a missing or unknown field or a
    wrong value type raises at the ``add`` that made it (and fails that decision's tests).
    """
    check_data(type_, {k: v for k, v in data.items() if k != SECRET} if SECRET in data else data)
    return Draft(type_, data)


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """A committed event: what subscribers receive and the journal stores."""

    v: int
    table: str
    seq: int
    type: str
    time: str
    mono: float | None
    data: dict[str, Any]
    prev: str
    hash: str

    def canonical(self) -> bytes:
        return _encoder.encode(self)

    @property
    def topic(self) -> bytes:
        return f"{self.table}.{self.type}".encode()


def canonical(obj: Any) -> bytes:
    """Canonical JSON of any value (sorted keys, compact)."""
    return _encoder.encode(obj)


def decode(raw: bytes) -> Event:
    return msgspec.json.decode(raw, type=Event)


def body_of(fields: dict[str, Any]) -> bytes:
    """The hashed bytes: the canonical envelope without its ``hash`` field."""
    return _encoder.encode({k: v for k, v in fields.items() if k != "hash"})


def chain_hash(prev: str, body: bytes) -> str:
    """``SHA-256(prev_hash ‖ canonical bytes)``, prev as its 32 raw bytes."""
    return hashlib.sha256(bytes.fromhex(prev) + body).hexdigest()


def seal(
    *, table: str, seq: int, draft: Draft, time: str, mono: float | None, prev: str
) -> tuple[Event, bytes]:
    """Give a draft its place in the chain; returns the event and its stored bytes.

    A :data:`SECRET` part of the draft's data is left out of the event (and so of
    its hash and of what is published); the journal stores it beside the row.

    The data, the one large part, is encoded once: the hashed bytes are the canonical
    envelope without ``hash``, and ``hash`` sorts between ``data`` and ``mono``, so the
    stored bytes are the hashed ones with ``"hash":"…"`` spliced in after the data. They
    are exactly what encoding the whole envelope gives (``tests/test_journal.py`` holds
    it to that), and what is stored is what is published.
    """
    data = draft.data
    if SECRET in data:
        data = {k: v for k, v in data.items() if k != SECRET}
    enc = _encoder.encode
    head = b'{"data":' + enc(data)
    tail = b"".join(
        (
            b',"mono":',
            enc(mono),
            b',"prev":',
            enc(prev),
            b',"seq":%d,"table":' % seq,
            enc(table),
            b',"time":',
            enc(time),
            b',"type":',
            enc(draft.type),
            _V,
        )
    )
    h = hashlib.sha256(bytes.fromhex(prev) + head + tail).hexdigest()
    raw = b"".join((head, b',"hash":"', h.encode(), b'"', tail))
    ev = Event(
        v=SCHEMA_VERSION,
        table=table,
        seq=seq,
        type=draft.type,
        time=time,
        mono=mono,
        data=data,
        prev=prev,
        hash=h,
    )
    return ev, raw


_V: Final = b',"v":%d}' % SCHEMA_VERSION


def check(raw: bytes, prev: str) -> tuple[dict[str, Any], str | None]:
    """Recompute one stored event's hash; returns the fields and what is wrong, if anything."""
    try:
        fields = _decoder.decode(raw)
    except msgspec.DecodeError as e:
        return {}, f"not valid JSON ({e})"
    if not isinstance(fields, dict) or "hash" not in fields:
        return {}, "not an event envelope"
    if fields.get("prev") != prev:
        return fields, "prev does not match the hash of the event before it"
    if _encoder.encode(fields) != raw:
        return fields, "stored bytes are not canonical"
    if chain_hash(prev, body_of(fields)) != fields["hash"]:
        return fields, "hash does not match the event's bytes"
    return fields, None


#: the last second formatted: (its fields, its text up to the milliseconds), replaced whole so
#: that a thread never reads one second's fields beside another's text
_second: tuple[tuple[int, ...], str] = ((), "")


def utc_text(epoch_seconds: float) -> str:
    """UTC ISO-8601 with milliseconds and a Z, the one time format on the bus.

    ``strftime`` is most of the cost (a commit's envelope time, every heartbeat), and
    it is the same within a second: formatted once a second. The second is the
    datetime's own (it rounds the microseconds), so the text is exactly strftime's.
    """
    global _second
    dt = datetime.fromtimestamp(epoch_seconds, UTC)
    key = (dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second)
    seen, text = _second
    if seen != key:
        text = dt.strftime("%Y-%m-%dT%H:%M:%S.")
        _second = (key, text)
    return f"{text}{dt.microsecond // 1000:03d}Z"
