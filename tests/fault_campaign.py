"""The fault campaign (``make faults``): the real daemon under kills, full disks and damage.

    python tests/fault_campaign.py [--seed N] [--quick] [--only PART]

Five parts, each on a real daemon process (shoe simulator on a pty, ZeroMQ on loopback, a
SQLite file), each asserting the same four things: nothing acknowledged is lost (every
command the daemon answered as accepted, and every event a subscriber received, is in the
journal), nothing is published twice (a raw SUB sees each seq at most once across every
restart), the chain verifies (``tablectl verify``), and the daemon either carries on or stops
with one clear line — never reporting healthy while stuck.

1. kills: random SIGKILLs during play, a third of them between a commit and its publish
   (``TABLED_FAULT_KILL_AFTER_COMMIT``), with commands acknowledged in between.
2. disk full: the state directory on a small tmpfs (as root where mounting works; else
   ``RLIMIT_FSIZE`` on the daemon), a snapshot every 10 events so the disk fills during
   snapshot writes and pruning; then the space returns.
3. write errors at every step of a commit (``TABLED_FAULT_JOURNAL`` + ``TABLED_FAULT_STEP``):
   before, insert, head, snapshot, prune, commit — each switched on and off during play.
4. two daemons on one state directory, started together: exactly one runs.
5. damaged journals: empty, truncated, random bytes, an altered snapshot, an altered old row —
   refused with one line, never READY, the file left as it was. Again with ``[security]
   checkpoint_key`` (a crash start walks from the newest stored proof): the same, plus a history
   rewritten before the proof (hashes recomputed, which a walk cannot see) refused; an old row
   edited in place passes the start and is stopped by the history check right after it
   (docs/reliability.md).
6. the journal's identity (``tests/fault_journal.py``, issue 28): a second daemon through a
   hard link, a restored backup (the state directory or the journal alone), each stored
   column relabelled.
7. malformed commands (issue 28 item 2): a blackjack dealer socket gets arbitrary JSON
   arguments and raw NaN / 1e400 / deep nesting: the daemon runs on, each reply a commit
   with its seq or a refusal with its reason, no decide raises, the chain verifies.
8. id eviction (issue 28 item 8): a committed request id, evicted by 4,200 ``status``
   requests from another client, retried from a new connection and after a kill or a
   stop and restart: answered as committed at its seq, in the journal once.
9. descriptor exhaustion: idle TCP connections up to the hard limit (1,024) on every network port
   (publish, replay, metrics), round after round, commands acknowledged meanwhile: the daemon
   keeps a reserve of descriptors, answers status, and stops cleanly (docs/security.md).

It prints its counts (kills, faults injected, events checked) and its duration; any broken
promise is an AssertionError naming it (exit 1).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import zmq

sys.path.insert(0, str(Path(__file__).resolve().parent))

from daemon_harness import ROOT, Daemon, endpoints, tablectl, write_config
from journal_attacks import rewrite_history_from

from daemon.bus.control import ControlError
from daemon.bus.subscriber import Follower, ReplayFailed
from daemon.ctl.control_client import ControlClient, DaemonUnreachable
from daemon.ctl.keys import create_checkpoint
from daemon.games import find
from daemon.journal import verify_chain, verify_file
from daemon.runtime.config import load

_TAGS = itertools.count(1)

#: the control socket's role: device.command is a technician's
TECHNICIAN = '[control]\nrole = "technician"\n'

COUNTS = {
    "kills": 0,
    "faults": 0,
    "events": 0,
    "acknowledged": 0,
    "refusals": 0,
    "replays_cut": 0,
    "replays_slow": 0,
    "connections": 0,
}


def log(msg: str) -> None:
    print(msg, flush=True)


class LiveTap:
    """A raw SUB across every restart: each seq may be published once, and only as committed."""

    def __init__(self, endpoint: str) -> None:
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.SUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVHWM, 0)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"")
        self.sock.connect(endpoint)
        self.seen: dict[int, bytes] = {}
        self.heartbeats: list[dict[str, Any]] = []

    def drain(self) -> None:
        while self.sock.poll(0):
            topic, body = self.sock.recv_multipart()
            if topic.endswith(b".heartbeat"):
                self.heartbeats.append(json.loads(body)["data"])
                continue
            if b".journal.state" in topic or b".trace" in topic:
                continue
            seq = json.loads(body)["seq"]
            assert seq not in self.seen, f"seq {seq} was published twice"
            self.seen[seq] = body

    def close(self) -> None:
        self.sock.close()
        self.ctx.term()


def journal_rows(state: Path) -> list[bytes]:
    db = sqlite3.connect(state / "journal.sqlite")
    try:
        return [bytes(b) for (b,) in db.execute("SELECT body FROM events ORDER BY seq")]
    finally:
        db.close()


def check(
    cfg: Path,
    state: Path,
    tap: LiveTap,
    acked: set[str],
    held: list[bytes],
    *,
    tablectl_verify: bool = True,
) -> int:
    """The four promises against the journal now; returns the number of events checked.

    The chain is checked by ``tablectl verify`` (as installed), or in-process between kills.
    """
    rows = journal_rows(state)
    events = [json.loads(b) for b in rows]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), "a seq is missing"
    positions = [
        (e["data"]["shoe"], e["data"]["shoe_position"]) for e in events if e["type"] == "card.dealt"
    ]
    assert len(positions) == len(set(positions)), "a card was committed twice"
    reasons = {e["data"]["args"].get("command") for e in events if e["type"] == "operator.command"}
    lost = acked - reasons
    assert not lost, f"acknowledged commands not in the journal: {sorted(lost)[:5]}"
    tap.drain()
    for seq, body in tap.seen.items():
        assert seq <= len(rows) and rows[seq - 1] == body, f"seq {seq} published but not as stored"
    assert held == rows[: len(held)], "the follower holds something the journal does not"
    if tablectl_verify:
        v = tablectl(cfg, "verify")
        assert v.returncode == 0, f"verify: {v.stdout}{v.stderr}"
    else:
        r = verify_file(state / "journal.sqlite")
        assert r.failure is None, r.failure
    COUNTS["events"] += len(rows)
    return len(rows)


def ack(client: ControlClient, tag: str, acked: set[str]) -> None:
    """One command; if the daemon says it is accepted (committed), it must never be lost.

    ``device.command`` (a technician's line to the shoe) is journaled whenever the shoe is
    connected, so it is accepted often and each carries its own tag.
    """
    tag = f"{tag}-{next(_TAGS)}"  # each command its own text: a lost one cannot hide
    try:
        res = client.call("device.command", device="shoe", command=tag)
    except (ControlError, DaemonUnreachable):
        return
    if not res.get("queued"):
        acked.add(tag)
        COUNTS["acknowledged"] += 1


# -- 1. kills -------------------------------------------------------------------------------------


def kills(work: Path, rng: random.Random, n: int) -> None:
    cfg = write_config(work, sim="seed = 31\npace = 0.003\n", extra=TECHNICIAN)
    pub, rep = endpoints(cfg)
    tap = LiveTap(pub)
    acked: set[str] = set()
    held: list[bytes] = []
    last = 0
    client = ControlClient(load(cfg).control_endpoint, timeout=2.0, actor="campaign")
    try:
        for run in range(n):
            between = run % 3 == 2
            env = {"TABLED_FAULT_KILL_AFTER_COMMIT": str(rng.randint(3, 40))} if between else {}
            d = Daemon(cfg, env)
            try:
                d.start()
                want = rng.randint(1, 25)
                last = _follow_until_killed(d, pub, rep, last, want, run, client, acked, held)
                if d.proc is not None and d.proc.poll() is None:
                    d.kill()
                assert d.proc is not None and d.proc.returncode == -9
                COUNTS["kills"] += 1
                COUNTS["faults"] += 1
                tap.drain()
                check(cfg, work / "state", tap, acked, held, tablectl_verify=False)
            finally:
                d.close()
        d = Daemon(cfg)
        try:
            d.start()
            f = Follower(pub, rep, table="it", last_seq=last)
            try:
                evs = f.until(lambda e: e.type == "daemon.started", 20.0)
                held += [e.canonical() for e in evs]
            finally:
                f.close()
        finally:
            assert d.stop() == 0
            d.close()
        check(cfg, work / "state", tap, acked, held)
        starts = [
            json.loads(b) for b in journal_rows(work / "state") if b'"type":"daemon.started"' in b
        ]
        assert sum(not s["data"]["clean"] for s in starts) == n, "a kill was recorded as clean"
    finally:
        client.close()
        tap.close()
    log(f"  kills: {n} SIGKILLs survived, {len(acked)} acknowledged commands kept")


def _follow_until_killed(
    d: Daemon,
    pub: str,
    rep: str,
    last: int,
    want: int,
    run: int,
    client: ControlClient,
    acked: set[str],
    held: list[bytes],
) -> int:
    """Follow ``want`` cards (or until the daemon kills itself); returns the last seq held.

    A replay can fail two ways here, neither of them a broken promise: the daemon killed
    itself (``TABLED_FAULT_KILL_AFTER_COMMIT``) after a heartbeat or a gap sent the follower
    to replay and before it answered — the documented end of a follow whose table is gone —
    or, on a loaded machine, the replay took longer than the follower's 2 s (then it is
    asked again, once, with 20 s: a replay server that is stuck still fails the campaign).
    What the follower yielded before stays whole: a replay is yielded only complete.
    """
    seen = 0
    for attempt, timeout in enumerate((2.0, 20.0)):
        f = Follower(pub, rep, table="it", last_seq=last)
        try:
            for e in f.events(timeout=timeout):
                held.append(e.canonical())
                seen += e.type == "card.dealt"
                if seen % 4 == 1:
                    ack(client, f"kill-{run}-{seen}", acked)
                if seen >= want:
                    break
            return f.last_seq
        except ReplayFailed:
            assert d.proc is not None
            if d.proc.poll() is not None:
                COUNTS["replays_cut"] += 1
                return f.last_seq
            if attempt:
                raise
            COUNTS["replays_slow"] += 1
            last = f.last_seq
        finally:
            f.close()
    raise AssertionError("unreachable")


# -- 2. a real full disk --------------------------------------------------------------------------


def _mount_tmpfs(where: Path, kib: int) -> bool:
    if os.getuid() != 0 or shutil.which("mount") is None:
        return False
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={kib}k,mode=0700", "tmpfs", str(where)],
        capture_output=True,
    )
    return r.returncode == 0


def _wait_heartbeat(tap: LiveTap, pred: Any, timeout: float) -> dict[str, Any]:
    """The next heartbeat (in order, each seen once) that satisfies ``pred``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if tap.heartbeats or tap.sock.poll(200):
            tap.drain()
            while tap.heartbeats:
                hb = tap.heartbeats.pop(0)
                if pred(hb):
                    return hb
    raise AssertionError("no heartbeat said what was expected in time")


