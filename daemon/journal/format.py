"""The journal's file format: its tables, its connection settings, its errors.

What the write path, the read path and the verifier share: the schema, how a
connection is opened (WAL, ``synchronous=FULL``), the one-line error for a damaged
file, the ``meta`` rules, the digest that seals a snapshot into the chain, and how a new
journal file is made (whole, or not at all).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from daemon.journal import proofs
from daemon.journal.events import Draft

#: the event that seals a snapshot into the chain (``docs/events.md``)
SNAPSHOT_EVENT = "journal.snapshot"
#: snapshots kept (the newest ones); older ones are removed in the same transaction
KEEP_SNAPSHOTS = 3

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq  INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    body BLOB NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS secrets (
    seq  INTEGER PRIMARY KEY,
    body BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshots (
    seq     INTEGER PRIMARY KEY,
    hash    TEXT NOT NULL,
    version TEXT NOT NULL,
    state   BLOB NOT NULL
);
"""
    + proofs.SCHEMA
)


class JournalError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Problem:
    """The first thing wrong with a journal's chain."""

    seq: int
    what: str

    def __str__(self) -> str:
        return f"seq {self.seq}: {self.what}"


@dataclass(frozen=True, slots=True)
class Batch:
    """Drafts decided from one input, with the times the envelope carries."""

    drafts: Sequence[Draft]
    time: str
    mono: float | None


#: each connection's page cache: SQLite's ``cache_size``, negative for KiB (512 KiB)
CACHE_SIZE = -512


def connect(path: str | Path, *, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        uri = f"file:{Path(path).resolve()}?mode=ro"
        db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
    else:
        db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA busy_timeout=5000")
    # 512 KiB of page cache, not SQLite's 2 MiB: the writer touches the B-trees' right edges
    # and one batch's pages; a soak measured 1.6 MiB less RSS and no more CPU per commit
    # (docs/performance-history.md, memory and start-up)
    db.execute(f"PRAGMA cache_size={CACHE_SIZE}")
    return db


def damaged(path: str | Path, what: str) -> str:
    """One line: which file, what is wrong with it, and how to go on."""
    return (
        f"journal {path} {what}: the daemon will not replace it or append to it. Keep it for "
        f"the investigation; restore the last good copy from a backup, or move it aside "
        f"(mv {path} {path}.damaged) to start a new journal at seq 1"
    )


def meta_problem(meta: dict[str, str]) -> str | None:
    for key in ("table", "journal_id", "format"):
        if not isinstance(meta.get(key), str) or not meta[key]:
            return f"has no {key!r} in its meta table"
    if meta["format"] != "1":
        return f"has format {meta['format']!r} in its meta table (this daemon reads format 1)"
    head = meta.get("head")
    if head is not None and parse_head(head) is None:
        return f"has a garbled 'head' in its meta table ({str(head)[:40]!r})"
    return None


def parse_head(value: object) -> tuple[int, str] | None:
    """``SEQ:HASH`` as written by :meth:`Journal.append`, or None if it is not that."""
    seq, sep, h = str(value).partition(":")
    if not sep or not seq.isdigit() or len(h) != 64:
        return None
    try:
        bytes.fromhex(h)
    except ValueError:
        return None
    return int(seq), h


def snapshot_data(version: str, state: bytes) -> dict[str, object]:
    return {
        "state_version": version,
        "sha256": hashlib.sha256(state).hexdigest(),
        "bytes": len(state),
    }


class Tx:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; rollback on any error."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        else:
            self._rollback()

    def _rollback(self) -> None:
        # SQLite may already have rolled back (a full disk at COMMIT): never mask the cause.
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass


def init_meta(db: sqlite3.Connection, table: str) -> str:
    """A new journal's ``meta``: its table, a new journal id, the format; the id."""
    journal_id = uuid.uuid4().hex
    with Tx(db):
        db.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("table", table), ("journal_id", journal_id), ("format", "1")],
        )
    return journal_id


def create(p: Path, table: str) -> None:
    """A new journal, made under a temporary name and renamed into place when complete."""
    tmp = p.with_name(p.name + ".new")
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        leftover.unlink(missing_ok=True)
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # owner-only
        db = connect(tmp)
        db.executescript(SCHEMA)
        init_meta(db, table)
        db.close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, p)
        dfd = os.open(p.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except (OSError, sqlite3.Error) as e:
        raise JournalError(f"journal {p}: cannot create it: {e}") from None
