"""Verifying a journal: the hash chain, the recorded head, the snapshots and the secret rows.

Read-only: what ``tablectl verify`` and the daemon's start-up walk run. Every check
names the first seq where the file stops being what the chain proves.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daemon.journal import headmark, proofs
from daemon.journal.events import GENESIS, check, decode
from daemon.journal.format import (
    SNAPSHOT_EVENT,
    Problem,
    connect,
    damaged,
    meta_problem,
    parse_head,
    snapshot_data,
)
from daemon.journal.read import read_with_secrets

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
        # Unsealed snapshots come only from before the first sealed one (an older daemon's):
        # after it, the row was moved onto another event (issue 28, item 4). The scan stops
        # at the first sealed snapshot, near the start of any journal that has one.
        moved = db.execute(
            "SELECT 1 FROM events WHERE seq < ? AND type = ? LIMIT 1", (seq, SNAPSHOT_EVENT)
        ).fetchone()
        return (
            f"points at an event that is not a {SNAPSHOT_EVENT} (row moved)" if moved else UNSEALED
        )
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


def no_secrets(
    rows: Iterator[tuple[int, str, dict[str, Any], Any]],
) -> Iterator[tuple[int, str]]:
    """The secret check of a game that journals no secrets: every secret row was put there."""
    for seq, _, _, secret in rows:
        if secret is not None:
            yield seq, "has a secret row, but this game journals no secrets (a row added by hand?)"


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
    meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('table', 'journal_id')"))
    for seq, type_, body, row_hash in _rows(db, start):
        if progress is not None and not checked % 100_000:
            progress(checked)
        if seq != expected:
            return checked, Problem(expected, f"missing (the next event stored is seq {seq})")
        if not isinstance(body, bytes):  # a row rewritten by hand may come back as TEXT
            body = str(body).encode()
        fields, what = check(body, prev)
        if what is None:
            what = _columns(seq, type_, row_hash, fields, meta)
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


def _columns(
    seq: int, type_: object, row_hash: object, fields: dict[str, Any], meta: dict[str, str]
) -> str | None:
    """What a row's own columns, or ``meta``, say that its hashed bytes do not (issue 28, 4).

    Readers take the seq, the type (``tablectl recall`` selects by it) and the hash from
    the columns, and the journal's table and id from ``meta``: each must be what the
    chain proves. The id is in the chain from every ``daemon.started`` that carries it.
    """
    if fields.get("seq") != seq:
        return f"row holds the event of seq {fields.get('seq')}"
    if row_hash != fields["hash"]:
        return "row hash column does not match the event"
    if type_ != fields.get("type"):
        return f"row type column says {str(type_)[:40]!r}, the event is {fields.get('type')!r}"
    if fields.get("table") != meta.get("table"):
        return (
            f"belongs to table {fields.get('table')!r}, the journal's meta says "
            f"{meta.get('table')!r}"
        )
    if fields.get("type") == "daemon.started":
        data = fields.get("data")
        jid = data.get("journal_id") if isinstance(data, dict) else None
        if jid is not None and jid != meta.get("journal_id"):
            return (
                f"daemon.started was written in journal {str(jid)[:40]!r}, the journal's meta "
                f"says {str(meta.get('journal_id'))[:40]!r} (meta was edited or the file relabelled)"
            )
    return None


def _rows(db: sqlite3.Connection, start: int) -> Iterator[tuple[int, str, bytes, str]]:
    cur = db.execute(
        "SELECT seq, type, body, hash FROM events WHERE seq >= ? ORDER BY seq", (start,)
    )
    while rows := cur.fetchmany(2000):
        yield from rows


def verify_file(
    path: str | Path,
    progress: Callable[[int], None] | None = None,
    proof_check: proofs.Check | None = None,
    secrets: SecretCheck | None = None,
    marks: Sequence[Path] | None = None,
) -> VerifyResult:
    """The whole journal file: opened read-only, its meta, chain, snapshots, stored
    proofs and secret rows checked (the proofs' signatures too, given the table's key as
    ``proof_check``).

    ``secrets`` is the game's check of its secret rows (None: they are counted,
    and only checked to sit beside an event). ``marks``: the head marks to hold the
    journal against, as the start does (None: the one beside it). Never raises for a
    damaged file: what is wrong is the result.
    """
    p = Path(path)
    # Read before the journal: a running daemon writes a mark after its commit, so the
    # journal read next is at or past it.
    marked = [
        (m, headmark.read(m)) for m in (headmark.paths(str(p), []) if marks is None else marks)
    ]
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

    def hash_at(seq: int) -> str | None:
        row = db.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else str(row[0])

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
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            what = meta_problem(meta)
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
            for m, mark in marked:
                if not isinstance(mark, headmark.Mark):
                    continue
                why = headmark.behind(mark, meta["journal_id"], head[0] if head else 0, hash_at)
                if why is not None:
                    return VerifyResult(str(p), checked, headmark.refusal(p, why, m, mark.seq))
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
        sum(isinstance(mark, headmark.Mark) for _, mark in marked),
        [f"{m} {mark}" for m, mark in marked if isinstance(mark, str)],
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
    #: stored proofs that match the chain (``daemon/journal/proofs.py``)
    proofs: int = 0
    secrets: int = 0  # secret rows beside the chain
    secrets_checked: bool = False  # opened against their commitments by the game's check
    #: head marks read and held against the journal (``headmark.py``), and those unreadable
    marks: int = 0
    marks_unread: list[str] = field(default_factory=list)