def disk_full(work: Path) -> None:
    mnt = work / "disk"
    tmpfs = _mount_tmpfs(mnt, 640)
    cfg = write_config(work, sim="seed = 32\npace = 0.003\n", extra=TECHNICIAN)
    text = cfg.read_text().replace(str(work / "state"), str(mnt / "state"))
    cfg.write_text(text.replace("snapshot_every = 50", "snapshot_every = 10"))
    state = mnt / "state"
    pub, _ = endpoints(cfg)
    tap = LiveTap(pub)
    acked: set[str] = set()
    limit = 600 * 1024
    d = Daemon(cfg)
    if not tmpfs:
        mnt.mkdir(parents=True, exist_ok=True)
    client = ControlClient(load(cfg).control_endpoint, timeout=2.0, actor="campaign")
    try:
        _full_then_freed(d, cfg, tap, client, acked, tmpfs, mnt, limit)
        # a subscriber joining now gets, from seq 1, exactly the journal
        held = _replay_all(cfg, state)
        check(cfg, state, tap, acked, held)
    finally:
        client.close()
        d.close()
        tap.close()
        if tmpfs:
            subprocess.run(["umount", str(mnt)], check=False)
    log(f"  disk full: {'tmpfs of 640 KiB' if tmpfs else 'RLIMIT_FSIZE 600 KiB'}, held and resumed")


