"""Stored proofs: the journal's head signed by the table's checkpoint key, kept beside the chain.

A start after a crash has no seal (``daemon/journal/seal.py``) and used to re-hash every
event to prove the chain before appending to it: 11 s for a million events. With
``[security] checkpoint_key`` the daemon signs the head of every commit that
writes a snapshot — the same signed checkpoint its heartbeats carry
(``daemon.security.Checkpointer``) — and stores it in that commit. A crash start
then takes the newest proof the key verifies, checks that the row at its seq
still carries the signed hash, and walks the chain from there to the head: the
snapshot it starts from and every event after it are proven, and the signed hash
binds all history before it (a rewrite of any earlier event changes it). What the
start does not do is re-hash the rows before the proof, so an old row edited in
place without rewriting the chain is found by ``tablectl verify`` and by every
subscriber that checks the chain, not by the start (``docs/reliability.md``,
Start-up verification). Without a key there is no proof and the start walks the
whole chain, as before.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from daemon.journal.events import canonical

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS proofs (
    seq   INTEGER PRIMARY KEY,
    hash  TEXT NOT NULL,
    proof BLOB NOT NULL
);
"""
#: proofs kept (the newest), like snapshots
KEEP: Final = 3

#: signs (table, journal_id, seq, hash) into a checkpoint (``daemon.security.Checkpointer``)
Signer = Callable[[str, str, int, str], dict[str, Any]]
#: whether a checkpoint read back was signed by the table's key
Check = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True, slots=True)
class Anchor:
    """Where a start may begin its walk: the proof's seq, its signed hash and the prev
    hash that row carries (bound by the signed hash: the walk recomputes it)."""

    seq: int
    hash: str
    prev: str


class Mismatch(Exception):
    """A proof the key verifies that the journal contradicts: its history was rewritten."""

    def __init__(self, seq: int, what: str) -> None:
        super().__init__(f"seq {seq}: {what}")
        self.seq = seq
        self.what = what


def sign(signer: Signer, table: str, journal_id: str, seq: int, hash_: str) -> bytes:
    return canonical(signer(table, journal_id, seq, hash_))


def store(db: sqlite3.Connection, seq: int, hash_: str, proof: bytes) -> None:
    """Inside the caller's transaction: the proof of the head it commits, older ones pruned."""
    db.execute("INSERT OR REPLACE INTO proofs VALUES (?, ?, ?)", (seq, hash_, proof))
    db.execute(
        "DELETE FROM proofs WHERE seq NOT IN (SELECT seq FROM proofs ORDER BY seq DESC LIMIT ?)",
        (KEEP,),
    )


def anchor(db: sqlite3.Connection, table: str, journal_id: str, valid: Check) -> Anchor | None:
    """The newest stored proof of this journal that ``valid`` accepts, checked against its row.

    A proof the key does not verify (altered, another key, another journal) is no
    proof: the start walks the whole chain. One it verifies whose row is missing or
    carries another hash raises :class:`Mismatch`.
    """
    has = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'proofs'")
    if has.fetchone() is None:
        return None
    for seq, h, proof in db.execute("SELECT seq, hash, proof FROM proofs ORDER BY seq DESC"):
        try:
            cp = msgspec.json.decode(proof if isinstance(proof, bytes) else str(proof).encode())
        except (msgspec.DecodeError, RecursionError):
            continue
        if not isinstance(cp, dict):
            continue
        if (cp.get("table"), cp.get("journal_id"), cp.get("seq"), cp.get("hash")) != (
            table,
            journal_id,
            seq,
            h,
        ) or not valid(cp):
            continue
        row = db.execute("SELECT body, hash FROM events WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            raise Mismatch(seq, "missing, yet this table's checkpoint key signed it")
        if row[1] != h:
            raise Mismatch(
                seq,
                "does not carry the hash this table's checkpoint key signed "
                "(the history up to it was rewritten)",
            )
        return Anchor(seq, h, _prev(row[0]))
    return None


def _prev(body: object) -> str:
    """The ``prev`` the row carries; "" if unreadable (the walk then names the row)."""
    try:
        fields = msgspec.json.decode(body if isinstance(body, bytes) else str(body).encode())
    except (msgspec.DecodeError, RecursionError):
        return ""
    prev = fields.get("prev") if isinstance(fields, dict) else None
    return prev if isinstance(prev, str) else ""


def verify(db: sqlite3.Connection, valid: Check | None = None) -> tuple[int, Mismatch | None]:
    """Every stored proof against the chain (``tablectl verify``): (matching, first problem).

    Without the key (``valid`` None) a proof must name its own row and carry that row's
    hash: a history rewritten after the proof was written shows. With it, the
    signature must verify too, or the proof is a forgery.
    """
    has = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'proofs'")
    if has.fetchone() is None:
        return 0, None
    n = 0
    meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('table', 'journal_id')"))
    rows = db.execute("SELECT seq, hash, proof FROM proofs ORDER BY seq").fetchall()
    for seq, h, proof in rows:
        try:
            cp = msgspec.json.decode(proof if isinstance(proof, bytes) else str(proof).encode())
        except (msgspec.DecodeError, RecursionError):
            return n, Mismatch(seq, "stored proof is not readable")
        if not isinstance(cp, dict) or (cp.get("seq"), cp.get("hash")) != (seq, h):
            return n, Mismatch(seq, "stored proof does not name its own row")
        if (cp.get("table"), cp.get("journal_id")) != (meta.get("table"), meta.get("journal_id")):
            return n, Mismatch(
                seq,
                f"stored proof is of table {cp.get('table')!r} journal {cp.get('journal_id')!r}, "
                "not the one meta names (meta was edited or the proof copied in)",
            )
        if valid is not None and not valid(cp):
            return n, Mismatch(seq, "stored proof is not signed by this table's checkpoint key")
        row = db.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
        if row is None or row[0] != h:
            return n, Mismatch(
                seq, "stored proof's hash is not the chain's (the history up to it was rewritten)"
            )
        n += 1
    return n, None
