"""The blackjack round as decide/apply (seed 003 part III): dealing order, decisions, refusals,
timeouts, insurance and the peek, the dealer, and each dealer error with its procedure."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from table_harness import Evs, ShoeHarness, of, types

from daemon.games.blackjack.table import BlackjackRules, BlackjackTable, commitment


class BJ(ShoeHarness):
    def __init__(self, **rules: Any) -> None:
        super().__init__(BlackjackTable, BlackjackRules, start_burn="none", **rules)
        self.new_shoe()

    def round(self, boxes: str, *cards: str) -> Evs:
        self.cmd("betting.open")
        out = self.cmd("betting.close", boxes=boxes)
        assert self.refused is None, self.refused
        return out + self.cards(*cards)

    @property
    def expects(self) -> dict[str, Any] | None:
        return self.table.game.expects(self.g)


def test_dealing_order_seed_003_part_iii_3_4() -> None:
    h = BJ()
    evs = h.round("2,5,7", "TS", "9H", "8D", "6C", "7S", "5H", "4D", "3C")
    dealt = [(d["box"], d["card"]) for d in of(evs, "card.dealt")]
    assert dealt == [
        ("2", "TS"),
        ("5", "9H"),
        ("7", "8D"),
        ("dealer", "6C"),
        ("2", "7S"),
        ("5", "5H"),
        ("7", "4D"),
        ("dealer", None),  # the hole card, face down: published without its face
    ]
    assert [d["text"] for d in of(evs, "table.expects")][-1] == "decision from box 2"


def test_the_hole_card_is_secret_and_its_reveal_opens_the_commitment() -> None:
    h = BJ()
    evs = h.round("1", "TS", "6C", "7S", "9D")
    hole = of(evs, "card.dealt")[-1]
    assert hole["card"] is None and hole["hole"] is True
    assert hole["secret"]["card"] == "9D"  # journaled; events.seal keeps it out of the event
    assert hole["commitment"] == commitment("9D", hole["secret"]["salt"])
    evs = h.cmd("box.stand", box=1)
    rev = of(evs, "dealer.hole_card")[0]
    assert rev["card"] == "9D" and commitment(rev["card"], rev["salt"]) == hole["commitment"]
    assert of(evs, "table.expects")[-1]["text"] == "dealer draws (15)"
    evs = h.card("2S")
    assert of(evs, "hand.result")[0]["dealer"]["cards"] == ["6C", "9D", "2S"]


def test_a_decision_not_allowed_is_refused_with_the_reason() -> None:
    h = BJ()
    h.round("1,3", "8S", "5H", "6C", "8D", "TH", "9C")
    h.cmd("box.hit", box=3)
    assert h.refused is not None and "box 1's turn" in h.refused
    h.cmd("box.insurance", box=1, take="yes")
    assert h.refused is not None and "insurance is not on offer" in h.refused
    h.cmd("box.split", box=1)
    assert h.refused is None
    h.cmd("box.split", box=1)
    assert h.refused is not None  # no decision is awaited: the split's second cards are due
    h.cards("3D", "2S")  # both second cards of the split first (§2.7)
    h.cmd("box.split", box=1)
    assert h.refused is not None and "splits once" in h.refused
    h.cmd("box.double", box=1)
    assert h.refused is not None and "after a split" in h.refused
    h.cmd("box.hit", box=1)
    h.card("KD")  # 8 3 K = 21: the hand gets no more cards
    assert h.expects is not None and h.expects["text"] == "decision from box 1 hand 2"
    h.cmd("box.stand", box=1)
    h.cmd("box.hit", box=3)
    h.card("2C")  # 5 T 2 = 17
    h.cmd("box.double", box=3)
    assert h.refused is not None and "first two cards" in h.refused
    h.cmd("box.hit", box=3)
    h.card("4C")  # 21
    h.cmd("box.hit", box=3)
    assert h.refused is not None and "no decision is awaited" in h.refused


def test_hit_on_21_and_double_on_three_cards_are_refused() -> None:
    h = BJ()
    h.round("1,2", "5S", "AH", "6C", "4D", "TH", "9C")  # box 2: A T is a blackjack, no decision
    h.cmd("box.hit", box=1)
    h.card("2C")
    h.cmd("box.double", box=1)
    assert h.refused is not None and "first two cards" in h.refused
    h.cmd("box.hit", box=1)
    h.card("TD")  # 5 4 2 T = 21: moved on
    assert h.expects is not None and h.expects["expects"] == "dealer-draws"


def test_a_decision_timeout_stands_the_box() -> None:
    h = BJ()
    evs = h.round("1,2", "TS", "9H", "6C", "5D", "4C", "8S")
    turn = of(evs, "table.expects")[-1]["turn"]
    h.cmd("decision.timeout", role="dealer", source="timer", turn=str(turn))
    dec = of(h.events, "box.decision")[-1]
    assert dec["box"] == 1 and dec["decision"] == "stand" and dec["timeout"] is True
    assert h.expects is not None and h.expects["box"] == 2
    # a late timer for the old turn finds nothing to do
    h.cmd("decision.timeout", role="dealer", turn=str(turn))
    assert h.refused is not None and f"turn {turn}" in h.refused


def test_insurance_under_an_ace_then_the_peek_finds_a_blackjack() -> None:
    h = BJ()
    evs = h.round("1,2", "TS", "9H", "AC", "TD", "8S", "KD")
    assert h.expects is not None and h.expects["expects"] == "insurance"
    h.cmd("box.insurance", box=1, take="yes")
    h.cmd("box.insurance", box=1, take="no")
    assert h.refused is not None and "already taken" in h.refused
    h.cmd("box.hit", box=1)
    assert h.refused is not None
    turn = h.g.round.turn
    h.cmd("decision.timeout", role="dealer", turn=str(turn))  # box 2 never answered: declined
    assert h.expects is not None and h.expects["expects"] == "hole-check"
    evs = h.cmd("hole.check", role="dealer")
    assert of(evs, "dealer.peeked")[0]["blackjack"] is True
    res = of(evs, "hand.result")[0]
    b1, b2 = res["boxes"]
    assert b1["insurance"]["outcome"] == "win" and b1["net"] == 0  # -1 + 1 (2:1 on half)
    assert b2["insurance"] == {"taken": False} and b2["net"] == -1
    assert res["dealer"]["blackjack"] is True and res["dealer"]["drew"] == 0


def test_insurance_lost_when_no_dealer_blackjack_and_play_goes_on() -> None:
    h = BJ()
    h.round("1", "TS", "AC", "9D", "7H")
    h.cmd("box.insurance", box=1, take="yes")
    evs = h.cmd("hole.check", role="dealer")
    assert of(evs, "dealer.peeked")[0]["blackjack"] is False
    assert "dealer.hole_card" not in types(evs)  # still face down: only "no blackjack" is said
    evs = h.cmd("box.stand", box=1)
    res = of(evs, "hand.result")[0]  # dealer soft 18 stands
    assert res["boxes"][0]["insurance"]["outcome"] == "lose"
    assert res["boxes"][0]["net"] == 1 - 0.5


def test_dealer_stands_on_soft_17_and_does_not_draw_when_no_box_is_in_play() -> None:
    h = BJ()
    h.round("1", "TS", "AC", "9D", "6H")
    h.cmd("box.insurance", box=1, take="no")
    h.cmd("hole.check", role="dealer")
    evs = h.cmd("box.stand", box=1)
    res = of(evs, "hand.result")[0]
    assert res["dealer"]["cards"] == ["AC", "6H"] and res["dealer"]["soft"]
    assert res["boxes"][0]["hands"][0]["outcome"] == "win"
    h2 = BJ()
    h2.round("1", "TS", "5C", "6D", "9H")
    h2.cmd("box.hit", box=1)
    evs = h2.card("KH")  # bust: the dealer's total could change nothing (§4.4.3)
    res = of(evs, "hand.result")[0]
    assert res["dealer"]["drew"] == 0 and res["dealer"]["cards"] == ["5C", "9H"]


# -- dealer errors: one test each -----------------------------------------------------------


def test_card_to_a_box_that_stood_is_burned_with_an_alarm() -> None:
    h = BJ()
    h.round("1,2", "TS", "9H", "6C", "8D", "4C", "5S")
    evs = h.card("3H")  # box 1 has not asked: no card is due
    alarm = of(evs, "alarm.raised")[0]
    assert alarm["kind"] == "card-not-due" and "has not asked" in alarm["message"]
    burn = of(evs, "card.dealt")[0]
    assert burn["box"] == "burn" and burn["not_due"] is True
    assert h.expects is not None and h.expects["text"] == "decision from box 1"  # the round goes on


def test_dealer_drawing_at_17_or_more_raises_the_alarm() -> None:
    h = BJ()
    h.round("1", "TS", "TC", "8D", "7S")
    evs = h.cmd("box.stand", box=1)
    assert "hand.result" in types(evs)
    evs = h.card("2H")
    alarm = of(evs, "alarm.raised")[0]
    assert alarm["kind"] == "card-not-due" and "dealer drew at 17" in alarm["message"]
    assert of(evs, "card.dealt")[0]["box"] == "burn"


def test_card_before_betting_closed_uses_the_shoe_procedure() -> None:
    h = BJ()
    h.cmd("betting.open")
    evs = h.card("9S")
    alarm = of(evs, "alarm.raised")[0]
    assert alarm["kind"] == "card-before-betting-closed"
    assert of(evs, "card.dealt")[0]["box"] == "burn"
    h.cmd("betting.close", boxes="1")
    h.cards("TS", "6C", "7S", "9D")
    assert h.expects is not None and h.expects["text"] == "decision from box 1"


def test_hole_card_exposed_early_voids_the_round_and_opens_the_commitment() -> None:
    h = BJ()
    h.round("1", "TS", "6C", "7S", "9D")
    evs = h.cmd("card.exposed", role="dealer", source="button")
    assert of(evs, "alarm.raised")[0]["kind"] == "hole-card-exposed"
    void = of(evs, "hand.void")[0]
    assert void["reason"] == "hole-card-exposed"
    assert void["hole"]["card"] == "9D"
    assert h.g.phase == "settling"
    # the scanner seeing the hole card face up is the same error
    h2 = BJ()
    h2.round("1", "TS", "6C", "7S")
    evs = h2.card("9D", face_up=True)
    assert of(evs, "alarm.raised")[0]["kind"] == "hole-card-exposed"
    assert of(evs, "hand.void")[0]["reason"] == "hole-card-exposed"


def test_card_to_a_box_that_did_not_bet() -> None:
    h = BJ()
    h.round("1,3", "TS")
    evs = h.card("9H", box="2")  # the shoe says the card was laid on box 2
    alarm = of(evs, "alarm.raised")[0]
    assert alarm["kind"] == "card-to-box-not-betting" and "box 2" in alarm["message"]
    assert of(evs, "card.dealt")[0]["box"] == "3"  # shoe order decides
    evs = h.cmd("card.misplaced", role="dealer", box="6")
    assert of(evs, "alarm.raised")[0]["kind"] == "card-to-box-not-betting"
    h.cmd("card.misplaced", role="dealer", box="3")
    assert h.refused is not None and "bet in this round" in h.refused


def test_a_system_failure_voids_the_round_in_play() -> None:
    h = BJ()
    h.round("1", "TS", "6C", "7S", "9D")
    t = msgspec.structs.replace(h.state, running=True)
    d = h.table.started(t, {"version": "t", "recovered_seq": 0, "pid": 1})
    void = next(x for x in d.drafts if x.type == "hand.void")
    assert void.data["reason"] == "system-failure"
    assert void.data["hole"]["card"] == "9D"
    # Blackjack's own section (part III), not baccarat's §2.1.8 (issue 33)
    assert void.data["rule"].startswith("seed 003 part III §2.1.5")


def test_betting_close_needs_the_boxes() -> None:
    h = BJ()
    h.cmd("betting.open")
    h.cmd("betting.close")
    assert h.refused is not None and "boxes" in h.refused
    h.cmd("betting.close", boxes="1,9")
    assert h.refused is not None and "boxes 1 to 7" in h.refused


def test_the_state_rebuilds_from_the_journaled_events() -> None:
    h = BJ()
    h.round("1,2", "8S", "8H", "6C", "8D", "TH", "9C")
    h.cmd("box.split", box=1)
    h.cards("3D", "2S")
    assert h.rebuilt() == h.state
    h.assert_rebuilds()


@pytest.mark.parametrize("ratio", ["6:5", "2:1"])
def test_blackjack_pays_the_house_ratio(ratio: str) -> None:
    h = BJ(blackjack_pays=ratio)
    evs = h.round("1", "AS", "9C", "KD", "7H")
    res = of(evs, "hand.result")[0]
    a, b = (int(x) for x in ratio.split(":"))
    assert res["boxes"][0]["hands"][0]["ratio"] == ratio
    assert res["boxes"][0]["net"] == a / b


def test_a_snapshot_of_a_round_in_play_decodes_to_the_same_state() -> None:
    h = BJ()
    h.round("1,2", "8S", "8H", "AC", "8D", "TH", "9C")
    h.cmd("box.insurance", box=1, take="yes")
    assert h.table.decode_state(h.table.encode_state(h.state)) == h.state


def test_what_the_table_expects_is_kept_by_value_and_each_caller_gets_its_own() -> None:
    """``expects`` is answered from the last few by phase and round: the same answer as
    working it out, at every step of a round, and a caller that changes its copy changes
    no one else's."""
    from daemon.games.blackjack.expects import expects

    h = BJ()
    h.cmd("betting.open")
    h.cmd("betting.close", boxes="1,2")
    steps = 0
    for card in ("TS", "9H", "8D", "6C", "7S", "5H"):
        h.cards(card)
        got = h.expects
        assert got == expects(h.table.game.rules, h.g)
        if got is not None:
            for v in got.values():
                if isinstance(v, list):
                    v.append("spoiled")
            got["text"] = "spoiled"
        assert h.expects == expects(h.table.game.rules, h.g)
        steps += 1
    assert steps == 6 and h.table.game._expects_memo
