"""The roulette spin procedure, as specifications: what the table publishes for what the wheel
does, through the real table and the real Cammegh protocols (pure, no I/O).

Each test tells the wheel's game in its milestones — bets, the ball launched, no more
bets, the number line, the winning number, a re-spin — and the harness
(``tests/wheel_harness.py``) writes the frames the wheel sends for them, one every 500 ms
of an injected clock, through ``SS2Protocol`` / ``M360Protocol``. Every validity rule and
every exception of the vendor's table has a test here that fails when the rule is broken.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from table_harness import Evs, of, types
from wheel_harness import (
    BALL_IN_RIM,
    BALL_MISSING,
    BEFORE_GAME,
    COMPONENT_FAULT,
    LAUNCH_FAILED,
    NO_MORE_BETS,
    PLACE_BETS,
    ROTOR_SPEED,
    SAME_DIRECTION,
    TABLE_CLOSED,
    WHEEL_VOID,
    WINNING_NUMBER,
    WheelHarness,
    alarms,
    invalid_spin,
    invalid_spins,
    numbers,
    results,
)

from daemon.games.roulette.table import RouletteGame, RouletteRules
from daemon.table import DeviceHealth, DeviceReading, Table
from drivers.cammegh import SS2Protocol
from drivers.readings import (
    DeviceReply,
    GameEvent,
    WheelFault,
    WheelStatus,
    WinningNumber,
)


@pytest.fixture
def h() -> WheelHarness:
    h = WheelHarness()
    h.power_on()
    return h


# -- a normal spin --------------------------------------------------------------------------


def test_a_normal_spin_publishes_open_start_close_result(h: WheelHarness):
    evs = h.spin(23)
    wanted = ["betting.opened", "spin.started", "betting.closed", "wheel.number", "spin.result"]
    assert [t for t in types(evs) if t in wanted] == wanted
    started = of(evs, "spin.started")[0]
    assert started["rotor_direction"] == "anticlockwise" and started["rotor_rpm"] == 17.0
    assert started["round"] == 1 and started["spin"] == 1 and started["wheel_spin"] == 1
    res = results(evs)[0]
    assert res | {"mono": 0} == res | {
        "number": 23,
        "pocket": "23",
        "color": "red",
        "dozen": 2,
        "column": 2,
        "parity": "odd",
        "range": "high",
        "layout": "single-zero",
        "round": 1,
        "spin": 1,
        "wheel_spin": 1,
        "source": "status+line",
        "complete": True,
        "respin": False,
        "mono": 0,
    }
    assert h.g.round == 2 and h.g.phase == "settled"


def test_only_changes_are_journaled_not_every_frame(h: WheelHarness):
    evs = h.place_bets(20)
    assert types(evs) == ["betting.opened"]


def test_the_table_spin_counter_never_wraps_while_the_wheel_counter_does(h: WheelHarness):
    h.counter = 255
    h.place_bets(1, after=30)  # frames lost meanwhile: the counter is not judged across the gap
    for i in range(3):
        h.spin(7 + i)
        if h.counter == 257:
            h.counter = 1
    res = results(h.events)
    assert [r["wheel_spin"] for r in res] == [255, 256, 1]
    assert [r["spin"] for r in res] == [1, 2, 3]
    assert not alarms(h.events, "spin-counter")


# -- the number: only when the wheel shows its winning number, or from the bare line -----------


def test_ball_launched_and_no_more_bets_never_give_a_result_from_the_stale_number_field(
    h: WheelHarness,
):
    h.spin(31)
    evs = h.place_bets(4) + h.ball_launched(6) + h.no_more_bets(12)  # the field still says 31
    assert not results(evs)
    h.shows(8)
    evs = h.winning_number(2)
    assert numbers(evs) == [8]


def test_winning_number_without_the_bare_line_gives_the_status_number(h: WheelHarness):
    evs = h.spin(14, line=False)
    res = results(evs)
    assert [(r["number"], r["source"]) for r in res] == [(14, "status")]


def test_a_number_line_then_a_lost_winning_number_frame_gives_the_line_number():
    h = WheelHarness()
    h.power_on()
    h.to_no_more_bets()
    h.number_line(17, after=0.3)
    h.counter_moves()
    evs = h.place_bets(1, after=40)  # the winning-number frames were lost
    res = results(evs)
    assert [(r["number"], r["source"], r["wheel_spin"]) for r in res] == [(17, "number-line", 1)]


def test_winning_number_with_no_number_is_an_invalid_spin_and_the_re_spin_is_the_same_round(
    h: WheelHarness,
):
    evs = h.spin(None)
    assert not results(evs)
    (void,) = invalid_spins(evs)
    assert void["reason"] == "no-winning-number" and void["round"] == 1
    evs = h.spin(9)
    (res,) = results(evs)
    assert res["round"] == 1 and res["spin"] == 2 and res["respin"] is True
    assert h.g.round == 2


def test_number_line_and_winning_number_disagreeing_is_an_alarm_and_an_invalid_spin(
    h: WheelHarness,
):
    h.to_no_more_bets()
    h.number_line(17, after=0.3)
    h.shows(18)
    evs = h.winning_number(2)
    assert not results(evs)
    assert invalid_spin(evs) == "number-mismatch"
    assert alarms(evs, "number-mismatch")


def test_double_zero_is_settled_as_00():
    h = WheelHarness(double_zero=True)
    h.proto = SS2Protocol(double_zero=True)
    h.power_on()
    h.to_no_more_bets()
    h.number_line("00", after=0.3)
    h.shows("00")
    (res,) = results(h.winning_number(1))
    assert res["number"] == 37 and res["pocket"] == "00" and res["color"] == "green"
    assert res["layout"] == "double-zero"


def test_a_00_on_a_single_zero_table_is_void_never_a_result():
    h = WheelHarness()  # the table is single zero ...
    h.proto = SS2Protocol(double_zero=True)  # ... but the driver was configured double zero
    h.power_on()
    evs = h.spin(None, line=False, next_game=False)
    h.shows("00")
    evs = h.to_no_more_bets() + h.winning_number(1)
    assert not results(evs)
    assert alarms(evs, "invalid-number")


# -- validity: the vendor's exception table and seed 003 IV §3.1.1 --------------------------


def test_ball_with_the_rotor_after_launch_is_an_invalid_spin_and_asks_for_the_acknowledgement(
    h: WheelHarness,
):
    evs = h.place_bets(4) + h.ball_launched(1) + h.ball_launched(2, flags=SAME_DIRECTION)
    (void,) = invalid_spins(evs)
    assert void["reason"] == "ball-direction" and void["acknowledge"] is True
    assert "seed 003 IV §3.1.1" in void["rule"] and "exception table" in void["rule"]
    assert void["frames"][-1].startswith("*X;3;001;") and ";2;" in void["frames"][-1]


def test_a_void_never_gives_a_result_and_the_re_spin_belongs_to_the_same_round(h: WheelHarness):
    h.spin(5)
    evs = h.place_bets(4) + h.ball_launched(2, flags=SAME_DIRECTION)
    assert invalid_spins(evs)[0]["round"] == 2
    # the wheel goes on anyway (no *R): its number is not the table's
    h.shows(12)
    evs = h.ball_launched(2) + h.no_more_bets(4) + h.number_line(12) + h.winning_number(3)
    assert not results(evs)
    # the re-spin of the same game (after *R: before the game, then bets)
    evs = h.before_game(1) + h.to_no_more_bets() + h.number_line(30)
    h.shows(30)
    evs += h.winning_number(2)
    assert of(evs, "betting.opened")[0]["respin"] is True
    (res,) = results(evs)
    assert (res["number"], res["round"], res["spin"], res["respin"]) == (30, 2, 3, True)


def test_ball_with_the_rotor_while_bets_are_open_is_a_misfire_not_an_invalid_spin(h: WheelHarness):
    """Real traffic [cap]: the same-direction flag (2) shows only while bets are open, and that
    spin went on to a result."""
    evs = (
        h.place_bets(2)
        + h.place_bets(3, flags=SAME_DIRECTION)
        + h.place_bets(2, flags=LAUNCH_FAILED)
        + h.place_bets(1)
    )
    assert invalid_spin(evs) is None
    evs = h.spin(15)
    assert numbers(evs) == [15]


def test_launch_failure_after_launch_alarms_after_3_s_and_voids_after_6_s(h: WheelHarness):
    h.place_bets(4)
    h.ball_launched(1)
    evs = h.ball_launched(6, flags=LAUNCH_FAILED)  # 0.0 .. 2.5 s
    assert alarms(evs, "launch-failure") == [] and invalid_spin(evs) is None
    evs = h.ball_launched(1, flags=LAUNCH_FAILED)  # 3.0 s
    (a,) = alarms(evs, "launch-failure")
    assert a["severity"] == "warning" and "3 s" in a["rule"]
    evs = h.ball_launched(5, flags=LAUNCH_FAILED)  # .. 5.5 s
    assert invalid_spin(evs) is None
    evs = h.ball_launched(1, flags=LAUNCH_FAILED)  # 6.0 s
    assert invalid_spin(evs) == "launch-failure"
    evs = h.place_bets(1)  # the re-spin: the launch retried, the alarm clears itself
    assert of(evs, "alarm.cleared")[0]["id"] == a["id"]


def test_launch_failure_that_clears_in_time_keeps_the_spin(h: WheelHarness):
    h.place_bets(4)
    h.ball_launched(1)
    evs = h.ball_launched(7, flags=LAUNCH_FAILED) + h.ball_launched(2)
    assert alarms(evs, "launch-failure") and of(evs, "alarm.cleared")
    h.shows(21)
    evs = h.no_more_bets(4) + h.number_line(21) + h.winning_number(1)
    assert numbers(evs) == [21]


def test_launch_failure_windows_are_settings():
    h = WheelHarness(launch_fail_window=1.0, launch_fail_void_after=2.0)
    h.power_on()
    h.place_bets(4)
    evs = h.ball_launched(3, flags=LAUNCH_FAILED)  # 0, 0.5, 1.0 s
    assert alarms(evs, "launch-failure") and invalid_spin(evs) is None
    evs = h.ball_launched(2, flags=LAUNCH_FAILED)  # 1.5, 2.0 s
    assert invalid_spin(evs) == "launch-failure"
    with pytest.raises(ValueError, match="must not be shorter"):
        RouletteRules(launch_fail_window=3.0, launch_fail_void_after=1.0)


def test_launch_failure_while_bets_are_open_is_an_alarm_that_clears_itself_never_a_void(
    h: WheelHarness,
):
    evs = h.place_bets(1) + h.place_bets(20, flags=LAUNCH_FAILED)
    assert alarms(evs, "launch-failure") and invalid_spin(evs) is None
    evs = h.ball_launched(1)
    assert of(evs, "alarm.cleared") and h.state.alarms == {}


def test_ball_missing_after_no_more_bets_voids_after_5_s(h: WheelHarness):
    h.place_bets(4)
    h.ball_launched(4)
    h.no_more_bets(2)
    evs = h.no_more_bets(10, flags=BALL_MISSING)  # 0 .. 4.5 s: the vendor says ignore
    assert invalid_spin(evs) is None
    evs = h.no_more_bets(1, flags=BALL_MISSING)  # 5.0 s
    assert invalid_spin(evs) == "ball-missing"


def test_ball_missing_window_is_a_setting():
    h = WheelHarness(ball_missing_window=2.0)
    h.power_on()
    h.place_bets(4)
    h.ball_launched(4)
    evs = h.no_more_bets(4, flags=BALL_MISSING)  # 0 .. 1.5 s
    assert invalid_spin(evs) is None
    assert invalid_spin(h.no_more_bets(1, flags=BALL_MISSING)) == "ball-missing"


def test_ss2_ball_not_detected_in_track_voids_after_the_window(h: WheelHarness):
    h.place_bets(4)
    h.ball_launched(4)
    evs = h.ball_not_detected(10)
    assert invalid_spin(evs) is None
    assert invalid_spin(h.ball_not_detected(1)) == "ball-missing"


def test_a_flag_that_clears_restarts_its_window(h: WheelHarness):
    h.place_bets(4)
    h.ball_launched(4)
    h.no_more_bets(8, flags=BALL_MISSING)
    h.no_more_bets(1)
    evs = h.no_more_bets(8, flags=BALL_MISSING)  # 3.5 s since it came back
    assert invalid_spin(evs) is None


# -- component faults, latched ---------------------------------------------------------------


def test_component_fault_flag_voids_and_latches_a_device_fault(h: WheelHarness):
    evs = h.place_bets(4) + h.ball_launched(2) + h.ball_launched(1, flags=COMPONENT_FAULT)
    assert invalid_spin(evs) == "component-fault"
    (a,) = alarms(evs, "device-fault")
    assert a["severity"] == "supervisor" and "*F" in a["action"]
    (f,) = of(evs, "device.fault")
    assert f["alarm"] == a["id"] and f["code"] is None
    # the flag stays: no second alarm, no second fault event
    evs = h.ball_launched(3, flags=COMPONENT_FAULT)
    assert not alarms(evs, "device-fault") and not of(evs, "device.fault")


def test_fault_code_during_play_voids_and_latches(h: WheelHarness):
    h.place_bets(4)
    h.ball_launched(2)
    evs = h.says("*F 5")
    assert invalid_spin(evs) == "component-fault"
    (f,) = of(evs, "device.fault")
    assert f["code"] == 5 and f["meaning"] == "motor"
    assert alarms(evs, "device-fault")[0]["code"] == 5


def test_a_silent_drop_to_table_closed_mid_spin_is_a_component_fault(h: WheelHarness):
    h.place_bets(4)
    h.ball_launched(4)
    evs = h.no_more_bets(3) + h.table_closed(1)
    assert invalid_spin(evs) == "component-fault"
    assert alarms(evs, "device-fault")
    assert "silent drop" in of(evs, "device.fault")[0]["meaning"]


def test_table_closed_after_lost_frames_is_not_a_fault_but_a_result_not_seen(h: WheelHarness):
    h.place_bets(4)
    h.ball_launched(4)
    h.no_more_bets(3)
    evs = h.table_closed(1, after=90)
    assert invalid_spin(evs) == "result-not-seen"
    assert not alarms(evs, "device-fault")


def test_table_closed_between_games_is_no_fault(h: WheelHarness):
    h.spin(4, next_game=False)
    evs = h.table_closed(3) + h.before_game(2) + h.place_bets(2)
    assert invalid_spin(evs) is None and not alarms(evs, "device-fault")


def test_the_latched_fault_voids_every_spin_until_a_technician_clears_it(h: WheelHarness):
    h.place_bets(4)
    h.ball_launched(1, flags=COMPONENT_FAULT)
    h.table_closed(4)
    h.before_game(2)
    evs = h.spin(11)
    assert not results(evs)
    assert invalid_spin(evs) == "device-fault"
    (aid,) = list(h.state.alarms)
    h.cmd("alarm.clear", role="dealer", id=aid, reason="fixed")
    assert h.refused and "technician" in h.refused
    evs = h.cmd("alarm.clear", role="technician", id=aid, reason="encoder replaced")
    assert of(evs, "alarm.cleared")
    evs = h.spin(12)
    assert [(r["number"], r["round"]) for r in results(evs)] == [(12, 1)]


def test_the_latched_fault_survives_a_rebuild_from_the_journal(h: WheelHarness):
    h.place_bets(4)
    h.ball_launched(2)
    h.says("*F 6")
    # a new process: a fresh game, the state rebuilt by applying the journaled events
    table = Table(RouletteGame(h.rules), ["wheel"])
    state = table.initial()
    for t, data in h.events:
        state = table.apply(state, t, data)
    assert [a.kind for a in state.alarms.values()] == ["device-fault"]
    raw = table.encode_state(state)
    assert table.decode_state(raw) == state  # and survives a snapshot too
    h.table, h.state = table, state
    crash_restart(h)
    h.table_closed(2)
    h.before_game(2)
    evs = h.spin(3)
    assert not results(evs) and invalid_spin(evs) == "device-fault"


def test_fault_stops_play_can_be_turned_off():
    h = WheelHarness(fault_stops_play=False)
    h.power_on()
    h.place_bets(2)
    h.ball_launched(1, flags=COMPONENT_FAULT)
    h.place_bets(2)
    evs = h.spin(19)
    assert numbers(evs) == [19]


# -- sanity: counter and state sequence --------------------------------------------------------


def test_counter_jump_is_an_alarm_with_its_frames(h: WheelHarness):
    h.spin(1)
    h.counter_moves(4)
    evs = h.place_bets(1)
    (a,) = alarms(evs, "spin-counter")
    assert a["frames"] == ["*X;5;001; 1;0;170;1", "*X;2;006; 1;0;170;1"]


def test_counter_going_backwards_is_an_alarm(h: WheelHarness):
    h.spin(1)
    h.spin(2)
    evs = h.place_bets(1, counter=1)
    assert alarms(evs, "spin-counter")


def test_counter_wrap_restart_and_gaps_are_no_alarm(h: WheelHarness):
    h.counter = 256
    h.place_bets(1, after=30)  # after a gap: not judged
    h.spin(3)  # 256 → 1 is the wrap
    assert h.counter == 257
    h.counter = 1
    evs = h.place_bets(1)
    evs += h.table_closed(2) + h.before_game(1, counter=1) + h.place_bets(1, counter=1)
    h.counter = 57
    evs += h.place_bets(1, after=3600)
    assert not alarms(h.events, "spin-counter")


def test_an_impossible_sequence_is_an_alarm_and_voids_the_spin_it_lands_in(h: WheelHarness):
    h.spin(8)
    h.place_bets(4)
    h.shows(26)
    evs = h.number_line(26, after=0.3) + h.winning_number(2)  # bets straight to the number
    assert not results(evs)
    (a,) = alarms(evs, "impossible-state")
    assert a["frames"][-1].startswith("*X;5;")
    assert invalid_spin(evs) == "impossible-state"
    assert alarms(evs, "number-out-of-sequence")  # the line came while bets were open


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (PLACE_BETS, NO_MORE_BETS),
        (BEFORE_GAME, BALL_IN_RIM),
        (TABLE_CLOSED, WINNING_NUMBER),
        (BALL_IN_RIM, WINNING_NUMBER),
    ],
    ids=["bets-to-no-more-bets", "before-game-to-ball", "closed-to-number", "ball-to-number"],
)
def test_other_impossible_sequences(h: WheelHarness, a: int, b: int):
    h.place_bets(2)
    h.status(a, 2)
    evs = h.status(b, 1)
    assert alarms(evs, "impossible-state")
    assert not results(evs)


def test_a_sequence_across_lost_frames_is_not_judged_and_the_result_stands(h: WheelHarness):
    """The real capture has bets → (34 s of nothing) → winning number: that frame carries it."""
    h.place_bets(4)
    h.shows(14)
    evs = h.winning_number(2, after=34.5)
    assert not alarms(evs, "impossible-state")
    (res,) = results(evs)
    assert res["number"] == 14 and res["complete"] is False and res["source"] == "status"
    starts = of(evs, "spin.started")
    assert starts and starts[0]["late"] is True and of(evs, "betting.closed")


def test_a_spin_whose_result_was_lost_is_void_when_the_wheel_moves_on(h: WheelHarness):
    h.place_bets(4)
    h.ball_launched(4)
    h.no_more_bets(4)
    h.counter_moves()
    h.shows(11)
    evs = h.place_bets(1, after=600)
    (void,) = invalid_spins(evs)
    assert void["reason"] == "result-not-seen" and void["wheel_spin"] == 1
    assert of(evs, "wheel.resync")[0]["gap"] == 600
    assert of(evs, "betting.opened")[0]["respin"] is True


def test_joining_a_wheel_mid_game_gives_no_result_for_that_game():
    h = WheelHarness()
    h.shows(9)
    evs = h.no_more_bets(3) + h.winning_number(3)
    assert not results(evs) and invalid_spin(evs) is None
    assert h.g.phase == "joined"
    h.counter_moves()
    evs = h.spin(16)
    assert [(r["number"], r["round"]) for r in results(evs)] == [(16, 1)]


def test_a_bare_line_before_any_status_frame_is_not_a_result():
    """The real capture starts with ` 1` before any status frame."""
    h = WheelHarness()
    evs = h.number_line(1)
    assert evs == []


def test_repeat_number_without_a_ball_launched_is_an_alarm_and_no_result(h: WheelHarness):
    h.spin(33)
    h.place_bets(2)
    evs = h.number_line(33)
    (a,) = alarms(evs, "repeat-number")
    assert a["frames"] == ["33"]
    assert not results(evs)


def test_the_same_number_on_two_real_spins_is_fine(h: WheelHarness):
    h.spin(33)
    evs = h.spin(33)
    assert numbers(evs) == [33]
    assert not alarms(h.events, "repeat-number")


# -- Mercury 360 --------------------------------------------------------------------------------


def ext(revs: int, ball: str, pocket: str = "??") -> str:
    return f";0002;{revs:02X};{ball};0A000;{pocket}"


def mercury_game(h: WheelHarness, number: int, revs: int, ball: str, rotor: int) -> Evs:
    out = h.place_bets(2, ext=";0002;00;?;?????;??", rotor=rotor, rpm=240)
    out += h.ball_launched(3, ext=ext(1, ball), rotor=rotor, rpm=240)
    out += h.no_more_bets(3, ext=ext(revs - 1, ball), rotor=rotor, rpm=240)
    out += h.number_line(number, after=0.3)
    h.shows(number)
    out += h.winning_number(2, ext=ext(revs, ball, f"{number:02d}"), rotor=rotor, rpm=240)
    h.counter_moves()
    return out


@pytest.mark.parametrize(
    ("minimum", "revs", "valid"), [(3, 2, False), (3, 3, True), (4, 3, False), (4, 4, True)]
)
def test_mercury_minimum_ball_revolutions(minimum: int, revs: int, valid: bool):
    h = WheelHarness("extended", min_ball_revolutions=minimum)
    h.before_game(2, ext=";0002;00;?;?????;??", rpm=240)
    evs = mercury_game(h, 20, revs, "0", rotor=1)
    if valid:
        assert results(evs)[0]["ball_revolutions"] == revs
    else:
        assert not results(evs)
        void = invalid_spins(evs)[0]
        assert void["reason"] == "ball-revolutions" and f"at least {minimum}" in void["rule"]


def test_mercury_ball_with_the_rotor_is_void_unless_the_house_says_otherwise():
    h = WheelHarness("extended")
    h.before_game(2, ext=";0002;00;?;?????;??", rpm=240)
    evs = mercury_game(h, 20, 10, "1", rotor=1)  # ball and rotor both anticlockwise
    assert not results(evs) and invalid_spin(evs) == "ball-direction"
    h = WheelHarness("extended", require_ball_against_rotor=False)
    h.before_game(2, ext=";0002;00;?;?????;??", rpm=240)
    evs = mercury_game(h, 20, 10, "1", rotor=1)
    assert [r["ball_direction"] for r in results(evs)] == ["anticlockwise"]


def test_mercury_void_flag_voids_and_the_re_spin_in_the_same_game_settles_the_round():
    h = WheelHarness("advanced")
    h.before_game(2, rpm=240)
    h.place_bets(2, rpm=240)
    h.ball_launched(2, rpm=240)
    evs = h.no_more_bets(2, rpm=240, flags=WHEEL_VOID)
    assert invalid_spin(evs) == "wheel-void"
    evs = h.ball_launched(2, rpm=240) + h.no_more_bets(2, rpm=240) + h.number_line(6)
    h.shows(6)
    evs += h.winning_number(1, rpm=240)
    assert not alarms(evs, "impossible-state")
    (res,) = results(evs)
    assert (res["number"], res["round"], res["respin"]) == (6, 1, True)


def test_mercury_rotor_speed_flag_is_logged_and_the_game_goes_on():
    h = WheelHarness("advanced")
    h.before_game(2, rpm=240)
    h.place_bets(2, rpm=240)
    evs = (
        h.ball_launched(3, rpm=240, flags=ROTOR_SPEED)
        + h.no_more_bets(12, rpm=240, flags=ROTOR_SPEED)
        + h.number_line(35)
    )
    h.shows(35)
    evs += h.winning_number(1, rpm=240, flags=ROTOR_SPEED)
    assert of(evs, "wheel.flags")[0]["names"] == ["rotor speed out of limits"]
    assert numbers(evs) == [35]


def test_mercury_basic_level():
    h = WheelHarness("basic")
    evs = h.says("*S", 1) + h.says("*N", 9) + h.says("*W 17", 12)
    assert types(evs) == ["spin.started", "betting.closed", "spin.result"]
    assert results(evs)[0]["number"] == 17
    evs = h.says("*W 17", 3)  # again, with no *S between: a stuck sensor
    assert alarms(evs, "repeat-number") and not results(evs)
    evs = h.says("*S", 10) + h.says("*N", 9) + h.says("*S", 12)  # a new game before the number
    assert invalid_spin(evs) == "no-winning-number"
    evs = h.says("*N", 9) + h.says("*W 2", 12)
    assert [(r["number"], r["round"]) for r in results(evs)] == [(2, 2)]


# -- system failure and supervisor commands ------------------------------------------------------


def test_system_failure_voids_the_spin_in_play_only_when_the_house_says_so():
    for on in (False, True):
        h = WheelHarness(void_on_system_failure=on)
        h.power_on()
        h.place_bets(4)
        h.ball_launched(2)
        evs = h.run(DeviceHealth("wheel", "disconnected", "unplugged", h.t))
        voids = invalid_spins(evs)
        assert [v["reason"] for v in voids] == (["system-failure"] if on else [])


def crash_restart(h: WheelHarness, boot: str | None = "boot-1") -> Evs:
    """The daemon died without ``daemon.stopped`` and starts again on the journaled state
    (on the same boot unless told: the monotonic clock goes on)."""
    out = []
    info = {"version": "0.1.0", "pid": 1, "recovered_seq": len(h.events), "boot": boot}
    d = h.table.started(h.state, info)
    for x in d.drafts:
        h.state = h.table.apply(h.state, x.type, x.data)
        out.append((x.type, x.data))
    h.restarted()  # a new process
    return out


def test_a_crash_mid_spin_voids_when_the_house_says_so():
    for on in (False, True):
        h = WheelHarness(void_on_system_failure=on)
        crash_restart(h)  # the first start: from now on the journal says "running"
        h.power_on()
        h.place_bets(4)
        h.ball_launched(2)
        evs = crash_restart(h)
        voids = [d["reason"] for d in invalid_spins(evs)]
        assert voids == (["system-failure"] if on else [])


def test_after_a_restart_frames_resume_without_judging_across_the_gap(h: WheelHarness):
    h.place_bets(4)
    h.ball_launched(4)
    h.no_more_bets(4)
    crash_restart(h)
    h.shows(10)
    evs = h.winning_number(1, after=0.5)
    assert types(evs)[0] == "wheel.resync"
    assert numbers(evs) == [10]


def reboot(h: WheelHarness, mono: float, boot: str | None = "boot-2") -> Evs:
    """Power lost and back: a new process on the journaled state, the monotonic clock anew."""
    out = crash_restart(h, boot)
    h.t = mono
    return out


def ball_missing_for_2_s(h: WheelHarness) -> None:
    crash_restart(h)  # the daemon's start on boot-1
    h.power_on()
    h.place_bets(4)
    h.ball_launched(4)
    h.no_more_bets(2)
    h.no_more_bets(5, flags=BALL_MISSING)


def test_a_ball_missing_flag_held_across_a_reboot_still_voids():
    """Issue 18 #11: the saved window start is on the last boot's clock (about 110 s up);
    the new boot's clock starts near 0, and the window must still run out."""
    h = WheelHarness()
    ball_missing_for_2_s(h)
    reboot(h, 5.0)
    evs = h.no_more_bets(40, flags=BALL_MISSING)  # 20 s of it seen after the reboot
    (void,) = invalid_spins(evs)
    assert void["reason"] == "ball-missing"
    # the window started again at the first frame of the new boot: 5 s of it, not before
    assert void["mono"] - of(evs, "wheel.resync")[0]["mono"] == pytest.approx(5.0)


