"""The pipeline commits what is queued in batches: the same events as one at a time.

Real journal files and the real table; the full disk is the project's own fault seam
(``daemon/runtime/faults.py``), switched on and off by a file. The sentinel that tells of a
commit that does not return runs on an injected clock.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from bench.session import Session, shoe_session
from daemon.games import find as game_class
from daemon.journal import Journal, JournalError, read_events
from daemon.pipeline.pipeline import Pipeline
from daemon.runtime import faults
from daemon.table import Table

OURS = ("journal.snapshot", "daemon.started", "daemon.stopped")


def _table(sess: Session) -> Table:
    cls = game_class(sess.game)
    assert cls is not None
    return Table(cls(msgspec.convert(sess.rules, cls.Rules)), [sess.device])


def _decided(j: Journal) -> list[tuple[str, Any]]:
    return [(e.type, e.data) for e in read_events(j.db) if e.type not in OURS]


async def _submit_all(p: Pipeline, inputs: list[Any]) -> None:
    futs = [p.submit(inp, reply=True) for inp in inputs]
    await asyncio.gather(*futs)  # type: ignore[arg-type]


@pytest.mark.parametrize("max_batch", [1, 7, 512])
def test_batches_give_the_events_of_one_at_a_time(tmp_path, max_batch):
    """Every batch is decided from the state the batch before it left."""
    sess = shoe_session(cards=300)
    expected = [
        (x.type, msgspec.json.decode(msgspec.json.encode(x.data)))
        for _, d in sess.decisions
        for x in d
    ]
    table = _table(sess)
    j = Journal(tmp_path / "j.sqlite", "tp")
    p = Pipeline(table, j, max_batch=max_batch, snapshot_every=100)

    async def main() -> None:
        task = asyncio.create_task(p.run())
        await _submit_all(p, [inp for inp, _ in sess.decisions])
        await p.drain({"reason": "test"})
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    p.close()
    assert _decided(j) == expected
    assert p.stats.inputs == len(sess.decisions)
    if max_batch > 1:
        assert p.stats.commits < len(sess.decisions)  # inputs did share transactions
    state = table.initial()
    for e in read_events(j.db):
        state = table.apply(state, e.type, e.data)
    assert table.encode_state(state) == table.encode_state(p.state)
    j.close()


def test_the_batch_after_a_failed_commit_is_decided_after_the_recovery(tmp_path, monkeypatch):
    """A commit that fails and then works adds ``journal.recovered`` (an alarm) before the
    batch queued behind it: that batch must see the alarm, or the state would not be the
    journal's."""
    sess = shoe_session(cards=60)
    inputs = [inp for inp, _ in sess.decisions]
    table = _table(sess)
    j = Journal(tmp_path / "j.sqlite", "tp")
    p = Pipeline(table, j, max_batch=5)
    full = tmp_path / "disk-full"
    monkeypatch.setattr(faults, "_JOURNAL", str(full))
    monkeypatch.setattr(faults, "_STEP", "before")

    def journal(ok: bool, _error: str | None) -> None:
        if not ok:
            full.unlink()  # the disk takes the retry

    p.on_journal.append(journal)

    async def main() -> None:
        task = asyncio.create_task(p.run())
        full.touch()  # the first commit fails while the next inputs wait
        await _submit_all(p, inputs)
        await p.drain({"reason": "test"})
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    p.close()
    evs = list(read_events(j.db))
    raised = [e.data for e in evs if e.type == "alarm.raised"]
    assert [a["kind"] for a in raised] == ["journal-failure"] and p.stats.commit_failures == 1
    assert p.stats.inputs == len(inputs)
    state = table.initial()
    for e in evs:
        state = table.apply(state, e.type, e.data)
    assert "journal-failure" in str(state.alarms)
    assert table.encode_state(state) == table.encode_state(p.state)
    j.close()


