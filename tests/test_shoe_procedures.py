"""Shoe procedures and dealer errors, decided and applied through the real table (pure, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest
from table_harness import ShoeHarness, of

from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
from daemon.table import DeviceHealth, DeviceReading
from drivers.readings import CardUnreadable, CutCardOut


class Harness(ShoeHarness):
    def __init__(self, **rules: Any) -> None:
        super().__init__(BaccaratTable, BaccaratRules, **rules)


# -- burn ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "more"), [("AS", 1), ("5H", 5), ("9C", 9), ("TD", 10), ("KS", 10)]
)
def test_first_card_burn_counts_the_exposed_card(first, more):
    """seed 000/001 art. 2.1; seed 002; seed 004: the first card's value says how many more burn."""
    h = Harness(start_burn="first-card")
    h.new_shoe()
    assert h.g.phase == "burning"
    h.card(first)
    for i in range(more - 1):
        h.card(f"{(i % 8) + 2}C")
        assert h.g.phase == "burning"
    last = h.card("2D")
    assert h.types(last)[-1] == "shoe.burn"
    assert of(last, "shoe.burn")[0]["count"] == more + 1
    assert h.g.phase == "settling"


def test_burn_as_many_as_decks_and_fixed_and_none():
    h = Harness(decks=6, start_burn="decks")
    h.new_shoe()
    evs = h.cards(*["2C"] * 6)
    assert of(evs, "shoe.burn")[0]["count"] == 6
    h = Harness(start_burn="fixed:2")
    h.new_shoe()
    assert of(h.cards("2C", "3C"), "shoe.burn")[0]["count"] == 2
    h = Harness(start_burn="none")
    h.new_shoe()
    assert h.g.phase == "settling"


def test_burn_between_hands():
    h = Harness(start_burn="none", burn_between_hands=1)
    h.new_shoe()
    h.hand("9S", "2C", "KD", "4C")  # hand 1: no burn between (the shoe's start)
    evs = h.hand("5D", "9S", "2C", "KD", "4C")
    dealt = of(evs, "card.dealt")
    assert dealt[0]["box"] == "burn" and dealt[0]["card"] == "5D"
    assert [d["box"] for d in dealt[1:]] == ["player", "banker", "player", "banker"]


# -- dealing and results -------------------------------------------------------------------------


def test_shoe_order_decides_the_boxes_and_the_result():
    h = Harness(start_burn="none")
    h.new_shoe()
    evs = h.hand("3C", "6D", "2H", "4C", "TS", "6H")
    assert [d["box"] for d in of(evs, "card.dealt")] == ["player", "banker"] * 3
    res = of(evs, "hand.result")[0]
    assert res["player"] == ["3C", "2H", "TS"] and res["banker"] == ["6D", "4C", "6H"]
    assert (res["winner"], res["banker_six"], res["cards"], res["big_small_open"]) == (
        "banker",
        True,
        6,
        True,
    )


def test_claimed_box_does_not_move_a_card():
    """seed 002; seed 004 §5: cards put on the wrong boxes are corrected by shoe order."""
    h = Harness(start_burn="none")
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    evs = h.card("9S", box="banker")
    d = of(evs, "card.dealt")[0]
    assert d["box"] == "player" and d["claimed_box"] == "banker" and "order_rule" in d


def test_big_small_only_in_the_first_hands():
    h = Harness(start_burn="none", big_small_hands=1)
    h.new_shoe()
    assert of(h.hand("9S", "2C", "KD", "4C"), "hand.result")[0]["big_small_open"] is True
    assert of(h.hand("9S", "2C", "KD", "4C"), "hand.result")[0]["big_small_open"] is False


def test_demo_hands_are_never_results():
    """seed 000/001 art. 2.2: up to three demonstration hands, not real hands."""
    h = Harness(start_burn="none", demo_hands=2)
    h.new_shoe()
    assert h.g.phase == "demo"
    evs = h.cards("9S", "2C", "KD", "4C", "8S", "2D", "KH", "3C")
    assert of(evs, "hand.result") == []
    assert len(of(evs, "hand.demo")) == 2
    assert all(d["demo"] for d in of(evs, "card.dealt"))
    assert h.g.phase == "settling"
    assert of(h.hand("9S", "2C", "KD", "4C"), "hand.result")[0]["hand"] == 1


