"""Mahjong Pai Gow end to end: the real daemon on a temp copy of config/paigow.toml with fast
timings, the tile reader and the dice shaker simulated on real ptys, a plain pyzmq SUB
(through :class:`daemon.bus.subscriber.Follower`) seeing the results, and tablectl reading them."""

from __future__ import annotations

import io
import json

from daemon_harness import Daemon, endpoints, fast_copy, tablectl
from independent_paigow import SEATS, deal, first_seat, outcome
from rich.console import Console

from daemon.bus.subscriber import Follower
from daemon.games.paigow.table import PaiGowTable
from daemon.pipeline.capture import load
from daemon.pipeline.replay import replay
from daemon.tools.monitor import Model, render


def test_paigow_plays_by_itself_and_tablectl_shows_the_rounds(tmp_path):
    cfg = fast_copy(
        "paigow.toml",
        tmp_path,
        # a reader that never repeats: tiles come faster than the repeat window here
        {"betting_seconds": "0.05", "settle_seconds": "0.01", "drop_repeats": "false"},
        "seed = 3\npace = 0.01",
    )
    pub, rep = endpoints(cfg)
    d = Daemon(cfg)
    d.start()
    f = Follower(pub, rep, table="paigow")
    try:
        results = []
        while len(results) < 3:
            evs = f.until(lambda e: e.type in ("round.result", "round.void"), 20.0)
            if evs[-1].type == "round.result":
                results.append(evs[-1].data)
        for r in results:
            hands = deal(first_seat(r["dice"]), r["tiles"])
            rows = {p["position"]: p for p in r["positions"]}
            assert {s: rows[s]["result"] for s in SEATS[1:]} == outcome(hands)
        status = json.loads(tablectl(cfg, "--json", "status").stdout)
        assert status["game"] == "paigow" and status["state"]["results"] >= 3
        assert {x["name"] for x in status["devices"]} == {"tiles", "shaker"}
        recall = tablectl(cfg, "recall", "--last", "2")
        assert recall.returncode == 0, recall.stderr
        assert recall.stdout.count("dice ") >= 2 and "tile 12 " in recall.stdout
        # the game's commands as tablectl spells them reach the game, which says why not now
        # (the croupier runs: in the moment between no more bets and the shaker's throw the
        # entry is taken; at any other moment it is refused, saying why)
        dice = tablectl(cfg, "dice", "3", "5", "6")
        assert (dice.returncode == 0 and "round.dice" in dice.stdout) or (
            dice.returncode == 1 and "the dice are entered after no more bets" in dice.stderr
        ), (dice.stdout, dice.stderr)
        tile = tablectl(cfg, "tile", "9p")
        assert tile.returncode == 1 and "no tile is waiting for manual entry" in tile.stderr
        one = tablectl(cfg, "recall", "--hand", str(results[0]["round"]))
        assert f"round {results[0]['round']}: dice" in one.stdout
    finally:
        f.close()
    assert d.stop() == 0
    d.close()


def test_monitor_shows_the_positions_and_the_last_round():
    from daemon_harness import ROOT

    r = replay([load(ROOT / "tests" / "captures" / "tile-line" / "procedures.log")])
    m = Model("cap", PaiGowTable.describe)
    last = next(i for i, e in enumerate(r.events) if e.type == "round.result")
    for ev in r.events[: last + 1]:
        m.event(ev, 0.0)
    out = io.StringIO()
    Console(file=out, width=80, height=24, color_system=None).print(render(m, 0.0))
    text = out.getvalue()
    res = r.events[last].data
    assert m.last_result.startswith(f"round {res['round']}: dice {res['total']}")
    for p in res["positions"]:
        a, b = p["tiles"]
        assert f" {p['position']:<7} {a} {b}" in text or f" {p['position']:<7} {b} {a}" in text
    assert f" round {res['round']}  result" in text
