"""The seal: proof that a journal file is the one this daemon closed cleanly.

Start-up must not append to a broken chain, and must not pay for re-hashing a
million events it wrote itself on every restart. So a clean close leaves a
seal beside the journal (``journal.sqlite.seal``, owner-only): the head it
closed on and the file's identity — inode, size, modification and change
time of the database (and its WAL, if one was left). Any write to the file by
anything (``sqlite3``, an editor, a restore from a backup, a copy) changes its
change time, which only the kernel sets; so a start that finds the seal
matching knows the file holds exactly the chain the daemon verified and
appended to, and skips the walk. Any mismatch, a missing seal (a crash, a
power loss, a first start) or an unreadable one means the whole chain is
walked again. The seal is removed as soon as a daemon opens the journal for
writing. It is evidence against accident and edits, not against someone who
can also reset a file's change time (``docs/reliability.md``, Tamper evidence).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FORMAT = 1


def path_of(journal: str | Path) -> Path:
    return Path(f"{journal}.seal")


def _identity(p: Path) -> list[int] | None:
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def identity(journal: str | Path) -> dict[str, Any]:
    return {"db": _identity(Path(journal)), "wal": _identity(Path(f"{journal}-wal"))}


def write(journal: str | Path, journal_id: str, seq: int, hash_: str) -> None:
    """After the journal's last connection closed: record what it closed on."""
    body = {
        "format": FORMAT,
        "journal_id": journal_id,
        "seq": seq,
        "hash": hash_,
        **identity(journal),
    }
    p = path_of(journal)
    tmp = p.with_name(p.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(body, sort_keys=True).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, p)


def matches(journal: str | Path) -> dict[str, Any] | None:
    """The seal, if it exists and the file is still exactly the one it describes."""
    try:
        body = json.loads(path_of(journal).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        return None
    now = identity(journal)
    if body.get("db") != now["db"] or body.get("wal") != now["wal"] or now["db"] is None:
        return None
    return body


def remove(journal: str | Path) -> None:
    path_of(journal).unlink(missing_ok=True)
