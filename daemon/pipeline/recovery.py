"""The table state rebuilt from the journal at start, proven before anything is appended.

A start walks the hash chain (unless the journal's seal shows the file is exactly the one
a clean stop left: ``daemon/journal/seal.py``), loads the newest snapshot the chain proves, applies
the events after it and checks the secret rows it applied against their commitments. A
broken chain, a proof or snapshot the chain contradicts, or an unreadable row stops the
start: appending would hide the damage (``docs/reliability.md``, Start-up verification).

Its own module because it is the pipeline's other job: it runs once, before the commit
loop (``daemon/pipeline/pipeline.py``) takes any input, and hands it a state and the facts the
start reports (:class:`Recovered`); it shares no queue, future or retry with that loop.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

import msgspec
import structlog

from daemon.journal import (
    Journal,
    JournalError,
    damaged,
    read_for_state,
    read_with_secrets,
    verify_chain,
)
from daemon.journal.events import GENESIS, decode
from daemon.table import Table, TableState

log = structlog.get_logger("pipeline")


@dataclass(slots=True)
class Recovered:
    """The state a start goes on from, and what it took to get there."""

    state: TableState
    #: the journal's last event was not ``daemon.stopped``: the last run ended badly
    crashed: bool
    #: events applied after the snapshot (all of them without one)
    events: int = 0
    #: the seq of the snapshot loaded (0: none)
    from_snapshot: int = 0
    #: events whose hashes were walked (0 when the journal's seal held)
    verified_events: int = 0
    #: where that walk began: 1, or the seq of the stored proof it started from (0: no walk)
    verified_from: int = 0


def recover(
    table: Table, journal: Journal, progress: Callable[[int], None] | None = None
) -> Recovered:
    """Rebuild the state from the journal: newest proven snapshot, then the events after it.

    The chain is walked first unless the journal's seal shows the file is exactly
    the one a clean stop left (``daemon/journal/seal.py``): from seq 1, or, with the table's
    checkpoint key, from the newest stored proof the key verifies when the snapshot
    used is at or after it (``daemon/journal/proofs.py``). A broken chain, a proof the chain
    contradicts, a snapshot the chain contradicts or an unreadable row stops the
    start (appending would hide the damage).
    """
    j = journal
    out = Recovered(state=table.initial(), crashed=False)
    try:
        snap: tuple[int, str, bytes] | None = None
        walked_from = 0
        if j.sealed is None:
            start, prev = 1, GENESIS
            anchor = j.anchor()
            if anchor is not None:
                snap = j.latest_snapshot(table.state_version)
                if snap is not None and snap[0] >= anchor.seq:
                    start, prev = anchor.seq, anchor.prev
            walked_from = _walk(j, start, prev, progress, out)
        if snap is None:
            snap = j.latest_snapshot(table.state_version)
        start = 1
        if snap is not None:
            seq, _, raw = snap
            try:
                # the snapshot's row says where it stands (one older than the counter: 0)
                state = table.decode_state(raw)
                out.state = msgspec.structs.replace(state, seq=seq)
                start = seq + 1
                out.from_snapshot = seq
            except Exception as e:  # proven but unreadable by this build: replay it all
                log.warning(
                    "snapshot unreadable, replaying the whole journal", seq=seq, error=str(e)
                )
                out.state = table.initial()
                if walked_from > 1:  # the events before the proof are applied: prove them
                    _walk(j, 1, GENESIS, progress, out)
        n = 0
        state = out.state
        for type_, data in read_for_state(j.db, start):
            state = table.apply(state, type_, data)
            n += 1
        out.state = state
        out.events = n
        _check_secrets(table, j, start)
        last = j.db.execute("SELECT body FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        # After the walk (a damaged file is named as damaged first): a whole chain that
        # is behind its head mark was restored from an older copy (issue 28, item 6).
        for note in j.check_marks():
            log.warning("head mark", note=note)
    except sqlite3.DatabaseError as e:
        raise JournalError(damaged(j.path, f"cannot be read ({e})")) from None
    # From the chain, not from the snapshot: a snapshot cannot make a crash look clean.
    out.crashed = last is not None and _type_of(last[0]) != "daemon.stopped"
    return out


def _walk(
    j: Journal,
    start: int,
    prev: str,
    progress: Callable[[int], None] | None,
    out: Recovered,
) -> int:
    """Verify the chain from ``start`` to the head; returns ``start``."""
    checked, problem = verify_chain(j.db, start, prev, progress=progress)
    if problem is not None:
        raise JournalError(
            f"journal {j.path} is damaged at {problem}; the daemon will not append "
            "to a broken chain. Run `tablectl verify` and keep the file for the "
            "investigation"
        )
    out.verified_events = checked
    out.verified_from = start
    return start


def _check_secrets(table: Table, j: Journal, start: int) -> None:
    """The secret rows the state was just rebuilt from must open their commitments.

    The chain proves an event's published part only; a game that journals a
    secret part (the blackjack hole card) proves it by the commitment it
    published (``check_secrets``). Only the events replayed are checked: the
    snapshot before them is proven by the chain.
    """
    check = table.game.check_secrets  # declared by the Game protocol, None by default
    if check is None:  # a game that journals no secret: a secret row was put there
        sql = "SELECT MIN(seq) FROM secrets WHERE seq >= ?"
        (seq,) = j.db.execute(sql, (start,)).fetchone()
        why = "has a secret row, but this game journals no secrets (a row added by hand?)"
        problem = None if seq is None else (seq, why)
    else:
        problem = next(check(read_with_secrets(j.db, start)), None)
    if problem is not None:
        seq, what = problem
        raise JournalError(
            f"journal {j.path} is damaged at seq {seq}: {what}; the daemon will "
            "not rebuild the table from it. Run `tablectl verify` and keep the file for "
            "the investigation"
        )


def _type_of(raw: bytes | str) -> str:
    try:
        return decode(raw if isinstance(raw, bytes) else raw.encode()).type
    except Exception:
        return ""
