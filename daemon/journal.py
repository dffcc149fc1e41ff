"""The journal: SQLite event store, the table's source of truth.

WAL mode with ``synchronous=FULL``: a committed transaction survives power
loss. All events decided from one input go into one transaction (several
inputs may share one: group commit), and nothing is published before its
transaction commits. Rows carry a SHA-256 hash chain so that an altered,
removed or reordered row is found by :func:`verify`. Snapshots of the table
state, written in the same transaction as the event they follow, keep start
time flat however long the journal grows; the events stay the truth and a
snapshot is used only when the chain proves it: each one is written with a
``journal.snapshot`` event that carries the SHA-256 of the state bytes, so
altering a snapshot breaks the chain as surely as altering an event.

A file that is not a journal this daemon wrote (empty, cut short, random
bytes, another SQLite database, garbage in ``meta``) is refused with one line
naming it, never replaced; a new journal is built beside its final name and
renamed into place, so a crash while creating one leaves no half-made file.
One daemon per journal: an exclusive ``fcntl`` lock on ``<journal>.lock``.
Longer than a few hundred lines because opening, appending and verifying are
one file format's rules and read best together.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec

from daemon import faults, proofs
from daemon import seal as seals
from daemon.events import GENESIS, SECRET, Draft, Event, canonical, check, decode, draft, seal

#: the event that seals a snapshot into the chain (``docs/events.md``)
SNAPSHOT_EVENT = "journal.snapshot"
#: snapshots kept (the newest ones); older ones are removed in the same transaction
KEEP_SNAPSHOTS = 3

_SCHEMA = (
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

    def __init__(self, path: str | Path, table: str, *, lock: bool = True) -> None:
        self.path = str(path)
        self.table = table
        self._lock_fd: int | None = None
        #: called after each commit try with (seconds, committed): the metrics
        self.commit_observers: list[Callable[[float, bool], None]] = []
        #: the seal found when the journal was opened, if the file was exactly the sealed one
        self.sealed: dict[str, object] | None = None
        #: with the table's checkpoint key: signs the head of each commit with a snapshot,
        #: and tells a proof read back at start-up from a forged one (``daemon/proofs.py``)
        self.prover: proofs.Signer | None = None
        self.proof_check: proofs.Check | None = None
        if self.path == ":memory:":
            self.db = connect(self.path)
            self.db.executescript(_SCHEMA)
            self.journal_id = self._init_meta(self.db)
        else:
            p = Path(self.path)
            try:
                p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as e:
                raise JournalError(f"journal {p}: cannot create {p.parent}: {e}") from None
            if lock:
                self._lock(p)
            try:
                self.sealed = seals.matches(p)
                seals.remove(p)  # from here on this process may write: the old seal is void
                if not p.exists():
                    self._create(p)
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
        self.last_seq: int = row[0] if row else 0
        self.last_hash: str = row[1] if row else GENESIS
        if self.sealed is not None and (
            self.sealed.get("seq"),
            self.sealed.get("hash"),
            self.sealed.get("journal_id"),
        ) != (self.last_seq, self.last_hash, self.journal_id):
            self.sealed = None

    # -- opening ---------------------------------------------------------------

    def _lock(self, p: Path) -> None:
        lp = Path(f"{p}.lock")
        try:
            fd = os.open(lp, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise JournalError(
                f"journal {p}: cannot create its lock file {lp}: {e.strerror}"
            ) from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EACCES, errno.EAGAIN):
                os.close(fd)
                raise JournalError(f"journal {p}: cannot lock {lp}: {e.strerror}") from None
            other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise JournalError(
                f"journal {p} is in use by another tabled (pid {other}, lock {lp}): one daemon "
                "per journal; stop the other one, or give this table its own [table] state_dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the fcntl lock
            self._lock_fd = None

    def _init_meta(self, db: sqlite3.Connection) -> str:
        journal_id = uuid.uuid4().hex
        with _Tx(db):
            db.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("table", self.table), ("journal_id", journal_id), ("format", "1")],
            )
        return journal_id

    def _create(self, p: Path) -> None:
        """A new journal, made under a temporary name and renamed into place when complete."""
        tmp = p.with_name(p.name + ".new")
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            leftover.unlink(missing_ok=True)
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # owner-only
            db = connect(tmp)
            db.executescript(_SCHEMA)
            self._init_meta(db)
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
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise JournalError(damaged(p, f"cannot be opened for writing ({e})")) from None
        return db, str(meta["journal_id"])

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
        return self.commit(batches, snapshot)[0]

    def commit(
        self, batches: Sequence[Batch], snapshot: tuple[str, bytes] | None = None
    ) -> tuple[list[Event], list[bytes]]:
        """:meth:`append`, also returning each event's stored bytes: what is published."""
        seq, prev = self.last_seq, self.last_hash
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
                self.db.executemany("INSERT INTO events VALUES (?, ?, ?, ?)", rows)
                if secrets:
                    self.db.executemany("INSERT INTO secrets VALUES (?, ?)", secrets)
                # The head, kept beside the chain, is what shows a removed last row.
                faults.in_commit("head")
                self.db.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('head', ?)", (f"{seq}:{prev}",)
                )
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
        self.last_seq, self.last_hash = seq, prev
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
        if seal and self.path != ":memory:":
            try:
                seals.write(self.path, self.journal_id, self.last_seq, self.last_hash)
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


