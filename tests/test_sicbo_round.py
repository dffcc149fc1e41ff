"""The Sic Bo round, decided and applied through the real table (pure, no I/O), and the
shaker simulator following the table's events."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from table_harness import Evs, TableHarness, of, types

from daemon.games import find as game_class
from daemon.games.sicbo.table import SicBoGame, SicBoRules
from daemon.runtime.validate import check
from drivers.dice_readings import DiceNotFlat, DiceResult, DiceShaking, ShakerFault
from drivers.dice_ref import DiceRefProtocol
from drivers.readings import DeviceReply
from drivers.sim.dice import DiceSimulator


class Harness(TableHarness):
    device = "shaker"

    def __init__(self, **rules: Any) -> None:
        super().__init__(SicBoGame(msgspec.convert(rules, SicBoRules)), ["shaker"])

    def shaking(self) -> Evs:
        return self.read(DiceShaking())

    def faces(self, *f: int) -> Evs:
        return self.read(DiceResult(faces=f))

    def not_flat(self, reason: str = "stacked", code: int = 1) -> Evs:
        return self.read(DiceNotFlat(reason=reason, code=code))

    def fault(self, code: int = 1, meaning: str = "shaker motor fault") -> Evs:
        return self.read(ShakerFault(code=code, meaning=meaning))

    def closed(self) -> None:
        self.cmd("betting.open", role="dealer")
        self.cmd("betting.close", role="dealer")


# -- a round ---------------------------------------------------------------------------------


def test_registered():
    assert game_class("sicbo") is SicBoGame


def test_a_round_and_round_numbers_that_never_reset():
    h = Harness()
    assert h.g.phase == "settling"
    for n in (1, 2, 3):
        assert of(h.cmd("betting.open", role="dealer"), "betting.opened")[0]["round"] == n
        closed = of(h.cmd("betting.close", role="dealer", source="button"), "betting.closed")[0]
        assert (closed["round"], closed["source"]) == (n, "button")
        assert of(h.shaking(), "dice.shaking")[0] == {"round": n, "shake": 1, "device": "shaker"}
        res = of(h.faces(2, 2, 5), "dice.result")[0]
        assert (res["round"], res["total"], res["size"], res["doubles"]) == (n, 9, "small", [2])
        assert (res["shakes"], res["reshakes"], res["device"]) == (1, 0, "shaker")
    assert h.g.results == 3 and h.g.phase == "settling"


def test_reshake_keeps_the_round_and_its_bets_and_only_the_final_throw_is_a_result():
    """seed 002: stacked or leaning dice are re-shaken; all bets stay valid."""
    h = Harness()
    h.closed()
    h.shaking()
    evs = h.not_flat("stacked", 1)
    rs = of(evs, "dice.reshake")[0]
    assert (rs["round"], rs["reshake"], rs["reason"], rs["code"]) == (1, 1, "stacked", 1)
    assert "seed 002" in rs["rule"] and "bets stay valid" in rs["rule"]
    assert h.g.phase == "closed"
    h.shaking()
    h.not_flat("leaning", 2)
    assert of(h.shaking(), "dice.shaking")[0]["shake"] == 3
    evs = h.faces(6, 6, 6)
    res = of(evs, "dice.result")[0]
    assert (res["round"], res["reshakes"], res["shakes"], res["triple_face"]) == (1, 2, 3, 6)
    all_types = types(h.events)
    assert all_types.count("dice.result") == 1 and "round.void" not in all_types
    assert all_types.count("betting.opened") == 1  # the same round throughout


def test_betting_closes_when_the_shaker_reports_shaking():
    h = Harness()
    h.cmd("betting.open", role="dealer")
    evs = h.shaking()
    assert types(evs) == ["betting.closed", "dice.shaking"]
    closed = of(evs, "betting.closed")[0]
    assert (closed["by"], closed["source"]) == ("shaker", "shaker") and "rule" in closed
    h.cmd("betting.close", role="dealer")
    assert h.refused and "betting is not open" in h.refused
    assert of(h.faces(1, 2, 3), "dice.result")


def test_not_flat_during_betting_also_closes_betting():
    h = Harness()
    h.cmd("betting.open", role="dealer")
    assert types(h.not_flat()) == ["betting.closed", "dice.reshake"]


def test_a_repeated_shaking_report_says_nothing():
    h = Harness()
    h.closed()
    h.shaking()
    assert h.shaking() == []


def test_result_without_a_shaking_report_after_betting_closed_counts():
    """A lost shaking frame (bad checksum) does not lose the round."""
    h = Harness()
    h.closed()
    assert of(h.faces(4, 5, 6), "dice.result")[0]["shakes"] == 0


# -- bad claims -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("faces", "why"),
    [
        ((0, 3, 5), "0 not in 1–6"),
        ((7, 1, 1), "7 not in 1–6"),
        ((2, 3), "2 face(s)"),
        ((1, 2, 3, 4), "4 face(s)"),
        ((), "0 face(s)"),
    ],
)
def test_a_malformed_result_is_an_alarm_never_a_result(faces, why):
    h = Harness()
    h.closed()
    h.shaking()
    evs = h.faces(*faces)
    assert "dice.result" not in types(evs)
    alarm = of(evs, "alarm.raised")[0]
    assert alarm["kind"] == "dice-result-invalid" and alarm["severity"] == "supervisor"
    assert str(list(faces)) in alarm["message"] and why in alarm["message"]
    assert alarm["round"] == 1 and alarm["faces"] == list(faces)
    rej = of(evs, "dice.rejected")[0]
    assert (rej["reason"], rej["faces"], rej["alarm"], rej["round"]) == (
        "invalid",
        list(faces),
        alarm["id"],
        1,
    )
    # the round goes on: shaken again, the next good throw is the result
    assert h.g.phase == "closed"
    h.shaking()
    assert of(h.faces(3, 4, 5), "dice.result")[0]["round"] == 1


def test_a_throw_while_betting_is_open_voids_the_round():
    h = Harness()
    h.cmd("betting.open", role="dealer")
    evs = h.faces(1, 2, 3)
    assert types(evs) == ["alarm.raised", "dice.rejected", "round.void"]
    assert of(evs, "round.void")[0]["reason"] == "result-during-betting"
    assert "A1" in h.state.alarms  # the alarm saying why stays for a supervisor
    assert h.g.phase == "settling" and h.g.voids == 1


@pytest.mark.parametrize("paused", [False, True])
def test_a_throw_outside_a_round_or_while_paused_is_not_a_result(paused):
    h = Harness()
    if paused:
        h.closed()
        h.fault()
    evs = h.faces(1, 2, 3)
    assert "dice.result" not in types(evs)
    rej = of(evs, "dice.rejected")[0]
    assert rej["reason"] == ("paused" if paused else "no-round")
    assert of(evs, "alarm.raised")[0]["severity"] == "warning"


def test_shaker_reports_outside_a_round_are_ignored():
    h = Harness()
    assert h.shaking() == [] and h.not_flat() == []


# -- faults -----------------------------------------------------------------------------------


def test_fault_mid_round_pauses_until_a_supervisor_resumes():
    h = Harness(shaker_fault="pause")
    h.closed()
    h.shaking()
    evs = h.fault(2, "lid opened during a shake")
    assert types(evs) == ["alarm.raised", "device.fault", "round.paused"]
    f = of(evs, "device.fault")[0]
    assert (f["code"], f["meaning"], f["round"], f["alarm"]) == (
        2,
        "lid opened during a shake",
        1,
        "A1",
    )
    assert of(evs, "round.paused")[0]["reason"] == "shaker-fault" and h.g.phase == "paused"
    h.cmd("round.resume", role="dealer")
    assert h.refused and "supervisor" in h.refused
    evs = h.cmd("round.resume")
    assert types(evs) == ["operator.command", "round.resumed", "alarm.cleared"]
    assert h.g.phase == "closed" and not h.state.alarms
    h.shaking()
    assert of(h.faces(2, 3, 4), "dice.result")[0]["round"] == 1


def test_fault_mid_round_voids_when_the_house_says_so():
    h = Harness(shaker_fault="void")
    h.closed()
    evs = h.fault()
    v = of(evs, "round.void")[0]
    assert (v["reason"], v["by"]) == ("shaker-fault", "table") and "2.1.8" in v["rule"]
    assert "A1" in h.state.alarms and h.g.phase == "settling"  # the device alarm latches


def test_fault_between_rounds_or_during_betting_leaves_the_round_alone():
    h = Harness()
    evs = h.fault()
    assert types(evs) == ["alarm.raised", "device.fault"]
    assert of(evs, "device.fault")[0]["round"] is None
    h.cmd("betting.open", role="dealer")
    evs = h.fault()
    assert types(evs) == ["device.fault"]  # the active fault alarm is reused
    assert of(evs, "device.fault")[0] == {
        "device": "shaker",
        "code": 1,
        "meaning": "shaker motor fault",
        "alarm": "A1",
        "round": 1,
    }
    assert h.g.phase == "betting"


def test_too_many_reshakes_pause_and_a_void_settles_the_alarm():
    h = Harness(max_reshakes=1)
    h.closed()
    h.shaking()
    h.not_flat()
    h.shaking()
    evs = h.not_flat("leaning", 2)
    assert types(evs) == ["alarm.raised", "round.paused"]
    assert of(evs, "round.paused")[0]["reason"] == "too-many-reshakes"
    evs = h.cmd("round.void", reason="dice chipped")
    assert types(evs) == ["operator.command", "round.void", "alarm.cleared"]
    assert of(evs, "round.void")[0] == {
        "round": 1,
        "reason": "dice chipped",
        "by": "pit",
        "rule": "house procedure: a supervisor voids the round; bets are returned",
        "shakes": 2,
        "reshakes": 1,
    }
    assert not h.state.alarms and h.g.phase == "settling"


# -- commands -----------------------------------------------------------------------------------


def test_commands_refused_with_the_reason():
    h = Harness()
    h.cmd("betting.close", role="dealer")
    assert h.refused and "betting is not open" in h.refused
    h.cmd("round.void", reason="x")
    assert h.refused and "no round is in play" in h.refused
    h.cmd("round.resume")
    assert h.refused and "no round is paused" in h.refused
    h.cmd("betting.open", role="viewer")
    assert h.refused and "needs the dealer or supervisor role" in h.refused
    h.cmd("betting.open", role="dealer")
    h.cmd("betting.open", role="dealer")
    assert h.refused and "taking bets for round 1" in h.refused
    h.cmd("round.void", role="dealer", reason="x")
    assert h.refused and "supervisor" in h.refused
    assert of(h.cmd("round.void", reason="x"), "round.void")[0]["reason"] == "x"


def test_device_replies_are_journaled_except_status_polls():
    h = Harness()
    evs = h.read(DeviceReply(command="version", text="ACME DS-3 firmware 1.2"))
    assert of(evs, "device.reply") == [
        {"device": "shaker", "command": "version", "text": "ACME DS-3 firmware 1.2"}
    ]
    # a poll's answer, which the driver marks quiet (the table names no device's commands)
    assert h.read(DeviceReply(command="status", text="idle", quiet=True)) == []


def test_restart_mid_throw_voids_the_round_when_the_house_says_so():
    """seed 003 §2.1.8: a system failure voids the hand in play."""
    for voids in (True, False):
        h = Harness(system_failure_voids_round=voids)
        for x in h.table.started(
            h.state, {"version": "0.1.0", "pid": 1, "recovered_seq": 0}
        ).drafts:
            h.state = h.table.apply(h.state, x.type, x.data)
        h.closed()
        h.shaking()
        d = h.table.started(
            h.state, {"version": "0.1.0", "pid": 1, "recovered_seq": 5}
        )  # no daemon.stopped: a crash
        got = [x.type for x in d.drafts]
        assert got == (["daemon.started", "round.void"] if voids else ["daemon.started"])


def test_state_rebuilt_from_events_equals_the_live_state():
    h = Harness(max_reshakes=1)
    h.closed()
    h.shaking()
    h.faces(0, 1, 2)
    h.not_flat()
    h.shaking()
    h.faces(1, 1, 1)
    h.closed()
    h.fault()
    h.cmd("round.resume")
    h.cmd("betting.open")
    h.assert_rebuilds()


def test_rules_are_validated_like_every_house_rule():
    errors: list[str] = []
    check({"max_reshakes": 30, "shaker_fault": "ignore", "flavour": 1}, SicBoRules, "game", errors)
    assert any("flavour: unknown key" in e for e in errors)
    assert any("shaker_fault" in e for e in errors) and any("max_reshakes" in e for e in errors)


# -- the simulator following the table ----------------------------------------------------------


class Ev(msgspec.Struct):
    type: str
    data: dict[str, Any]


class Loop:
    """The simulator's link and the table, joined without a pty or a clock."""

    def __init__(self, sim: DiceSimulator, **rules: Any) -> None:
        self.sim = sim
        self.h = Harness(**rules)
        self.proto = DiceRefProtocol()
        sim.attach(self)

    def write(self, data: bytes) -> None:
        for r in self.proto.feed(data, 0.0):
            before = len(self.h.events)
            self.h.read(r)
            self.sim.on_events([Ev(t, d) for t, d in self.h.events[before:]])

    def cmd(self, name: str, **a: Any) -> None:
        before = len(self.h.events)
        self.h.cmd(name, **a)
        self.sim.on_events([Ev(t, d) for t, d in self.h.events[before:]])

    def play(self) -> None:
        while self.sim.steps:
            self.sim.step()

    def round(self) -> None:
        self.cmd("betting.open")
        self.play()
        if self.h.g.phase == "betting":
            self.cmd("betting.close")
        self.play()

    def types(self) -> list[str]:
        return [t for t, _ in self.h.events if not t.startswith(("operator", "alarm"))]


