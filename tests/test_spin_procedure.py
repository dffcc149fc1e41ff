"""The roulette spin procedure through the real table and the real Cammegh protocols (pure, no I/O).

Frames are written as the wheel sends them and fed through ``SS2Protocol`` /
``M360Protocol``, one every 500 ms of an injected clock, so each test reads
like wire traffic. Every validity rule and every exception of the vendor's
table has a test here that fails when the rule is broken.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.games.roulette.table import RouletteGame, RouletteRules, RouletteState
from daemon.table import Command, DeviceHealth, DeviceReading, Table
from drivers.cammegh import M360Protocol, SS2Protocol
from drivers.readings import (
    DeviceReply,
    GameEvent,
    WheelFault,
    WheelStatus,
    WinningNumber,
)

Ev = tuple[str, dict[str, Any]]


class Harness:
    def __init__(self, level: str | None = None, **rules: Any) -> None:
        if level is not None:
            rules.setdefault("wheel_model", "m360")
        self.rules = msgspec.convert(rules, RouletteRules)
        self.table = Table(RouletteGame(self.rules), ["wheel"])
        self.state = self.table.initial()
        dz = self.rules.double_zero
        self.proto = SS2Protocol(dz) if level is None else M360Protocol(level, dz)  # type: ignore[arg-type]
        self.t = 100.0
        self.events: list[Ev] = []
        self.refused: str | None = None
        self.spin_no = 1  # the wheel's counter
        self.last = "  "  # the wheel's last-number field

    # -- feeding ---------------------------------------------------------------------------

    def run(self, inp: Any) -> list[Ev]:
        d = self.table.decide(self.state, inp)
        self.refused = d.refused
        out = []
        for x in d.drafts:
            self.state = self.table.apply(self.state, x.type, x.data)
            out.append((x.type, x.data))
        self.events += out
        return out

    def rx(self, line: str, dt: float = 0.5) -> list[Ev]:
        self.t += dt
        out: list[Ev] = []
        for r in self.proto.feed(line.encode("ascii") + b"\r\n", self.t):
            assert isinstance(
                r, WheelStatus | WinningNumber | GameEvent | WheelFault | DeviceReply
            ), r
            out += self.run(DeviceReading("wheel", r, self.t))
        return out

    def x(
        self,
        state: int,
        n: int = 1,
        *,
        flags: int = 0,
        win: str | None = None,
        spin: int | None = None,
        dt: float = 0.5,
        rpm: int = 170,
        rotor: int = 1,
        ext: str = "",
    ) -> list[Ev]:
        """``n`` status frames in ``state`` (each 500 ms after the last)."""
        out: list[Ev] = []
        w = self.last if win is None else win
        s = self.spin_no if spin is None else spin
        for _ in range(n):
            out += self.rx(f"*X;{state};{s:03d};{w};{flags:X};{rpm:03d};{rotor}{ext}", dt)
        return out

    def cmd(self, name: str, role: str = "supervisor", **args: Any) -> list[Ev]:
        return self.run(Command(name, args, "pit", role, mono=self.t))

    def game(self, number: int | None, *, line: bool = True, next_game: bool = True) -> list[Ev]:
        """One normal game: 2 (bets) → 3 (ball in rim) → 4 (no more bets) → line → 5 → next 2."""
        out = self.x(2, 4) + self.x(3, 4) + self.x(4, 6)
        if number is not None and line:
            out += self.rx(f"{number:>2}", 0.3)
        self.last = "  " if number is None else f"{number:>2}"
        out += self.x(5, 3)
        if next_game:
            self.spin_no += 1
        return out

    def start(self) -> None:
        """Power on: 6 → 1, the table sees the wheel start."""
        self.x(6, 2)
        self.x(1, 2)

    @property
    def g(self) -> RouletteState:
        return self.state.game  # type: ignore[no-any-return]


def of(evs: list[Ev], t: str) -> list[dict[str, Any]]:
    return [d for x, d in evs if x == t]


def types(evs: list[Ev]) -> list[str]:
    return [x for x, _ in evs]


def alarms(evs: list[Ev], kind: str) -> list[dict[str, Any]]:
    return [d for d in of(evs, "alarm.raised") if d["kind"] == kind]


@pytest.fixture
def h() -> Harness:
    h = Harness()
    h.start()
    return h


# -- a normal spin --------------------------------------------------------------------------


def test_a_normal_spin_publishes_open_start_close_result(h: Harness):
    evs = h.game(23)
    wanted = ["betting.opened", "spin.started", "betting.closed", "wheel.number", "spin.result"]
    assert [t for t in types(evs) if t in wanted] == wanted
    started = of(evs, "spin.started")[0]
    assert started["rotor_direction"] == "anticlockwise" and started["rotor_rpm"] == 17.0
    assert started["round"] == 1 and started["spin"] == 1 and started["wheel_spin"] == 1
    res = of(evs, "spin.result")[0]
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


def test_only_changes_are_journaled_not_every_frame(h: Harness):
    evs = h.x(2, 20)
    assert types(evs) == ["betting.opened"]


def test_the_table_spin_counter_never_wraps_while_the_wheel_counter_does(h: Harness):
    h.spin_no = 255
    h.x(2, 1, dt=30)  # frames lost meanwhile: the counter is not judged across the gap
    for i in range(3):
        h.game(7 + i)
        if h.spin_no == 257:
            h.spin_no = 1
    res = of(h.events, "spin.result")
    assert [r["wheel_spin"] for r in res] == [255, 256, 1]
    assert [r["spin"] for r in res] == [1, 2, 3]
    assert not alarms(h.events, "spin-counter")


# -- the number: only on entering state 5 or from the bare line -----------------------------


def test_states_3_and_4_never_give_a_result_from_the_stale_number_field(h: Harness):
    h.game(31)
    evs = h.x(2, 4) + h.x(3, 6) + h.x(4, 12)  # the field still says 31
    assert of(evs, "spin.result") == []
    h.last = " 8"
    evs = h.x(5, 2)
    assert [r["number"] for r in of(evs, "spin.result")] == [8]


def test_state_5_without_the_bare_line_gives_the_status_number(h: Harness):
    evs = h.game(14, line=False)
    res = of(evs, "spin.result")
    assert [(r["number"], r["source"]) for r in res] == [(14, "status")]


def test_a_number_line_then_a_lost_state_5_gives_the_line_number():
    h = Harness()
    h.start()
    h.x(2, 4)
    h.x(3, 4)
    h.x(4, 6)
    h.rx("17", 0.3)
    h.spin_no += 1
    evs = h.x(2, 1, dt=40)  # the state-5 frames were lost
    res = of(evs, "spin.result")
    assert [(r["number"], r["source"], r["wheel_spin"]) for r in res] == [(17, "number-line", 1)]


def test_state_5_with_no_number_is_void_and_the_next_result_is_the_same_round(h: Harness):
    evs = h.game(None)
    assert of(evs, "spin.result") == []
    (void,) = of(evs, "spin.void")
    assert void["reason"] == "no-winning-number" and void["round"] == 1
    evs = h.game(9)
    (res,) = of(evs, "spin.result")
    assert res["round"] == 1 and res["spin"] == 2 and res["respin"] is True
    assert h.g.round == 2


def test_number_line_and_state_5_disagreeing_is_an_alarm_and_a_void(h: Harness):
    h.x(2, 4)
    h.x(3, 4)
    h.x(4, 6)
    h.rx("17", 0.3)
    h.last = "18"
    evs = h.x(5, 2)
    assert of(evs, "spin.result") == []
    assert of(evs, "spin.void")[0]["reason"] == "number-mismatch"
    assert alarms(evs, "number-mismatch")


def test_double_zero_is_settled_as_00():
    h = Harness(double_zero=True)
    h.proto = SS2Protocol(double_zero=True)
    h.start()
    h.x(2, 4)
    h.x(3, 4)
    h.x(4, 6)
    h.rx("00", 0.3)
    h.last = "00"
    (res,) = of(h.x(5, 1), "spin.result")
    assert res["number"] == 37 and res["pocket"] == "00" and res["color"] == "green"
    assert res["layout"] == "double-zero"


def test_a_00_on_a_single_zero_table_is_void_never_a_result():
    h = Harness()  # the table is single zero ...
    h.proto = SS2Protocol(double_zero=True)  # ... but the driver was configured double zero
    h.start()
    evs = h.game(None, line=False, next_game=False)
    h.last = "00"
    evs = h.x(2, 4) + h.x(3, 4) + h.x(4, 6) + h.x(5, 1)
    assert of(evs, "spin.result") == []
    assert alarms(evs, "invalid-number")


# -- validity: the vendor's exception table and seed 003 IV §3.1.1 --------------------------


def test_flag_2_in_state_3_voids_and_asks_for_the_acknowledgement(h: Harness):
    evs = h.x(2, 4) + h.x(3, 1) + h.x(3, 2, flags=2)
    (void,) = of(evs, "spin.void")
    assert void["reason"] == "ball-direction" and void["acknowledge"] is True
    assert "seed 003 IV §3.1.1" in void["rule"] and "exception table" in void["rule"]
    assert void["frames"][-1].startswith("*X;3;001;") and ";2;" in void["frames"][-1]


def test_a_void_never_gives_a_result_and_the_re_spin_belongs_to_the_same_round(h: Harness):
    h.game(5)
    evs = h.x(2, 4) + h.x(3, 2, flags=2)
    assert of(evs, "spin.void")[0]["round"] == 2
    # the wheel goes on anyway (no *R): its number is not the table's
    h.last = "12"
    evs = h.x(3, 2) + h.x(4, 4) + h.rx("12") + h.x(5, 3)
    assert of(evs, "spin.result") == []
    # the wheel re-spins the same game (after *R: state 1 then 2)
    evs = h.x(1, 1) + h.x(2, 4) + h.x(3, 4) + h.x(4, 6) + h.rx("30")
    h.last = "30"
    evs += h.x(5, 2)
    assert of(evs, "betting.opened")[0]["respin"] is True
    (res,) = of(evs, "spin.result")
    assert (res["number"], res["round"], res["spin"], res["respin"]) == (30, 2, 3, True)


def test_flag_2_in_state_2_is_a_misfire_not_a_void(h: Harness):
    """Real traffic [cap]: flag 2 shows only in state 2, and that spin went on to a result."""
    evs = h.x(2, 2) + h.x(2, 3, flags=2) + h.x(2, 2, flags=8) + h.x(2, 1)
    assert of(evs, "spin.void") == []
    evs = h.game(15)
    assert [r["number"] for r in of(evs, "spin.result")] == [15]


def test_launch_failure_in_state_3_alarms_after_3_s_and_voids_after_6_s(h: Harness):
    h.x(2, 4)
    h.x(3, 1)
    evs = h.x(3, 6, flags=8)  # 0.0 .. 2.5 s
    assert alarms(evs, "launch-failure") == [] and of(evs, "spin.void") == []
    evs = h.x(3, 1, flags=8)  # 3.0 s
    (a,) = alarms(evs, "launch-failure")
    assert a["severity"] == "warning" and "3 s" in a["rule"]
    evs = h.x(3, 5, flags=8)  # .. 5.5 s
    assert of(evs, "spin.void") == []
    evs = h.x(3, 1, flags=8)  # 6.0 s
    assert of(evs, "spin.void")[0]["reason"] == "launch-failure"
    evs = h.x(2, 1)  # the wheel re-spins: flag 8 gone, the alarm clears itself
    assert of(evs, "alarm.cleared")[0]["id"] == a["id"]


def test_launch_failure_that_clears_in_time_keeps_the_spin(h: Harness):
    h.x(2, 4)
    h.x(3, 1)
    evs = h.x(3, 7, flags=8) + h.x(3, 2)
    assert alarms(evs, "launch-failure") and of(evs, "alarm.cleared")
    h.last = "21"
    evs = h.x(4, 4) + h.rx("21") + h.x(5, 1)
    assert [r["number"] for r in of(evs, "spin.result")] == [21]


def test_launch_failure_windows_are_settings():
    h = Harness(launch_fail_window=1.0, launch_fail_void_after=2.0)
    h.start()
    h.x(2, 4)
    evs = h.x(3, 3, flags=8)  # 0, 0.5, 1.0 s
    assert alarms(evs, "launch-failure") and not of(evs, "spin.void")
    evs = h.x(3, 2, flags=8)  # 1.5, 2.0 s
    assert of(evs, "spin.void")[0]["reason"] == "launch-failure"
    with pytest.raises(ValueError, match="must not be shorter"):
        RouletteRules(launch_fail_window=3.0, launch_fail_void_after=1.0)


def test_flag_8_in_state_2_is_an_alarm_that_clears_itself_never_a_void(h: Harness):
    evs = h.x(2, 1) + h.x(2, 20, flags=8)
    assert alarms(evs, "launch-failure") and of(evs, "spin.void") == []
    evs = h.x(3, 1)
    assert of(evs, "alarm.cleared") and h.state.alarms == {}


def test_ball_missing_in_state_4_voids_after_5_s(h: Harness):
    h.x(2, 4)
    h.x(3, 4)
    h.x(4, 2)
    evs = h.x(4, 10, flags=1)  # 0 .. 4.5 s: the vendor says ignore
    assert of(evs, "spin.void") == []
    evs = h.x(4, 1, flags=1)  # 5.0 s
    assert of(evs, "spin.void")[0]["reason"] == "ball-missing"


def test_ball_missing_window_is_a_setting():
    h = Harness(ball_missing_window=2.0)
    h.start()
    h.x(2, 4)
    h.x(3, 4)
    evs = h.x(4, 4, flags=1)  # 0 .. 1.5 s
    assert not of(evs, "spin.void")
    assert of(h.x(4, 1, flags=1), "spin.void")[0]["reason"] == "ball-missing"


def test_ss2_state_7_ball_not_detected_in_track_voids_after_the_window(h: Harness):
    h.x(2, 4)
    h.x(3, 4)
    evs = h.x(7, 10)
    assert not of(evs, "spin.void")
    assert of(h.x(7, 1), "spin.void")[0]["reason"] == "ball-missing"


def test_a_flag_that_clears_restarts_its_window(h: Harness):
    h.x(2, 4)
    h.x(3, 4)
    h.x(4, 8, flags=1)
    h.x(4, 1)
    evs = h.x(4, 8, flags=1)  # 3.5 s since it came back
    assert not of(evs, "spin.void")


# -- component faults, latched ---------------------------------------------------------------


def test_flag_4_voids_and_latches_a_device_fault(h: Harness):
    evs = h.x(2, 4) + h.x(3, 2) + h.x(3, 1, flags=4)
    assert of(evs, "spin.void")[0]["reason"] == "component-fault"
    (a,) = alarms(evs, "device-fault")
    assert a["severity"] == "supervisor" and "*F" in a["action"]
    (f,) = of(evs, "device.fault")
    assert f["alarm"] == a["id"] and f["code"] is None
    # the flag stays: no second alarm, no second fault event
    evs = h.x(3, 3, flags=4)
    assert not alarms(evs, "device-fault") and not of(evs, "device.fault")


def test_fault_code_during_play_voids_and_latches(h: Harness):
    h.x(2, 4)
    h.x(3, 2)
    evs = h.rx("*F 5")
    assert of(evs, "spin.void")[0]["reason"] == "component-fault"
    (f,) = of(evs, "device.fault")
    assert f["code"] == 5 and f["meaning"] == "motor"
    assert alarms(evs, "device-fault")[0]["code"] == 5


def test_a_silent_drop_to_state_6_mid_spin_is_a_component_fault(h: Harness):
    h.x(2, 4)
    h.x(3, 4)
    evs = h.x(4, 3) + h.x(6, 1)
    assert of(evs, "spin.void")[0]["reason"] == "component-fault"
    assert alarms(evs, "device-fault")
    assert "silent drop" in of(evs, "device.fault")[0]["meaning"]


def test_state_6_after_lost_frames_is_not_a_fault_but_a_result_not_seen(h: Harness):
    h.x(2, 4)
    h.x(3, 4)
    h.x(4, 3)
    evs = h.x(6, 1, dt=90)
    assert of(evs, "spin.void")[0]["reason"] == "result-not-seen"
    assert not alarms(evs, "device-fault")


def test_state_6_between_games_is_no_fault(h: Harness):
    h.game(4, next_game=False)
    evs = h.x(6, 3) + h.x(1, 2) + h.x(2, 2)
    assert not of(evs, "spin.void") and not alarms(evs, "device-fault")


def test_the_latched_fault_voids_every_spin_until_a_technician_clears_it(h: Harness):
    h.x(2, 4)
    h.x(3, 1, flags=4)
    h.x(6, 4)
    h.x(1, 2)
    evs = h.game(11)
    assert of(evs, "spin.result") == []
    assert of(evs, "spin.void")[0]["reason"] == "device-fault"
    (aid,) = list(h.state.alarms)
    h.cmd("alarm.clear", role="dealer", id=aid, reason="fixed")
    assert h.refused and "technician" in h.refused
    evs = h.cmd("alarm.clear", role="technician", id=aid, reason="encoder replaced")
    assert of(evs, "alarm.cleared")
    evs = h.game(12)
    assert [(r["number"], r["round"]) for r in of(evs, "spin.result")] == [(12, 1)]


def test_the_latched_fault_survives_a_rebuild_from_the_journal(h: Harness):
    h.x(2, 4)
    h.x(3, 2)
    h.rx("*F 6")
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
    h.x(6, 2)
    h.x(1, 2)
    evs = h.game(3)
    assert of(evs, "spin.result") == [] and of(evs, "spin.void")[0]["reason"] == "device-fault"


def test_fault_stops_play_can_be_turned_off():
    h = Harness(fault_stops_play=False)
    h.start()
    h.x(2, 2)
    h.x(3, 1, flags=4)
    h.x(2, 2)
    evs = h.game(19)
    assert [r["number"] for r in of(evs, "spin.result")] == [19]


# -- sanity: counter and state sequence --------------------------------------------------------


def test_counter_jump_is_an_alarm_with_its_frames(h: Harness):
    h.game(1)
    h.spin_no += 4
    evs = h.x(2, 1)
    (a,) = alarms(evs, "spin-counter")
    assert a["frames"] == ["*X;5;001; 1;0;170;1", "*X;2;006; 1;0;170;1"]


def test_counter_going_backwards_is_an_alarm(h: Harness):
    h.game(1)
    h.game(2)
    evs = h.x(2, 1, spin=1)
    assert alarms(evs, "spin-counter")


def test_counter_wrap_restart_and_gaps_are_no_alarm(h: Harness):
    h.spin_no = 256
    h.x(2, 1, dt=30)  # after a gap: not judged
    h.game(3)  # 256 → 1 is the wrap
    assert h.spin_no == 257
    h.spin_no = 1
    evs = h.x(2, 1)
    evs += h.x(6, 2) + h.x(1, 1, spin=1) + h.x(2, 1, spin=1)
    h.spin_no = 57
    evs += h.x(2, 1, dt=3600)
    assert not alarms(h.events, "spin-counter")


def test_an_impossible_sequence_is_an_alarm_and_voids_the_spin_it_lands_in(h: Harness):
    h.game(8)
    h.x(2, 4)
    h.last = "26"
    evs = h.rx("26", 0.3) + h.x(5, 2)  # 2 straight to 5
    assert of(evs, "spin.result") == []
    (a,) = alarms(evs, "impossible-state")
    assert a["frames"][-1].startswith("*X;5;")
    assert of(evs, "spin.void")[0]["reason"] == "impossible-state"
    assert alarms(evs, "number-out-of-sequence")  # the line came in state 2


@pytest.mark.parametrize(("a", "b"), [(2, 4), (1, 3), (6, 5), (3, 5)])
def test_other_impossible_sequences(h: Harness, a: int, b: int):
    h.x(2, 2)
    h.x(a, 2)
    evs = h.x(b, 1)
    assert alarms(evs, "impossible-state")
    assert of(evs, "spin.result") == []


def test_a_sequence_across_lost_frames_is_not_judged_and_the_result_stands(h: Harness):
    """The real capture has 2 → (34 s of nothing) → 5: the state-5 frame carries the number."""
    h.x(2, 4)
    h.last = "14"
    evs = h.x(5, 2, dt=34.5)
    assert not alarms(evs, "impossible-state")
    (res,) = of(evs, "spin.result")
    assert res["number"] == 14 and res["complete"] is False and res["source"] == "status"
    starts = of(evs, "spin.started")
    assert starts and starts[0]["late"] is True and of(evs, "betting.closed")


def test_a_spin_whose_result_was_lost_is_void_when_the_wheel_moves_on(h: Harness):
    h.x(2, 4)
    h.x(3, 4)
    h.x(4, 4)
    h.spin_no += 1
    h.last = "11"
    evs = h.x(2, 1, dt=600)
    (void,) = of(evs, "spin.void")
    assert void["reason"] == "result-not-seen" and void["wheel_spin"] == 1
    assert of(evs, "wheel.resync")[0]["gap"] == 600
    assert of(evs, "betting.opened")[0]["respin"] is True


def test_joining_a_wheel_mid_game_gives_no_result_for_that_game():
    h = Harness()
    h.last = " 9"
    evs = h.x(4, 3) + h.x(5, 3)
    assert of(evs, "spin.result") == [] and of(evs, "spin.void") == []
    assert h.g.phase == "joined"
    h.spin_no += 1
    evs = h.game(16)
    assert [(r["number"], r["round"]) for r in of(evs, "spin.result")] == [(16, 1)]


def test_a_bare_line_before_any_status_frame_is_not_a_result():
    """The real capture starts with ` 1` before any status frame."""
    h = Harness()
    evs = h.rx(" 1")
    assert evs == []


def test_repeat_number_without_a_ball_in_the_rim_is_an_alarm_and_no_result(h: Harness):
    h.game(33)
    h.x(2, 2)
    evs = h.rx("33")
    (a,) = alarms(evs, "repeat-number")
    assert a["frames"] == ["33"]
    assert of(evs, "spin.result") == []


def test_the_same_number_on_two_real_spins_is_fine(h: Harness):
    h.game(33)
    evs = h.game(33)
    assert [r["number"] for r in of(evs, "spin.result")] == [33]
    assert not alarms(h.events, "repeat-number")


# -- Mercury 360 --------------------------------------------------------------------------------


def ext(revs: int, ball: str, pocket: str = "??") -> str:
    return f";0002;{revs:02X};{ball};0A000;{pocket}"


def mercury_game(h: Harness, number: int, revs: int, ball: str, rotor: int) -> list[Ev]:
    out = h.x(2, 2, ext=";0002;00;?;?????;??", rotor=rotor, rpm=240)
    out += h.x(3, 3, ext=ext(1, ball), rotor=rotor, rpm=240)
    out += h.x(4, 3, ext=ext(revs - 1, ball), rotor=rotor, rpm=240)
    out += h.rx(f"{number:>2}", 0.3)
    h.last = f"{number:>2}"
    out += h.x(5, 2, ext=ext(revs, ball, f"{number:02d}"), rotor=rotor, rpm=240)
    h.spin_no += 1
    return out


@pytest.mark.parametrize(
    ("minimum", "revs", "valid"), [(3, 2, False), (3, 3, True), (4, 3, False), (4, 4, True)]
)
def test_mercury_minimum_ball_revolutions(minimum: int, revs: int, valid: bool):
    h = Harness("extended", min_ball_revolutions=minimum)
    h.x(1, 2, ext=";0002;00;?;?????;??", rpm=240)
    evs = mercury_game(h, 20, revs, "0", rotor=1)
    if valid:
        assert of(evs, "spin.result")[0]["ball_revolutions"] == revs
    else:
        assert of(evs, "spin.result") == []
        void = of(evs, "spin.void")[0]
        assert void["reason"] == "ball-revolutions" and f"at least {minimum}" in void["rule"]


def test_mercury_ball_with_the_rotor_is_void_unless_the_house_says_otherwise():
    h = Harness("extended")
    h.x(1, 2, ext=";0002;00;?;?????;??", rpm=240)
    evs = mercury_game(h, 20, 10, "1", rotor=1)  # ball and rotor both anticlockwise
    assert of(evs, "spin.result") == [] and of(evs, "spin.void")[0]["reason"] == "ball-direction"
    h = Harness("extended", require_ball_against_rotor=False)
    h.x(1, 2, ext=";0002;00;?;?????;??", rpm=240)
    evs = mercury_game(h, 20, 10, "1", rotor=1)
    assert [r["ball_direction"] for r in of(evs, "spin.result")] == ["anticlockwise"]


def test_mercury_flag_8_voids_and_the_re_spin_in_the_same_game_settles_the_round():
    h = Harness("advanced")
    h.x(1, 2, rpm=240)
    h.x(2, 2, rpm=240)
    h.x(3, 2, rpm=240)
    evs = h.x(4, 2, rpm=240, flags=8)
    assert of(evs, "spin.void")[0]["reason"] == "wheel-void"
    evs = h.x(3, 2, rpm=240) + h.x(4, 2, rpm=240) + h.rx(" 6")
    h.last = " 6"
    evs += h.x(5, 1, rpm=240)
    assert not alarms(evs, "impossible-state")
    (res,) = of(evs, "spin.result")
    assert (res["number"], res["round"], res["respin"]) == (6, 1, True)


def test_mercury_flag_1_is_logged_and_the_game_goes_on():
    h = Harness("advanced")
    h.x(1, 2, rpm=240)
    h.x(2, 2, rpm=240)
    evs = h.x(3, 3, rpm=240, flags=1) + h.x(4, 12, rpm=240, flags=1) + h.rx("35")
    h.last = "35"
    evs += h.x(5, 1, rpm=240, flags=1)
    assert of(evs, "wheel.flags")[0]["names"] == ["rotor speed out of limits"]
    assert [r["number"] for r in of(evs, "spin.result")] == [35]


def test_mercury_basic_level():
    h = Harness("basic")
    evs = h.rx("*S", 1) + h.rx("*N", 9) + h.rx("*W 17", 12)
    assert types(evs) == ["spin.started", "betting.closed", "spin.result"]
    assert of(evs, "spin.result")[0]["number"] == 17
    evs = h.rx("*W 17", 3)  # again, with no *S between: a stuck sensor
    assert alarms(evs, "repeat-number") and not of(evs, "spin.result")
    evs = h.rx("*S", 10) + h.rx("*N", 9) + h.rx("*S", 12)  # a new game before the number
    assert of(evs, "spin.void")[0]["reason"] == "no-winning-number"
    evs = h.rx("*N", 9) + h.rx("*W 2", 12)
    assert [(r["number"], r["round"]) for r in of(evs, "spin.result")] == [(2, 2)]


# -- system failure and supervisor commands ------------------------------------------------------


def test_system_failure_voids_the_spin_in_play_only_when_the_house_says_so():
    for on in (False, True):
        h = Harness(void_on_system_failure=on)
        h.start()
        h.x(2, 4)
        h.x(3, 2)
        evs = h.run(DeviceHealth("wheel", "disconnected", "unplugged", h.t))
        voids = of(evs, "spin.void")
        assert [v["reason"] for v in voids] == (["system-failure"] if on else [])


def crash_restart(h: Harness, boot: str | None = "boot-1") -> list[Ev]:
    """The daemon died without ``daemon.stopped`` and starts again on the journaled state
    (on the same boot unless told: the monotonic clock goes on)."""
    out = []
    info = {"version": "0.1.0", "pid": 1, "recovered_seq": len(h.events), "boot": boot}
    d = h.table.started(h.state, info)
    for x in d.drafts:
        h.state = h.table.apply(h.state, x.type, x.data)
        out.append((x.type, x.data))
    h.table = Table(RouletteGame(h.rules), ["wheel"])  # a new process
    return out


def test_a_crash_mid_spin_voids_when_the_house_says_so():
    for on in (False, True):
        h = Harness(void_on_system_failure=on)
        crash_restart(h)  # the first start: from now on the journal says "running"
        h.start()
        h.x(2, 4)
        h.x(3, 2)
        evs = crash_restart(h)
        voids = [d["reason"] for d in of(evs, "spin.void")]
        assert voids == (["system-failure"] if on else [])


def test_after_a_restart_frames_resume_without_judging_across_the_gap(h: Harness):
    h.x(2, 4)
    h.x(3, 4)
    h.x(4, 4)
    crash_restart(h)
    h.last = "10"
    evs = h.x(5, 1, dt=0.5)
    assert types(evs)[0] == "wheel.resync"
    assert [r["number"] for r in of(evs, "spin.result")] == [10]


def reboot(h: Harness, mono: float, boot: str | None = "boot-2") -> list[Ev]:
    """Power lost and back: a new process on the journaled state, the monotonic clock anew."""
    out = crash_restart(h, boot)
    h.t = mono
    return out


def ball_missing_for_2_s(h: Harness) -> None:
    crash_restart(h)  # the daemon's start on boot-1
    h.start()
    h.x(2, 4)
    h.x(3, 4)
    h.x(4, 2)
    h.x(4, 5, flags=1)


def test_a_ball_missing_flag_held_across_a_reboot_still_voids():
    """Issue 18 #11: the saved window start is on the last boot's clock (about 110 s up);
    the new boot's clock starts near 0, and the window must still run out."""
    h = Harness()
    ball_missing_for_2_s(h)
    reboot(h, 5.0)
    evs = h.x(4, 40, flags=1)  # 20 s of flag 1 seen after the reboot
    (void,) = of(evs, "spin.void")
    assert void["reason"] == "ball-missing"
    # the window started again at the first frame of the new boot: 5 s of it, not before
    assert void["mono"] - of(evs, "wheel.resync")[0]["mono"] == pytest.approx(5.0)