# -- cut card -----------------------------------------------------------------------------------------


def test_cut_card_during_a_hand_makes_it_the_last():
    h = Harness(start_burn="none")
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.card("9S")
    cut = h.run(DeviceReading("shoe", CutCardOut(), 0.0))
    assert of(cut, "shoe.cut_card")[0]["last_hand"] == 1
    evs = h.cards("2C", "KD", "4C")
    assert h.types(evs)[-2:] == ["hand.result", "shoe.ended"]
    assert h.g.phase == "shoe-ended"
    # seed 000/001 art. 3.1: hands after the last are invalid: betting refused, cards rejected.
    h.cmd("betting.open")
    assert "has ended" in h.refused
    evs = h.card("5S")
    assert (
        "alarm.raised" in h.types(evs)
        and of(evs, "card.rejected")[0]["reason"] == "after-last-hand"
    )


def test_cut_card_one_more_hand_rule():
    h = Harness(start_burn="none", cut_card_rule="one-more-hand")
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.card("9S")
    h.cmd("shoe.cut-card")
    h.cards("2C", "KD", "4C")
    assert h.g.phase == "settling"
    evs = h.hand("9S", "2C", "KD", "4C")
    assert h.types(evs)[-1] == "shoe.ended"


def test_cut_card_between_hands_makes_the_next_hand_last():
    h = Harness(start_burn="none")
    h.new_shoe()
    h.hand("9S", "2C", "KD", "4C")
    evs = h.cmd("shoe.cut-card")
    assert of(evs, "shoe.cut_card")[0]["last_hand"] == 2
    assert h.types(h.hand("9S", "2C", "KD", "4C"))[-1] == "shoe.ended"


# -- dealer errors ----------------------------------------------------------------------------------------


def test_extra_card_burns_for_the_next_hand_and_the_result_stands():
    """seed 002: an extra card drawn when none was due is the next hand's burn card."""
    h = Harness(start_burn="none")
    h.new_shoe()
    res = of(h.hand("9S", "2C", "KD", "4C"), "hand.result")[0]
    evs = h.card("7H")
    d = of(evs, "card.dealt")[0]
    assert (d["box"], d["extra_card"], d["hand"]) == ("burn", True, 2)
    assert "hand.void" not in h.types(evs) and res["winner"] == "player"
    evs = h.hand("3C", "6D", "2H", "4C", "TS", "6H")
    assert of(evs, "card.dealt")[0]["box"] == "player"  # no second burn: the extra card was it


def test_two_extra_cards_burn_then_first_player_card():
    """seed 002: in shoe order, the next hand's burn card and then its first Player card."""
    h = Harness(start_burn="none")
    h.new_shoe()
    h.hand("9S", "2C", "KD", "4C")
    h.cards("7H", "3C")
    evs = h.hand("6D", "2H", "4C", "TS", "6H")
    res = of(evs, "hand.result")[0]
    assert res["player"] == ["3C", "2H", "TS"] and res["banker"] == ["6D", "4C", "6H"]


def test_card_before_betting_closed_is_a_misdeal():
    """seed 003 §2.1.6: the first card leaves the shoe only after betting closed."""
    h = Harness(start_burn="none")
    h.new_shoe()
    h.cmd("betting.open")
    evs = h.card("9S")
    alarm = of(evs, "alarm.raised")[0]
    assert alarm["kind"] == "card-before-betting-closed" and "2.1.6" in alarm["rule"]
    assert of(evs, "card.dealt")[0]["misdeal"] is True
    assert "hand.result" not in h.types(evs) and h.g.phase == "betting"
    h.cmd("hand.void", reason="early card")
    assert h.g.phase == "settling"


