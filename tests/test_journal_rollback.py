"""A journal that went backwards is told, not appended to (issue 28, item 6).

A journal restored from an older backup has the same id and a whole chain: the daemon
started on it and reused seqs that followers already held with other events. The head
mark (``daemon/journal/headmark.py``), written after each commit and before its publish,
outside the journal file, makes the start, ``tablectl verify`` and ``tablectl doctor``
refuse it with one line saying what happened and what to do.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_harness import ROOT, Daemon, endpoints, tablectl, write_config

from daemon import journal as journal_mod
from daemon.bus.subscriber import Follower
from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
from daemon.journal import Batch, Journal, JournalError, headmark
from daemon.journal.events import Draft
from daemon.pipeline.pipeline import Pipeline
from daemon.table import Table

T = "2026-01-01T00:00:00.000Z"


def _table() -> Table:
    return Table(BaccaratTable(BaccaratRules()), ["shoe"])


def _run(path: Path, ticks: int, *, marks: tuple[Path, ...] = ()) -> Pipeline:
    """A daemon's life in process: recover (the checks), then ``ticks`` commits; left open."""
    j = Journal(path, "t1", head_marks=marks)
    p = Pipeline(_table(), j)
    p.recover()
    first = j.last_seq
    for i in range(ticks):
        j.append([Batch([Draft("test.tick", {"n": first + i})], T, None)])
    return p


def _backup(path: Path, to: Path) -> None:
    """What a backup tool copies while the daemon is stopped: the file (no WAL left)."""
    shutil.copy(path, to)


def _restore(backup: Path, path: Path) -> None:
    for extra in (Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}.seal")):
        extra.unlink(missing_ok=True)
    shutil.copy(backup, path)


def test_a_journal_restored_from_an_older_copy_is_refused(tmp_path):
    path = tmp_path / "j.sqlite"
    _run(path, 10).journal.close(seal=True)
    _backup(path, tmp_path / "backup.sqlite")
    _run(path, 15).journal.close(seal=True)  # head 25: published
    _restore(tmp_path / "backup.sqlite", path)
    assert journal_mod.verify_chain(sqlite3.connect(path))[1] is None  # a whole chain
    with pytest.raises(JournalError) as e:
        _run(path, 0)
    line = str(e.value)
    assert "\n" not in line
    assert f"journal {path} went backwards: its head is seq 10" in line
    assert "committed and published up to seq 25" in line
    assert "Put back the newest copy" in line and f"mv {path} {path}.rolled-back" in line
    r = journal_mod.verify_file(path)  # tablectl verify: the same check
    assert r.failure is not None and "went backwards" in r.failure
    assert headmark.inspect(path, [headmark.beside(path)]) is not None  # doctor's


def test_a_forked_history_behind_the_same_seqs_is_refused(tmp_path):
    """Restored, then written by something that skipped the check, past the old head: the
    seq is there, the event is another one."""
    path = tmp_path / "j.sqlite"
    _run(path, 10).journal.close()
    _backup(path, tmp_path / "backup.sqlite")
    _run(path, 5).journal.close()  # head 15 marked
    _restore(tmp_path / "backup.sqlite", path)
    j = Journal(path, "t1")  # no check_marks: an older daemon, a tool
    for i in range(10):
        j.append([Batch([Draft("test.tick", {"n": 100 + i})], T, None)])
    j.close()
    with pytest.raises(JournalError, match=r"its event at seq 15 is not the one .* forked"):
        _run(path, 0)


def test_a_whole_state_directory_restored_is_seen_by_the_mark_outside_it(tmp_path):
    state, elsewhere = tmp_path / "state", tmp_path / "marks" / "journal.head"
    path = state / "j.sqlite"
    _run(path, 10, marks=(elsewhere,)).journal.close(seal=True)
    shutil.copytree(state, tmp_path / "backup")  # the journal, its seal and the mark beside it
    _run(path, 10, marks=(elsewhere,)).journal.close(seal=True)
    shutil.rmtree(state)
    shutil.copytree(tmp_path / "backup", state)
    # the mark beside the journal came back with it: alone it cannot tell (the limit)
    _run(path, 0).journal.close()
    shutil.rmtree(state)
    shutil.copytree(tmp_path / "backup", state)
    with pytest.raises(JournalError, match=rf"head mark {elsewhere}\)"):
        _run(path, 0, marks=(elsewhere,))
    r = journal_mod.verify_file(path, marks=[headmark.beside(path), elsewhere])
    assert r.failure is not None and "went backwards: its head is seq 10" in r.failure


