"""The bridge's health is true when it is behind (issue 31): heartbeats are read apart
from the events, so the lag reads above zero and grows while nothing can be stored, the
tables stay up, and each change of a table's state is one log line at its priority.

A real nats-server, stopped with SIGSTOP (a hung JetStream: publishes time out), fake
tables dealing ten cards a second each, ``tabled-bridge`` as installed.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request

import pytest

from bench.floor.harness import BIN, Floor, run, verify
from bench.floor.natsd import available

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


def _status(f: Floor, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "tabled-bridge"), "--config", str(f.bridge_config), "status", *extra],
        capture_output=True,
        text=True,
        timeout=30,
    )


def _tables(f: Floor) -> dict:
    r = _status(f, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)["tables"]


def _health(f: Floor) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{f.metrics_port}/health", timeout=30) as r:
        return json.loads(r.read())


def _log(f: Floor) -> list[dict]:
    out = []
    for ln in (f.folder / "bridge.log").read_text().splitlines():
        if ln.startswith("{"):
            out.append(json.loads(ln))
    return out


def test_lag_reads_above_zero_and_grows_while_jetstream_hangs(tmp_path):
    f = Floor(
        tmp_path / "floor",
        real=0,
        fake=3,
        interval=0.1,
        bridge_lines=["behind_after = 2.0"],
    )
    try:
        f.start()
        assert f.nats is not None and f.nats.proc is not None
        f.start_bridge()
        run(verify(f.nats.url, f.heads(), timeout=60))
        f.nats.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(4)
            first = _tables(f)
            time.sleep(3)
            second = _tables(f)
            text = _status(f)
            glance = _health(f)  # the judge's last finding: after `first`, within 1 s
        finally:
            f.nats.proc.send_signal(signal.SIGCONT)
        for tid in f.fake_endpoints:
            a, b = first[tid], second[tid]
            assert a["up"] and b["up"], (a, b)  # heartbeats still read: not "down"
            assert 0 < a["lag_events"] < b["lag_events"], (a, b)
            assert 0 < a["lag_seconds"] < b["lag_seconds"], (a, b)
            assert b["state"] == "behind", b
        assert "recent changes" in text.stdout and "table behind" in text.stdout, text.stdout
        # /health says the same at a glance: every table up, behind, the largest lag
        assert (glance["tables"], glance["up"], glance["behind"]) == (3, 3, 3), glance
        assert glance["lag_events_max"] >= max(first[t]["lag_events"] for t in first), glance
        assert glance["lag_seconds_max"] > 0 and glance["nats"] == "connected", glance
        lines = _log(f)
        behind = [ln for ln in lines if ln.get("event") == "table behind"]
        assert {ln["table"] for ln in behind} == set(f.fake_endpoints), behind
        assert all(ln["level"] == "warning" and ln["priority"] == 4 for ln in behind)
        failing = [ln for ln in lines if ln.get("event", "").startswith("publish failing")]
        assert failing and all(ln["level"] == "warning" for ln in failing)
        # once JetStream answers again: everything stored, lag back to 0, said once
        run(verify(f.nats.url, f.heads(), timeout=60))
        deadline = time.monotonic() + 20
        while True:
            st = _tables(f)
            if all(st[t]["state"] == "following" for t in f.fake_endpoints):
                break
            assert time.monotonic() < deadline, st
            time.sleep(0.5)
        assert all(st[t]["lag_seconds"] < 2 for t in f.fake_endpoints), st
        lines = _log(f)
        assert sum(ln.get("event") == "table caught up" for ln in lines) == 3
        assert sum(ln.get("event") == "table behind" for ln in lines) == 3
        assert any(ln.get("event") == "publish stored again" for ln in lines)
    finally:
        f.close()


def test_the_lag_is_the_unstored_events_and_the_age_of_the_oldest():
    from bridge.health import Health

    h = Health("t1")
    assert h.lag("j", 0, 0.0) == (None, 0.0)  # no heartbeat yet: unknown, not 0
    h.on_heartbeat({"last_seq": 10, "journal_id": "j"}, 100.0)
    h.on_heartbeat({"last_seq": 10, "journal_id": "j"}, 101.0)
    h.on_heartbeat({"last_seq": 25, "journal_id": "j"}, 102.0)
    assert h.lag("j", 4, 105.0) == (21, 5.0)  # seq 5 was first named at 100.0
    assert h.lag("j", 10, 105.0) == (15, 3.0)  # seq 11 first named at 102.0
    assert h.lag("j", 25, 105.0) == (0, 0.0)
    # another journal: everything in it is unstored, its age from its first heartbeat
    h.on_heartbeat({"last_seq": 3, "journal_id": "k"}, 106.0)
    assert h.lag("j", 25, 108.0) == (3, 2.0)


def test_each_change_of_state_is_logged_once():
    from bridge.health import Health, judge

    h = Health("t1")
    kw = {"behind_after": 5.0, "stale_after": 3.0, "running": 60.0}
    h.on_heartbeat({"last_seq": 1, "journal_id": "j"}, 0.0)
    states = [
        judge(h, task_state="following", up=True, lag_events=0, lag_seconds=0.0, **kw),
        judge(h, task_state="following", up=True, lag_events=9, lag_seconds=6.0, **kw),
        judge(h, task_state="following", up=True, lag_events=12, lag_seconds=7.0, **kw),
        judge(h, task_state="following", up=False, lag_events=12, lag_seconds=9.0, **kw),
        judge(h, task_state="following", up=True, lag_events=0, lag_seconds=0.0, **kw),
    ]
    assert states == ["following", "behind", "behind", "down", "following"]
    assert [text.split(":")[0] for _t, _lvl, text in h.changes] == [
        "table up",
        "table behind",
        "table down",
        "table up",
    ]
    assert [lvl for _t, lvl, _text in h.changes] == ["info", "warning", "warning", "info"]


def test_the_judges_shortcut_agrees_with_the_judge_for_every_table_it_skips():
    """``calm`` lets the once-a-second judge skip a table with nothing to say (issue 31: the
    judge over every table each second); wherever it answers yes, the full judge says
    following, up, no lag, and logs nothing."""
    import itertools
    from types import SimpleNamespace

    from bridge.health import Health, assess, calm, judge_all
    from bridge.store import Head

    b = SimpleNamespace(stale_after=3.0, behind_after=5.0)
    skipped = judged = 0
    for reported, state, beat_at, beat, head in itertools.product(
        ["up", "behind", "down", "starting"],
        ["following", "waiting", "retrying", "chain-broken"],
        [None, 98.0, 90.0],
        [(None, 0), ("j", 0), ("j", 5), ("k", 5), ("j", 7)],
        [Head(None, 0, "", 0), Head("j", 5, "h", 40), Head("k", 5, "h", 40)],
    ):
        h = Health("t")
        if beat_at is not None:
            h.on_heartbeat({"last_seq": beat[1], "journal_id": beat[0]}, beat_at)
        h.reported = reported
        if calm(h, state, head, 100.0, b.stale_after):
            skipped += 1
            before = list(h.changes)
            assert assess(h, state, head, b, 100.0, 60.0) == ("following", True, 0, 0.0)
            assert list(h.changes) == before
        else:
            judged += 1
    assert skipped and judged
    link = SimpleNamespace(health=Health("t"), state="following", head=Head("j", 5, "h", 40))
    link.health.on_heartbeat({"last_seq": 5, "journal_id": "j"}, 99.0)
    assert judge_all([link], b, 100.0, 60.0)[:4] == (1, 0, 0, 0.0)  # up, logged up once
    assert calm(link.health, link.state, link.head, 100.0, b.stale_after)
    assert judge_all([link], b, 103.5, 60.0)[:2] == (0, 0)  # stale: judged, logged down
    assert link.health.reported == "down"