def test_exposed_card_during_betting_voids_the_hand_and_optionally_the_shoe():
    """seed 004 §4; seed 002 VIP."""
    h = Harness(start_burn="none")
    h.new_shoe()
    h.cmd("betting.open")
    evs = h.cmd("card.exposed", role="dealer", source="button")
    assert of(evs, "hand.void")[0]["reason"] == "exposed-card" and "shoe.void" not in h.types(evs)
    h = Harness(start_burn="none", exposed_card_voids_shoe=True)
    h.new_shoe()
    h.cmd("betting.open")
    evs = h.cmd("card.exposed", role="dealer", source="button")
    assert "shoe.void" in h.types(evs) and h.g.phase == "shoe-ended"


def test_exposed_card_while_dealing_does_not_affect_the_game():
    h = Harness(start_burn="none")
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.card("9S")
    evs = h.cmd("card.exposed", role="dealer", source="button")
    assert h.types(evs) == ["operator.command", "card.exposed"]
    assert of(h.cards("2C", "KD", "4C"), "hand.result")


def test_forgotten_burn_voids_the_hand_and_the_shoe():
    """seed 002: a new shoe dealt without its burn: that hand and the shoe are void."""
    h = Harness(start_burn="first-card")
    h.new_shoe()
    opened = h.cmd("betting.open")
    assert of(opened, "betting.opened")[0]["burn_incomplete"] is True
    h.cmd("betting.close")
    evs = h.card("9S")
    assert of(evs, "hand.void")[0]["reason"] == "burn-not-completed"
    assert of(evs, "shoe.void")[0]["reason"] == "burn-not-completed"
    h.cmd("betting.open")
    assert "start a new shoe" in h.refused


def test_face_up_card_is_flagged_and_the_game_goes_on():
    """seed 000/001 art. 4."""
    h = Harness(start_burn="none")
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    d = of(h.card("9S", face_up=True), "card.dealt")[0]
    assert d["face_up"] is True and "art. 4" in d["face_up_rule"]
    assert of(h.cards("2C", "KD", "4C"), "hand.result")


def test_unreadable_card_pauses_until_a_supervisor_enters_it():
    h = Harness(start_burn="none")
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.card("9S")
    evs = h.run(DeviceReading("shoe", CardUnreadable(code="ERR"), 0.0))
    assert of(evs, "alarm.raised")[0]["kind"] == "card-unreadable" and h.g.phase == "paused"
    # the dealer goes on: the next card waits behind the unknown one, in shoe order
    assert h.types(h.card("KD")) == ["card.held"]
    h.cmd("card.enter", role="dealer", card="2C")
    assert h.refused and "supervisor" in h.refused
    evs = h.cmd("card.enter", card="2c")
    dealt = of(evs, "card.dealt")
    assert [(d["card"], d["box"]) for d in dealt] == [("2C", "banker"), ("KD", "player")]
    assert dealt[0]["entered_by"] == "pit" and "entered_by" not in dealt[1]
    assert "alarm.cleared" in h.types(evs) and not h.state.alarms
    assert of(h.card("4C"), "hand.result")[0]["winner"] == "player"


def test_manual_entry_refused_when_nothing_waits_and_bad_codes():
    h = Harness(start_burn="none")
    h.new_shoe()
    h.cmd("card.enter", card="KD")
    assert "no card is waiting" in h.refused
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.run(DeviceReading("shoe", CardUnreadable(code="ERR"), 0.0))
    h.cmd("card.enter", card="ZZ")
    assert "not a card" in h.refused and h.g.phase == "paused"


def test_card_beyond_the_shoe_inventory_holds_for_a_decision():
    """The running inventory: a ninth ace of spades in 8 decks is an integrity alarm."""
    h = Harness(start_burn="none", decks=6)
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    # six aces of spades are fine in 6 decks (deal them as two hands' worth of cards)
    h.cards("AS", "AS", "AS", "AS")  # P 2, B 2: player draws (total 2)
    h.cards("AS")  # player third; banker 2 draws vs 1
    h.cards("AS")
    evs = h.hand("AS")
    assert of(evs, "alarm.raised")[0]["kind"] == "card-count-exceeded"
    assert h.g.phase == "paused" and h.g.paused == "decision"
    evs = h.cmd("card.accept")
    assert of(evs, "card.dealt")[0]["card"] == "AS" and h.g.phase == "dealing"


