"""The shoe procedure bugs of issue 19, each decided through the real table (pure, no I/O).

Each test failed before its fix: a carried card that survived its hand's void, an alarm
per card after the last hand that outlived the shoe, the cut card during betting under
one-more-hand, a shoe without burn cards that the croupier never opened betting for.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from table_harness import ShoeHarness, of

from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
from daemon.games.dragon_tiger.table import DragonTigerTable
from daemon.procedures.shoe import ShoeRules
from daemon.runtime.croupier import Croupier


class Harness(ShoeHarness):
    def __init__(self, **rules: Any) -> None:
        super().__init__(BaccaratTable, BaccaratRules, **rules)


# -- a carried card is out of play when its hand is voided --------------------------------------


@pytest.mark.parametrize("how", ["supervisor", "exposed-card"])
def test_a_carried_card_goes_out_of_play_with_its_voided_hand(how):
    """seed 002: the second extra card is the next hand's first Player card; void that hand
    while betting is open and the card is out of play with it, not the hand after's."""
    h = Harness(start_burn="none")
    h.new_shoe()
    h.hand("9S", "2C", "KD", "4C")
    evs = h.cards("7H", "3C")  # burn for hand 2, then hand 2's first Player card
    assert of(evs, "card.dealt")[1]["carried"] is True
    h.cmd("betting.open")
    if how == "supervisor":
        void = of(h.cmd("hand.void", reason="dispute"), "hand.void")[0]
    else:
        void = of(h.cmd("card.exposed", role="dealer", source="button", card="QS"), "hand.void")[0]
    assert void["hand"] == 2 and void["cards"] == {"player": ["3C"], "banker": []}
    res = of(h.hand("8D", "9C", "KH", "KC"), "hand.result")[0]
    assert res["hand"] == 3 and "3C" not in res["player"]
    assert res["player"] == ["8D", "KH"] and res["banker"] == ["9C", "KC"]


def test_dragon_tiger_too():
    h = ShoeHarness(DragonTigerTable, ShoeRules, start_burn="none")
    h.new_shoe()
    h.hand("KH", "2C")
    h.cards("7H", "3C")
    h.cmd("betting.open")
    void = of(h.cmd("hand.void", reason="dispute"), "hand.void")[0]
    assert void["cards"] == {"dragon": ["3C"], "tiger": []}
    res = of(h.hand("5D", "9S"), "hand.result")[0]
    assert (res["dragon"], res["tiger"]) == ("5D", "9S")


# -- one alarm per cause after the last hand; a new shoe clears it ------------------------------


def ended() -> Harness:
    h = Harness(start_burn="none")
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.card("9S")
    h.cmd("shoe.cut-card")
    h.cards("2C", "KD", "4C")
    assert h.g.phase == "shoe-ended"
    return h


def test_cards_after_the_last_hand_raise_one_alarm_that_counts_them():
    h = ended()
    evs = h.cards(*["5S", "6S", "7S", "8S", "9S", "TS", "JS", "QS", "KS"])
    raised = of(evs, "alarm.raised")
    assert [a["kind"] for a in raised] == ["card-out-of-play"]
    rejected = of(evs, "card.rejected")
    assert len(rejected) == 9 and {r["alarm"] for r in rejected} == {raised[0]["id"]}
    repeated = of(evs, "alarm.repeated")
    assert [r["count"] for r in repeated] == list(range(2, 10))
    assert len(h.state.alarms) == 1
    assert next(iter(h.state.alarms.values())).count == 9


def test_a_new_shoe_clears_the_old_shoes_alarm_journaled():
    h = ended()
    h.cards("5S", "6S")
    [aid] = h.state.alarms
    evs = h.cmd("shoe.new")
    cleared = of(evs, "alarm.cleared")
    assert [(c["id"], c["reason"]) for c in cleared] == [(aid, "a new shoe: shoe 1's alarm")]
    assert h.types(evs).index("alarm.cleared") < h.types(evs).index("shoe.started")
    assert h.state.alarms == {}


# -- the cut card during betting, under one-more-hand ---------------------------------------------


@pytest.mark.parametrize(
    ("rule", "during", "last"),
    [
        ("last-hand", "betting", 2),  # seed 000/001 art. 3.1: the cut card's hand is the next one
        ("one-more-hand", "betting", 3),  # … and one more hand follows it
        ("last-hand", "between", 2),
        ("one-more-hand", "between", 3),
    ],
)
def test_a_cut_card_between_hands_belongs_to_the_next_hand(rule, during, last):
    h = Harness(start_burn="none", cut_card_rule=rule)
    h.new_shoe()
    h.hand("9S", "2C", "KD", "4C")
    if during == "betting":
        h.cmd("betting.open")
    cut = of(h.cmd("shoe.cut-card"), "shoe.cut_card")[0]
    assert cut["last_hand"] == last
    if during == "betting":
        h.cmd("betting.close")
        h.cards("9S", "2C", "KD", "4C")
    else:
        h.hand("9S", "2C", "KD", "4C")
    assert (h.g.phase == "shoe-ended") == (last == 2)
    if last == 3:
        assert h.types(h.hand("9S", "2C", "KD", "4C"))[-1] == "shoe.ended"


# -- a shoe without burn cards: the croupier opens betting for its first hand ---------------------


@pytest.mark.parametrize("burn", ["none", "fixed:0"])
def test_a_shoe_with_nothing_to_burn_gets_its_first_betting(burn):
    h = Harness(start_burn=burn, betting_seconds=4.0, settle_seconds=1.5)
    planned: list[tuple[float, str]] = []
    c = Croupier(h.table.game.rules, submit=lambda _: None, describe=h.table.game.describe)
    c._later = lambda delay, name: planned.append((delay, name))  # type: ignore[method-assign]
    evs = h.cmd("shoe.new")
    c.on_events([SimpleNamespace(type=t, data=d) for t, d in evs])
    assert h.g.phase == "settling" and planned == [(1.5, "betting.open")]
    assert of(h.cmd("betting.open", role="dealer"), "betting.opened")
