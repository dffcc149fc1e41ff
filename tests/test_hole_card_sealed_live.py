"""The five side paths of issue 28 item 1 on a running daemon, its shoe a real pty played by hand.

A plain SUB (as a backend writes one), a replay request, ``tablectl status`` (the control
socket's answer), the metrics endpoint and the daemon's console log (its JSON lines) are
read while each round's hole card is face down: none holds its code. Each round's hole
card has a code no other card of the shoe has; the reveal shows it and opens every seal.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import tty
import urllib.request
from pathlib import Path
from typing import Any

import msgspec
from daemon_harness import Daemon, Subscriber, endpoints, free_port, replay

from daemon.ctl.control_client import ControlClient

GARBAGE = b"\x01\x02\r\n" * 7


def _config(tmp: Path, link: Path) -> Path:
    pub, rep = free_port(), free_port()
    run = Path(tempfile.mkdtemp(prefix="tb-", dir="/tmp"))
    cfg = tmp / "bj.toml"
    cfg.write_text(
        f"""
[table]
id = "bj"
game = "blackjack"
state_dir = "{tmp / "state"}"
runtime_dir = "{run}"

[game]
decks = 6
start_burn = "fixed:6"
decision_seconds = 600
insurance_seconds = 600

[[devices]]
name = "shoe"
driver = "shoe-line"
port = "{link}"
[devices.options]
encoding = "rank-suit"
repeat_window = 0

[bus]
publish = "tcp://127.0.0.1:{pub}"
replay = "tcp://127.0.0.1:{rep}"
heartbeat_interval = 0.2

[control]
role = "supervisor"

[metrics]
port = 0