def _full_then_freed(
    d: Daemon,
    cfg: Path,
    tap: LiveTap,
    client: ControlClient,
    acked: set[str],
    tmpfs: bool,
    mnt: Path,
    limit: int,
) -> None:
    pub, rep = endpoints(cfg)
    _start_limited(d, limit if not tmpfs else None)
    f = Follower(pub, rep, table="it")
    try:
        # play until the disk is full: heartbeats must then say journal_ok false, and the
        # head must not move while they do (never healthy while stuck)
        hb = _wait_heartbeat(tap, lambda h: not h["journal_ok"], 120)
        COUNTS["faults"] += 1
        stuck = hb["last_seq"]
        ack(client, "during-full", acked)  # queued, not acknowledged: may not be lost either
        for _ in range(3):
            hb = _wait_heartbeat(tap, lambda h: True, 10)
            assert hb["last_seq"] == stuck and not hb["journal_ok"], hb
        st = json.loads(tablectl(cfg, "--json", "status").stdout)
        assert st["journal_ok"] is False and st["journal_error"], st
        # the space returns
        if tmpfs:
            subprocess.run(["mount", "-o", "remount,size=16m", str(mnt)], check=True)
        else:
            resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)
        evs = f.until(
            lambda e: e.type == "alarm.raised" and e.data["kind"] == "journal-failure", 30
        )
        evs += f.until(lambda e: e.type == "journal.snapshot", 30)
        evs += f.until(lambda e: e.type == "card.dealt", 30)
        ack(client, "after-full", acked)
    finally:
        f.close()
    assert d.stop() == 0


def _replay_all(cfg: Path, state: Path) -> list[bytes]:
    """What a subscriber joining now gets: every event from seq 1 (the daemon is restarted)."""
    d = Daemon(cfg)
    pub, rep = endpoints(cfg)
    try:
        d.start()
        f = Follower(pub, rep, table="it")
        try:
            got = [e.canonical() for e in f.until(lambda e: e.type == "daemon.started", 20)]
        finally:
            f.close()
    finally:
        assert d.stop() == 0
        d.close()
    return got


