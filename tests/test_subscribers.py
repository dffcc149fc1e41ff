"""Subscribers against the real daemon: a slow one, a restarted one, a late one.

The daemon runs as a process (``tests/daemon_harness.py``) with a simulated shoe
dealing as fast as the table lets it (``pace = 0``, betting open 10 ms), so
events flow at a high rate, and a small publisher queue (``[bus] sndhwm = 50``).
PUB/SUB drops silently past a high-water mark; the subscriber recipe
(``daemon.bus.subscriber.Follower``: seq, heartbeats, replay) must still end with
every committed event exactly once, byte for byte what the journal holds.

No test waits on the clock for something to happen: each wait is on what a
subscriber receives, with a bounded safety timeout. The slow subscriber's pause
is the fault being injected; it lasts until a live subscriber has seen the
daemon publish far more than the slow one's queues can hold.
"""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zmq
from daemon_harness import Daemon, endpoints, write_config

from daemon.bus.subscriber import Follower
from daemon.journal.events import Event, decode

GUARD = 30.0  # seconds: only a hang ever reaches it
SNDHWM = 50
#: events the daemon must publish while the slow subscriber sleeps: its SUB queue
#: (RCVHWM 10), the publisher's queue (SNDHWM 50) and the unix socket's buffer
#: (~200 KiB, events are ~380 bytes) hold far fewer.
PAUSE_EVENTS = 600


def fast_config(tmp: Path) -> Path:
    """A table dealing flat out, publishing on a unix socket with a small queue.

    The publish socket is ``ipc://``, not loopback TCP: loopback's 64 KiB MSS lets
    the kernel's send buffer grow to megabytes, so a paused subscriber on TCP loses
    nothing until some ten thousand events have piled up; a unix socket's buffer is
    about 200 KiB (``net.core.wmem_default``), a few hundred events.
    """
    cfg = write_config(tmp, sim="seed = 5\npace = 0.0\n")
    text = cfg.read_text()
    run = re.search(r'runtime_dir = "(.*)"', text)
    assert run is not None
    text, n = re.subn(
        r'publish = "tcp://127\.0\.0\.1:\d+"', f'publish = "ipc://{run[1]}/publish.sock"', text
    )
    assert n == 1
    text = text.replace("betting_seconds = 0.05\n", "betting_seconds = 0.01\n")
    text = text.replace("settle_seconds = 0.01\n", "settle_seconds = 0.0\n")
    text = text.replace(
        "heartbeat_interval = 0.2\n", f"heartbeat_interval = 0.1\nsndhwm = {SNDHWM}\n"
    )
    text = text.replace('level = "info"', 'level = "warning"')
    assert f"sndhwm = {SNDHWM}" in text and "pace = 0.0" in text
    cfg.write_text(text)
    return cfg


def journal(tmp: Path) -> list[bytes]:
    """Every committed event's stored bytes, in seq order (checked gapless)."""
    db = sqlite3.connect(tmp / "state" / "journal.sqlite")
    try:
        rows = db.execute("SELECT seq, body FROM events ORDER BY seq").fetchall()
    finally:
        db.close()
    assert [s for s, _ in rows] == list(range(1, len(rows) + 1))
    return [bytes(b) for _, b in rows]


@pytest.fixture
def daemon(tmp_path):
    cfg = fast_config(tmp_path)
    d = Daemon(cfg)
    d.start()
    yield d, cfg
    d.close()


class Progress:
    """The highest seq some reader has seen, and a way to wait for it without polling."""

    def __init__(self) -> None:
        self.seq = 0
        self.error: BaseException | None = None
        self._cond = threading.Condition()

    def saw(self, seq: int) -> None:
        with self._cond:
            if seq > self.seq:
                self.seq = seq
                self._cond.notify_all()

    def failed(self, e: BaseException) -> None:
        with self._cond:
            self.error = e
            self._cond.notify_all()

    def wait(self, pred: Callable[[int], bool], what: str) -> int:
        with self._cond:
            if not self._cond.wait_for(lambda: self.error is not None or pred(self.seq), GUARD):
                raise AssertionError(f"timed out waiting for {what} (at seq {self.seq})")
            if self.error is not None:
                raise AssertionError(f"reader failed: {self.error!r}") from self.error
            return self.seq