#: a snapshot written before snapshots were sealed into the chain: not proven, not used
UNSEALED = "was written before snapshots were sealed into the chain"


def snapshot_problem(
    db: sqlite3.Connection, seq: int, h: str, version: str, state: bytes
) -> str | None:
    """What is wrong with one snapshot row, :data:`UNSEALED`, or None when the chain proves it."""
    row = db.execute("SELECT body, hash FROM events WHERE seq = ?", (seq,)).fetchone()
    if row is None:
        return "has no event at its seq"
    body, row_hash = row
    if row_hash != h:
        return "does not carry the hash of the event at its seq"
    try:
        fields = decode(body if isinstance(body, bytes) else str(body).encode())
    except Exception:
        return "belongs to an event that is not readable"
    if fields.type != SNAPSHOT_EVENT:
        return UNSEALED
    if fields.data != snapshot_data(version, bytes(state)):
        return "is not the state sealed in the chain at that seq (it was altered)"
    return None


def verify_snapshots(db: sqlite3.Connection) -> tuple[int, int, Problem | None]:
    """Every stored snapshot against the chain: (proven, unsealed, first problem)."""
    proven = unsealed = 0
    for seq, h, ver, state in db.execute(
        "SELECT seq, hash, version, state FROM snapshots ORDER BY seq"
    ).fetchall():
        what = snapshot_problem(db, seq, h, ver, state)
        if what == UNSEALED:
            unsealed += 1
        elif what is not None:
            return proven, unsealed, Problem(seq, f"snapshot {what}")
        else:
            proven += 1
    return proven, unsealed, None


#: a game's check of its secret parts (``Game.check_secrets``): from (seq, type, data, secret)
#: in seq order, where ``secret`` is the event's secret part or None, every problem found as
#: (seq, what is wrong)
SecretCheck = Callable[[Iterator[tuple[int, str, dict[str, Any], Any]]], Iterator[tuple[int, str]]]
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


def verify_secrets(db: sqlite3.Connection, check: SecretCheck | None) -> tuple[int, Problem | None]:
    """The secret rows beside the chain: (rows, first problem).

    The chain proves what was published, not the secret parts (they are left out
    of the hash so that a subscriber can check every hash). What proves a secret
    is the commitment its event published: ``check`` (the game's) opens each one.
    Generic here: a secret row must sit beside an event.
    """
    rows, orphan = db.execute(
        "SELECT COUNT(*), MIN(CASE WHEN seq NOT IN (SELECT seq FROM events) THEN seq END) "
        "FROM secrets"
    ).fetchone()
    if orphan is not None:
        return rows, Problem(orphan, "has a secret row but no event (a row was added by hand?)")
    if check is None or not rows:
        return rows, None
    first = next(check(read_with_secrets(db)), None)
    return rows, None if first is None else Problem(*first)


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