def _start_limited(d: Daemon, fsize: int | None) -> None:
    if fsize is None:
        d.start()
        return
    # RLIMIT_FSIZE for the daemon only: Python ignores SIGXFSZ, so a write past it fails EFBIG
    real = subprocess.Popen

    def popen(*a: Any, **k: Any) -> Any:
        pre = k.get("preexec_fn")

        def both() -> None:
            if pre is not None:
                pre()
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

        k["preexec_fn"] = both
        return real(*a, **k)

    subprocess.Popen = popen  # type: ignore[misc]
    try:
        d.start()
    finally:
        subprocess.Popen = real  # type: ignore[misc]


# -- 3. write errors at every step of a commit ----------------------------------------------------


def _count(state: Path, where: str) -> int:
    """Events in the journal matching ``where`` (a read beside the daemon's writes: WAL)."""
    db = sqlite3.connect(f"file:{state / 'journal.sqlite'}?mode=ro", uri=True)
    try:
        return int(db.execute(f"SELECT count(*) FROM events WHERE {where}").fetchone()[0])
    finally:
        db.close()


def every_step(work: Path, rng: random.Random, toggles: int) -> None:
    """Each step's outages, waited on through the heartbeats and the journal.

    Not through a follower: at a card every 3 ms on a loaded machine a follower that
    decodes every event falls behind the table, and a wait for "the alarm" then times
    out in the backlog (seen with 1,166 events read in 20 s); the events a subscriber
    holds are checked after the part, from a replay.
    """
    from daemon.runtime.faults import STEPS

    for step in STEPS:
        where = work / f"step-{step}"
        where.mkdir()
        flag = where / "fail"
        cfg = write_config(where, sim="seed = 33\npace = 0.003\n", extra=TECHNICIAN)
        cfg.write_text(cfg.read_text().replace("snapshot_every = 50", "snapshot_every = 10"))
        pub, _ = endpoints(cfg)
        tap = LiveTap(pub)
        acked: set[str] = set()
        d = Daemon(cfg, {"TABLED_FAULT_JOURNAL": str(flag), "TABLED_FAULT_STEP": step})
        client = ControlClient(load(cfg).control_endpoint, timeout=2.0, actor="campaign")
        try:
            d.start()
            state = where / "state"
            for i in range(toggles):
                head = _count(state, "1")
                _wait_heartbeat(tap, lambda h, n=head: h["last_seq"] > n, 60)  # play goes on
                ack(client, f"{step}-{i}-before", acked)
                alarms = _count(
                    state, "type = 'alarm.raised' AND CAST(body AS TEXT) LIKE '%journal-failure%'"
                )
                snaps = _count(state, "type = 'journal.snapshot'")
                flag.touch()
                _wait_heartbeat(tap, lambda h: not h["journal_ok"], 60)
                COUNTS["faults"] += 1
                flag.unlink()
                # resumed: the latched journal-failure alarm is committed after the first
                # commit that works (each heartbeat is the moment to look, not a timer)
                _wait_heartbeat(
                    tap,
                    lambda h, n=alarms, state=state: (
                        h["journal_ok"]
                        and _count(
                            state,
                            "type = 'alarm.raised' AND CAST(body AS TEXT) LIKE '%journal-failure%'",
                        )
                        > n
                    ),
                    60,
                )
                ack(client, f"{step}-{i}-after", acked)
                if rng.random() < 0.5:  # and snapshots are written again
                    _wait_heartbeat(
                        tap,
                        lambda h, n=snaps, state=state: (
                            _count(state, "type = 'journal.snapshot'") > n
                        ),
                        60,
                    )
            assert d.stop() == 0
        finally:
            flag.unlink(missing_ok=True)
            client.close()
            d.close()
        held = _replay_all(cfg, where / "state")
        check(cfg, where / "state", tap, acked, held)
        tap.close()
    log(f"  write errors: {len(STEPS)} steps × {toggles} outages, each held and resumed")


# -- 4. two daemons on one state directory --------------------------------------------------------


