"""The Dragon Tiger table: baccarat's shoe procedures, reused, with one card to each side.

Pure decide/apply through the real :class:`~daemon.table.Table`, like
``test_shoe_procedures.py``; a few cases per procedure prove the reuse, and
the captures in ``tests/captures/dragon-tiger/`` are checked against an
independent reading of seed 002.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from table_harness import ShoeHarness, of, types

from daemon.games import find as game_class
from daemon.games.dragon_tiger.rules import DragonTigerResult, result
from daemon.games.dragon_tiger.table import DragonTigerTable
from daemon.procedures.shoe import ShoeGame, ShoeRules
from daemon.table import DeviceReading
from drivers.readings import CardUnreadable, CutCardOut


class Harness(ShoeHarness):
    def __init__(self, **rules: Any) -> None:
        super().__init__(DragonTigerTable, ShoeRules, **rules)


def started(**rules: Any) -> Harness:
    h = Harness(**({"start_burn": "none"} | rules))
    h.cmd("shoe.new")
    return h


# -- the game is the shoe game ------------------------------------------------------------


def test_registered_and_every_procedure_is_the_shoe_games():
    assert game_class("dragon-tiger") is DragonTigerTable
    assert issubclass(DragonTigerTable, ShoeGame)
    own = {k for k in vars(DragonTigerTable) if not k.startswith("__")}
    # nothing copied or overridden: its own name, rules, hands, reading and event types
    assert own == {"name", "Rules", "hand_rules", "describe", "events"}
    assert DragonTigerTable.commands is ShoeGame.commands


# -- hands and results ------------------------------------------------------------------------


def test_one_card_each_dragon_first_and_the_result_carries_every_fact():
    """seed 002, 龙虎: a card to Dragon, then one to Tiger; K high … A low."""
    h = started()
    evs = h.hand("KH", "7C")
    assert [(d["box"], d["position"]) for d in of(evs, "card.dealt")] == [
        ("dragon", 1),
        ("tiger", 2),
    ]
    res = of(evs, "hand.result")[0]
    fields = {f.name for f in dataclasses.fields(DragonTigerResult)}
    assert set(res) == fields | {"shoe", "hand", "demo", "roads", "paytable"}
    assert res.pop("paytable") == "standard"  # seed 002, the one shipped Dragon Tiger paytable
    # the table publishes the rules' own verdict (hand-checked in test_dragon_tiger_rules.py)
    roads = res.pop("roads")
    assert res == result("KH", "7C").to_data() | {"shoe": 1, "hand": 1, "demo": False}
    assert roads["bead_plate"] == [0, 0, "dragon"] and roads["big_road"] == [0, 0, "dragon", 0]
    assert json.loads(json.dumps(res)) == res
    assert h.g.phase == "settling"


@pytest.mark.parametrize(
    ("dragon", "tiger", "winner", "suited"),
    [
        ("AS", "2H", "tiger", False),  # A is the lowest
        ("JD", "TD", "dragon", False),  # J above T
        ("7S", "7H", "tie", False),  # suits ignored: a tie
        ("QC", "QC", "tie", True),  # the same card on both sides: a suited tie
    ],
)
def test_winner_tie_and_suited_tie_through_the_table(dragon, tiger, winner, suited):
    res = of(started().hand(dragon, tiger), "hand.result")[0]
    assert (res["winner"], res["suited_tie"]) == (winner, suited)


def test_shoe_order_decides_not_the_claimed_box():
    """seed 002; seed 004 §5: a card claimed for another box still goes where shoe order says."""
    h = started()
    h.cmd("betting.open")
    h.cmd("betting.close")
    d = of(h.card("9S", box="player"), "card.dealt")[0]  # a boxed-encoding shoe's claim
    assert d["box"] == "dragon" and d["claimed_box"] == "player" and "order_rule" in d
    assert of(h.card("2C"), "hand.result")[0]["winner"] == "dragon"


# -- shoe procedures, reused -----------------------------------------------------------------


def test_first_card_burn_then_a_burn_between_hands():
    """seed 000/001 art. 2.1, seed 002 "规则", seed 004; seed 002: one card between hands."""
    h = Harness(start_burn="first-card", burn_between_hands=1)
    h.cmd("shoe.new")
    h.cards("3S", "2C", "2D")
    assert h.g.phase == "burning"
    evs = h.card("2H")
    assert of(evs, "shoe.burn")[0]["count"] == 4 and h.g.phase == "settling"
    h.hand("9S", "2C")  # hand 1: no burn between (the shoe's start)
    dealt = of(h.hand("5D", "9S", "2C"), "card.dealt")
    assert [d["box"] for d in dealt] == ["burn", "dragon", "tiger"]


def test_demo_hands_are_never_results():
    """seed 000/001 art. 2.2."""
    h = started(demo_hands=1)
    evs = h.cards("9S", "2C")
    assert of(evs, "hand.demo")[0]["winner"] == "dragon" and not of(evs, "hand.result")
    assert of(h.hand("2S", "9C"), "hand.result")[0]["hand"] == 1


def test_cut_card_makes_the_hand_the_last():
    """seed 000/001 art. 3.1."""
    h = started()
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.card("9S")
    assert of(h.run(DeviceReading("shoe", CutCardOut(), 0.0)), "shoe.cut_card")[0]["last_hand"] == 1
    assert types(h.card("2C"))[-2:] == ["hand.result", "shoe.ended"]
    h.cmd("betting.open")
    assert h.refused and "has ended" in h.refused


def test_extra_card_burns_and_a_second_is_the_next_dragon_card():
    """seed 002: an extra card is the next hand's burn; a second is its first card (Dragon)."""
    h = started()
    res = of(h.hand("9S", "2C"), "hand.result")[0]
    one = of(h.card("7H"), "card.dealt")[0]
    assert (one["box"], one["extra_card"], one["hand"]) == ("burn", True, 2)
    two = of(h.card("3C"), "card.dealt")[0]
    assert (two["box"], two["carried"], two["hand"]) == ("dragon", True, 2)
    evs = h.hand("KD")  # only the Tiger card is due
    nxt = of(evs, "hand.result")[0]
    assert (nxt["dragon"], nxt["tiger"], nxt["winner"]) == ("3C", "KD", "tiger")
    assert res["winner"] == "dragon"  # the first result stands