class LiveSub(threading.Thread):
    """A plain SUB that only reads as fast as it can and records every event's seq."""

    def __init__(self, publish: str) -> None:
        super().__init__(daemon=True)
        self.publish = publish
        self.seqs: list[int] = []
        self.progress = Progress()
        self.stop = threading.Event()
        self.ready = threading.Event()

    def run(self) -> None:
        ctx = zmq.Context.instance()
        s = ctx.socket(zmq.SUB)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RCVHWM, 100_000)
        s.setsockopt(zmq.SUBSCRIBE, b"it.")
        s.connect(self.publish)
        try:
            while not self.stop.is_set():
                if not s.poll(100):
                    continue
                topic, body = s.recv_multipart()
                if topic == b"it.heartbeat":
                    self.ready.set()  # the subscription is live
                    continue
                if topic.startswith(b"~") or topic == b"it.journal.state":
                    continue
                seq = json.loads(body)["seq"]
                if self.ready.is_set():
                    self.seqs.append(seq)
                    self.progress.saw(seq)
        except BaseException as e:
            self.progress.failed(e)
            raise
        finally:
            s.close()


class Recorder:
    """Stands in for a Follower's SUB socket and notes the seq of every event it
    hands over, so the test sees what PUB delivered before any repair."""

    def __init__(self, sock: zmq.Socket) -> None:
        self.sock = sock
        self.seqs: list[int] = []

    def poll(self, *a: Any) -> int:
        return self.sock.poll(*a)

    def recv_multipart(self) -> list[bytes]:
        topic, body = self.sock.recv_multipart()
        if not topic.endswith(b".heartbeat") and not topic.startswith(b"~"):
            self.seqs.append(json.loads(body)["seq"])
        return [topic, body]

    def close(self) -> None:
        self.sock.close()


def gaps(seqs: list[int]) -> list[tuple[int, int]]:
    return [(a, b) for a, b in itertools.pairwise(seqs) if b != a + 1]


def take(f: Follower, held: list[Event], until: Callable[[int], bool]) -> None:
    """Read from the Follower until ``until(last_seq)``."""
    if until(f.last_seq):
        return
    for ev in f.events(timeout=GUARD):
        assert isinstance(ev, Event)
        held.append(ev)
        if until(f.last_seq):
            return
    raise AssertionError(f"the daemon went quiet at seq {f.last_seq}")


def test_slow_subscriber_loses_to_the_hwm_and_repairs_from_replay(daemon, tmp_path):
    d, cfg = daemon
    pub, rep = endpoints(cfg)
    live = LiveSub(pub)
    live.start()
    slow = Follower(pub, rep, table="it")
    # a small queue on the slow subscriber, set before it connects (HWM applies per connection)
    slow.sub.disconnect(pub)
    slow.sub.setsockopt(zmq.RCVHWM, 10)
    slow.sub.connect(pub)
    rec = Recorder(slow.sub)
    slow.sub = rec  # type: ignore[assignment]
    held: list[Event] = []
    try:
        assert live.ready.wait(GUARD), "the live subscriber never got a heartbeat"
        start = live.progress.wait(lambda s: s > 0, "the first event")
        take(slow, held, lambda last: last > start + 20)  # following, live
        paused_at = slow.last_seq
        received_before = len(rec.seqs)
        # the pause: this subscriber reads nothing while the daemon publishes on
        resumed_at = live.progress.wait(
            lambda s: s >= paused_at + PAUSE_EVENTS, f"{PAUSE_EVENTS} events published"
        )
        take(slow, held, lambda last: last >= resumed_at + 50)
        end = live.progress.wait(lambda s: s >= resumed_at + 50, "the live subscriber to follow")
    finally:
        slow.close()
        live.stop.set()
        live.join(GUARD)
        assert d.stop() == 0
    committed = journal(tmp_path)

    # PUB really dropped messages for the slow subscriber: a hole in what it was handed
    during = rec.seqs[received_before:]
    assert gaps(during), "nothing was lost to the high-water mark: the test proves nothing"
    lost = sum(b - a - 1 for a, b in gaps(during))
    assert lost > SNDHWM
    # ... which the Follower saw and repaired from replay: every committed event, once, in order
    assert slow.repairs >= 2  # the first heartbeat's catch-up, then the gap
    seqs = [e.seq for e in held]
    assert seqs == list(range(1, len(held) + 1))
    assert [e.canonical() for e in held] == committed[: len(held)]
    assert len(held) >= resumed_at + 50
    # the pipeline kept publishing to the subscriber that kept reading: no gap at all
    window = [s for s in live.seqs if paused_at <= s <= end]
    assert window[0] <= paused_at + 1 and window[-1] >= resumed_at + 50
    assert gaps(live.seqs) == [], gaps(live.seqs)[:5]


