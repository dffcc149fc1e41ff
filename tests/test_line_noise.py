"""Line noise (issue 18 #9): a noisy line is noticed, alarmed, and what it reads is held.

The meter (``drivers/noise.py``) on its own; then its verdict through the real table of
every game: a shoe's cards wait for a supervisor, the wheel's spin in play is void, the
shaker's round pauses. The flood through a real pty and runner is in
``tests/test_device_faults.py``; the daemon and the replay make the same verdicts.
"""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest
from table_harness import ShoeHarness, TableHarness, of, types
from wheel_harness import WheelHarness

from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
from daemon.games.dragon_tiger.table import DragonTigerTable
from daemon.games.sicbo.table import SicBoGame, SicBoRules
from daemon.procedures.shoe import ShoeRules
from daemon.table import DeviceReading
from drivers.dice_readings import DiceResult, DiceShaking
from drivers.noise import DEFAULT_RULE, NoiseMeter, NoiseRule, rule_for
from drivers.readings import CardDrawn, LineNoise, Malformed, Reading
from drivers.shoe_line import ShoeLineOptions, ShoeLineProtocol

BAD = Malformed(frame=b"\x93x", reason="unprintable bytes")


def good(code: str = "KH") -> CardDrawn:
    return CardDrawn(frame=code.encode(), card=code)


def feed(m: NoiseMeter, rs: list[Reading], t0: float = 0.0, dt: float = 0.1) -> list[LineNoise]:
    out = []
    for i, r in enumerate(rs):
        v = m.reading(r, t0 + i * dt)
        if v is not None:
            out.append(v)
    return out


# -- the meter ---------------------------------------------------------------------------------


def test_six_garbage_lines_of_the_last_eight_make_the_line_noisy_once():
    m = NoiseMeter(DEFAULT_RULE)
    assert feed(m, [BAD] * 5) == [] and not m.noisy
    (v,) = feed(m, [good("4H"), BAD], t0=1.0)  # the sixth garbage line of the last eight
    assert m.noisy and v.malformed == 6 and v.lines == 7 and v.recent == ("4H",)
    assert feed(m, [BAD] * 100, t0=2.0) == []  # one verdict per burst
    assert m.bursts == 1


def test_glitches_and_the_real_wheels_half_garbage_never_trip():
    """A lone garbage line now and then, or every other line (the real SS2 capture's
    vendor warnings, 4 of 8), is not noise."""
    m = NoiseMeter(DEFAULT_RULE)
    assert feed(m, [good(), BAD] * 200) == []
    assert feed(m, ([good()] * 5 + [BAD, BAD]) * 50) == []
    assert not m.noisy


def test_the_meter_rearms_once_the_line_is_clean_again():
    m = NoiseMeter(DEFAULT_RULE)
    assert len(feed(m, [BAD] * 6)) == 1
    feed(m, [good()] * 7, t0=1.0)
    assert m.noisy  # one garbage line is still among the last eight
    feed(m, [good()], t0=2.0)
    assert not m.noisy
    assert len(feed(m, [BAD] * 6, t0=3.0)) == 1 and m.bursts == 2


def test_old_garbage_ages_out_of_the_window():
    m = NoiseMeter(NoiseRule(limit=6, lines=8, window=60.0))
    assert feed(m, [BAD] * 5, dt=20.0) == []  # five over 80 s: never six within 60 s
    assert feed(m, [BAD], t0=200.0) == []


def test_noise_limit_setting():
    assert rule_for(None) is DEFAULT_RULE
    assert rule_for(0) is None
    rule = rule_for(3)
    assert rule is not None and rule.limit == 3
    assert len(feed(NoiseMeter(rule), [BAD] * 3)) == 1


def test_random_noise_is_caught_before_it_makes_a_card():
    """Measured, not promised: in 2000 bursts of random bytes fed to the serial shoe, how
    many readings came out before the meter tripped (docs/reliability.md, line noise)."""
    early = cards = 0
    for seed in range(2000):
        p, m = ShoeLineProtocol(ShoeLineOptions()), NoiseMeter(DEFAULT_RULE)
        tripped = False
        for r in p.feed(random.Random(seed).randbytes(4096), 0.0):
            tripped = tripped or m.reading(r, 0.0) is not None
            if not tripped and not isinstance(r, Malformed):
                early += 1
                cards += isinstance(r, CardDrawn)
        assert tripped, seed
    print(f"readings before the trip: {early} in 2000 bursts ({cards} cards)")
    assert cards == 0


# -- shoe games: the cards wait for a supervisor -------------------------------------------------


SHOE_GAMES = [
    pytest.param(BaccaratTable, BaccaratRules, id="baccarat"),
    pytest.param(DragonTigerTable, ShoeRules, id="dragon-tiger"),
]