def two_daemons(work: Path, rounds: int) -> None:
    (work / "a").mkdir()
    (work / "b").mkdir()
    cfg = write_config(work / "a")
    cfg_b = write_config(work / "b")
    cfg_b.write_text(
        cfg_b.read_text().replace(str(work / "b" / "state"), str(work / "a" / "state"))
    )
    for _ in range(rounds):
        a, b = Daemon(cfg), Daemon(cfg_b)
        try:
            _spawn(a)
            _spawn(b)
            ready = _race(a, b, 60.0)
            assert len(ready) == 1, (
                f"{len(ready)} of two daemons ran on one state directory:\n"
                + "\n".join(f"--- {d.log}\n{d.log.read_text()[-1500:]}" for d in (a, b))
            )
            loser = b if ready[0] is a else a
            assert loser.proc is not None and loser.proc.wait(10) == 1
            COUNTS["refusals"] += 1
            COUNTS["faults"] += 1
            f = Follower(*endpoints(ready[0].config), table="it")
            f.until(lambda e: e.type == "card.dealt", 20)
            f.close()
            assert ready[0].stop() == 0
        finally:
            a.close()
            b.close()
        out = loser.log.read_text()
        assert "in use by another tabled" in out and "Traceback" not in out, out[-2000:]
        v = tablectl(cfg, "verify")
        assert v.returncode == 0, v.stdout
    log(f"  two daemons: {rounds} races, one daemon ran each time")


# -- descriptor exhaustion (issue 28, item 7) -------------------------------------------------------


def descriptor_exhaustion(work: Path, rounds: int) -> None:
    """Idle connections up to the hard limit on every network port, round after round, while
    commands are acknowledged: the daemon never stops, never holds its last descriptors, and
    status answers every round; the four promises after the last (``docs/security.md``)."""
    from daemon_harness import free_port
    from test_descriptor_exhaustion import descriptors, limited, open_idle

    limit = 1024  # systemd's soft default: what the daemon had before the unit set LimitNOFILE
    metrics = free_port()
    cfg = write_config(
        work, sim="seed = 37\npace = 0.003\n", extra=f"{TECHNICIAN}\n[metrics]\nport = {metrics}\n"
    )
    pub, rep = endpoints(cfg)
    ports = [int(pub.rsplit(":", 1)[1]), int(rep.rsplit(":", 1)[1]), metrics]
    tap = LiveTap(pub)
    acked: set[str] = set()
    d = limited(Daemon(cfg), limit)
    client = ControlClient(load(cfg).control_endpoint, timeout=5.0, actor="campaign")
    most = opened = 0
    try:
        d.start()
        assert d.proc is not None
        for r in range(rounds):
            flood: list[Any] = []
            try:
                for port in ports:
                    flood += open_idle(port, limit)
                opened += len(flood)
                COUNTS["faults"] += 1
                for _ in range(10):
                    ack(client, f"flood{r}", acked)
                    tap.drain()
                status = client.call("status")
                assert status["table"] == "it"
                most = max(most, descriptors(d.proc.pid))
                assert most < limit - 100, f"{most} descriptors held of {limit}"
            finally:
                for s in flood:
                    s.close()
        assert d.proc.poll() is None, "the daemon stopped under the flood"
        conns = client.call("status")["connections"]
    finally:
        client.close()
        code = d.stop() if d.proc is not None and d.proc.poll() is None else None
        d.close()
    assert code == 0, d.log.read_text()[-3000:]
    tap.drain()
    check(cfg, work / "state", tap, acked, [])
    tap.close()
    cut = sum(c["cut"] for c in conns.values())
    capped = sum(c["capped"] for c in conns.values())
    evicted = sum(c["evicted"] for c in conns.values())
    COUNTS["connections"] += opened
    log(
        f"  descriptor exhaustion: {rounds} floods of {opened} connections in all (limit "
        f"{limit}), most descriptors held {most}, closed at the cap {capped} times, {evicted} in "
        f"their handshake evicted, {cut} cut past "
        f"a cap, {len(acked)} acknowledged commands kept"
    )


def _race(a: Daemon, b: Daemon, timeout: float) -> list[Daemon]:
    """Which of two daemons said READY=1, once the other has exited (or the time is up)."""
    import select

    ready: list[Daemon] = []
    out: list[Daemon] = []
    deadline = time.monotonic() + timeout
    while len(ready) + len(out) < 2 and time.monotonic() < deadline:
        for d in (a, b):
            if d not in ready and d not in out and d.proc is not None and d.proc.poll() is not None:
                out.append(d)
        socks = {d.notify: d for d in (a, b) if d not in ready and d not in out}
        r, _, _ = select.select(list(socks), [], [], 0.1)
        for sock in r:
            if "READY=1" in sock.recv(4096).decode().split("\n"):
                ready.append(socks[sock])
    return ready


def _spawn(d: Daemon) -> None:
    env = dict(os.environ, NOTIFY_SOCKET=str(d.notify_path), PYTHONUNBUFFERED="1", **d.env)
    d._out = d.log.open("ab")
    d.proc = subprocess.Popen(
        [sys.executable, "-m", "daemon.runtime.app", "--config", str(d.config)],
        cwd=ROOT,
        env=env,
        stdout=d._out,
        stderr=subprocess.STDOUT,
    )


# -- 5. damaged journals --------------------------------------------------------------------------