def verify_chain(
    db: sqlite3.Connection,
    start: int = 1,
    prev: str = GENESIS,
    progress: Callable[[int], None] | None = None,
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
        return _verify(db, start, prev, progress)
    finally:
        if own_tx:
            db.execute("COMMIT")


def _verify(
    db: sqlite3.Connection, start: int, prev: str, progress: Callable[[int], None] | None
) -> tuple[int, Problem | None]:
    expected = start
    checked = 0
    for seq, body, row_hash in _rows(db, start):
        if progress is not None and not checked % 100_000:
            progress(checked)
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
        parsed = parse_head(head[0])
        if parsed is None:
            return checked, Problem(expected, "the journal's recorded head is garbled")
        head_seq, head_hash = parsed
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


def verify_file(
    path: str | Path,
    progress: Callable[[int], None] | None = None,
    proof_check: proofs.Check | None = None,
    secrets: SecretCheck | None = None,
) -> VerifyResult:
    """The whole journal file: opened read-only, its meta, chain, snapshots, stored
    proofs and secret rows checked (the proofs' signatures too, given the table's key as
    ``proof_check``).

    ``secrets`` is the game's check of its secret rows (None: they are counted,
    and only checked to sit beside an event). Never raises for a damaged file:
    what is wrong is the result.
    """
    p = Path(path)
    if not p.exists():
        return VerifyResult(str(p), 0, f"journal {p} does not exist")
    if p.is_dir():
        return VerifyResult(str(p), 0, f"journal {p} is a directory, not a journal file")
    if p.stat().st_size == 0:
        return VerifyResult(str(p), 0, damaged(p, "is empty (0 bytes)"))
    try:
        db = connect(p, readonly=True)
    except sqlite3.Error as e:
        return VerifyResult(str(p), 0, f"journal {p} cannot be opened: {e}")
    try:
        try:
            tables = {
                r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as e:
            return VerifyResult(str(p), 0, damaged(p, f"is not a readable SQLite database ({e})"))
        if not {"meta", "events"} <= tables:
            return VerifyResult(
                str(p), 0, damaged(p, "is a SQLite database but not a tabled journal")
            )
        try:
            what = meta_problem(dict(db.execute("SELECT key, value FROM meta").fetchall()))
            if what is not None:
                return VerifyResult(str(p), 0, damaged(p, what))
            checked, problem = verify_chain(db, progress=progress)
            if problem is not None:
                return VerifyResult(
                    str(p),
                    checked,
                    f"{p}: {problem} ({checked} events before it verified)",
                    problem,
                )
            proven = unsealed = 0
            if "snapshots" in tables:
                proven, unsealed, problem = verify_snapshots(db)
                if problem is not None:
                    return VerifyResult(str(p), checked, f"{p}: {problem}", problem)
            n_proofs, bad = proofs.verify(db, proof_check)
            if bad is not None:
                problem = Problem(bad.seq, bad.what)
                return VerifyResult(str(p), checked, f"{p}: {problem}", problem)
            secret_rows = 0
            if "secrets" in tables:
                secret_rows, problem = verify_secrets(db, secrets)
                if problem is not None:
                    return VerifyResult(str(p), checked, f"{p}: {problem}", problem)
            head = db.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        except sqlite3.DatabaseError as e:
            return VerifyResult(str(p), 0, damaged(p, f"cannot be read ({e})"))
    finally:
        db.close()
    return VerifyResult(
        str(p),
        checked,
        None,
        None,
        proven,
        unsealed,
        head[0] if head else 0,
        head[1] if head else None,
        n_proofs,
        secret_rows,
        secrets is not None,
    )


@dataclass(frozen=True, slots=True)
class VerifyResult:
    path: str
    checked: int
    failure: str | None
    problem: Problem | None = None
    snapshots: int = 0
    unsealed: int = 0
    head_seq: int = 0
    head_hash: str | None = None
    #: stored proofs that match the chain (``daemon/proofs.py``)
    proofs: int = 0
    secrets: int = 0  # secret rows beside the chain
    secrets_checked: bool = False  # opened against their commitments by the game's check
