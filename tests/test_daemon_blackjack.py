"""Blackjack end to end (issue 13, acceptance 5): `config/blackjack.toml` plays by itself.

The real daemon on a temp copy of the config with fast timings: the shoe
simulator on a real pty deals what the table expects, the virtual players
bet and decide (now and then too late, so the decision clock stands the
box), and a plain subscriber sees rounds settled by the rules; `tablectl
status` shows the round without the hole card and `tablectl monitor` the
boxes, the dealer and what the table expects next.
"""

from __future__ import annotations

import json
import re
import sys

from daemon_harness import ROOT, endpoints, fast_copy, tablectl
from test_daemon_dragon_tiger_sicbo import daemons  # noqa: F401
from tmux_pane import Pane

from daemon.bus.subscriber import Follower
from daemon.games.blackjack import rules as r

#: a monitor line of the round: the dealer's or a box's
BOX_LINE = r"^ (dealer|[1-7]) "


def test_config_blackjack_plays_by_itself(tmp_path, daemons):  # noqa: F811
    cfg = fast_copy(
        "blackjack.toml",
        tmp_path,
        {"settle_seconds": "0.03", "decision_seconds": "0.3", "insurance_seconds": "0.2"},
        "seed = 3\npace = 0.002\nerror_every = 2",
    )
    pub, rep = endpoints(cfg)
    daemons(cfg)
    f = Follower(pub, rep, table="bj1")
    seen = []
    try:
        while sum(1 for e in seen if e.type == "hand.result") < 8:
            seen += f.until(lambda e: e.type == "hand.result", 30.0)
        status = json.loads(tablectl(cfg, "--json", "status").stdout)
        # a screen of a round in play (between rounds it shows no box and no dealer line)
        screen = monitor_screen(cfg, lambda s: "next:" in s and re.search(BOX_LINE, s, re.M))
    finally:
        f.close()
    types = {e.type for e in seen}
    assert {"table.expects", "box.decision", "dealer.hole_card", "betting.closed"} <= types
    for e in seen:
        if e.type == "card.dealt" and e.data.get("hole"):
            assert e.data["card"] is None and "secret" not in e.data
        if e.type != "hand.result":
            continue
        dealer = e.data["dealer"]["cards"]
        assert r.total(dealer).total >= 17 or r.total(dealer).bust or e.data["dealer"]["drew"] == 0
        for b in e.data["boxes"]:
            for h in b["hands"]:
                want = r.settle_hand(
                    h["cards"], dealer, split=b["split"], doubled=h["bet"] == 2
                ).to_data()
                assert (h["outcome"], h["net"]) == (want["outcome"], want["net"])
    g = status["state"]
    assert g["phase"] != "dealing" or (g["round"] is not None and g["expects"] is not None)
    assert (
        "hole" not in json.dumps(g)
        or g["round"]["dealer"]["hole"] in (None, "hidden")
        or (g["round"]["step"] in ("dealer", "over"))
    )
    lines = screen.splitlines()
    assert len(lines) <= 24 and all(len(x) <= 80 for x in lines)
    assert re.search(BOX_LINE, screen, re.M), screen


def monitor_screen(cfg, pred, timeout: float = 20.0) -> str:
    """`tablectl monitor` in an 80×24 tmux pane, until its screen matches ``pred``."""
    cmd = f"{sys.executable} -m daemon.ctl.cli --config {cfg} monitor --seconds 30"
    with Pane(cmd, ROOT) as pane:
        return pane.wait_for(pred, timeout)


def test_tablectl_plays_a_round_and_a_refusal_says_why(tmp_path, daemons):  # noqa: F811
    """The game server's commands as `tablectl` spells them, against the real daemon."""
    cfg = fast_copy(
        "blackjack.toml",
        tmp_path,
        {"virtual_players": None, "auto_new_shoe": None, "decision_seconds": "60"},
        "seed = 5\npace = 0.002\nerror_every = 0",
    )
    pub, rep = endpoints(cfg)
    daemons(cfg)
    f = Follower(pub, rep, table="bj1")
    try:
        assert tablectl(cfg, "shoe", "new").returncode == 0
        f.until(lambda e: e.type == "shoe.burn", 10.0)
        assert tablectl(cfg, "betting", "open").returncode == 0
        bad = tablectl(cfg, "betting", "close")
        assert bad.returncode == 1 and "needs the boxes that bet" in bad.stderr
        ok = tablectl(cfg, "betting", "close", "--boxes", "2,5")
        assert ok.returncode == 0, ok.stderr
        f.until(
            lambda e: (
                e.type == "table.expects"
                and e.data["expects"] in ("decision", "insurance", "round-over")
            ),
            10.0,
        )
        st = json.loads(tablectl(cfg, "--json", "status").stdout)["state"]
        exp = st["expects"]
        if exp["expects"] == "decision":
            wrong = 5 if exp["box"] == 2 else 2
            r = tablectl(cfg, "box", "hit", str(wrong))
            assert r.returncode == 1 and f"box {exp['box']}'s turn" in r.stderr, r.stderr
            r = tablectl(cfg, "box", "stand", str(exp["box"]))
            assert r.returncode == 0, r.stderr
            text = tablectl(cfg, "status").stdout
            assert "next:" in text
        elif exp["expects"] == "insurance":
            assert tablectl(cfg, "box", "insurance", "2", "no").returncode == 0
            r = tablectl(cfg, "box", "insurance", "2", "yes")
            assert r.returncode == 1 and "already declined" in r.stderr
    finally:
        f.close()
