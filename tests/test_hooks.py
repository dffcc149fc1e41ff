"""Alarm hooks (NOTIFYCMD-like): the event as JSON on stdin, bounded in time, never in the way.

The hook here is a small script that sends what it got (stdin and its TABLED_*
environment) to a datagram socket the test listens on, so the test waits on a
socket, never on the clock.
"""

from __future__ import annotations

import json
import socket
import sys
import tempfile
from pathlib import Path

import pytest
from daemon_harness import Daemon, tablectl, write_config

from daemon.journal.events import Event
from daemon.runtime.hooks import Hooks

HOOK = """
import json, os, socket, sys
body = sys.stdin.read()
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
msg = {"stdin": body, "event": os.environ["TABLED_EVENT"], "table": os.environ["TABLED_TABLE"]}
s.sendto(json.dumps(msg).encode(), sys.argv[1])
if len(sys.argv) > 2:
    import time
    time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def inbox():
    d = Path(tempfile.mkdtemp(prefix="th-", dir="/tmp"))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(str(d / "in"))
    s.settimeout(30)
    (d / "hook.py").write_text(HOOK)
    yield s, d
    s.close()


def _recv(s: socket.socket) -> dict:
    return json.loads(s.recv(65536))


def _config(tmp_path, command: list[str], timeout: float = 5.0):
    cfg = write_config(
        tmp_path,
        sim='seed = 3\npace = 0.005\nerrors = ["unreadable"]\n',
        extra=f"\n[hooks]\ncommand = {json.dumps(command)}\ntimeout = {timeout}\n",
    )
    cfg.write_text(
        cfg.read_text().replace(
            'encoding = "rank-suit"', 'encoding = "rank-suit"\nread_error_code = "ERR"'
        )
    )
    return cfg


def test_an_alarm_runs_the_hook_with_the_event_on_stdin(tmp_path, inbox):
    s, d = inbox
    cfg = _config(tmp_path, [sys.executable, str(d / "hook.py"), str(d / "in")])
    daemon = Daemon(cfg)
    try:
        daemon.start()
        got = _recv(s)  # the unreadable first card: a latched alarm
        assert (got["event"], got["table"]) == ("alarm.raised", "it")
        ev = json.loads(got["stdin"])
        assert ev["type"] == "alarm.raised" and ev["data"]["kind"] == "card-unreadable"
        assert ev["seq"] >= 1 and ev["table"] == "it"
        r = tablectl(cfg, "--actor", "pit", "card", "KD")  # the supervisor enters the card
        assert r.returncode == 0, r.stderr
        cleared = json.loads(_recv(s)["stdin"])
        assert cleared["type"] == "alarm.cleared" and cleared["data"]["id"] == ev["data"]["id"]
        st = json.loads(tablectl(cfg, "--json", "status").stdout)
        assert st["hooks"]["run"] >= 2 and st["hooks"]["failed"] == 0
        assert daemon.stop() == 0
    finally:
        daemon.close()


def test_a_hung_hook_is_killed_and_never_holds_the_table(tmp_path, inbox):
    s, d = inbox
    cfg = _config(tmp_path, [sys.executable, str(d / "hook.py"), str(d / "in"), "600"], 0.5)
    daemon = Daemon(cfg)
    try:
        daemon.start()
        assert _recv(s)["event"] == "alarm.raised"  # the hook now sleeps for ten minutes
        # the table answers and commits while the hook hangs
        r = tablectl(cfg, "--actor", "pit", "card", "KD")
        assert r.returncode == 0, r.stderr
        # the next event's hook runs only after the hung one was killed (one at a time)
        assert _recv(s)["event"] == "alarm.cleared"
        st = json.loads(tablectl(cfg, "--json", "status").stdout)
        assert st["hooks"]["timed_out"] >= 1
        assert daemon.stop() == 0
    finally:
        daemon.close()


def _ev(seq: int, type_: str, **data) -> Event:
    return Event(
        v=1, table="t", seq=seq, type=type_, time="", mono=None, data=data, prev="", hash=""
    )


async def test_device_back_only_after_lost_and_a_full_queue_drops_counting():
    h = Hooks("t", ["true"], 1.0, queue=2)
    h.on_events([_ev(1, "device.connected", device="shoe")])  # first connect: no hook
    assert h.status()["queued"] == 0
    h.on_events([_ev(2, "device.disconnected", device="shoe"), _ev(3, "card.dealt")])
    h.on_events([_ev(4, "device.connected", device="shoe")])  # back after the loss
    assert h.status()["queued"] == 2
    h.on_journal(False, "disk full")  # the queue is full: dropped, counted
    assert h.status()["dropped"] == 1