[log]
format = "json"
"""
    )
    return cfg


class Live:
    def __init__(self, tmp: Path) -> None:
        self.master, slave = os.openpty()
        tty.setraw(slave)
        link = tmp / "shoe-by-id"
        link.symlink_to(os.ttyname(slave))
        os.close(slave)
        self.cfg = _config(tmp, link)
        from daemon.runtime.config import load

        self.endpoint = load(self.cfg).control_endpoint
        self.pub, self.rep = endpoints(self.cfg)
        self.daemon = Daemon(self.cfg)
        self.daemon.start()
        self.sub = Subscriber(self.pub)
        self.seen: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self.opened_at = 0  # the seq of the last secret.opened
        # the slow joiner: live once a message (a heartbeat) arrives
        assert self.sub.sock.poll(20_000), "no message: the subscription never came up"

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        with ControlClient(self.endpoint, timeout=20.0, actor="t") as c:
            return c.call(cmd, **args)

    def send(self, *codes: str | bytes) -> None:
        for c in codes:
            os.write(self.master, c if isinstance(c, bytes) else c.encode() + b"\r\n")
            time.sleep(0.05)  # a dealer's pace: each line its own read

    def until(self, pred: Any, timeout: float = 15.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not self.sub.sock.poll(int(left * 1000)):
                break
            _topic, body = self.sub.sock.recv_multipart()
            ev = msgspec.json.decode(body)
            if "seq" not in ev:
                continue
            self.raw.append(body)
            self.seen.append(ev)
            if pred(ev):
                return ev
        raise AssertionError(f"not seen in time; last: {[e['type'] for e in self.seen[-8:]]}")

    def metrics(self) -> str:
        for line in self.daemon.log.read_text().splitlines():
            obj = json.loads(line)
            if obj.get("event") == "metrics":
                return urllib.request.urlopen(obj["url"], timeout=10).read().decode()
        raise AssertionError("no metrics endpoint in the log")

    def hidden(self, hole: str, since: tuple[int, int]) -> None:
        """Nothing since ``since`` (events seen, log bytes) shows ``hole``."""
        n, at = since
        code = hole.encode()
        for raw in self.raw[n:]:
            assert code not in raw, raw
        first = next(e["seq"] for e in self.seen[n:])
        events, end = replay(self.rep, first)
        assert "end" in end
        for ev in events:
            assert hole not in msgspec.json.encode(ev).decode(), ev
        assert code not in msgspec.json.encode(self.call("status"))
        assert hole not in self.metrics()
        log = self.daemon.log.read_bytes()[at:]
        assert code not in log, log.decode()[-2000:]

    def mark(self) -> tuple[int, int]:
        return len(self.raw), self.daemon.log.stat().st_size

    def round(self) -> tuple[int, int]:
        self.call("betting.open")
        self.call("betting.close", boxes="1")
        self.until(lambda e: e["type"] == "betting.closed")
        return self.mark()

    def reveal(self, hole: str) -> None:
        self.call("box.stand", box="1")
        rev = self.until(lambda e: e["type"] == "dealer.hole_card")
        assert rev["data"]["card"] == hole
        opened = self.until(lambda e: e["type"] == "secret.opened")
        sealed = {
            e["data"]["sealed"]
            for e in self.seen
            if "sealed" in e["data"] and self.opened_at < e["seq"] < rev["seq"]
        }
        self.opened_at = opened["seq"]
        assert sealed and sealed <= {o["sealed"] for o in opened["data"]["opened"]}
        assert any(e["type"] == "hand.result" for e in self.seen if e["seq"] > rev["seq"])

    def close(self) -> None:
        self.sub.close()
        self.daemon.stop()
        self.daemon.close()
        os.close(self.master)


def test_the_five_side_paths_on_a_running_daemon(tmp_path: Path) -> None:
    t = Live(tmp_path)
    try:
        t.call("shoe.new")
        t.send(*["KS"] * 6)  # the start burn: six of the six KS a six-deck shoe has
        t.until(lambda e: e["type"] == "shoe.burn")

        # 1. read while the table waits for an unreadable card before it: card.held
        since = t.round()
        t.send("5C", "9H", "ZZ", "QD")
        t.until(lambda e: e["type"] == "card.held")
        t.hidden("QD", since)
        t.call("card.enter", card="7S")
        t.until(lambda e: e["type"] == "card.dealt" and e["data"].get("hole"))
        t.hidden("QD", since)
        t.reveal("QD")

        # 2. the hole card unreadable, entered by a supervisor: the command and the resume
        since = t.round()
        t.send("5C", "9H", "7S", "ZZ")
        t.until(lambda e: e["type"] == "table.paused")
        t.call("card.enter", card="KD")
        t.until(lambda e: e["type"] == "table.resumed")
        t.hidden("KD", since)
        t.reveal("KD")

        # 3. the hole card beyond the shoe's inventory: the alarm and the pause
        since = t.round()
        t.send("5C", "9H", "7S", "KS")
        t.until(lambda e: e["type"] == "table.paused")
        t.hidden("KS", since)
        t.call("card.accept")
        t.until(lambda e: e["type"] == "card.dealt" and e["data"].get("hole"))
        t.hidden("KS", since)
        t.reveal("KS")

        # 5. read cleanly, then line noise: the alarm's recent frames and the log line
        since = t.round()
        t.send("5C", "9H", "7S", "TD")
        t.until(lambda e: e["type"] == "card.dealt" and e["data"].get("hole"))
        t.send(GARBAGE)
        t.until(lambda e: e["type"] == "alarm.raised" and e["data"]["kind"] == "line-noise")
        t.hidden("TD", since)
        t.reveal("TD")

        # 4. read while the line-noise alarm is up: the card-suspect alarm
        since = t.round()
        for code in ("5C", "9H", "7S", "JD"):
            t.send(code)
            t.until(lambda e: e["type"] == "table.paused")
            if code == "JD":
                t.hidden("JD", since)
            t.call("card.accept")
            t.until(lambda e: e["type"] == "table.resumed")
        t.hidden("JD", since)
        t.reveal("JD")
    finally:
        t.close()


def test_a_crash_with_a_sealed_card_held_voids_the_round_and_opens_every_seal(
    tmp_path: Path,
) -> None:
    """SIGKILL while the hole card waits sealed behind an unreadable card: the start checks
    the sealed rows it rebuilds from, the restart's void opens them (``secret.opened``), and
    ``tablectl verify`` opens every secret row of the file."""
    from daemon_harness import tablectl

    t = Live(tmp_path)
    try:
        t.call("shoe.new")
        t.send(*["KS"] * 6)
        t.until(lambda e: e["type"] == "shoe.burn")
        since = t.round()
        t.send("5C", "9H", "ZZ", "QD")
        held = t.until(lambda e: e["type"] == "card.held")
        t.hidden("QD", since)
        t.sub.close()
        t.daemon.kill()
        t.daemon.start()
        t.sub = Subscriber(t.pub)
        assert t.sub.sock.poll(20_000), "no message: the subscription never came up"
        events, _ = replay(t.rep, held["seq"])
        void = next(e for e in events if e.type == "hand.void")
        assert void.data["reason"] == "system-failure"
        opened = next(e for e in events if e.type == "secret.opened")
        got = {o["sealed"]: o["data"] for o in opened.data["opened"]}
        assert got[held["data"]["sealed"]]["card"] == "QD"
        assert all(b"QD" not in msgspec.json.encode(e) for e in events if e.seq < void.seq)
    finally:
        t.close()
    out = tablectl(t.cfg, "verify")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "secret row(s) open their commitments" in out.stdout


def test_a_sealed_card_entry_retried_by_id_is_answered_as_committed(tmp_path: Path) -> None:
    """A supervisor's ``card.enter`` for an unreadable hole card is journaled with its args
    sealed; its request id must still be answered as committed when retried, before and
    after a restart (issue 28 items 1 and 8 together: the index read the masked args and
    took the retry for a different request under a used id)."""
    from command_harness import Raw, cmd

    t = Live(tmp_path)
    try:
        t.call("shoe.new")
        t.send(*["KS"] * 6)
        t.until(lambda e: e["type"] == "shoe.burn")
        t.round()
        t.send("5C", "9H", "7S", "ZZ")
        t.until(lambda e: e["type"] == "table.paused")
        sup = Raw(t.endpoint)
        try:
            first = sup.call(cmd("card.enter", "hole-1", card="KD"))
            assert first["ok"], first
            seq = first["result"]["seq"]
            again = sup.call(cmd("card.enter", "hole-1", card="KD"))
            assert again["ok"] and again["result"]["seq"] == seq, again
            other = sup.call(cmd("card.enter", "hole-1", card="QD"))
            assert not other["ok"] and "already used" in other["error"], other
        finally:
            sup.close()
        t.sub.close()
        t.daemon.stop()
        t.daemon.close()
        t.daemon = Daemon(t.cfg)
        t.daemon.start()
        t.sub = Subscriber(t.pub)
        sup = Raw(t.endpoint)
        try:
            after = sup.call(cmd("card.enter", "hole-1", card="KD"))
            assert after["ok"] and after["result"]["seq"] == seq, after
            assert after["result"]["replayed"], after
        finally:
            sup.close()
    finally:
        t.close()