def test_sim_shakes_when_betting_closes_and_reports_a_seeded_throw():
    a, b = Loop(DiceSimulator(seed=5)), Loop(DiceSimulator(seed=5))
    for lp in (a, b):
        lp.round()
        lp.round()
    assert a.types() == ["betting.opened", "betting.closed", "dice.shaking", "dice.result"] * 2
    assert of(a.h.events, "dice.result") == of(b.h.events, "dice.result")
    assert [tuple(r["faces"]) for r in of(a.h.events, "dice.result")] == a.sim.history


def test_sim_injections_drive_every_procedure():
    lp = Loop(DiceSimulator(seed=2, errors=["stacked", "malformed"]))
    lp.round()
    t = lp.types()
    assert t.count("dice.reshake") == 1 and t.count("dice.rejected") == 1
    assert t.count("dice.result") == 1 and t[-1] == "dice.result"
    lp.sim.inject("early-shake")
    lp.round()
    assert of(lp.h.events, "betting.closed")[-1]["source"] == "shaker"
    lp.sim.inject("fault")
    lp.round()
    assert lp.h.g.phase == "paused" and not lp.sim.steps
    lp.cmd("round.resume")
    lp.play()
    assert lp.types()[-1] == "dice.result" and lp.h.g.phase == "settling"
    lp.sim.inject("garbage")
    lp.sim.inject("bad-checksum")
    lp.round()
    assert lp.types()[-3:] == ["betting.opened", "betting.closed", "dice.result"]
    with pytest.raises(ValueError, match="unknown shaker error"):
        lp.sim.inject("dice-on-fire")


def test_sim_resumes_a_throw_after_a_daemon_restart():
    sim = DiceSimulator(seed=1)
    sim.resume({"phase": "shaking", "round": 4})
    assert sim.busy
    idle = DiceSimulator(seed=1)
    idle.resume({"phase": "settling", "round": 4})
    assert not idle.busy


class FakeLink:
    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.frames: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.frames.append(data)


async def test_sim_waits_for_the_link_and_plays_its_steps_in_time():
    sim = DiceSimulator(seed=1, pace=0.01)
    link = FakeLink()
    sim.attach(link)
    task = asyncio.create_task(sim.run())
    try:
        sim.on_events([Ev("betting.closed", {"round": 1})])
        await asyncio.sleep(0.05)
        assert link.frames == []  # never before the daemon opened the port
        link.opened.set()
        deadline = asyncio.get_running_loop().time() + 20  # a hang guard: the frames end it
        while len(link.frames) < 2:
            assert asyncio.get_running_loop().time() < deadline, link.frames
            await asyncio.sleep(0.01)
        rs = DiceRefProtocol().feed(b"".join(link.frames), 0.0)
        assert [type(r) for r in rs] == [DiceShaking, DiceResult]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