@pytest.mark.parametrize("mono", [5.0, 100_000.0], ids=["shorter-clock", "longer-clock"])
@pytest.mark.parametrize("boot", ["boot-2", None], ids=["new-boot", "boot-unknown"])
def test_after_a_reboot_a_window_counts_only_this_boots_frames(mono: float, boot: str | None):
    """Issue 18 #11: a longer-running new boot must not void at once on time nobody
    measured; a boot that cannot be told (no boot id) counts as a new one."""
    h = Harness()
    crash_restart(h)
    h.start()
    h.x(2, 4)
    h.x(3, 1)
    h.x(3, 2, flags=8)  # flag 8 for 0.5 s before the power loss
    reboot(h, mono, boot)
    evs = h.x(3, 6, flags=8)  # 0 .. 2.5 s into the new boot: nothing yet
    assert alarms(evs, "launch-failure") == [] and of(evs, "spin.void") == []
    evs = h.x(3, 1, flags=8)  # 3.0 s
    assert alarms(evs, "launch-failure")
    evs = h.x(3, 5, flags=8)  # 5.5 s
    assert of(evs, "spin.void") == []
    evs = h.x(3, 1, flags=8)  # 6.0 s
    assert of(evs, "spin.void")[0]["reason"] == "launch-failure"


def test_a_restart_on_the_same_boot_keeps_the_window():
    """The clock goes on across a daemon restart: a flag seen set on both sides has not been
    seen to clear (the same rule as for lost frames)."""
    h = Harness()
    ball_missing_for_2_s(h)
    crash_restart(h)
    evs = h.x(4, 1, flags=1, dt=3.5)
    assert of(evs, "wheel.resync") and of(evs, "spin.void")[0]["reason"] == "ball-missing"


def test_supervisor_void_command(h: Harness):
    h.cmd("spin.void", reason="ball jumped out")
    assert h.refused and "no spin is in play" in h.refused
    h.x(2, 4)
    h.x(3, 2)
    h.cmd("spin.void", role="dealer", reason="x")
    assert h.refused and "supervisor" in h.refused
    evs = h.cmd("spin.void", reason="foreign object")
    (void,) = of(evs, "spin.void")
    assert void["reason"] == "foreign object" and void["by"] == "pit"


def test_device_replies_are_events_for_the_technician(h: Harness):
    h.proto.sent(b"*T D\r\n", h.t)
    evs = h.rx("*T d 15")
    assert of(evs, "device.reply") == [{"device": "wheel", "command": "*T D", "text": "d 15"}]


def test_summary_reads_like_the_table(h: Harness):
    h.game(2)
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
    h = Harness(wheel_model=model, void_on_system_failure=system, double_zero=model == "m360")
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
