"""The history behind a stored proof, re-hashed once the daemon is up (``docs/reliability.md``).

A crash start from a stored proof (``daemon/journal/proofs.py``) proves the snapshot and every
event after the proof, and the signed hash binds the history before it; it does not
re-hash those older rows, so an old row edited in place would pass the start (issue
18, break 2). Re-hashing a million rows before READY is what the proof saves (11 s),
so it is done after READY instead: on a read-only connection of its own, in one read
transaction, in a thread. A break stops the daemon loudly, and a marker beside the
journal makes every later start refuse at once with one line: a daemon must not
keep appending to, and restarting on, a chain it knows is broken. The marker stays
until a person has looked (``tablectl verify``) and removes it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

from daemon.journal import JournalError, verify_chain
from daemon.journal.events import GENESIS


class Stopped(Exception):
    """The daemon is stopping: the check ends here and is done again at the next start."""


def marker(journal: Path) -> Path:
    return journal.with_name(journal.name + ".broken-chain")


def refuse_if_marked(journal: Path) -> None:
    """At start: a journal an earlier check found broken is not appended to."""
    m = marker(journal)
    try:
        why = m.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return
    raise JournalError(
        f"journal {journal} {why}; the daemon will not append to it. Run `tablectl verify`, "
        f"keep the file for the investigation, and remove {m} once it is resolved"
    )


def check(journal: Path, stop: threading.Event) -> int:
    """Re-hash the whole chain; returns the events checked, raises JournalError on a break."""

    def progress(_: int) -> None:
        if stop.is_set():
            raise Stopped

    db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, check_same_thread=False)
    try:
        checked, problem = verify_chain(db, 1, GENESIS, progress=progress)
    except sqlite3.DatabaseError as e:
        checked, problem = 0, f"cannot be read ({e})"
    finally:
        db.close()
    if problem is None:
        return checked
    found = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    why = f"is damaged at {problem} (found by the history check behind the stored proof, {found})"
    fd = os.open(marker(journal), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(why + "\n")
    raise JournalError(f"journal {journal} {why}: the daemon stops and will not start on it")