def damaged(work: Path, *, keyed: bool = False) -> None:
    extra = ""
    if keyed:
        _, secret, _ = create_checkpoint(work, "cp")
        extra = f'[security]\ncheckpoint_key = "{secret}"\n'
    cfg = write_config(work, sim="seed = 34\npace = 0.003\n", extra=extra)
    cfg.write_text(cfg.read_text().replace("snapshot_every = 50", "snapshot_every = 20"))
    d = Daemon(cfg)
    try:
        d.start()
        Follower(*endpoints(cfg), table="it").until(lambda e: e.type == "journal.snapshot", 30)
        Follower(*endpoints(cfg), table="it").until(lambda e: e.type == "hand.result", 30)
    finally:
        d.stop()
        d.close()
    path = work / "state" / "journal.sqlite"
    good = path.read_bytes()
    refused = ("empty", "truncated", "random", "snapshot", "rewritten" if keyed else "old-row")
    for how in refused:
        _fresh(path, good)
        _damage(path, how)
        before = path.read_bytes()
        d = Daemon(cfg)
        try:
            _spawn(d)
            assert d.proc is not None and d.proc.wait(20) != 0
            d.notify.setblocking(False)
            said: list[str] = []
            while True:
                try:
                    said.append(d.notify.recv(4096).decode())
                except BlockingIOError:
                    break
            assert not any("READY=1" in m for m in said), f"{how}: READY on a damaged journal"
        finally:
            d.close()
        out = d.log.read_text()
        assert "Traceback" not in out, out[-2000:]
        errs = [x for x in out.splitlines() if _is_error(x)]
        assert len(errs) == 1 and str(path) in errs[0], f"{how}: {out[-2000:]}"
        d.log.unlink()
        assert path.read_bytes() == before, f"{how}: the journal was changed"
        v = tablectl(cfg, "verify")
        assert v.returncode == 1 and "Traceback" not in v.stdout + v.stderr, v.stdout + v.stderr
        COUNTS["refusals"] += 1
        COUNTS["faults"] += 1
    _fresh(path, good)
    if keyed:
        _old_row_found_by_verify(cfg, path)
        _fresh(path, good)
        log(
            "  keyed: empty, truncated, random bytes, altered snapshot, rewritten history refused;"
            " an old row edited in place stopped by the history check, then refused, and found"
            " by verify"
        )
    else:
        log("  damaged journals: empty, truncated, random bytes, altered snapshot, altered old row")


def _fresh(path: Path, good: bytes) -> None:
    path.write_bytes(good)
    for extra in ("-wal", "-shm", ".seal", ".broken-chain"):
        Path(f"{path}{extra}").unlink(missing_ok=True)


def _old_row_found_by_verify(cfg: Path, path: Path) -> None:
    """With a stored proof the start re-hashes only the chain after it: an old row edited in
    place does not stop the start (it is bound by the signed hash, not re-hashed), the
    history check right after READY does, loudly, and keeps later starts out; verify
    re-hashes every row and names it."""
    _damage(path, "old-row")
    d = Daemon(cfg)
    try:
        d.start()
        assert d.proc is not None and d.proc.wait(60) == 1, "the history check did not stop it"
    finally:
        d.close()
    errs = [x for x in d.log.read_text().splitlines() if _is_error(x)]
    assert len(errs) == 1 and "history is broken" in errs[0], errs
    assert Path(f"{path}.broken-chain").is_file()
    d.log.unlink()
    d = Daemon(cfg)
    try:
        _spawn(d)
        assert d.proc is not None and d.proc.wait(20) != 0
    finally:
        d.close()
    errs = [x for x in d.log.read_text().splitlines() if _is_error(x)]
    assert len(errs) == 1 and ".broken-chain" in errs[0], errs
    d.log.unlink()
    v = tablectl(cfg, "verify")
    assert v.returncode == 1 and "Traceback" not in v.stdout + v.stderr, v.stdout + v.stderr
    COUNTS["faults"] += 1
    COUNTS["refusals"] += 1


# -- 6, 7. commands (issue 28 items 2 and 8) --------------------------------------------------