@pytest.mark.parametrize("mono", [5.0, 100_000.0], ids=["shorter-clock", "longer-clock"])
@pytest.mark.parametrize("boot", ["boot-2", None], ids=["new-boot", "boot-unknown"])
def test_after_a_reboot_a_window_counts_only_this_boots_frames(mono: float, boot: str | None):
    """Issue 18 #11: a longer-running new boot must not void at once on time nobody
    measured; a boot that cannot be told (no boot id) counts as a new one."""
    h = WheelHarness()
    crash_restart(h)
    h.power_on()
    h.place_bets(4)
    h.ball_launched(1)
    h.ball_launched(2, flags=LAUNCH_FAILED)  # the launch failing for 0.5 s before the power loss
    reboot(h, mono, boot)
    evs = h.ball_launched(6, flags=LAUNCH_FAILED)  # 0 .. 2.5 s into the new boot: nothing yet
    assert alarms(evs, "launch-failure") == [] and invalid_spin(evs) is None
    evs = h.ball_launched(1, flags=LAUNCH_FAILED)  # 3.0 s
    assert alarms(evs, "launch-failure")
    evs = h.ball_launched(5, flags=LAUNCH_FAILED)  # 5.5 s
    assert invalid_spin(evs) is None
    evs = h.ball_launched(1, flags=LAUNCH_FAILED)  # 6.0 s
    assert invalid_spin(evs) == "launch-failure"


