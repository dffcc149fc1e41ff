"""The journal: group commits, hash chain, tamper detection, recovery from snapshots."""

from __future__ import annotations

import sqlite3

import pytest
from daemon_harness import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.ctl.cli import main as tablectl
from daemon.journal import Batch, Journal, JournalError, read_for_state, read_raw, verify_chain
from daemon.journal.events import SECRET, Draft, Event, body_of, canonical, chain_hash, decode, seal


def fill(path, n=20, table="t1") -> Journal:
    j = Journal(path, table)
    for i in range(n):
        j.append([Batch([Draft("test.tick", {"n": i})], "2026-01-01T00:00:00.000Z", float(i))])
    return j


def test_append_is_gapless_and_chained(tmp_path):
    j = fill(tmp_path / "j.sqlite", 5)
    evs = j.append(
        [
            Batch([Draft("a.b", {"x": 1}), Draft("a.c", {})], "2026-01-01T00:00:01.000Z", None),
            Batch([Draft("a.d", {})], "2026-01-01T00:00:01.000Z", 2.5),
        ]
    )
    assert [e.seq for e in evs] == [6, 7, 8]
    assert evs[1].prev == evs[0].hash and evs[0].hash == chain_hash(
        evs[0].prev, body_of({k: getattr(evs[0], k) for k in evs[0].__struct_fields__})
    )
    assert verify_chain(j.db) == (8, None)


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    data=st.dictionaries(st.text(), _json, max_size=6),
    table=st.text(min_size=1),
    type_=st.text(min_size=1),
    time=st.text(),
    mono=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    seq=st.integers(min_value=1, max_value=2**62),
    prev=st.binary(min_size=32, max_size=32).map(bytes.hex),
)
def test_sealed_bytes_are_the_canonical_envelope(data, table, type_, time, mono, seq, prev):
    """``seal`` splices the hash into the hashed bytes instead of encoding twice: what it
    stores must be exactly the canonical encoding of the whole envelope, and its hash the
    chain hash of the envelope without it."""
    ev, raw = seal(table=table, seq=seq, draft=Draft(type_, data), time=time, mono=mono, prev=prev)
    fields = {k: getattr(ev, k) for k in Event.__struct_fields__}
    assert raw == canonical(fields) == ev.canonical()
    assert ev.hash == chain_hash(prev, body_of(fields))
    assert decode(raw) == ev
    assert SECRET not in ev.data or SECRET not in data


def test_reopen_continues_the_seq_and_refuses_another_tables_journal(tmp_path):
    fill(tmp_path / "j.sqlite", 3).close()
    j = Journal(tmp_path / "j.sqlite", "t1")
    assert j.last_seq == 3
    assert j.append([Batch([Draft("x.y", {})], "t", None)])[0].seq == 4
    j.close()
    with pytest.raises(JournalError, match="journal of table 't1'"):
        Journal(tmp_path / "j.sqlite", "t2")