def test_a_state_mark_is_answered_when_the_writer_stops_or_the_daemon_is_stopping(tmp_path):
    """A mark (where a trace starts) behind a commit that fails for good gets the failure,
    not a cancel (a cancel strands the control command awaiting it without a reply), and
    one asked for once the pipeline takes nothing more fails at once instead of waiting
    forever in an inbox nobody reads."""
    import sqlite3

    sess = shoe_session(cards=4)
    inputs = [inp for inp, _ in sess.decisions]
    table = _table(sess)
    j = Journal(tmp_path / "j.sqlite", "tp")
    p = Pipeline(table, j, max_batch=1)
    other = sqlite3.connect(str(tmp_path / "j.sqlite"), isolation_level=None)
    other.execute("INSERT INTO events VALUES (1, 'x', x'00', 'x')")  # another writer's row
    other.close()

    async def main() -> tuple[BaseException | None, BaseException | None, bool]:
        task = asyncio.create_task(p.run())
        first = p.submit(inputs[0], reply=True)
        m = p.mark()  # queued behind the first commit, then failed with it
        await asyncio.gather(task, return_exceptions=True)
        assert first is not None and isinstance(first.exception(), JournalError)
        cancelled = m.cancelled()
        err = None if cancelled else m.exception()
        late = p.mark()
        return err, late.exception() if late.done() else None, cancelled

    err, late, cancelled = asyncio.run(main())
    p.close()
    j.close()
    assert not cancelled
    assert "no state" in str(err)
    assert isinstance(late, RuntimeError) and "stopping" in str(late)


def test_an_input_queued_before_daemon_started_is_decided_after_it(tmp_path):
    """The daemon starts the run loop, then commits ``daemon.started``; a command that came
    in between (the control socket is already up) must be decided from the state
    ``daemon.started`` leaves, or the state in memory is not the journal's."""
    sess = shoe_session(cards=4)
    table = _table(sess)
    j = Journal(tmp_path / "j.sqlite", "tp")
    p = Pipeline(table, j)

    async def main() -> None:
        task = asyncio.create_task(p.run())  # as daemon/runtime/app.py does, then started()
        fut = p.submit(sess.decisions[0][0], reply=True)
        await p.started({"version": "test", "recovered_seq": 0, "pid": 1, "boot": "b"})
        await fut  # type: ignore[misc]
        await p.drain(None)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    p.close()
    evs = list(read_events(j.db))
    state = table.initial()
    for e in evs:
        state = table.apply(state, e.type, e.data)
    assert evs[0].type == "daemon.started"
    assert table.encode_state(state) == table.encode_state(p.state)
    j.close()


def test_the_sentinel_speaks_while_a_commit_is_slow_and_once_when_it_returned(tmp_path):
    """daemon/pipeline/writer.py's Sentinel, looked at directly on an injected clock: nothing while
    no commit runs or one is younger than an interval; at each look while it is older;
    one ``returned`` once it returned, also when the next commit began meanwhile."""
    from daemon.pipeline.writer import Sentinel, Writer

    now = [100.0]
    j = Journal(tmp_path / "j.sqlite", "tp")
    w = Writer(j, [], lambda: now[0])
    told: list[tuple[str, float]] = []
    s = Sentinel(
        w,
        interval=1.0,
        slow=lambda sec: told.append(("slow", sec)),
        returned=lambda sec: told.append(("returned", sec)),
    )
    s.check()
    w.since = 100.0  # a commit begins
    now[0] = 100.5
    s.check()
    assert told == []
    for t in (101.0, 106.0):
        now[0] = t
        s.check()
    assert told == [("slow", 1.0), ("slow", 6.0)]
    w.since = None  # it returned
    now[0] = 107.0
    s.check()
    s.check()
    assert told[2:] == [("returned", 7.0)]
    w.since = 107.0  # a new commit, slow too; the one before returned between two looks
    now[0] = 108.5
    s.check()
    w.since = 108.6
    now[0] = 110.0
    s.check()
    assert [k for k, _ in told[3:]] == ["slow", "returned", "slow"]
    assert [sec for _, sec in told[3:]] == pytest.approx([1.5, 3.0, 1.4])
    j.close()


def test_a_report_that_raises_does_not_end_the_sentinel(tmp_path):
    from daemon.pipeline.writer import Sentinel, Writer

    j = Journal(tmp_path / "j.sqlite", "tp")
    w = Writer(j, [], lambda: 10.0)
    calls: list[float] = []

    def slow(sec: float) -> None:
        calls.append(sec)
        raise RuntimeError("the bus is closed")

    s = Sentinel(w, interval=1.0, slow=slow, returned=lambda sec: None)
    w.since = 0.0
    s.check()
    s.check()
    assert calls == [10.0, 10.0]
    j.close()