def test_void_hand_and_void_shoe_by_supervisor_only():
    """seed 000/001 art. 10: a supervisor voids; journaled, never rewritten."""
    h = Harness(start_burn="none")
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.card("9S")
    h.cmd("hand.void", role="dealer", reason="x")
    assert "needs the supervisor role" in h.refused
    evs = h.cmd("hand.void", reason="dealer dropped cards")
    v = of(evs, "hand.void")[0]
    assert (
        v["reason"] == "dealer dropped cards"
        and v["by"] == "pit"
        and v["cards"]["player"] == ["9S"]
    )
    assert of(evs, "operator.command")[0]["actor"] == "pit"
    evs = h.cmd("shoe.void", reason="marked cards")
    assert of(evs, "shoe.void")[0]["reason"] == "marked cards" and h.g.phase == "shoe-ended"


def test_commands_refused_with_the_reason():
    h = Harness()
    h.cmd("betting.open")
    assert "no shoe is in play" in h.refused
    h.cmd("betting.close")
    assert "betting is not open" in h.refused
    h.cmd("no.such")
    assert "unknown command" in h.refused
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("shoe.new")
    assert "finish or void the hand" in h.refused
    assert h.refused and h.events[-1][0] != "operator.command"


def test_continuous_shuffler_has_no_burn_and_returns_cards():
    """seed 000/001 art. 2.3, 7.2."""
    h = Harness(continuous_shuffler=True, decks=6)
    h.new_shoe()
    assert h.g.phase == "settling"
    for _ in range(4):  # far more than six copies of a card over many hands
        h.hand("AS", "AS", "AS", "AS", "AS", "AS")
    assert not h.state.alarms
    evs = h.cmd("shoe.cut-card")
    assert of(evs, "alarm.raised")[0]["kind"] == "cut-card-unexpected"


def test_state_rebuilt_from_events_equals_the_live_state():
    """decide/apply: applying the journaled events from scratch gives the same state."""
    h = Harness(start_burn="first-card", demo_hands=1)
    h.new_shoe()
    h.cards("3S", "2C", "2D", "2H", "9S", "2C", "KD", "4C")
    h.hand("3C", "6D", "2H", "4C", "TS", "6H")
    h.card("7H")
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.run(DeviceReading("shoe", CardUnreadable(code="ERR"), 0.0))
    h.card("KD")
    h.assert_rebuilds()


def test_device_health_changes_are_events_once():
    h = Harness()
    evs = h.run(DeviceHealth("shoe", "ok", "port open", 0.0, {"port": "/dev/x"}))
    assert h.types(evs) == ["device.connected"]
    assert h.run(DeviceHealth("shoe", "ok", "again", 0.0)) == []
    assert h.types(h.run(DeviceHealth("shoe", "disconnected", "hangup", 0.0))) == [
        "device.disconnected"
    ]


def test_system_failure_voids_the_hand_only_after_a_crash():
    """seed 003 §2.1.8: a system failure voids the hand in play; a clean stop does not."""
    for crashed in (True, False):
        h = Harness(start_burn="none", system_failure_voids_hand=True)
        h.events += [
            (x.type, x.data)
            for x in h.table.started(
                h.state, {"version": "0.1.0", "pid": 1, "recovered_seq": 0}
            ).drafts
        ]
        for x in h.table.started(
            h.state, {"version": "0.1.0", "pid": 1, "recovered_seq": 0}
        ).drafts:
            h.state = h.table.apply(h.state, x.type, x.data)
        h.new_shoe()
        h.cmd("betting.open")
        h.cmd("betting.close")
        h.card("9S")
        if not crashed:
            for x in h.table.stopped(h.state, {"reason": "signal"}).drafts:
                h.state = h.table.apply(h.state, x.type, x.data)
        d = h.table.started(h.state, {"version": "0.1.0", "pid": 1, "recovered_seq": 9})
        types = [x.type for x in d.drafts]
        assert d.drafts[0].data["clean"] is (not crashed)
        assert ("hand.void" in types) is crashed
        if crashed:
            assert d.drafts[1].data["reason"] == "system-failure"


