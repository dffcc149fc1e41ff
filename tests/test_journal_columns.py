"""Every stored column agrees with the chain (issue 28, item 4 and the ``meta.journal_id`` edit).

The hostile tester of issue 28 changed columns the hash did not cover: ``events.type``
(``tablectl recall`` selects by it: one ``UPDATE`` hid a hand, or made a card read as a
result) and ``meta.journal_id``; ``tablectl verify`` said ok and the daemon started. Here each
column of each table is changed in turn on a copy of one journal, and ``verify`` must fail
naming the seq, and a start that reads the column must refuse with one line.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from daemon_harness import ROOT, Daemon, endpoints, tablectl, write_config

from daemon import journal as journal_mod
from daemon.bus.subscriber import Follower
from daemon.ctl.keys import create_checkpoint
from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
from daemon.journal import Batch, Journal, JournalError
from daemon.journal.events import Draft, canonical
from daemon.pipeline.pipeline import Pipeline
from daemon.security import Checkpointer
from daemon.table import Table

T = "2026-01-01T00:00:00.000Z"


def _table() -> Table:
    return Table(BaccaratTable(BaccaratRules()), ["shoe"])


@pytest.fixture(scope="module")
def keyed_journal(tmp_path_factory) -> tuple[Path, Checkpointer]:
    """63 events: a daemon.started as the pipeline writes it, ticks, a snapshot (and its
    signed proof) every 20; made once, each test changes a copy."""
    tmp = tmp_path_factory.mktemp("columns")
    _, secret, _ = create_checkpoint(tmp, "cp")
    key = Checkpointer.load(secret)
    path = tmp / "j.sqlite"
    table = _table()
    j = Journal(path, "t1")
    j.prover = key

    async def started() -> None:
        p = Pipeline(table, j, snapshot_every=20)
        p.recover()
        await p.started({"version": "t", "recovered_seq": 0, "pid": 1, "boot": None})

    asyncio.run(started())
    state = table.initial()
    for i in range(1, 60):
        d = Draft("test.tick", {"n": i})
        snap = (table.state_version, table.encode_state(state)) if (i + 1) % 20 == 0 else None
        j.append([Batch([d], T, float(i))], snap)
    j.close()
    return path, key


def _copy(src: Path, tmp: Path) -> Path:
    dst = tmp / "j.sqlite"
    shutil.copy(src, dst)
    return dst


def _sql(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path)
    for s in statements:
        db.execute(s)
    db.commit()
    db.close()


# (column, the SQL that changes it, the seq verify must name, words it must say)
EDITS = [
    ("events.type", "UPDATE events SET type = 'x' WHERE seq = 7", 7, "type column"),
    (
        "events.type (relabelled as a result)",
        "UPDATE events SET type = 'hand.result' WHERE seq = 9",
        9,
        "type column",
    ),
    ("events.seq", "UPDATE events SET seq = 1000 WHERE seq = 12", 12, "missing"),
    ("events.body", "UPDATE events SET body = replace(body, '\"n\":5', '\"n\":55')", 6, "hash"),
    (
        "events.hash",
        "UPDATE events SET hash = '" + "ab" * 32 + "' WHERE seq = 30",
        30,
        "hash column",
    ),
    ("meta.table", "UPDATE meta SET value = 't2' WHERE key = 'table'", 1, "table"),
    ("meta.journal_id", "UPDATE meta SET value = 'f00d' WHERE key = 'journal_id'", 1, "journal"),
    (
        "meta.head",
        "UPDATE meta SET value = (SELECT '61:' || hash FROM events WHERE seq = 61) "
        "WHERE key = 'head'",
        62,
        "head",
    ),
    ("snapshots.seq", "UPDATE snapshots SET seq = 41 WHERE seq = 42", 41, "snapshot"),
    (
        "snapshots.seq and hash (moved onto another event)",
        "UPDATE snapshots SET seq = 40, hash = (SELECT hash FROM events WHERE seq = 40) "
        "WHERE seq = 42",
        40,
        "not a journal.snapshot",
    ),
    (
        "snapshots.hash",
        "UPDATE snapshots SET hash = '" + "cd" * 32 + "' WHERE seq = 21",
        21,
        "hash",
    ),
    ("snapshots.version", "UPDATE snapshots SET version = 'v0' WHERE seq = 63", 63, "altered"),
    ("snapshots.state", "UPDATE snapshots SET state = x'80' WHERE seq = 63", 63, "altered"),
    ("proofs.seq", "UPDATE proofs SET seq = 20 WHERE seq = 21", 20, "own row"),
    ("proofs.hash", "UPDATE proofs SET hash = '" + "ef" * 32 + "' WHERE seq = 42", 42, "own row"),
    ("proofs.proof", "UPDATE proofs SET proof = x'7b7d' WHERE seq = 63", 63, "own row"),
]


@pytest.mark.parametrize(("column", "sql", "seq", "words"), EDITS, ids=[e[0] for e in EDITS])
def test_verify_names_the_seq_of_any_changed_column(
    tmp_path, keyed_journal, column, sql, seq, words
):
    path = _copy(keyed_journal[0], tmp_path)
    assert journal_mod.verify_file(path).failure is None
    _sql(path, sql)
    r = journal_mod.verify_file(path)
    assert r.failure is not None, column
    assert r.problem is not None and r.problem.seq == seq, r.failure
    assert words in r.failure, r.failure


def test_a_proof_relabelled_to_another_journal_fails_verify(tmp_path, keyed_journal):
    """A proof signed by the key over another journal id, copied in: verify names it."""
    path, key = _copy(keyed_journal[0], tmp_path), keyed_journal[1]
    db = sqlite3.connect(path)
    seq, h = db.execute("SELECT seq, hash FROM proofs ORDER BY seq DESC").fetchone()
    db.execute(
        "UPDATE proofs SET proof = ? WHERE seq = ?", (canonical(key("t1", "other", seq, h)), seq)
    )
    db.commit()
    db.close()
    r = journal_mod.verify_file(path)
    assert r.problem is not None and r.problem.seq == seq and "meta" in r.problem.what


START_EDITS = [e for e in EDITS if e[0].startswith(("events", "meta"))]


@pytest.mark.parametrize(
    ("column", "sql", "seq", "words"), START_EDITS, ids=[e[0] for e in START_EDITS]
)
def test_the_start_refuses_a_changed_column_of_the_chain(
    tmp_path, keyed_journal, column, sql, seq, words
):
    """Without a seal (a crash, or the edit voided it) the start walks the chain: every
    column it and the readers take from ``events`` and ``meta`` is checked on the way."""
    path = _copy(keyed_journal[0], tmp_path)
    _sql(path, sql)
    with pytest.raises(JournalError) as e:
        j = Journal(path, "t1")  # meta.table: refused here, naming the table
        try:
            Pipeline(_table(), j).recover()
        finally:
            j.close()
    assert "\n" not in str(e.value) and str(path) in str(e.value)
    if column != "meta.table":
        assert f"seq {seq}" in str(e.value), e.value


def test_a_relabelled_row_before_the_proof_stops_a_keyed_start_by_the_history_check(
    tmp_path, keyed_journal
):
    """A keyed crash start walks from the newest proof; the history check behind it walks
    from seq 1 with the same column checks (``daemon/journal/history.py``)."""
    import threading

    from daemon.journal import history

    path, key = _copy(keyed_journal[0], tmp_path), keyed_journal[1]
    _sql(path, "UPDATE events SET type = 'hand.result' WHERE seq = 9")
    j = Journal(path, "t1")
    j.prover, j.proof_check = key, key.verify
    p = Pipeline(_table(), j)
    p.recover()
    assert p.stats.verified_from == 63
    j.close()
    with pytest.raises(JournalError, match="damaged at seq 9: row type column"):
        history.check(path, threading.Event())


# -- on a real daemon's journal -----------------------------------------------------------------


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("played")
    cfg = write_config(tmp)
    d = Daemon(cfg)
    try:
        d.start()
        Follower(*endpoints(cfg), table="it").until(lambda e: e.type == "card.dealt", 20)
    finally:
        d.stop()
        d.close()
    return tmp / "state"


@pytest.mark.parametrize(
    "how",
    [
        ("meta.journal_id", "UPDATE meta SET value = 'f00d' WHERE key = 'journal_id'"),
        (
            "card.dealt as hand.result",
            "UPDATE events SET type = 'hand.result' WHERE seq = "
            "(SELECT MIN(seq) FROM events WHERE type = 'card.dealt')",
        ),
    ],
    ids=lambda h: h[0],
)
def test_a_real_daemons_journal_relabelled_is_refused_by_verify_and_the_start(
    tmp_path, played, how
):
    cfg = write_config(tmp_path)
    shutil.copytree(played, tmp_path / "state")
    path = tmp_path / "state" / "journal.sqlite"
    db = sqlite3.connect(path)
    started = db.execute("SELECT body FROM events WHERE type = 'daemon.started'").fetchone()[0]
    jid = db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()[0]
    db.close()
    assert msgspec.json.decode(started)["data"]["journal_id"] == jid  # in the chain
    _sql(path, how[1])
    v = tablectl(cfg, "verify")
    assert v.returncode == 1 and "FAILED" in v.stdout and "seq " in v.stdout, v.stdout
    r = subprocess.run(
        [sys.executable, "-m", "daemon.runtime.app", "--config", str(cfg)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 1
    assert "damaged at seq" in r.stdout + r.stderr and "Traceback" not in r.stdout + r.stderr


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE snapshots SET seq = 62, hash = (SELECT hash FROM events WHERE seq = 62) "
        "WHERE seq = 63",
        "UPDATE snapshots SET version = 'v0' WHERE seq = 63",
        "UPDATE snapshots SET hash = '" + "cd" * 32 + "' WHERE seq = 63",
    ],
    ids=["moved", "version", "hash"],
)
def test_the_start_refuses_the_newest_snapshot_changed(tmp_path, keyed_journal, sql):
    """The snapshot a start reads (the newest) is held to the chain as verify holds it."""
    path = _copy(keyed_journal[0], tmp_path)
    _sql(path, sql)
    j = Journal(path, "t1")
    try:
        with pytest.raises(JournalError, match=r"the snapshot at seq 6[23] "):
            Pipeline(_table(), j).recover()
    finally:
        j.close()


def test_the_start_refuses_a_secret_row_in_a_game_that_keeps_none(tmp_path, keyed_journal):
    """Recovery reads the secret rows into the state: in a game without secrets (baccarat)
    a row beside an event was put there by hand, and is refused naming its seq."""
    path = _copy(keyed_journal[0], tmp_path)
    _sql(path, "INSERT INTO secrets VALUES (62, x'7b7d')", "DELETE FROM snapshots")
    assert journal_mod.verify_file(path).failure is None  # no game known: only counted
    r = journal_mod.verify_file(path, secrets=journal_mod.no_secrets)  # the config's game
    assert r.problem is not None and r.problem.seq == 62, r.failure
    j = Journal(path, "t1")
    try:
        with pytest.raises(JournalError, match="damaged at seq 62: has a secret row, but"):
            Pipeline(_table(), j).recover()
    finally:
        j.close()


def test_meta_format_changed_is_one_line_for_verify_and_the_start(tmp_path, keyed_journal):
    path = _copy(keyed_journal[0], tmp_path)
    _sql(path, "UPDATE meta SET value = '2' WHERE key = 'format'")
    r = journal_mod.verify_file(path)
    assert r.failure is not None and "has format '2'" in r.failure
    with pytest.raises(JournalError, match="has format '2'"):
        Journal(path, "t1")


def test_the_last_row_and_the_head_removed_together_are_found_by_the_head_mark(
    tmp_path, keyed_journal
):
    """Without ``meta.head`` the chain alone cannot tell a removed last row; the head mark
    beside the journal, written by the daemon's commits, can."""
    path = _copy(keyed_journal[0], tmp_path)
    j = Journal(path, "t1")
    p = Pipeline(_table(), j)
    p.recover()  # the start: from here on each commit marks its head
    j.append([Batch([Draft("test.tick", {"n": 99})], T, None)])
    j.close()
    _sql(path, "DELETE FROM events WHERE seq = 64", "DELETE FROM meta WHERE key = 'head'")
    assert journal_mod.verify_chain(sqlite3.connect(path))[1] is None  # the chain alone: whole
    r = journal_mod.verify_file(path)
    assert r.failure is not None and "went backwards: its head is seq 63" in r.failure
    with pytest.raises(JournalError, match="went backwards"):
        j = Journal(path, "t1")
        try:
            Pipeline(_table(), j).recover()
        finally:
            j.close()