def noise(h: TableHarness, device: str) -> list[tuple[str, dict[str, Any]]]:
    return h.run(DeviceReading(device, LineNoise(malformed=6, lines=8, recent=("4H",)), 0.0))


@pytest.mark.parametrize(("game", "rules"), SHOE_GAMES)
def test_a_noisy_shoe_line_holds_its_cards_for_a_supervisor(game: Any, rules: Any):
    h = ShoeHarness(game, rules, start_burn="none")
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    h.card("9S")
    (alarm,) = of(noise(h, "shoe"), "alarm.raised")
    assert alarm["kind"] == "line-noise" and alarm["device"] == "shoe"
    assert alarm["recent"] == ["4H"] and alarm["severity"] == "supervisor"
    assert noise(h, "shoe") == []  # still latched: one alarm
    evs = h.card("4H")
    assert "card.dealt" not in types(evs)
    (paused,) = of(evs, "table.paused")
    assert paused["reason"] == "decision" and paused["held"][0]["card"] == "4H"
    assert of(evs, "alarm.raised")[0]["kind"] == "card-suspect"
    assert "card.dealt" not in types(h.card("2C"))  # the next one queues behind it
    evs = h.cmd("card.accept")  # the supervisor looked: it is the 4H
    assert [d["card"] for d in of(evs, "card.dealt")] == ["4H"]
    assert of(evs, "table.paused")[0]["held"][0]["card"] == "2C"  # judged on its own
    h.cmd("card.enter", card="2C")  # typed by the supervisor: trusted
    h.cmd("alarm.clear", id=alarm["id"], reason="cable replaced")
    evs = h.card("KD")
    assert [d["card"] for d in of(evs, "card.dealt")] == ["KD"]  # the line is trusted again
    assert h.g.phase != "paused"


@pytest.mark.parametrize(("game", "rules"), SHOE_GAMES)
def test_noise_on_another_device_does_not_hold_the_shoe(game: Any, rules: Any):
    h = ShoeHarness(game, rules, start_burn="none")
    h.table.device_names.append("shuffler")
    h.new_shoe()
    h.cmd("betting.open")
    h.cmd("betting.close")
    assert of(noise(h, "shuffler"), "alarm.raised")[0]["device"] == "shuffler"
    assert [d["card"] for d in of(h.card("9S"), "card.dealt")] == ["9S"]


# -- roulette: no spin is valid on a noisy wheel line -----------------------------------------------


def test_a_noisy_wheel_line_voids_the_spin_in_play_and_every_spin_until_cleared():
    h = WheelHarness()
    h.power_on()
    h.place_bets(4)
    h.ball_launched(2)
    assert h.g.phase == "spinning"
    evs = noise(h, "wheel")
    assert types(evs) == ["alarm.raised", "spin.void"]
    assert of(evs, "spin.void")[0]["reason"] == "line-noise"
    alarm = of(evs, "alarm.raised")[0]["id"]
    h.counter_moves()
    h.place_bets(4)
    evs = h.ball_launched(1)  # the next spin, while the alarm is latched
    assert of(evs, "spin.void")[0]["reason"] == "line-noise"
    h.cmd("alarm.clear", id=alarm, reason="line checked")
    h.counter_moves()
    h.place_bets(4)
    h.ball_launched(1)
    assert h.g.phase == "spinning"


# -- Sic Bo: the round waits ----------------------------------------------------------------------


def test_a_noisy_shaker_line_pauses_the_round_and_its_faces_are_no_result():
    h = TableHarness(SicBoGame(msgspec.convert({}, SicBoRules)), ["shaker"])
    h.device = "shaker"
    h.cmd("betting.open", role="dealer")
    h.cmd("betting.close", role="dealer")
    h.read(DiceShaking())
    evs = noise(h, "shaker")
    assert types(evs) == ["alarm.raised", "round.paused"]
    assert of(evs, "round.paused")[0]["reason"] == "line-noise"
    evs = h.read(DiceResult(faces=(1, 2, 3)))
    assert "dice.result" not in types(evs)
    h.cmd("round.resume")  # the supervisor checked the line: the dice are shaken again
    h.read(DiceShaking())
    assert "dice.result" in types(h.read(DiceResult(faces=(1, 2, 3))))


def test_noise_between_rounds_alarms_and_the_next_result_pauses():
    h = TableHarness(SicBoGame(msgspec.convert({}, SicBoRules)), ["shaker"])
    h.device = "shaker"
    assert types(noise(h, "shaker")) == ["alarm.raised"]
    h.cmd("betting.open", role="dealer")
    h.cmd("betting.close", role="dealer")
    h.read(DiceShaking())
    evs = h.read(DiceResult(faces=(4, 5, 6)))
    assert types(evs) == ["round.paused", "dice.rejected"]
    assert of(evs, "dice.rejected")[0]["reason"] == "line-noise"