def malformed_commands(work: Path, rng: random.Random, n: int) -> None:
    """A blackjack daemon's dealer socket gets ``n`` commands with arbitrary JSON arguments
    (and the raw NaN / 1e400 / deep nesting a JSON encoder would not make): the daemon
    keeps running, each reply is a commit with its seq or a refusal with its reason, no
    decide raises (no ``decide-failed`` alarm), and the chain verifies."""
    from command_harness import Raw, fuzz_args, game_config, role_endpoints

    cfg = game_config("blackjack", work)
    eps = role_endpoints(cfg)
    d = Daemon(cfg)
    counts = {"sent": 0, "committed": 0, "refused": 0}
    game = find("blackjack")
    assert game is not None
    # the commands the dealer role may send, each with its own arguments' names
    names = {
        n: [x.name for x in (*sp.args, *sp.more)]
        for n, sp in game.commands.items()
        if "dealer" in sp.roles
    }
    try:
        d.start()
        dealer = Raw(eps["dealer"], timeout=10.0)
        for i in range(n):
            name = rng.choice(sorted(names))
            req = {
                "cmd": name,
                "args": fuzz_args(rng, names[name]),
                "id": f"m{i}",
            }
            if i % 25 == 0:
                raw = rng.choice([b"[NaN]", b"[1e400]", b"[" * 300 + b"]" * 300, b'"\\ud800"'])
                reply = dealer.call(
                    b'{"cmd":"betting.close","id":"r%d","args":{"boxes":%s}}' % (i, raw)
                )
                assert reply["ok"] is False and reply["error"], reply
            reply = dealer.call(msgspec.json.encode(req))
            counts["sent"] += 1
            assert reply["id"] == req["id"], (req, reply)
            if reply["ok"]:
                assert isinstance(reply["result"]["seq"], int), reply
                counts["committed"] += 1
            else:
                assert reply["error"].strip(), reply
                counts["refused"] += 1
            assert d.proc is not None and d.proc.poll() is None, "the daemon stopped"
        dealer.close()
        assert d.stop() == 0
    finally:
        d.close()
    rows = [json.loads(b) for b in journal_rows(work / "state")]
    failed = [
        e for e in rows if e["type"] == "alarm.raised" and e["data"]["kind"] == "decide-failed"
    ]
    assert not failed, failed[:2]
    v = tablectl(cfg, "verify")
    assert v.returncode == 0, v.stdout + v.stderr
    COUNTS["faults"] += counts["sent"]
    COUNTS["refusals"] += counts["refused"]
    log(
        f"  malformed commands: {counts['sent']} sent, {counts['committed']} committed, "
        f"{counts['refused']} refused with a reason, the daemon ran on, no decide failed"
    )


def id_eviction(work: Path, rng: random.Random, n: int) -> None:
    """``n`` times: the game server's command with an id is committed; another client on
    its socket sends 4,200 ``status`` requests (which evicted the id before); the retry, from
    a new connection, is answered as committed at the same seq; the daemon is killed or
    stopped and restarted; the retry again gets the same seq. Each id is in the journal once."""
    from command_harness import Raw, blackjack_config, cmd, open_betting, role_endpoints

    cfg = blackjack_config(work)
    eps = role_endpoints(cfg)
    seqs: dict[str, int] = {}
    sent: dict[str, dict[str, Any]] = {}
    retries = 0
    for k in range(n):
        d = Daemon(cfg)
        try:
            d.start()
            dealer, other, viewer = Raw(eps["dealer"]), Raw(eps["dealer"]), Raw(eps["viewer"])
            open_betting(dealer, viewer)  # a new shoe each time, its burn done
            viewer.close()
            boxes = ",".join(str(b) for b in sorted(rng.sample(range(1, 8), rng.randint(1, 3))))
            req = cmd("betting.close", f"gs-{k}", boxes=boxes)
            first = dealer.call(req)
            assert first["ok"], first
            seqs[f"gs-{k}"] = first["result"]["seq"]
            sent[f"gs-{k}"] = req
            for i in range(0, 4200, 8):
                for j in range(8):
                    other.send(cmd("status", f"e{k}-{i + j}"))
                for _ in range(8):
                    assert other.recv()["ok"]
            dealer.reconnect()
            for old, seq in seqs.items():  # every id so far, after the eviction
                r = dealer.call(sent[old])
                assert r["ok"] and r["result"]["seq"] == seq, r
                retries += 1
            sup = Raw(eps["supervisor"])  # end the round if one is in play: the next opens afresh
            sup.call(cmd("hand.void", reason="campaign"))
            sup.close()
            dealer.close()
            other.close()
            if rng.random() < 0.5:
                d.kill()
                COUNTS["kills"] += 1
            else:
                assert d.stop() == 0
        finally:
            d.close()
        d = Daemon(cfg)
        try:
            d.start()
            dealer = Raw(eps["dealer"])
            r = dealer.call(req)
            assert r["ok"] and r["result"]["seq"] == seqs[req["id"]], r
            assert r["result"]["replayed"], r
            retries += 1
            dealer.close()
            assert d.stop() == 0
        finally:
            d.close()
        COUNTS["faults"] += 1
    rows = [json.loads(b) for b in journal_rows(work / "state")]
    tagged = [
        e
        for e in rows
        if e["type"] == "operator.command" and e["data"].get("request", "").startswith("gs-")
    ]
    assert sorted(e["data"]["request"] for e in tagged) == sorted(seqs), (
        "an id applied twice or lost"
    )
    assert {e["data"]["request"]: e["seq"] for e in tagged} == seqs
    v = tablectl(cfg, "verify")
    assert v.returncode == 0, v.stdout + v.stderr
    log(
        f"  id eviction: {n} ids evicted by 4,200 status requests each, {retries} retries "
        f"answered as committed at their seq across {n} restarts, each id in the journal once"
    )


