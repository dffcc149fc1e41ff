"""Dragon Tiger and Sic Bo end to end: the real daemon on a temp copy of config/dragon-tiger.toml
and config/sicbo.toml with fast timings, simulators on real ptys, and a plain pyzmq SUB
(through :class:`daemon.bus.subscriber.Follower`, which waits out the slow joiner) seeing the results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from daemon_harness import Daemon, endpoints, fast_copy, tablectl

from daemon.bus.subscriber import Follower
from daemon.ctl.control_client import ControlClient
from daemon.runtime.config import load


@pytest.fixture
def daemons():
    made: list[Daemon] = []

    def make(cfg: Path) -> Daemon:
        d = Daemon(cfg)
        made.append(d)
        d.start()
        return d

    yield make
    for d in made:
        d.close()


ORDER = "A23456789TJQK"  # seed 002: K high … A low


def test_dragon_tiger_results_reach_a_subscriber(tmp_path, daemons):
    cfg = fast_copy(
        "dragon-tiger.toml",
        tmp_path,
        {"betting_seconds": "0.05", "settle_seconds": "0.01"},
        "seed = 3\npace = 0.005\nerror_every = 2",
    )
    pub, rep = endpoints(cfg)
    d = daemons(cfg)
    f = Follower(pub, rep, table="dragon-tiger")
    try:
        results = []
        while len(results) < 4:
            evs = f.until(lambda e: e.type == "hand.result", 20.0)
            results.append(evs[-1].data)
    finally:
        f.close()
    for r in results:
        d_, t_ = ORDER.index(r["dragon"][0]), ORDER.index(r["tiger"][0])
        assert r["winner"] == ("dragon" if d_ > t_ else "tiger" if t_ > d_ else "tie")
        assert (r["dragon_rank"], r["tiger_rank"]) == (d_ + 1, t_ + 1)
    assert [r["hand"] for r in results] == sorted({r["hand"] for r in results})
    status = json.loads(tablectl(cfg, "--json", "status").stdout)
    assert status["game"] == "dragon-tiger" and status["state"]["cards"].keys() <= {
        "dragon",
        "tiger",
    }
    assert d.stop() == 0


def test_sicbo_reshake_malformed_and_results_reach_a_subscriber(tmp_path, daemons):
    # No croupier: the test opens and closes betting as a backend or a dealer's panel would.
    cfg = fast_copy(
        "sicbo.toml",
        tmp_path,
        {"betting_seconds": None, "settle_seconds": None},
        'seed = 3\npace = 0.05\nerrors = ["stacked", "malformed"]',
    )
    pub, rep = endpoints(cfg)
    d = daemons(cfg)
    f = Follower(pub, rep, table="sicbo")
    ctl = ControlClient(load(cfg).control_endpoint, timeout=20.0, actor="test-backend")
    try:
        f.until(lambda e: e.type == "device.reply" and e.data["command"] == "version", 10.0)
        rounds = []
        for n in (1, 2):
            ctl.call("betting.open")
            ctl.call("betting.close")
            evs = f.until(lambda e: e.type in ("dice.result", "round.void"), 20.0)
            rounds.append(evs)
            assert evs[-1].type == "dice.result" and evs[-1].data["round"] == n
    finally:
        ctl.close()
        f.close()
    first = [e.type for e in rounds[0]]
    # seed 002: the stacked dice are re-shaken in the same round; the malformed claim is an
    # alarm and a rejection, never a result; then the final throw is the round's one result.
    assert first.index("dice.reshake") < first.index("dice.rejected") < first.index("dice.result")
    assert first.count("dice.result") == 1 and "round.void" not in first
    alarm = next(e.data for e in rounds[0] if e.type == "alarm.raised")
    assert alarm["kind"] == "dice-result-invalid" and alarm["round"] == 1
    for evs in rounds:
        r = evs[-1].data
        assert len(r["faces"]) == 3 and r["total"] == sum(r["faces"])
        assert r["size"] == (None if r["triple"] else "small" if r["total"] <= 10 else "big")
    status = json.loads(tablectl(cfg, "--json", "status").stdout)
    assert status["game"] == "sicbo" and status["state"]["results"] == 2
    assert status["devices"][0]["identity"] == "TABLED DICE-SIM firmware 1.0 serial SIM-3"
    assert d.stop() == 0
