"""What an attacker who can write the journal file does to it, for the tests and the fault campaign."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from daemon.journal.events import body_of, canonical, chain_hash


def rewrite_history_from(path: Path, seq: int, edit: Callable[[dict[str, Any]], None]) -> None:
    """The attack a walk cannot see: ``edit`` the event at ``seq`` and recompute every hash
    after it (the events, the snapshots' hash column, the recorded head), as anyone who can
    write the file can. Only the stored proofs, which need the table's key, stay as they were."""
    db = sqlite3.connect(path)
    rows = db.execute("SELECT seq, body FROM events WHERE seq >= ? ORDER BY seq", (seq,)).fetchall()
    prev = db.execute("SELECT hash FROM events WHERE seq = ?", (seq - 1,)).fetchone()[0]
    for s, body in rows:
        fields = msgspec.json.decode(body)
        if s == seq:
            edit(fields)
        fields["prev"] = prev
        fields["hash"] = prev = chain_hash(prev, body_of(fields))
        db.execute(
            "UPDATE events SET body = ?, hash = ? WHERE seq = ?", (canonical(fields), prev, s)
        )
        db.execute("UPDATE snapshots SET hash = ? WHERE seq = ?", (prev, s))
    db.execute("UPDATE meta SET value = ? WHERE key = 'head'", (f"{rows[-1][0]}:{prev}",))
    db.commit()
    db.close()