def _is_error(line: str) -> bool:
    try:
        d = json.loads(line)
    except ValueError:
        return bool(line.strip())  # a plain line off JSON logging is an error line too
    return isinstance(d, dict) and d.get("level") == "error"


def _damage(path: Path, how: str) -> None:
    if how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        with path.open("r+b") as f:
            f.truncate(max(4096, path.stat().st_size // 2))
    elif how == "random":
        path.write_bytes(os.urandom(path.stat().st_size))
    elif how == "snapshot":
        db = sqlite3.connect(path)
        seq, blob = db.execute(
            "SELECT seq, state FROM snapshots ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        st = msgspec.msgpack.decode(blob)
        st["running"] = False
        st["game"]["shoe"] = 99
        db.execute(
            "UPDATE snapshots SET state = ? WHERE seq = ?", (msgspec.msgpack.encode(st), seq)
        )
        db.commit()
        db.close()
    elif how == "rewritten":

        def edit(fields: dict[str, Any]) -> None:
            fields["data"]["card"] = "X" + fields["data"]["card"]

        db = sqlite3.connect(path)
        (first,) = db.execute("SELECT min(seq) FROM events WHERE type = 'card.dealt'").fetchone()
        db.close()
        rewrite_history_from(path, first, edit)
        db = sqlite3.connect(path)
        assert verify_chain(db)[1] is None  # a walk sees nothing wrong, the proofs do
        db.close()
    elif how == "old-row":
        db = sqlite3.connect(path)
        db.execute(
            'UPDATE events SET body = replace(body, \'"card":"\', \'"card":"X\') WHERE seq = '
            "(SELECT min(seq) FROM events WHERE type = 'card.dealt')"
        )
        db.commit()
        db.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=18)
    p.add_argument("--quick", action="store_true", help="one of each, for a smoke run")
    p.add_argument("--only", metavar="PART", help='one part by its name, e.g. "two daemons"')
    a = p.parse_args()
    rng = random.Random(a.seed)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="faults-") as tmp:
        work = Path(tmp)
        parts = [
            ("kills", lambda w: kills(w, rng, 3 if a.quick else 40)),
            ("disk full", disk_full),
            ("write errors", lambda w: every_step(w, rng, 1 if a.quick else 3)),
            ("two daemons", lambda w: two_daemons(w, 1 if a.quick else 4)),
            ("damaged journals", damaged),
            ("damaged journals, keyed", lambda w: damaged(w, keyed=True)),
            *journal_parts(a.quick),
            ("malformed commands", lambda w: malformed_commands(w, rng, 100 if a.quick else 1500)),
            ("id eviction", lambda w: id_eviction(w, rng, 1 if a.quick else 6)),
            ("descriptor exhaustion", lambda w: descriptor_exhaustion(w, 1 if a.quick else 5)),
        ]
        if a.only is not None:
            parts = [(name, fn) for name, fn in parts if name == a.only]
            if not parts:
                p.error(f"--only: no part named {a.only!r}")
        for name, fn in parts:
            log(f"{name} …")
            where = work / name.replace(" ", "-")
            where.mkdir()
            t = time.monotonic()
            fn(where)
            log(f"  ({time.monotonic() - t:.0f} s)")
    took = time.monotonic() - t0
    log(
        f"fault campaign passed in {took:.0f} s: kills {COUNTS['kills']}, faults injected "
        f"{COUNTS['faults']}, events checked {COUNTS['events']}, acknowledged commands kept "
        f"{COUNTS['acknowledged']}, refusals {COUNTS['refusals']}, follows ended by a kill "
        f"mid-replay {COUNTS['replays_cut']}, replays asked again after 2 s "
        f"{COUNTS['replays_slow']}, hard links refused {COUNTS.get('hard_links', 0)}, "
        f"restored backups refused {COUNTS.get('restores', 0)}, relabelled columns found "
        f"{COUNTS.get('relabels', 0)}, "
        f"idle connections opened {COUNTS['connections']}"
    )
    return 0


def journal_parts(quick: bool) -> list[tuple[str, Any]]:
    """Issue 28's journal identity cases (``tests/fault_journal.py``)."""
    import fault_journal as fj

    return [
        ("hard link", lambda w: fj.hard_link(w, 1 if quick else 3, COUNTS, log)),
        ("restored backup", lambda w: fj.restored_backup(w, 1 if quick else 3, COUNTS, log)),
        ("relabelled rows", lambda w: fj.relabelled(w, COUNTS, log)),
    ]


if __name__ == "__main__":
    sys.exit(main())
