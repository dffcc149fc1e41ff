"""Crash and power loss, journal write failure, latched alarms: the real daemon, killed for real."""

from __future__ import annotations

import json
import random
import sqlite3
import time
from pathlib import Path

import independent_baccarat
import pytest
from daemon_harness import Daemon, endpoints, tablectl, write_config

from daemon.bus.subscriber import Follower, ReplayFailed

pytestmark = pytest.mark.slow


def rows(tmp_path: Path) -> list[dict]:
    db = sqlite3.connect(tmp_path / "state" / "journal.sqlite")
    try:
        return [json.loads(b) for (b,) in db.execute("SELECT body FROM events ORDER BY seq")]
    finally:
        db.close()


def check_journal(events: list[dict]) -> dict[str, int]:
    """Gapless seq; every card once; every hand's result follows from its own cards in shoe order."""
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    positions = [
        (e["data"]["shoe"], e["data"]["shoe_position"]) for e in events if e["type"] == "card.dealt"
    ]
    assert len(positions) == len(set(positions)), "a card was committed twice"
    by_shoe: dict[int, list[int]] = {}
    for shoe, pos in positions:
        by_shoe.setdefault(shoe, []).append(pos)
    for shoe, ps in by_shoe.items():
        assert ps == list(range(1, len(ps) + 1)), f"shoe {shoe}: a card position is missing"
    hands: dict[tuple[int, int], dict[str, list[str]]] = {}
    results = 0
    for e in events:
        d = e["data"]
        if e["type"] == "card.dealt" and d["box"] in ("player", "banker"):
            hands.setdefault((d["shoe"], d["hand"]), {"player": [], "banker": []})[d["box"]].append(
                d["card"]
            )
        elif e["type"] == "hand.result":
            cards = hands[(d["shoe"], d["hand"])]
            assert (d["player"], d["banker"]) == (cards["player"], cards["banker"])
            want = independent_baccarat.settle(d["player"], d["banker"])
            assert d["winner"] == want["winner"]
            results += 1
    return {"events": len(events), "cards": len(positions), "results": results}


def kills_lose_and_duplicate_nothing(tmp_path: Path, runs: int) -> dict[str, int]:
    """SIGKILL at random moments and between a commit and its publish; restart; check everything.

    Every run ends in a kill; every third lands between a commit and its publish.
    """
    cfg = write_config(tmp_path, sim="seed = 21\npace = 0.003\n")
    pub, rep = endpoints(cfg)
    rng = random.Random(1234)
    held: list[bytes] = []
    last = 0
    kills = 0
    for run in range(runs):
        between = run % 3 == 2  # every third kill lands between a commit and its publish
        env = {"TABLED_FAULT_KILL_AFTER_COMMIT": str(rng.randint(5, 40))} if between else {}
        d = Daemon(cfg, env)
        try:
            d.start()
            f = Follower(pub, rep, table="it", last_seq=last)
            try:
                want = rng.randint(1, 30)
                seen = 0
                # take what comes until enough cards were dealt, or until the injected kill
                # ends the daemon: a silence or a replay without answer ends events() and counts
                # only once the process is gone (a loaded machine's pause is not a kill)
                deadline = time.monotonic() + 60
                while seen < want and d.proc is not None and d.proc.poll() is None:
                    assert time.monotonic() < deadline, f"{seen} of {want} cards in 60 s"
                    try:
                        for e in f.events(timeout=2.0):
                            held.append(e.canonical())
                            seen += e.type == "card.dealt"
                            if seen >= want:
                                break
                    except ReplayFailed:
                        pass  # asked of a daemon that died or was slow: the loop tells which
                last = f.last_seq
            finally:
                f.close()
            if d.proc is not None and d.proc.poll() is None:
                d.kill()
            assert d.proc is not None and d.proc.returncode == -9
            kills += 1
            check_journal(rows(tmp_path))
        finally:
            d.close()
    d = Daemon(cfg)
    try:
        d.start()
        v = tablectl(cfg, "verify")
        assert v.returncode == 0, v.stdout
        f = Follower(pub, rep, table="it", last_seq=last)
        try:
            evs = f.until(lambda e: e.type == "daemon.started" and not e.data["clean"], 20.0)
            held += [e.canonical() for e in evs]
            held += [e.canonical() for e in f._catch_up(None, 10.0)]
        finally:
            f.close()
    finally:
        d.stop()
        d.close()
    events = rows(tmp_path)
    figures = check_journal(events)
    # the subscriber that followed the recipe through every crash holds each event once, as committed
    got = [json.loads(b) for b in held]
    assert [e["seq"] for e in got] == list(range(1, len(got) + 1))
    assert got == events[: len(got)]
    assert kills == runs
    starts = [e for e in events if e["type"] == "daemon.started"]
    assert len(starts) == kills + 1 and sum(not s["data"]["clean"] for s in starts) == kills
    print(f"\nkills survived: {kills}; {figures}")
    return figures


