"""Reading the journal back: stored bytes in seq order, and the state's own view with secrets.

Replay, recall and subscribers read the published bodies (:func:`read_raw`); only the
table's recovery and the secret checks read the secret rows beside them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any, Final

import msgspec

from daemon.journal.events import SECRET, Event, decode

#: a secret row whose body is not JSON (see :func:`read_with_secrets`)
UNREADABLE: Final = "<unreadable secret row>"


def read_with_secrets(
    db: sqlite3.Connection, start: int = 1
) -> Iterator[tuple[int, str, dict[str, Any], Any]]:
    """Events from ``start`` as (seq, type, data, secret part or None): what a secret check reads.

    A secret row that is not JSON comes back as the :data:`UNREADABLE` marker, for the
    game to report at its seq.
    """
    cur = db.execute("SELECT seq, body FROM secrets WHERE seq >= ? ORDER BY seq", (start,))
    secret = dict(cur.fetchall())
    for ev in read_events(db, start):
        body = secret.get(ev.seq)
        if body is None:
            yield ev.seq, ev.type, ev.data, None
            continue
        try:
            value: Any = msgspec.json.decode(body if isinstance(body, bytes) else str(body))
        except msgspec.DecodeError:
            value = UNREADABLE
        yield ev.seq, ev.type, ev.data, value


def read_raw(
    db: sqlite3.Connection, start: int, stop: int | None = None, chunk: int = 1000
) -> Iterator[tuple[int, bytes]]:
    """Stored bytes of events ``start..stop`` (inclusive) in seq order, read in chunks."""
    seq = max(start, 1)
    while True:
        hi = seq + chunk - 1 if stop is None else min(seq + chunk - 1, stop)
        if hi < seq:
            return
        rows = db.execute(
            "SELECT seq, body FROM events WHERE seq BETWEEN ? AND ? ORDER BY seq", (seq, hi)
        ).fetchall()
        yield from rows
        if len(rows) < hi - seq + 1:
            # a hole or the end: continue past holes only while rows remain
            nxt = db.execute("SELECT MIN(seq) FROM events WHERE seq > ?", (hi,)).fetchone()[0]
            if nxt is None or (stop is not None and nxt > stop):
                return
            seq = nxt
        else:
            seq = hi + 1


def read_events(db: sqlite3.Connection, start: int = 1, stop: int | None = None) -> Iterator[Event]:
    for _, raw in read_raw(db, start, stop):
        yield decode(raw)


def read_for_state(db: sqlite3.Connection, start: int = 1) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(type, data)`` of events from ``start`` as the table applies them: with their secret part.

    Only the table's own recovery reads this; replay, recall and subscribers read
    the published bodies (:func:`read_raw`), which never hold a secret part.
    """
    cur = db.execute("SELECT seq, body FROM secrets WHERE seq >= ? ORDER BY seq", (start,))
    secret = {seq: body for seq, body in cur.fetchall()}
    for ev in read_events(db, start):
        if ev.seq in secret:
            yield ev.type, {**ev.data, SECRET: msgspec.json.decode(secret[ev.seq])}
        else:
            yield ev.type, ev.data