def test_a_restart_on_the_same_boot_keeps_the_window():
    """The clock goes on across a daemon restart: a flag seen set on both sides has not been
    seen to clear (the same rule as for lost frames)."""
    h = WheelHarness()
    ball_missing_for_2_s(h)
    crash_restart(h)
    evs = h.no_more_bets(1, flags=BALL_MISSING, after=3.5)
    assert of(evs, "wheel.resync") and invalid_spin(evs) == "ball-missing"


def test_supervisor_void_command(h: WheelHarness):
    h.cmd("spin.void", reason="ball jumped out")
    assert h.refused and "no spin is in play" in h.refused
    h.place_bets(4)
    h.ball_launched(2)
    h.cmd("spin.void", role="dealer", reason="x")
    assert h.refused and "supervisor" in h.refused
    evs = h.cmd("spin.void", reason="foreign object")
    (void,) = invalid_spins(evs)
    assert void["reason"] == "foreign object" and void["by"] == "pit"


def test_device_replies_are_events_for_the_technician(h: WheelHarness):
    h.proto.sent(b"*T D\r\n", h.t)
    evs = h.says("*T d 15")
    assert of(evs, "device.reply") == [{"device": "wheel", "command": "*T D", "text": "d 15"}]


def test_summary_reads_like_the_table(h: WheelHarness):
    h.spin(2)
    s = h.table.game.summary(h.g)  # type: ignore[attr-defined]
    assert s["round"] == 2 and s["last_number"] == 2 and s["phase"] == "settled"