def test_void_hand_refused_while_a_card_between_hands_waits():
    h = Harness(start_burn="none")
    h.new_shoe()
    h.hand("9S", "2C", "KD", "4C")
    h.run(DeviceReading("shoe", CardUnreadable(code="ERR"), 0.0))
    assert h.g.phase == "paused"
    h.cmd("hand.void", reason="x")
    assert "between hands" in h.refused
    assert h.types(h.cmd("card.enter", card="5D"))[-1] == "card.dealt"
    assert h.g.phase == "settling"


def test_refused_alarm_clear_is_not_journaled():
    h = Harness()
    assert h.cmd("alarm.clear", id="A9") == []
    assert "no active alarm" in h.refused


def test_alarm_clear_all_with_no_alarms_is_no_event_and_no_refusal():
    from daemon.table import Command

    h = Harness()
    d = h.table.decide(h.state, Command("alarm.clear", {"id": "all"}, "pit", "supervisor"))
    assert (d.drafts, d.refused, d.reply) == ([], None, {"note": "no alarms"})


# -- the card shuffler (issue: a new shoe only from a completed shuffle with the right count) --


def shuffler(h: Harness, reading) -> list[tuple[str, dict]]:
    return h.run(DeviceReading("shuffler", reading, 0.0))


def test_a_new_shoe_needs_a_counted_shuffle_when_the_house_requires_it():
    from drivers.shuffler_readings import ShuffleDone, ShuffleStarted

    h = Harness(start_burn="none", require_shuffle=True)
    h.cmd("shoe.new")
    assert "no completed shuffle" in h.refused
    shuffler(h, ShuffleStarted(shuffle_id=7, decks=8))
    evs = shuffler(
        h,
        ShuffleDone(shuffle_id=7, decks=8, cards=416, rank_counts={r: 32 for r in "A23456789TJQK"}),
    )
    assert of(evs, "shuffle.completed")[0]["ok"] is True
    evs = h.cmd("shoe.new")
    assert of(evs, "shoe.started")[0]["shuffle"] == {"shuffle_id": 7, "device": "shuffler"}
    h.hand("9S", "2C", "KD", "4C")
    h.cmd("shoe.void", reason="test")
    h.cmd("shoe.new")
    assert "no completed shuffle" in h.refused  # a shuffle makes one shoe only


def test_a_wrong_count_takes_the_cards_out_of_play():
    from drivers.shuffler_readings import ShuffleCountMismatch, ShuffleDone

    h = Harness(start_burn="none", require_shuffle=True)
    evs = shuffler(h, ShuffleDone(shuffle_id=1, decks=8, cards=415))
    assert of(evs, "alarm.raised")[0]["kind"] == "shuffle-count-mismatch"
    assert "out of play" in of(evs, "alarm.raised")[0]["message"]
    h.cmd("shoe.new")
    assert "no completed shuffle" in h.refused
    evs = shuffler(h, ShuffleCountMismatch(shuffle_id=2, expected=416, counted=417))
    assert of(evs, "shuffle.completed")[0]["ok"] is False
    evs = shuffler(h, ShuffleDone(shuffle_id=3, decks=8, cards=416, rank_counts={"A": 31}))
    assert of(evs, "shuffle.completed")[0]["ok"] is False


def test_a_shuffler_fault_during_a_hand_voids_it_wagers_returned():
    from drivers.shuffler_readings import ShufflerFault, ShufflerJam

    h = Harness(start_burn="none")
    h.new_shoe()
    assert "hand.void" not in h.types(shuffler(h, ShufflerJam(where="elevator")))
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.card("9S")
    evs = shuffler(h, ShufflerFault(code=3, meaning="motor"))
    v = of(evs, "hand.void")[0]
    assert v["reason"] == "shuffler-fault" and "wagers returned" in v["rule"]
    assert any(a.kind == "shuffler-fault" for a in h.state.alarms.values())


