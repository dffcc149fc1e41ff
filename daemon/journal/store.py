"""The journal's write path: open (or create) one table's file, append, close and seal.

WAL mode with ``synchronous=FULL``: a committed transaction survives power
loss. All events decided from one input go into one transaction (several
inputs may share one: group commit), and nothing is published before its
transaction commits. Rows carry a SHA-256 hash chain so that an altered,
removed or reordered row is found by :func:`daemon.journal.verify.verify_chain`.
Snapshots of the table state, written in the same transaction as the event
they follow, keep start time flat however long the journal grows; the events
stay the truth and a snapshot is used only when the chain proves it: each one
is written with a ``journal.snapshot`` event that carries the SHA-256 of the
state bytes, so altering a snapshot breaks the chain as surely as altering an
event.

A file that is not a journal this daemon wrote (empty, cut short, random
bytes, another SQLite database, garbage in ``meta``) is refused with one line
naming it, never replaced; a new journal is built beside its final name and
renamed into place, so a crash while creating one leaves no half-made file.
One daemon per journal: an exclusive ``fcntl`` lock on ``<journal>.lock`` (the path) and a
``flock`` on the journal file itself (the inode: a hard link is the same file).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from daemon.journal import headmark, locks, proofs
from daemon.journal import seal as seals
from daemon.journal.events import GENESIS, SECRET, Event, canonical, draft, seal
from daemon.journal.format import (
    KEEP_SNAPSHOTS,
    SCHEMA,
    SNAPSHOT_EVENT,
    Batch,
    JournalError,
    Tx,
    connect,
    create,
    damaged,
    init_meta,
    meta_problem,
    snapshot_data,
)
from daemon.journal.verify import UNSEALED, snapshot_problem
from daemon.runtime import faults

#: the event rows of a commit
_INSERT_EVENT = "INSERT INTO events VALUES (?, ?, ?, ?)"
#: the head, written by every commit (``docs/decisions.md``: the head kept in ``meta``)
_WRITE_HEAD = (
    "INSERT INTO meta VALUES ('head', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


class Journal:
    """Append-only writer and reader of one table's events."""

    def __init__(
        self,
        path: str | Path,
        table: str,
        *,
        lock: bool = True,
        head_marks: Sequence[str | Path] = (),
    ) -> None:
        self.path = str(path)
        self.table = table
        #: the head marked outside the file (beside it, and ``head_marks``; ``headmark.py``),
        #: written from :meth:`check_marks` on
        self._mark_paths = headmark.paths(self.path, head_marks) if lock else []
        self.marks: headmark.Marks | None = None
        self._lock_fd: int | None = None
        self._file_lock: tuple[int, int] | None = None
        #: called after each commit try with (seconds, committed): the metrics
        self.commit_observers: list[Callable[[float, bool], None]] = []
        #: the seal found when the journal was opened, if the file was exactly the sealed one
        self.sealed: dict[str, object] | None = None
        #: with the table's checkpoint key: signs the head of each commit with a snapshot,
        #: and tells a proof read back at start-up from a forged one (``daemon/journal/proofs.py``)
        self.prover: proofs.Signer | None = None
        self.proof_check: proofs.Check | None = None
        if self.path == ":memory:":
            self.db = connect(self.path)
            self.db.executescript(SCHEMA)
            self.journal_id = init_meta(self.db, self.table)
        else:
            p = Path(self.path)
            try:
                p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as e:
                raise JournalError(f"journal {p}: cannot create {p.parent}: {e}") from None
            if lock:
                self._lock_fd = locks.lock_path(p)
            try:
                self.sealed = seals.matches(p)
                seals.remove(p)  # from here on this process may write: the old seal is void
                if not p.exists():
                    create(p, self.table)
                if lock and not p.is_dir():
                    self._file_lock = locks.lock_file(p)  # the inode: a hard link too
                self.db, self.journal_id = self._open(p)
            except BaseException:
                self._unlock()
                raise
        try:
            row = self.db.execute(
                "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1"
            ).fetchone()
        except sqlite3.DatabaseError as e:
            self.db.close()
            self._unlock()
            raise JournalError(damaged(self.path, f"cannot be read ({e})")) from None
        #: (seq, hash) of the last committed event, replaced whole by each commit: another
        #: thread (the heartbeat, status) reads a seq with its own hash, never the one before
        self.head: tuple[int, str] = (row[0], row[1]) if row else (0, GENESIS)
        sealed = self.sealed or {}
        if [sealed.get(k) for k in ("seq", "hash", "journal_id")] != [*self.head, self.journal_id]:
            self.sealed = None

    @property
    def last_seq(self) -> int:
        """The last committed seq; with its hash, read :attr:`head` once instead."""
        return self.head[0]

    @property
    def last_hash(self) -> str:
        """The last committed hash; with its seq, read :attr:`head` once instead."""
        return self.head[1]

    # -- opening ---------------------------------------------------------------

    def _unlock(self) -> None:
        if self._file_lock is not None:
            locks.unlock_file(self._file_lock)  # after the connection: SQLite's is closed
            self._file_lock = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the fcntl lock
            self._lock_fd = None

    def _open(self, p: Path) -> tuple[sqlite3.Connection, str]:
        if p.is_dir():
            raise JournalError(f"journal {p} is a directory, not a journal file")
        if p.stat().st_size == 0:
            raise JournalError(damaged(p, "is empty (0 bytes)"))
        for f in (p, p.parent):
            if not os.access(f, os.W_OK):
                raise JournalError(
                    f"journal {p}: {f} is not writable by this user (uid {os.getuid()}); "
                    "the state directory and the journal must belong to the daemon's user"
                )
        # Looked at read-only first: a file that turns out not to be a journal is left as found.
        try:
            ro = connect(p, readonly=True)
        except sqlite3.Error as e:
            raise JournalError(damaged(p, f"cannot be opened ({e})")) from None
        try:
            tables = {
                r[0] for r in ro.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if not {"meta", "events"} <= tables:
                raise JournalError(damaged(p, "is a SQLite database but not a tabled journal"))
            meta = dict(ro.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as e:
            raise JournalError(damaged(p, f"is not a readable SQLite database ({e})")) from None
        finally:
            ro.close()
        what = meta_problem(meta)
        if what is not None:
            raise JournalError(damaged(p, what))
        if meta["table"] != self.table:
            raise JournalError(
                f"{p} is the journal of table {meta['table']!r}, "
                f"not {self.table!r}: point [journal] path at this table's own file"
            )
        try:
            db = connect(p)
            db.executescript(SCHEMA)
        except sqlite3.DatabaseError as e:
            raise JournalError(damaged(p, f"cannot be opened for writing ({e})")) from None
        return db, str(meta["journal_id"])

    def check_marks(self) -> list[str]:
        """Refuse a journal that went backwards (a restored older copy: behind a head mark of
        its id); from here on each commit writes the marks. Notes on unreadable marks."""
        if not self._mark_paths or self.marks is not None:
            return []
        self.marks, notes = headmark.start(
            self.path, self._mark_paths, self.journal_id, self.head, self.db
        )
        return notes

    # -- writing ---------------------------------------------------------------

    def _tx(self) -> Tx:
        return Tx(self.db)

    def append(
        self, batches: Sequence[Batch], snapshot: tuple[str, bytes] | None = None
    ) -> list[Event]:
        """Seal and commit every draft of ``batches`` in one transaction.

        ``snapshot`` (version, state bytes) is the table state after the
        last event, stored in the same transaction. On failure nothing is
        committed and the journal's head is unchanged.
        """
        return self.commit(batches, snapshot)[0]

    def commit(
        self, batches: Sequence[Batch], snapshot: tuple[str, bytes] | None = None
    ) -> tuple[list[Event], list[bytes]]:
        """:meth:`append`, also returning each event's stored bytes: what is published."""
        seq, prev = self.head
        events: list[Event] = []
        raws: list[bytes] = []
        rows: list[tuple[int, str, bytes, str]] = []
        secrets: list[tuple[int, bytes]] = []
        for b in batches:
            for d in b.drafts:
                seq += 1
                if SECRET in d.data:
                    secrets.append((seq, canonical(d.data[SECRET])))
                ev, raw = seal(
                    table=self.table, seq=seq, draft=d, time=b.time, mono=b.mono, prev=prev
                )
                prev = ev.hash
                events.append(ev)
                raws.append(raw)
                rows.append((seq, ev.type, raw, ev.hash))
        if not rows:
            return events, raws
        if snapshot is not None:
            # The state after the last event, sealed into the chain by its digest; the
            # snapshot event changes no state, so the state after it is the same.
            version, state = snapshot
            seq += 1
            ev, raw = seal(
                table=self.table,
                seq=seq,
                draft=draft(SNAPSHOT_EVENT, snapshot_data(version, state)),
                time=batches[-1].time,
                mono=None,
                prev=prev,
            )
            prev = ev.hash
            events.append(ev)
            raws.append(raw)
            rows.append((seq, ev.type, raw, ev.hash))
        proof = None
        if snapshot is not None and self.prover is not None:
            proof = proofs.sign(self.prover, self.table, self.journal_id, seq, prev)
        started = time.perf_counter()
        try:
            faults.before_commit()
            with self._tx():
                faults.in_commit("insert")
                if len(rows) == 1:  # a lone reading's event: no iterator over one row (~2 µs)
                    self.db.execute(_INSERT_EVENT, rows[0])
                else:
                    self.db.executemany(_INSERT_EVENT, rows)
                if secrets:
                    self.db.executemany("INSERT INTO secrets VALUES (?, ?)", secrets)
                # The head, kept beside the chain, is what shows a removed last row. Updated
                # in place: REPLACE deletes the row and inserts it under a new rowid, which
                # dirties the key's index page too (one more WAL frame every commit).
                faults.in_commit("head")
                self.db.execute(_WRITE_HEAD, (f"{seq}:{prev}",))
                if snapshot is not None:
                    faults.in_commit("snapshot")
                    self.db.execute(
                        "INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?, ?)",
                        (seq, prev, snapshot[0], snapshot[1]),
                    )
                    # Pruning is part of the commit: it fails, and is retried, with it.
                    faults.in_commit("prune")
                    self.db.execute(
                        "DELETE FROM snapshots WHERE seq NOT IN "
                        "(SELECT seq FROM snapshots ORDER BY seq DESC LIMIT ?)",
                        (KEEP_SNAPSHOTS,),
                    )
                    if proof is not None:
                        proofs.store(self.db, seq, prev, proof)
                faults.in_commit("commit")
        except BaseException:
            self._observe(time.perf_counter() - started, False)
            raise
        self._observe(time.perf_counter() - started, True)
        self.head = (seq, prev)  # one store: seq and hash change together
        if self.marks is not None:  # before the publish: what is published is at or before it
            self.marks.write(self.journal_id, seq, prev)
        return events, raws

    def _observe(self, seconds: float, ok: bool) -> None:
        for fn in self.commit_observers:  # metrics: commit latency and failures
            try:
                fn(seconds, ok)
            except Exception:  # an observer never decides a commit
                pass

    def close(self, *, seal: bool = False) -> None:
        """Close; with ``seal``, leave the proof that the file is as this daemon left it.

        Seal only a journal whose chain was verified when it was opened and that was
        written by nothing but this process since (the daemon's clean stop).
        """
        self.db.close()
        if self.marks is not None:
            self.marks.close(sync=True)
            self.marks = None
        if seal and self.path != ":memory:":
            try:
                seals.write(self.path, self.journal_id, *self.head)
            except OSError:
                pass  # no seal: the next start walks the whole chain, nothing worse
        self._unlock()

    # -- reading ---------------------------------------------------------------

    def latest_snapshot(self, version: str) -> tuple[int, str, bytes] | None:
        """The newest snapshot of this state version that the chain proves.

        Raises :class:`JournalError` for a snapshot that the chain contradicts (altered);
        skips those of another state version and old ones written before snapshots were
        sealed (their state is not proven: the events after an older one are replayed).
        """
        for seq, h, ver, state in self.db.execute(
            "SELECT seq, hash, version, state FROM snapshots ORDER BY seq DESC"
        ):
            what = snapshot_problem(self.db, seq, h, ver, state)
            if what == UNSEALED or (what is None and ver != version):
                continue
            if what is not None:
                raise JournalError(
                    f"journal {self.path}: the snapshot at seq {seq} {what}; the daemon will not "
                    "start from it. Keep the file for the investigation; `tablectl verify` "
                    "names every problem"
                )
            return seq, h, bytes(state)
        return None

    def anchor(self) -> proofs.Anchor | None:
        """The newest stored proof the table's key verifies, or None (no key, no proof).

        Raises :class:`JournalError` when a proof the key verifies is contradicted by
        the row at its seq: the history up to it was rewritten.
        """
        if self.proof_check is None:
            return None
        try:
            return proofs.anchor(self.db, self.table, self.journal_id, self.proof_check)
        except proofs.Mismatch as e:
            raise JournalError(
                f"journal {self.path} is damaged at seq {e.seq}: the event there {e.what}; "
                "the daemon will not append to it. Run `tablectl verify` and keep the file "
                "for the investigation"
            ) from None

    def prune_snapshots(self, keep: int = KEEP_SNAPSHOTS) -> None:
        with self._tx():
            self.db.execute(
                "DELETE FROM snapshots WHERE seq NOT IN "
                "(SELECT seq FROM snapshots ORDER BY seq DESC LIMIT ?)",
                (keep,),
            )
