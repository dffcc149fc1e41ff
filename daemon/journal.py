"""The journal: SQLite event store, the table's source of truth.

WAL mode with ``synchronous=FULL``: a committed transaction survives power
loss. All events decided from one input go into one transaction (several
inputs may share one: group commit), and nothing is published before its
transaction commits. Rows carry a SHA-256 hash chain so that an altered,
removed or reordered row is found by :func:`verify`. Snapshots of the table
state, written in the same transaction as the event they follow, keep start
time flat however long the journal grows; the events stay the truth and a
snapshot is used only when its hash matches the event row it claims.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from daemon import faults
from daemon.events import GENESIS, Draft, Event, check, decode, seal

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq  INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    body BLOB NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshots (
    seq     INTEGER PRIMARY KEY,
    hash    TEXT NOT NULL,
    version TEXT NOT NULL,
    state   BLOB NOT NULL
);
"""


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


def connect(path: str | Path, *, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        uri = f"file:{Path(path).resolve()}?mode=ro"
        db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
    else:
        db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA busy_timeout=5000")
    return db


class Journal:
    """Append-only writer and reader of one table's events."""

    def __init__(self, path: str | Path, table: str) -> None:
        self.path = str(path)
        self.table = table
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.db = connect(self.path)
        self.db.executescript(_SCHEMA)
        meta = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        if not meta:
            self.journal_id = uuid.uuid4().hex
            with self._tx():
                self.db.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [("table", table), ("journal_id", self.journal_id), ("format", "1")],
                )
        else:
            if meta.get("table") != table:
                raise JournalError(
                    f"{self.path} is the journal of table {meta.get('table')!r}, "
                    f"not {table!r}: point [journal] path at this table's own file"
                )
            self.journal_id = meta["journal_id"]
        row = self.db.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        self.last_seq: int = row[0] if row else 0
        self.last_hash: str = row[1] if row else GENESIS

    # -- writing ---------------------------------------------------------------

    def _tx(self) -> _Tx:
        return _Tx(self.db)

    def append(
        self, batches: Sequence[Batch], snapshot: tuple[str, bytes] | None = None
    ) -> list[Event]:
        """Seal and commit every draft of ``batches`` in one transaction.

        ``snapshot`` (version, state bytes) is the table state after the
        last event, stored in the same transaction. On failure nothing is
        committed and the journal's head is unchanged.
        """
        seq, prev = self.last_seq, self.last_hash
        events: list[Event] = []
        rows: list[tuple[int, str, bytes, str]] = []
        for b in batches:
            for d in b.drafts:
                seq += 1
                ev, raw = seal(
                    table=self.table, seq=seq, draft=d, time=b.time, mono=b.mono, prev=prev
                )
                prev = ev.hash
                events.append(ev)
                rows.append((seq, ev.type, raw, ev.hash))
        if not rows:
            return events
        faults.before_commit()
        with self._tx():
            self.db.executemany("INSERT INTO events VALUES (?, ?, ?, ?)", rows)
            # The head, kept beside the chain, is what shows a removed last row.
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('head', ?)", (f"{seq}:{prev}",))
            if snapshot is not None:
                self.db.execute(
                    "INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?, ?)",
                    (seq, prev, snapshot[0], snapshot[1]),
                )
        self.last_seq, self.last_hash = seq, prev
        return events

    def close(self) -> None:
        self.db.close()

    # -- reading ---------------------------------------------------------------

    def latest_snapshot(self, version: str) -> tuple[int, str, bytes] | None:
        """The newest snapshot of this state version whose hash matches its event row."""
        row = self.db.execute(
            "SELECT s.seq, s.hash, s.state FROM snapshots s JOIN events e ON e.seq = s.seq "
            "WHERE s.version = ? AND s.hash = e.hash ORDER BY s.seq DESC LIMIT 1",
            (version,),
        ).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def prune_snapshots(self, keep: int = 3) -> None:
        with self._tx():
            self.db.execute(
                "DELETE FROM snapshots WHERE seq NOT IN "
                "(SELECT seq FROM snapshots ORDER BY seq DESC LIMIT ?)",
                (keep,),
            )


class _Tx:
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


def verify_chain(
    db: sqlite3.Connection, start: int = 1, prev: str = GENESIS
) -> tuple[int, Problem | None]:
    """Walk the chain from ``start`` (whose predecessor hash is ``prev``).

    Returns the number of events checked and the first problem found, naming
    its seq: an altered row fails its hash, a removed row leaves a gap, a
    swapped row has a body whose seq is not its row's and a broken ``prev``.
    """
    # One read transaction: the rows and the recorded head come from the same moment,
    # even while the daemon goes on appending.
    own_tx = not db.in_transaction
    if own_tx:
        db.execute("BEGIN")
    try:
        return _verify(db, start, prev)
    finally:
        if own_tx:
            db.execute("COMMIT")


def _verify(db: sqlite3.Connection, start: int, prev: str) -> tuple[int, Problem | None]:
    expected = start
    checked = 0
    for seq, body, row_hash in _rows(db, start):
        if seq != expected:
            return checked, Problem(expected, f"missing (the next event stored is seq {seq})")
        if not isinstance(body, bytes):  # a row rewritten by hand may come back as TEXT
            body = str(body).encode()
        fields, what = check(body, prev)
        if what is None and fields.get("seq") != seq:
            what = f"row holds the event of seq {fields.get('seq')}"
        if what is None and row_hash != fields["hash"]:
            what = "row hash column does not match the event"
        if what is not None:
            return checked, Problem(seq, what)
        prev = row_hash
        expected += 1
        checked += 1
    head = db.execute("SELECT value FROM meta WHERE key = 'head'").fetchone()
    if head is not None:
        head_seq, _, head_hash = head[0].partition(":")
        if int(head_seq) >= expected:
            return checked, Problem(expected, f"missing (the journal's head is seq {head_seq})")
        if int(head_seq) < expected - 1:
            return checked, Problem(int(head_seq) + 1, "stored beyond the journal's recorded head")
        if int(head_seq) == expected - 1 and checked and head_hash != prev:
            return checked, Problem(expected - 1, "does not match the journal's recorded head")
    return checked, None


def _rows(db: sqlite3.Connection, start: int) -> Iterator[tuple[int, bytes, str]]:
    cur = db.execute("SELECT seq, body, hash FROM events WHERE seq >= ? ORDER BY seq", (start,))
    while rows := cur.fetchmany(2000):
        yield from rows