def test_a_crash_never_looks_like_a_rollback(tmp_path):
    """The mark is written after the commit: a process that dies anywhere leaves it at or
    before the journal's head."""
    path = tmp_path / "j.sqlite"
    for _ in range(3):
        p = _run(path, 7)
        mark = headmark.read(headmark.beside(path))
        assert isinstance(mark, headmark.Mark) and mark.seq == p.journal.last_seq
        p.journal.db.close()  # no clean close: no seal, no fsync of the mark
        p.journal._unlock()
    _run(path, 0).journal.close()


def test_a_new_journal_after_moving_the_old_aside_starts(tmp_path):
    path = tmp_path / "j.sqlite"
    _run(path, 10).journal.close()
    _backup(path, tmp_path / "backup.sqlite")
    _run(path, 10).journal.close()
    _restore(tmp_path / "backup.sqlite", path)
    with pytest.raises(JournalError):
        _run(path, 0)
    path.rename(f"{path}.rolled-back")  # as the refusal says
    p = _run(path, 1)
    assert p.journal.last_seq == 1  # a new journal id, from seq 1
    p.journal.close()


def test_an_unreadable_mark_is_said_and_rewritten(tmp_path, capsys):
    path = tmp_path / "j.sqlite"
    _run(path, 3).journal.close()
    mark = headmark.beside(path)
    raw = bytearray(mark.read_bytes())
    raw[20] ^= 1
    mark.write_bytes(bytes(raw))
    assert isinstance(headmark.read(mark), str)
    p = _run(path, 1)
    assert "fails its checksum" in capsys.readouterr().out
    assert headmark.read(mark) == headmark.Mark(p.journal.journal_id, *p.journal.head)
    p.journal.close()


# -- real processes: a state directory restored under a running floor --------------------------


def test_a_daemon_on_a_restored_state_directory_is_refused_with_one_line(tmp_path):
    mark = tmp_path / "marks" / "journal.head"
    cfg = write_config(tmp_path)
    text = cfg.read_text()
    cfg.write_text(
        text.replace("snapshot_every = 50\n", f'snapshot_every = 50\nhead_mark = "{mark}"\n')
    )
    state = tmp_path / "state"
    d = Daemon(cfg)
    try:
        d.start()
        Follower(*endpoints(cfg), table="it").until(lambda e: e.type == "card.dealt", 20)
    finally:
        assert d.stop() == 0
        d.close()
    shutil.copytree(state, tmp_path / "backup")
    d = Daemon(cfg)
    try:
        d.start()
        f = Follower(*endpoints(cfg), table="it")
        f.until(lambda e: e.type == "card.dealt" and e.seq > 40, 20)
        f.close()
    finally:
        d.kill()
        d.close()
    shutil.rmtree(state)
    shutil.copytree(tmp_path / "backup", state)
    r = subprocess.run(
        [sys.executable, "-m", "daemon.runtime.app", "--config", str(cfg)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-2000:]
    assert "went backwards" in out and "Traceback" not in out
    errors = [x for x in out.splitlines() if '"level": "error"' in x or '"level":"error"' in x]
    assert len(errors) == 1 and "went backwards" in errors[0], out[-2000:]
    assert str(mark) in out
    v = tablectl(cfg, "verify")
    assert v.returncode == 1 and "went backwards" in v.stdout, v.stdout + v.stderr
    doc = tablectl(cfg, "doctor")
    assert "PROBLEM" in doc.stdout and "went backwards" in doc.stdout, doc.stdout
    check = tablectl(cfg, "config", "check")
    assert str(mark) in check.stdout  # where the start looks, shown


def test_a_mark_that_cannot_be_written_is_said_and_the_start_goes_on(tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    p = _run(tmp_path / "j.sqlite", 2, marks=(tmp_path / "a-file" / "journal.head",))
    assert "the journal's head is not marked there" in capsys.readouterr().out
    assert isinstance(headmark.read(headmark.beside(tmp_path / "j.sqlite")), headmark.Mark)
    p.journal.close()


def test_verify_says_which_head_marks_it_held_the_journal_to(tmp_path):
    path = tmp_path / "j.sqlite"
    _run(path, 3).journal.close()
    r = journal_mod.verify_file(path)
    assert r.failure is None and r.marks == 1 and r.marks_unread == []
    headmark.beside(path).write_bytes(b"garbage")
    r = journal_mod.verify_file(path)
    assert r.failure is None and r.marks == 0 and "is not a head mark" in r.marks_unread[0]