# -- no exception, whatever the input ----------------------------------------------------------

_status = st.builds(
    WheelStatus,
    state=st.integers(1, 7),
    spin=st.integers(0, 256),
    last_number=st.none() | st.integers(0, 37),
    flags=st.integers(0, 15),
    rpm=st.floats(0, 99.9),
    direction=st.sampled_from(["clockwise", "anticlockwise"]),
    ball_revolutions=st.none() | st.integers(0, 255),
    ball_direction=st.none() | st.sampled_from(["clockwise", "anticlockwise", "unknown"]),
)
_reading = st.one_of(
    _status,
    _status,
    _status,
    st.builds(WinningNumber, number=st.integers(0, 37)),
    st.builds(GameEvent, what=st.sampled_from(["started", "no-more-bets"])),
    st.builds(WheelFault, code=st.integers(0, 100), meaning=st.just("x")),
    st.builds(DeviceReply, command=st.just("*T D"), text=st.just("d 15")),
)
_input = st.tuples(
    st.floats(0, 40), _reading | st.sampled_from(["stale", "ok", "restart", "void", "clear"])
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(["ss2", "m360"]),
    system=st.booleans(),
    steps=st.lists(_input, max_size=80),
)
def test_any_input_never_raises_and_keeps_the_invariants(
    model: str, system: bool, steps: list[Any]
):
    h = WheelHarness(wheel_model=model, void_on_system_failure=system, double_zero=model == "m360")
    for dt, what in steps:
        h.t += dt
        if what == "stale":
            h.run(DeviceHealth("wheel", "stale", "silent", h.t))
        elif what == "ok":
            h.run(DeviceHealth("wheel", "ok", "back", h.t))
        elif what == "restart":
            crash_restart(h)
        elif what == "void":
            h.cmd("spin.void", reason="x")
        elif what == "clear":
            h.cmd("alarm.clear", role="technician", id="all", reason="x")
        else:
            h.run(DeviceReading("wheel", what, h.t))
    # every result follows its spin's start and no-more-bets, once per spin; never after a void
    open_spin: dict[str, Any] = {}
    for t, data in h.events:
        if t == "spin.started":
            open_spin = {"spin": data["spin"], "round": data["round"], "closed": False}
        elif t == "betting.closed":
            assert open_spin and data["spin"] == open_spin["spin"]
            open_spin["closed"] = True
        elif t in ("spin.result", "spin.void"):
            assert open_spin and data["spin"] == open_spin["spin"]
            assert data["round"] == open_spin["round"]
            if t == "spin.result":
                assert open_spin["closed"]
                assert 0 <= data["number"] <= (37 if model == "m360" else 36)
            open_spin = {}
    rounds = [d["round"] for t, d in h.events if t == "spin.result"]
    assert rounds == list(range(1, len(rounds) + 1))
