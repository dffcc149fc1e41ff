"""The hole card is secret until it is turned over (issue 13, acceptance 3).

The journal holds it (a secret part, beside the event's row) so the table rebuilds
exactly; a plain SUB, a replay request and the hash chain see only its
commitment until the reveal event carries the card and the salt.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from daemon_harness import Daemon, Subscriber, endpoints, free_port, replay

from daemon.bus.control import ControlError
from daemon.ctl.control_client import ControlClient
from daemon.journal import verify_chain
from daemon.journal.events import GENESIS, body_of, chain_hash


def _config(tmp: Path) -> Path:
    import tempfile

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
start_burn = "none"
decision_seconds = 600
insurance_seconds = 600

[[devices]]
name = "shoe"
driver = "shoe-line"
port = "sim"
[devices.options]
encoding = "rank-suit"
[devices.sim]
seed = 5
pace = 0.005

[bus]
publish = "tcp://127.0.0.1:{pub}"
replay = "tcp://127.0.0.1:{rep}"
heartbeat_interval = 0.2

[control]
# the test is the game server and the croupier through the main socket (its default is viewer)
role = "supervisor"

[log]
format = "json"
"""
    )
    return cfg


class Table:
    def __init__(self, cfg: Path) -> None:
        from daemon.runtime.config import load

        self.endpoint = load(cfg).control_endpoint
        pub, self.rep = endpoints(cfg)
        self.sub = Subscriber(pub)
        self.seen: list[dict[str, Any]] = []
        self.raw: list[bytes] = []

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        with ControlClient(self.endpoint, timeout=20.0, actor="game-server") as c:
            return c.call(cmd, **args)

    def until(self, pred: Any, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not self.sub.sock.poll(int(left * 1000)):
                break
            _topic, body = self.sub.sock.recv_multipart()
            ev = msgspec.json.decode(body)
            if ev["type"] == "heartbeat" or "seq" not in ev:
                continue
            self.raw.append(body)
            self.seen.append(ev)
            if pred(ev):
                return ev
        raise AssertionError(f"not seen in time; last: {[e['type'] for e in self.seen[-8:]]}")


def _chain(events: list[Any]) -> None:
    prev = events[0].prev
    for ev in events:
        f = msgspec.to_builtins(ev)
        assert f["prev"] == prev
        assert chain_hash(prev, body_of(f)) == f["hash"]
        prev = f["hash"]


def _to_decision(t: Table) -> int:
    """Deal rounds to box 1 until one waits for its decision with the hole card face down."""
    # the subscription is live once a heartbeat arrives (the slow joiner)
    assert t.sub.sock.poll(20_000), "no message: the subscription never came up"
    t.call("shoe.new")
    for _round in range(12):
        t.call("betting.open")
        t.call("betting.close", boxes="1")
        exp = t.until(
            lambda e: (
                e["type"] == "table.expects"
                and e["data"]["expects"] in ("decision", "insurance", "round-over")
            )
        )
        if exp["data"]["expects"] == "insurance":
            t.call("box.insurance", box="1", take="no")
            t.call("hole.check")
            exp = t.until(
                lambda e: (
                    e["type"] == "table.expects"
                    and e["data"]["expects"] in ("decision", "round-over")
                )
            )
        if exp["data"]["expects"] == "decision":
            break
        # a blackjack or a peeked dealer blackjack settled the round by itself: deal another
    else:
        pytest.fail("no round waited for a decision")
    return int(exp["data"]["hand"])


@pytest.fixture
def table(tmp_path: Path):
    cfg = _config(tmp_path)
    d = Daemon(cfg)
    d.start()
    t = Table(cfg)
    yield t, tmp_path, d
    t.sub.close()
    d.stop()
    d.close()


def test_sub_and_replay_never_see_the_hole_card_before_the_reveal_and_both_do_after(table) -> None:
    t, tmp, _ = table
    hand = _to_decision(t)
    holes = [
        e
        for e in t.seen
        if e["type"] == "card.dealt" and e["data"].get("hole") and e["data"]["hand"] == hand
    ]
    assert len(holes) == 1
    hole = holes[0]
    assert hole["data"]["card"] is None and "secret" not in hole["data"]
    assert len(hole["data"]["commitment"]) == 64

    # the truth is in the journal, beside the row
    db = sqlite3.connect(f"file:{tmp / 'state' / 'journal.sqlite'}?mode=ro", uri=True)
    (stored,) = db.execute("SELECT body FROM secrets WHERE seq = ?", (hole["seq"],)).fetchone()
    secret = msgspec.json.decode(stored)
    card, salt = secret["card"], secret["salt"]
    assert (
        hashlib.sha256(bytes.fromhex(salt) + card.encode()).hexdigest()
        == hole["data"]["commitment"]
    )

    # before the reveal: neither the SUB nor a replay request carries it
    before, end = replay(t.rep, 1)
    assert "end" in end
    _chain(before)
    for ev in before:
        assert "secret" not in ev.data
        assert not (ev.type == "dealer.hole_card" and ev.data["hand"] == hand)
        assert salt not in msgspec.json.encode(ev).decode()
    for raw in t.raw:
        assert salt.encode() not in raw and b'"secret"' not in raw
    replayed_hole = next(e for e in before if e.seq == hole["seq"])
    assert replayed_hole.data == hole["data"]

    # a trace cannot start now: its first line would be the state, which holds the card
    with pytest.raises(ControlError, match="secret"):
        t.call("trace", device="shoe", seconds=5)

    # the reveal: the SUB sees the card and salt, and so does a replay
    t.call("box.stand", box="1")
    rev = t.until(lambda e: e["type"] == "dealer.hole_card" and e["data"]["hand"] == hand)
    assert rev["data"]["card"] == card and rev["data"]["salt"] == salt
    assert rev["data"]["commitment"] == hole["data"]["commitment"]
    after, _ = replay(t.rep, 1)
    _chain(after)
    assert any(e.type == "dealer.hole_card" and e.data["card"] == card for e in after)
    assert after[0].prev == GENESIS
    assert verify_chain(db)[1] is None
    db.close()


def test_a_restart_rebuilds_the_hole_card_from_the_journal(table) -> None:
    """A clean restart keeps the round (only a crash voids it): the reveal shows the journaled card."""
    t, tmp, first = table
    hand = _to_decision(t)
    hole = next(
        e
        for e in t.seen
        if e["type"] == "card.dealt" and e["data"].get("hole") and e["data"]["hand"] == hand
    )
    cfg = tmp / "bj.toml"
    d = Daemon(cfg)
    # the fixture's daemon is stopped cleanly and a second one started on the same journal
    t.sub.close()
    assert first.stop() == 0
    d.start()
    try:
        t2 = Table(cfg)
        assert t2.sub.sock.poll(20_000), "no message: the subscription never came up"
        t2.call("box.stand", box="1")
        rev = t2.until(lambda e: e["type"] == "dealer.hole_card" and e["data"]["hand"] == hand)
        salt = rev["data"]["salt"]
        want = hashlib.sha256(bytes.fromhex(salt) + rev["data"]["card"].encode()).hexdigest()
        assert want == hole["data"]["commitment"]
        t2.sub.close()
        t.sub = Subscriber(endpoints(cfg)[0])
    finally:
        d.stop()
        d.close()


def test_the_trace_holds_its_records_while_a_card_is_secret_and_sends_them_in_order() -> None:
    from daemon.runtime.tracer import Tracer

    sent: list[bytes] = []
    tr = Tracer("bj", lambda topic, body: sent.append(body), lambda: 1.0, lambda: 0.0)
    secret = [False]
    tr.hold = lambda: secret[0]
    tr.lease("shoe", 30)
    tr.frame("shoe", "rx", b"9H\r\n", 1.0)
    secret[0] = True  # no more bets: a hole card is coming
    tr.frame("shoe", "rx", b"5D\r\n", 2.0)
    tr.command("box.stand", {"box": "1"}, "gs", "dealer", "control")
    tr.flush()
    assert len(sent) == 1  # still secret: held
    secret[0] = False  # the reveal
    tr.flush()
    recs = [msgspec.json.decode(b) for b in sent]
    assert [r.get("hex") or r.get("name") for r in recs] == [
        b"9H\r\n".hex(),
        b"5D\r\n".hex(),
        "box.stand",
    ]


def test_a_card_is_secret_from_no_more_bets_to_the_reveal() -> None:
    from table_harness import ShoeHarness

    from daemon.games.blackjack.table import BlackjackRules, BlackjackTable

    h = ShoeHarness(BlackjackTable, BlackjackRules, start_burn="none")
    game = h.table.game
    h.new_shoe()
    h.cmd("betting.open")
    assert not game.secret_in_play(h.g)
    h.cmd("betting.close", boxes="1")
    assert game.secret_in_play(h.g)
    h.cards("TS", "6C", "7S", "9D")
    assert game.secret_in_play(h.g)
    assert "9D" not in str(game.summary(h.g))  # tablectl status never shows it
    h.cmd("box.stand", box=1)
    assert not game.secret_in_play(h.g)
    assert game.summary(h.g)["round"]["dealer"]["hole"] == "9D"
