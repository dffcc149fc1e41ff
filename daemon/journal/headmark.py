"""The head mark: the last head the journal committed, kept outside the journal file.

A journal restored from an older backup is a whole, valid chain with the same journal
id: nothing in the file tells that it lost its newest events, which followers already
hold. Appending to it would reuse those seqs for other events (issue 28, item 6). So the
writer keeps, outside the file, the head of its last commit, written after each commit
and before its publish: whatever was published is at or before the mark. At start (and
in ``tablectl verify`` and ``doctor``) a journal of the mark's id whose head is behind it,
or whose event at the mark's seq is not the one marked, went backwards and is refused
(``docs/decisions.md``, How rollback is detected).

The mark is one fixed-size record overwritten in place (``pwrite``, ~1.5 µs of CPU, no
fsync: it is written after the commit's own fsync, so after a power loss it can only be
older than the journal, never newer; the clean stop syncs it). It carries its own checksum: a torn or
edited record is "unreadable", reported and replaced, never taken for a head. Where the
marks live (beside the journal, and ``[journal] head_mark`` outside the state directory)
decides which restores they see: ``docs/reliability.md``, Rollback.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from daemon.journal.format import JournalError

#: the record's first word and version
MAGIC = "tabled-head 1"
#: the record's size: always written whole, padded with spaces
SIZE = 256


@dataclass(frozen=True, slots=True)
class Mark:
    journal_id: str
    seq: int
    hash: str


def beside(journal: str | Path) -> Path:
    """The mark kept beside the journal: ``journal.sqlite.head``."""
    return Path(f"{journal}.head")


def paths(journal: str, extra: Sequence[str | Path]) -> list[Path]:
    """The marks of a journal file: beside it, then ``extra``, each once."""
    if journal == ":memory:":
        return []
    out: list[Path] = []
    for m in (beside(journal), *map(Path, extra)):
        if all(m.absolute() != k.absolute() for k in out):
            out.append(m)
    return out


def encode(journal_id: str, seq: int, hash_: str) -> bytes:
    body = f"{MAGIC} {journal_id} {seq} {hash_}"
    check = hashlib.sha256(body.encode()).hexdigest()[:16]
    return f"{body} {check}\n".encode().ljust(SIZE, b" ")


def read(path: Path) -> Mark | str | None:
    """The mark at ``path``; None when there is none; a string saying why it is unreadable."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    words = raw.decode(errors="replace").split()
    if len(words) != 6 or " ".join(words[:2]) != MAGIC or not words[3].isdigit():
        return "is not a head mark"
    body = " ".join(words[:5])
    if hashlib.sha256(body.encode()).hexdigest()[:16] != words[5]:
        return "fails its checksum (torn or edited)"
    return Mark(words[2], int(words[3]), words[4])


def behind(
    mark: Mark, journal_id: str, head_seq: int, hash_at: Callable[[int], str | None]
) -> str | None:
    """How a journal of ``journal_id`` at ``head_seq`` is behind ``mark``, or None.

    A mark of another journal id says nothing about this one (a journal moved aside and
    started anew has a new id).
    """
    if mark.journal_id != journal_id:
        return None
    if head_seq < mark.seq:
        return (
            f"its head is seq {head_seq}, but this table had committed and published up to "
            f"seq {mark.seq}"
        )
    if hash_at(mark.seq) != mark.hash:
        return (
            f"its event at seq {mark.seq} is not the one this table committed and published "
            f"there (hash {mark.hash[:16]}…): its history forked"
        )
    return None


def refusal(journal: str | Path, why: str, mark: Path, seq: int) -> str:
    """One line: what happened, what it would break, what to do."""
    return (
        f"journal {journal} went backwards: {why} (head mark {mark}). It was restored from an "
        "older copy or rolled back; followers already hold the events it lacks, and appending "
        "would reuse their seqs for other events, so the daemon will not start on it. Put back "
        f"the newest copy of the journal (the one holding seq {seq}); or, to go on without "
        f"those events, move this one aside (mv {journal} {journal}.rolled-back) to start a "
        "new journal (a new journal id, from seq 1)"
    )


def check(
    journal: str | Path,
    marks: Sequence[Path],
    journal_id: str,
    head_seq: int,
    hash_at: Callable[[int], str | None],
) -> tuple[str | None, list[str]]:
    """Every mark against the journal: (the refusal, if one shows it went backwards; notes
    on marks that could not be read)."""
    notes: list[str] = []
    for path in marks:
        m = read(path)
        if isinstance(m, str):
            notes.append(f"head mark {path} {m}: not used, it is rewritten")
        elif m is not None and (why := behind(m, journal_id, head_seq, hash_at)) is not None:
            return refusal(journal, why, path, m.seq), notes
    return None, notes


class Marks:
    """The writer's marks: opened at start, overwritten after every commit."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)
        self._fds: list[int] = []
        #: the last write error (a full or read-only disk): the mark then lags, never leads
        self.error: str | None = None
        for p in self.paths:
            try:
                p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                self._fds.append(os.open(p, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
            except OSError as e:
                self.error = f"head mark {p}: {e.strerror}"

    def write(self, journal_id: str, seq: int, hash_: str) -> None:
        rec = encode(journal_id, seq, hash_)
        for fd in self._fds:
            try:
                os.pwrite(fd, rec, 0)
            except OSError as e:
                self.error = f"head mark: {e.strerror}"

    def close(self, *, sync: bool) -> None:
        for fd in self._fds:
            try:
                if sync:
                    os.fsync(fd)
            except OSError:
                pass
            finally:
                os.close(fd)
        self._fds = []


def start(
    journal: str,
    marks: Sequence[Path],
    journal_id: str,
    head: tuple[int, str],
    db: sqlite3.Connection,
) -> tuple[Marks, list[str]]:
    """At start, once the chain is proven: refuse a journal behind a mark (:class:`JournalError`,
    one line), else the marks, written with the head, and notes on unreadable ones."""

    def hash_at(seq: int) -> str | None:
        row = db.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else str(row[0])

    why, notes = check(journal, marks, journal_id, head[0], hash_at)
    if why is not None:
        raise JournalError(why)
    writer = Marks(marks)
    writer.write(journal_id, *head)
    if writer.error is not None:  # the start goes on: a mark only ever lags
        notes.append(f"{writer.error}: the journal's head is not marked there")
    return writer, notes


def inspect(journal: Path, marks: Sequence[Path]) -> str | None:
    """The start's check of a journal file against its marks, read-only (``doctor``): the
    refusal, or None (also for a file it cannot read: ``tablectl verify`` names that)."""
    from daemon.journal.format import connect

    marked = [(m, read(m)) for m in marks]  # before the journal: the writer marks after commit
    try:
        db = connect(journal, readonly=True)
        try:
            jid = db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()
            head = db.execute("SELECT MAX(seq) FROM events").fetchone()[0] or 0

            def hash_at(seq: int) -> str | None:
                row = db.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
                return None if row is None else str(row[0])

            for m, mark in marked:
                if isinstance(mark, Mark) and jid is not None:
                    why = behind(mark, str(jid[0]), head, hash_at)
                    if why is not None:
                        return refusal(journal, why, m, mark.seq)
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return None
