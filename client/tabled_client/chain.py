"""Each table's hash chain, checked as events arrive: a break raises, never passes silently.

``hash = SHA-256(prev as 32 raw bytes ‖ canonical JSON of the event without "hash")``
(``docs/events.md``). The canonical body is recomputed from the received bytes
(keys sorted, compact, UTF-8), so a reordered, edited, dropped or replayed event
shows as a break.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final

import msgspec

GENESIS: Final = "0" * 64

_encoder = msgspec.json.Encoder(order="sorted")
_decoder = msgspec.json.Decoder()


class ChainBroken(Exception):
    """An event does not follow the one before it in its table's chain."""


def event_hash(fields: dict[str, Any]) -> str:
    body = _encoder.encode({k: v for k, v in fields.items() if k != "hash"})
    return hashlib.sha256(bytes.fromhex(str(fields.get("prev", GENESIS))) + body).hexdigest()


@dataclass(slots=True)
class Link:
    """Where one table's chain stands: its journal, the last seq and hash seen."""

    journal_id: str | None = None
    seq: int = 0
    hash: str = GENESIS


class Chain:
    """Verifies one table's events in order; ``check`` raises :class:`ChainBroken`.

    Start from seq 1 (genesis), or from a known head (``seq``, ``hash``) when resuming.
    A new journal (``journal_id`` changed) starts a new chain at seq 1.
    """

    def __init__(
        self, table: str = "", *, journal_id: str | None = None, seq: int = 0, hash: str = GENESIS
    ) -> None:
        self.table = table
        self.head = Link(journal_id, seq, hash)

    def check(self, raw: bytes, *, journal_id: str | None = None) -> dict[str, Any]:
        """Verify the next event's bytes; returns its fields."""
        try:
            fields = _decoder.decode(raw)
        except msgspec.DecodeError as e:
            raise ChainBroken(f"{self.table}: not JSON ({e})") from None
        if not isinstance(fields, dict) or not isinstance(fields.get("seq"), int):
            raise ChainBroken(f"{self.table}: not an event envelope")
        table = fields.get("table")
        if self.table and table != self.table:
            raise ChainBroken(f"{self.table}: event of table {table!r}")
        if journal_id is not None and journal_id != self.head.journal_id:
            if self.head.journal_id is not None or self.head.seq:
                # a replaced journal: its seqs start again at 1, a new chain
                self.head = Link(journal_id, 0, GENESIS)
            else:
                self.head.journal_id = journal_id
        seq = fields["seq"]
        if seq != self.head.seq + 1:
            raise ChainBroken(
                f"{table}: seq {seq} after {self.head.seq} (expected {self.head.seq + 1})"
            )
        if fields.get("prev") != self.head.hash:
            raise ChainBroken(
                f"{table} seq {seq}: prev {fields.get('prev')} is not the hash of seq "
                f"{self.head.seq} ({self.head.hash})"
            )
        if event_hash(fields) != fields.get("hash"):
            raise ChainBroken(f"{table} seq {seq}: hash does not match the event's bytes")
        self.head.seq, self.head.hash = seq, str(fields["hash"])
        return fields  # type: ignore[no-any-return]