def test_the_shuffler_door_alarm_clears_when_the_door_closes():
    from drivers.shuffler_readings import ShufflerDoorClosed, ShufflerDoorOpen

    h = Harness()
    assert of(shuffler(h, ShufflerDoorOpen()), "alarm.raised")[0]["kind"] == "shuffler-door-open"
    evs = shuffler(h, ShufflerDoorClosed())
    assert h.types(evs) == ["alarm.cleared"] and not h.state.alarms


def test_a_card_reader_lost_mid_hand_pauses_it_and_its_return_resumes_it():
    h = Harness(start_burn="none")
    h.run(DeviceHealth("shoe", "ok", "port open", 0.0))
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.card("9S")
    assert (
        h.run(DeviceHealth("shuffler", "disconnected", "unplugged", 0.0))[-1][0]
        == "device.disconnected"
    )
    assert h.g.phase == "dealing"  # the hand does not depend on the shuffler
    evs = h.run(DeviceHealth("shoe", "disconnected", "unplugged", 0.0))
    assert h.types(evs) == ["device.disconnected", "alarm.raised", "table.paused"]
    assert h.g.phase == "paused" and h.g.paused == "device"
    h.cmd("card.enter", card="2C")
    assert "waits for its card reader" in h.refused
    evs = h.run(DeviceHealth("shoe", "ok", "port open", 0.0))
    assert h.types(evs) == ["device.connected", "table.resumed", "alarm.cleared"]
    assert h.g.phase == "dealing" and not h.state.alarms
    assert of(h.cards("2C", "KD", "4C"), "hand.result")[0]["player"] == ["9S", "KD"]


def test_the_alarm_a_paused_hand_waits_on_is_not_cleared_by_hand():
    h = Harness(start_burn="none")
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.run(DeviceReading("shoe", CardUnreadable(code="ERR"), 0.0))
    (aid,) = h.state.alarms
    assert h.cmd("alarm.clear", id=aid, reason="x") == []
    assert "holds the table paused" in h.refused
    h.cmd("alarm.clear", id="all", reason="x")  # clears the others, keeps the held one
    assert aid in h.state.alarms and h.g.phase == "paused"
    h.cmd("card.exposed", role="dealer", source="button", card="XX")
    assert "not a card" in h.refused


def test_the_roads_ride_on_each_result_and_a_new_shoe_starts_them_afresh():
    """Voided and demonstration hands are not on the scoreboard; a tie is a slash, not a cell."""
    h = Harness(start_burn="none", demo_hands=1)
    h.new_shoe()
    h.cards("9S", "2C", "KD", "4C")  # a demonstration hand
    banker = ("8S", "9C", "KD", "KC")  # naturals 8–9: Banker
    tie = ("9S", "9C", "KD", "KH")  # naturals 9–9: a tie
    roads = [of(h.hand(*banker), "hand.result")[0]["roads"]]
    h.cmd("betting.open")
    h.cmd("hand.void", reason="test")
    roads.append(of(h.hand(*tie), "hand.result")[0]["roads"])
    roads.append(of(h.hand(*banker), "hand.result")[0]["roads"])
    # each result sets one square of each road: the Banker, the tie's slash on it, the next Banker
    assert [r["hands"] for r in roads] == [1, 2, 3]
    assert [r["bead_plate"] for r in roads] == [[0, 0, "banker"], [0, 1, "tie"], [0, 2, "banker"]]
    assert [r["big_road"] for r in roads] == [
        [0, 0, "banker", 0],
        [0, 0, "banker", 1],
        [0, 1, "banker", 0],
    ]
    assert roads[2]["big_eye_boy"] is None
    assert roads[2]["next"]["player"] == {
        "big_eye_boy": None,
        "small_road": None,
        "cockroach_pig": None,
    }
    h.cmd("shoe.new")
    h.cards("9S", "2C", "KD", "4C")
    fresh = of(h.hand(*tie), "hand.result")[0]["roads"]
    assert (fresh["hands"], fresh["big_road"]) == (1, [0, 0, None, 1])