class Reader(threading.Thread):
    """A Follower in its own thread (its socket stays in the thread that made it)."""

    def __init__(self, pub: str, rep: str, stop: threading.Event, *, quit_after: int = 0) -> None:
        super().__init__(daemon=True)
        self.pub, self.rep, self.stop = pub, rep, stop
        self.quit_after = quit_after
        self.held: list[bytes] = []
        self.progress = Progress()
        self.last_seq = 0

    def run(self) -> None:
        f = Follower(self.pub, self.rep, table="it", last_seq=0)
        try:
            # GUARD bounds a silence and each replay (a late reader's starts at seq 1, while the
            # table deals flat out): only a hang reaches it. Heartbeats come too, so a stop is
            # seen within a heartbeat interval even between events.
            for ev in f.events(timeout=GUARD, heartbeats=True):
                if self.stop.is_set():
                    return
                if not isinstance(ev, Event):
                    continue  # a heartbeat
                self.held.append(ev.canonical())
                self.last_seq = f.last_seq
                self.progress.saw(f.last_seq)
                if self.quit_after and f.last_seq >= self.quit_after:
                    return
        except BaseException as e:
            self.progress.failed(e)
            raise
        finally:
            f.close()


def test_restarted_and_late_subscribers_end_with_the_same_events(daemon, tmp_path):
    d, cfg = daemon
    pub, rep = endpoints(cfg)
    stop = threading.Event()
    steady = Reader(pub, rep, stop)
    steady.start()
    first = Reader(pub, rep, stop, quit_after=40)  # then it "crashes", losing what it held
    first.start()
    try:
        first.join(GUARD)
        assert not first.is_alive() and first.last_seq >= 40
        gone_at = steady.progress.wait(
            lambda s: s >= first.last_seq + 100, "events while it is down"
        )
        restarted = Reader(pub, rep, stop)  # from scratch: last_seq = 0
        restarted.start()
        late = Reader(pub, rep, stop)  # joins well after the table started
        late.start()
        target = steady.progress.wait(lambda s: s >= gone_at + 200, "more events") + 50
        for r in (steady, restarted, late):
            r.progress.wait(lambda s: s >= target, "every subscriber to pass the target")
    finally:
        stop.set()  # the readers leave at their next event or heartbeat, the daemon still up
        for r in (steady, restarted, late):
            r.join(GUARD)
        assert d.stop() == 0
    committed = journal(tmp_path)
    common = min(len(committed), steady.last_seq, restarted.last_seq, late.last_seq)
    assert common >= target
    assert steady.held[:common] == committed[:common]  # never stopped: each event once, in order
    assert restarted.held[:common] == steady.held[:common]
    assert late.held[:common] == steady.held[:common]
    assert first.held == committed[: len(first.held)]  # what it held before it went was right too
    assert [decode(b).seq for b in late.held[:common]] == list(range(1, common + 1))