def test_exposed_card_during_betting_voids_the_hand():
    """seed 004 §4."""
    h = started()
    h.cmd("betting.open")
    evs = h.cmd("card.exposed", role="dealer", source="button")
    assert of(evs, "hand.void")[0]["reason"] == "exposed-card" and h.g.phase == "settling"


def test_misread_pauses_until_a_supervisor_enters_the_card():
    h = started()
    h.cmd("betting.open")
    h.cmd("betting.close")
    evs = h.run(DeviceReading("shoe", CardUnreadable(code="ERR"), 0.0))
    assert of(evs, "alarm.raised")[0]["kind"] == "card-unreadable" and h.g.phase == "paused"
    assert types(h.card("QD")) == ["card.held"]  # the Tiger card waits behind the unknown one
    evs = h.cmd("card.enter", card="5S")
    assert [(d["card"], d["box"]) for d in of(evs, "card.dealt")] == [
        ("5S", "dragon"),
        ("QD", "tiger"),
    ]
    assert of(evs, "hand.result")[0]["winner"] == "tiger" and not h.state.alarms


def test_foreign_card_beyond_the_inventory_holds_for_a_decision():
    """The running inventory (US 8511684): a seventh KS in a 6-deck shoe."""
    h = started(decks=6)
    for _ in range(3):
        h.hand("KS", "KS")
    evs = h.hand("KS")
    assert of(evs, "alarm.raised")[0]["kind"] == "card-count-exceeded" and h.g.phase == "paused"


def test_void_by_a_supervisor_only():
    """seed 000/001 art. 10."""
    h = started()
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.card("9S")
    h.cmd("hand.void", role="dealer", reason="x")
    assert h.refused and "supervisor" in h.refused
    v = of(h.cmd("hand.void", reason="card dropped"), "hand.void")[0]
    assert v["cards"] == {"dragon": ["9S"], "tiger": []} and h.g.phase == "settling"


def test_state_rebuilt_from_events_equals_the_live_state():
    h = Harness(start_burn="first-card", demo_hands=1)
    h.cmd("shoe.new")
    h.cards("2S", "4C", "9S", "2C")
    h.hand("3C", "6D")
    h.cards("7H", "8H")
    h.hand("TS")
    h.assert_rebuilds()


# -- the captures, against seed 002 read independently -----------------------------------------

CAPTURES = sorted((Path(__file__).parent / "captures" / "dragon-tiger").glob("*.expected.jsonl"))
ORDER = "A23456789TJQK"  # seed 002: K, Q, J, 10 … 2, A — K highest, A lowest


def test_capture_results_follow_seed_002():
    seen = {"dragon": 0, "tiger": 0, "tie": 0, "suited": 0}
    assert CAPTURES
    for path in CAPTURES:
        for line in path.read_text().splitlines():
            ev = json.loads(line)
            if ev["type"] != "hand.result":
                continue
            r = ev["data"]
            d, t = ORDER.index(r["dragon"][0]), ORDER.index(r["tiger"][0])
            want = "dragon" if d > t else "tiger" if t > d else "tie"
            assert r["winner"] == want, f"{path.name} hand {r['hand']}"
            assert r["suited_tie"] == (r["dragon"] == r["tiger"])
            seen[want] += 1
            seen["suited"] += r["suited_tie"]
    assert all(seen.values()), seen