@pytest.mark.parametrize(
    ("tamper", "seq", "what"),
    [
        ("UPDATE events SET body = replace(body, '\"n\":7', '\"n\":70') WHERE seq = 8", 8, "hash"),
        ("DELETE FROM events WHERE seq = 12", 12, "missing"),
        ("DELETE FROM events WHERE seq = 20", 20, "missing"),
        ("DELETE FROM events WHERE seq = 1", 1, "missing"),
        (
            "UPDATE events SET body = CASE seq WHEN 5 THEN (SELECT body FROM events WHERE seq = 6) "
            "ELSE (SELECT body FROM events WHERE seq = 5) END WHERE seq IN (5, 6)",
            5,
            "",
        ),
    ],
    ids=["altered", "deleted", "deleted-last", "deleted-first", "swapped"],
)
def test_verify_names_the_tampered_seq(tmp_path, capsys, tamper, seq, what):
    path = tmp_path / "j.sqlite"
    fill(path).close()
    assert tablectl(["verify", str(path)]) == 0
    db = sqlite3.connect(path)
    db.execute(tamper)
    db.commit()
    db.close()
    capsys.readouterr()
    assert tablectl(["verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"seq {seq}:" in out and what in out


def test_daemon_refuses_to_append_to_a_broken_chain(tmp_path):
    from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
    from daemon.pipeline.pipeline import Pipeline
    from daemon.table import Table

    path = tmp_path / "j.sqlite"
    fill(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE events SET body = replace(body, '\"n\":19', '\"n\":91') WHERE seq = 20")
    db.commit()
    db.close()
    p = Pipeline(Table(BaccaratTable(BaccaratRules()), []), Journal(path, "t1"))
    with pytest.raises(JournalError, match="damaged at seq 20"):
        p.recover()


def test_recovery_uses_a_snapshot_and_equals_a_full_replay(tmp_path):
    """A snapshot only saves time: the state from it equals the state from every event."""
    from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
    from daemon.pipeline.capture import load
    from daemon.pipeline.pipeline import Pipeline
    from daemon.pipeline.replay import replay
    from daemon.table import Table

    cap = load(ROOT / "tests" / "captures" / "shoe-line" / "full-shoe-first-card-burn.log")
    r = replay([cap])
    path = tmp_path / "j.sqlite"
    j = Journal(path, "cap")
    table = Table(BaccaratTable(BaccaratRules()), ["shoe"])
    state = table.initial()
    for i, ev in enumerate(r.events):  # commit in small groups with snapshots every 50
        state = table.apply(state, ev.type, ev.data)
        snap = (table.state_version, table.encode_state(state)) if (i + 1) % 50 == 0 else None
        j.append([Batch([Draft(ev.type, ev.data)], ev.time, ev.mono)], snap)
    j.close()
    p1 = Pipeline(table, Journal(path, "cap"))
    p1.recover()
    # each snapshot is sealed by a journal.snapshot event after the event it follows
    snaps = len(r.events) // 50
    assert p1.stats.recovered_from_snapshot == 800 + 16
    assert p1.stats.recovered_events == len(r.events) + snaps - 816
    db = sqlite3.connect(path)
    db.execute("DELETE FROM snapshots")
    db.commit()
    db.close()
    p2 = Pipeline(table, Journal(path, "cap"))
    p2.recover()
    assert p2.stats.recovered_events == len(r.events) + snaps
    import msgspec

    # the state counts the journal's seqs: the 16 journal.snapshot events took some too
    assert p1.state.seq == p2.state.seq == len(r.events) + snaps
    state = msgspec.structs.replace(state, seq=p1.state.seq)
    assert (
        msgspec.to_builtins(p1.state) == msgspec.to_builtins(p2.state) == msgspec.to_builtins(state)
    )


def test_recall_prints_the_last_games(tmp_path, capsys):
    from daemon.pipeline.capture import load
    from daemon.pipeline.replay import replay

    r = replay([load(ROOT / "tests" / "captures" / "shoe-line" / "misdeals.log")])
    path = tmp_path / "j.sqlite"
    j = Journal(path, "cap")
    for ev in r.events:
        j.append([Batch([Draft(ev.type, ev.data)], ev.time, ev.mono)])
    j.close()
    assert tablectl(["recall", "--last", "10", str(path)]) == 0
    out = capsys.readouterr().out
    assert "VOID (burn-not-completed)" in out and "VOID (exposed-card)" in out
    assert (
        out.count("shoe 2 hand") >= 4 and "card-before-betting-closed" not in out
    ) or "alarm.raised" in out


def test_recall_one_hand(tmp_path, capsys):
    from daemon.pipeline.capture import load
    from daemon.pipeline.replay import replay

    r = replay([load(ROOT / "tests" / "captures" / "shoe-line" / "extra-cards.log")])
    path = tmp_path / "j.sqlite"
    j = Journal(path, "cap")
    for ev in r.events:
        j.append([Batch([Draft(ev.type, ev.data)], ev.time, ev.mono)])
    j.close()
    assert tablectl(["recall", "--hand", "1:5", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("seq ") and "shoe 1 hand 5:" in out and "card KC → player" in out
    assert "hand 4:" not in out


def test_a_secret_part_is_journaled_beside_the_row_never_in_the_event(tmp_path) -> None:
    j = Journal(tmp_path / "j.sqlite", "t")
    evs = j.append(
        [
            Batch(
                [
                    Draft(
                        "card.dealt",
                        {"card": None, "commitment": "c", "secret": {"card": "9D", "salt": "00"}},
                    ),
                    Draft("x", {"a": 1}),
                ],
                "2026-01-01T00:00:00.000Z",
                None,
            )
        ]
    )
    assert "secret" not in evs[0].data
    raw = dict(read_raw(j.db, 1))
    assert b"9D" not in raw[1] and b"secret" not in raw[1]
    assert verify_chain(j.db) == (2, None)
    rebuilt = list(read_for_state(j.db, 1))
    assert rebuilt[0] == (
        "card.dealt",
        {"card": None, "commitment": "c", "secret": {"card": "9D", "salt": "00"}},
    )
    assert rebuilt[1] == ("x", {"a": 1})


class _CommitAfterEachRead(Journal):
    """A journal that commits right after every read of its head.

    The worst interleaving a commit beside another thread's read can produce (the
    sentinel's heartbeat while the loop commits), made certain: whatever reads the head
    in two steps sees a commit land between them.
    """

    racing = False

    def __getattribute__(self, name: str):  # type: ignore[no-untyped-def]
        value = super().__getattribute__(name)
        if name in ("head", "last_seq", "last_hash") and super().__getattribute__("racing"):
            self.racing = False
            try:
                self.append([Batch([Draft("test.tick", {})], "2026-01-01T00:00:00.000Z", None)])
            finally:
                self.racing = True
        return value


def _heartbeat_daemon(tmp_path, j):
    """A Daemon whose heartbeat reads ``j`` and a real (unbound) bus: what
    ``Daemon.heartbeat_data`` reads, without running the daemon."""
    import zmq.asyncio
    from daemon_harness import write_config

    from daemon.bus.bus import Bus
    from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
    from daemon.pipeline.pipeline import Pipeline
    from daemon.runtime.app import Daemon
    from daemon.runtime.config import load
    from daemon.table import Table

    d = Daemon(load(write_config(tmp_path)))
    d.journal, d.devices = j, {}
    d.table = Table(BaccaratTable(BaccaratRules()), [])
    d.pipeline = Pipeline(d.table, j)
    d.ctx = zmq.asyncio.Context()
    d.bus = Bus(
        d.ctx,
        table="t1",
        publish="tcp://127.0.0.1:*",
        replay="tcp://127.0.0.1:*",
        journal_path=str(j.path),
    )
    return d


def test_the_heartbeat_pairs_a_seq_with_its_own_hash(tmp_path):
    """The heartbeat (and its signed checkpoint) names an event that is in the journal.

    The loop commits while the sentinel's thread builds a heartbeat; a seq read apart
    from its hash could come out beside the hash of the event after it.
    """
    j = _CommitAfterEachRead(tmp_path / "j.sqlite", "t1")
    fill_n = 3
    for i in range(fill_n):
        j.append([Batch([Draft("test.tick", {"n": i})], "2026-01-01T00:00:00.000Z", None)])
    d = _heartbeat_daemon(tmp_path, j)  # nothing published yet: the journal's head
    j.racing = True
    data = d.heartbeat_data()
    seq, h = data["last_seq"], data["last_hash"]
    assert seq >= fill_n
    row = j.db.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
    assert row == (h,), f"seq {seq} beside a hash that is not its own"
    j.racing = False
    assert j.last_seq > fill_n  # the commits did land between the reads
    j.close()
    d.ctx.term()


@settings(max_examples=300)
@given(st.lists(st.floats(min_value=0, max_value=4e9, allow_nan=False), min_size=1, max_size=20))
def test_utc_text_is_strftime_whatever_second_came_before(times):
    """The second is formatted once and kept: the text stays exactly strftime's, including
    microseconds that round up into the next second and a clock that goes back."""
    from datetime import UTC, datetime

    from daemon.journal.events import utc_text

    for t in [*times, *(x + 0.9999996 for x in times)]:
        dt = datetime.fromtimestamp(t, UTC)
        assert utc_text(t) == dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def test_each_commit_updates_the_recorded_head_in_place(tmp_path):
    """The head row keeps its rowid: a REPLACE would move it, rewriting the key's index
    page too, one more page written through every commit's fsync."""
    j = fill(tmp_path / "j.sqlite", 1)
    first = j.db.execute("SELECT rowid, value FROM meta WHERE key = 'head'").fetchone()
    j.append([Batch([Draft("test.tick", {"n": 1})], "2026-01-01T00:00:00.000Z", None)])
    rowid, value = j.db.execute("SELECT rowid, value FROM meta WHERE key = 'head'").fetchone()
    assert rowid == first[0] and value == f"{j.last_seq}:{j.last_hash}" != first[1]
    assert verify_chain(j.db) == (2, None)
    j.close()


def test_a_lone_events_commit_writes_two_pages(tmp_path):
    """One event in one transaction writes the events table's last page and the head's
    page of ``meta``: two WAL frames through the commit's fsync, no more. A REPLACE of the
    head (its key's index page too), a new index on ``events`` or any other page written
    by every commit shows here as a third frame."""
    j = fill(tmp_path / "j.sqlite", 3)
    frame = 24 + j.db.execute("PRAGMA page_size").fetchone()[0]
    wal = tmp_path / "j.sqlite-wal"
    before = wal.stat().st_size
    j.append([Batch([Draft("test.tick", {"n": 3})], "2026-01-01T00:00:00.000Z", None)])
    assert (wal.stat().st_size - before) / frame == 2
    j.close()


def test_the_heartbeat_names_no_event_committed_but_not_yet_published(tmp_path):
    """A commit returns, then is published: between the two the journal's head
    names an event no subscriber has. A heartbeat naming it would send every follower
    to replay an event that is on its way (``tabled_client.table``: a heartbeat's
    ``last_seq`` ahead means a gap); it names the last event published instead."""
    j = Journal(tmp_path / "j.sqlite", "t1")
    tick = lambda n: Batch([Draft("test.tick", {"n": n})], "2026-01-01T00:00:00.000Z", None)  # noqa: E731
    for i in range(3):
        j.append([tick(i)])
    d = _heartbeat_daemon(tmp_path, j)
    d.bus.resume(j.head)  # as the daemon does at start, before the first publish
    started = d.heartbeat_data()
    assert (started["last_seq"], started["last_hash"]) == j.head == (3, j.head[1])

    events, raws = j.commit([tick(3)])  # committed, not published yet
    assert j.head[0] == 4
    between = d.heartbeat_data()
    assert (between["last_seq"], between["last_hash"]) == (3, started["last_hash"])

    d.bus.pub.open()
    d.bus.pub.bind()
    try:
        d.bus.publish(events, raws)
    finally:
        d.bus.pub.close()
    after = d.heartbeat_data()
    assert (after["last_seq"], after["last_hash"]) == (4, events[-1].hash) == j.head
    j.close()
    d.ctx.term()


def test_the_sentinel_speaks_for_the_loop_while_a_commit_is_slow_then_stuck(tmp_path):
    """daemon/runtime/liveness.py's ``_journal_slow``, as the sentinel calls it while a commit blocks
    the loop: under the watchdog's ping interval it pings in the loop's place and sends the
    heartbeat (the write may only be slow); past it, no ping (systemd restarts the daemon),
    ``journal.state`` not ok once, heartbeats with ``journal_ok: false``, and the status line
    says so. A real notify socket and a real bus."""
    import asyncio
    import json
    import socket

    import zmq

    from daemon.runtime.sdnotify import Notifier

    j = Journal(tmp_path / "j.sqlite", "t1")
    j.append([Batch([Draft("test.tick", {"n": 0})], "2026-01-01T00:00:00.000Z", None)])
    systemd = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    systemd.bind(str(tmp_path / "notify"))
    systemd.settimeout(5)
    d = _heartbeat_daemon(tmp_path, j)
    d.notifier = Notifier.from_env({"NOTIFY_SOCKET": str(tmp_path / "notify")})
    d._stuck_after = 5.0
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.subscribe(b"")
    times = (1.0, 4.0, 6.0, 7.0)

    def upto_marker(n: int) -> list[tuple[str, dict]]:
        """What the bus sent before the test's marker ``n`` (one socket: in order), however
        late it arrives; a hang is bounded by the poll."""
        d.bus.send(b"test.marker", json.dumps({"n": n}).encode())
        msgs = []
        while True:
            assert sub.poll(20_000), f"marker {n} never came"
            topic, body = sub.recv_multipart()
            if topic == b"test.marker":
                if json.loads(body)["n"] == n:
                    return msgs
                continue
            msgs.append((topic.decode(), json.loads(body)))

    async def main() -> list[tuple[list[str], list[tuple[str, dict]]]]:
        await d.bus.start()
        sub.connect(d.bus.publish_endpoint)
        while not sub.poll(100):  # the subscription is live once a heartbeat comes through
            d.bus.heartbeat(d.heartbeat_data(), "2026-01-01T00:00:00.000Z", 0.0)
        upto_marker(0)  # the heartbeats sent to bring the subscription up
        told = []
        try:
            for n, seconds in enumerate(times, 1):
                d._slow_beat = None  # each call a heartbeat interval after the one before
                d._journal_slow(seconds)
                notes = [systemd.recv(4096).decode() for _ in range(2 if seconds < 5 else 1)]
                told.append((notes, upto_marker(n)))
        finally:
            await d.bus.close()
        return told

    try:
        told = asyncio.run(main())
    finally:
        sub.close(0)
        systemd.close()
        j.close()
        d.ctx.term()
    for seconds, (notes, msgs) in zip(times, told, strict=True):
        stuck = seconds > 5
        assert ("WATCHDOG=1" in notes) == (not stuck), (seconds, notes)
        status = [n for n in notes if n.startswith("STATUS=")]
        assert status and ("JOURNAL STUCK" in status[0]) == stuck, (seconds, notes)
        beats = [m for t, m in msgs if t.endswith(".heartbeat")]
        assert len(beats) == 1 and beats[0]["data"]["journal_ok"] == (not stuck), msgs
        states = [m["data"] for t, m in msgs if t.endswith(".journal.state")]
        if seconds == 6.0:  # the first look past the limit says it, once
            assert len(states) == 1 and states[0]["ok"] is False, msgs
            assert "has not returned for 6.0 s" in states[0]["error"]
        else:
            assert states == [], msgs