def test_nine_kills_lose_and_duplicate_nothing(tmp_path):
    """Three of each kind of kill, every run; the thirty below are ``make campaign``'s."""
    assert kills_lose_and_duplicate_nothing(tmp_path, 9)["results"] >= 9


@pytest.mark.campaign
def test_thirty_kills_lose_and_duplicate_nothing(tmp_path):
    assert kills_lose_and_duplicate_nothing(tmp_path, 32)["results"] >= 30


def test_journal_write_failure_holds_inputs_and_resumes(tmp_path):
    flag = tmp_path / "disk-full"
    cfg = write_config(tmp_path, sim="seed = 4\npace = 0.01\n")
    pub, rep = endpoints(cfg)
    d = Daemon(cfg, {"TABLED_FAULT_JOURNAL": str(flag)})
    try:
        d.start()
        f = Follower(pub, rep, table="it")
        f.until(lambda e: e.type == "card.dealt", 20)
        flag.touch()
        # heartbeats go on and say the journal is failing; no event is published meanwhile
        hb = None
        for x in f.events(timeout=5.0, heartbeats=True):
            if isinstance(x, dict) and not x["data"]["journal_ok"]:
                hb = x
                break
        assert hb is not None
        stuck = hb["data"]["last_seq"]
        st = json.loads(tablectl(cfg, "--json", "status").stdout)
        assert st["journal_ok"] is False and "no space left" in st["journal_error"]
        assert st["last_seq"] == stuck
        q = tablectl(cfg, "betting", "open")  # refused at once: nothing queued, nothing lost
        assert q.returncode == 1 and "nothing was queued" in q.stdout + q.stderr, q
        flag.unlink()
        evs = f.until(
            lambda e: e.type == "alarm.raised" and e.data["kind"] == "journal-failure", 20
        )
        assert all(e.seq > stuck for e in evs if e.seq > stuck)
        f.until(lambda e: e.type == "card.dealt", 20)  # the table goes on
        f.close()
    finally:
        d.stop()
        d.close()
    check_journal(rows(tmp_path))  # every card the shoe sent meanwhile is there, once, in order
    assert tablectl(cfg, "verify").returncode == 0


def test_alarms_latch_across_restarts(tmp_path):
    cfg = write_config(tmp_path, port=str(tmp_path / "absent"), sim="")
    text = (
        cfg.read_text()
        .replace("betting_seconds = 0.05\n", "")
        .replace("auto_new_shoe = true\n", "")
    )
    cfg.write_text(text)
    d = Daemon(cfg)
    try:
        d.start()
        assert tablectl(cfg, "shoe", "new").returncode == 0
        assert tablectl(cfg, "betting", "open").returncode == 0
        assert tablectl(cfg, "betting", "open").returncode == 1  # refused, nothing raised
        assert tablectl(cfg, "cut-card").returncode == 0
        assert tablectl(cfg, "cut-card").returncode == 0  # a second cut card: an alarm
        alarms = json.loads(tablectl(cfg, "--json", "status").stdout)["alarms"]
        assert [a["kind"] for a in alarms] == ["cut-card-unexpected"]
    finally:
        d.stop()
        d.close()
    d = Daemon(cfg)
    try:
        d.start()
        st = json.loads(tablectl(cfg, "--json", "status").stdout)
        assert [a["kind"] for a in st["alarms"]] == ["cut-card-unexpected"]
        aid = st["alarms"][0]["id"]
        assert tablectl(cfg, "alarm", "clear", aid, "--reason", "checked").returncode == 0
        assert json.loads(tablectl(cfg, "--json", "status").stdout)["alarms"] == []
    finally:
        d.stop()
        d.close()
