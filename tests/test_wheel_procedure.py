"""The house's wheel procedure checks (daemon/games/roulette/procedure.py) on SlingShot 2 captures.

A synthetic capture breaks each check once and raises its alarm with the figure; the real
studio captures, replayed under a house procedure their wheel keeps, stay byte-for-byte
the events they always gave; and the one check the real wheel does not keep (it did not
alternate its rotor five times in 189 consecutive games) is counted from the events alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daemon.pipeline.capture import load
from daemon.pipeline.replay import replay
from daemon.runtime.config import ConfigError
from daemon.runtime.config import load as load_config

HERE = Path(__file__).parent / "captures" / "cammegh-ss2"
CHECKS = HERE / "synthetic-procedure-checks.log"
REAL = [HERE / "studio-selftest-2025-09.log", HERE / "studio-settings-2025-11.log"]


def events(path: Path, **rules: str) -> list:
    cap = load(path)
    cap.headers.update({f"game.{k}": v for k, v in rules.items()})
    return replay([cap]).events


def test_a_capture_that_breaks_each_check_raises_its_alarm_with_the_figure():
    evs = events(CHECKS)
    raised = [e.data for e in evs if e.type == "alarm.raised"]
    assert [(a["kind"], a.get("figure"), a.get("limit")) for a in raised] == [
        ("rotor-speed", 12.0, 15.0),  # spin 2: 12 rpm, the house's floor 15
        ("rotor-not-alternated", None, None),  # spin 3 turns as spin 2 did
        ("spin-pace", 180.0, 120.0),  # spin 4 launched 20 s after spin 3
    ]
    assert all(a["severity"] == "warning" and a["frames"] for a in raised)
    assert "the rotor turns clockwise again, as in spin 2" in raised[1]["message"]
    # spin 5, 198 s after spin 4 (18 an hour): a ceiling only, a slow game is no fault
    assert not [e for e in evs if e.type == "alarm.repeated"]
    # alarms, never voids: every spin settles
    assert [e.data["number"] for e in evs if e.type == "spin.result"] == [4, 19, 32, 7, 21]
    assert not [e for e in evs if e.type == "spin.void"]


def test_the_checks_are_off_unless_the_house_sets_them():
    cap = load(CHECKS)
    for k in list(cap.headers):
        if k.startswith("game."):
            del cap.headers[k]
    evs = replay([cap]).events
    assert not [e for e in evs if e.type.startswith("alarm.")]
    assert len([e for e in evs if e.type == "spin.result"]) == 5


#: a procedure the studio's wheel keeps: its rotor ran 16.0-18.8 rpm, its fastest pace
#: between consecutive games 91 spins an hour
KEPT = {"rotor_rpm_min": "15.0", "rotor_rpm_max": "25.0", "max_spins_per_hour": "100.0"}


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.stem)
def test_the_real_captures_stay_quiet(path):
    expected = path.with_suffix("").with_suffix(".expected.jsonl").read_bytes().splitlines()
    got = [e.canonical() for e in events(path, **KEPT)]
    assert got == expected


def test_the_real_wheel_did_not_always_alternate():
    """With alternate_rotor on, the real capture raises the alarm exactly for the consecutive
    games (the counter one on, no restart or lost link between, not joined late) whose
    spin.started says the same direction as the game before, counted from its events."""
    expected = [
        json.loads(x)
        for x in (HERE / "studio-selftest-2025-09.expected.jsonl").read_text().splitlines()
    ]
    same, prev = 0, None
    for e in expected:
        if e["type"] in ("daemon.started", "device.stale", "device.disconnected"):
            prev = None
        elif e["type"] == "spin.started":
            d = e["data"]
            if d["late"]:
                prev = None
                continue
            if prev is not None and (d["wheel_spin"] - prev["wheel_spin"]) % 256 == 1:
                same += prev["rotor_direction"] == d["rotor_direction"]
            prev = d
    evs = events(REAL[0], **KEPT, alternate_rotor="true")
    raised = [
        e for e in evs if e.type == "alarm.raised" and e.data["kind"] == "rotor-not-alternated"
    ]
    repeated = [
        e for e in evs if e.type == "alarm.repeated" and e.data["kind"] == "rotor-not-alternated"
    ]
    assert same == 5 and len(raised) == 1 and len(raised) + len(repeated) == same


BASE = """
[table]
id = "r1"
game = "roulette"

[game]
{game}

[[devices]]
name = "wheel"
driver = "cammegh-ss2"
port = "/dev/ttyUSB0"
"""


@pytest.mark.parametrize(
    ("game", "said"),
    [
        ("max_ball_revolutions = 12", "game.max_ball_revolutions: devices[0] (cammegh-ss2)"),
        (
            "rotor_rpm_min = 30.0\nrotor_rpm_max = 20.0",
            "rotor_rpm_min (30) is above rotor_rpm_max (20)",
        ),
        ("max_spins_per_hour = 0", "game.max_spins_per_hour: expected a number > 0"),
    ],
)
def test_a_check_the_house_cannot_have_is_a_config_error(tmp_path, game, said):
    p = tmp_path / "w.toml"
    p.write_text(BASE.format(game=game))
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert any(said in x for x in e.value.problems), e.value.problems


def test_too_many_ball_revolutions_on_a_wheel_that_reports_them():
    """A Mercury 360 at the extended level reports the ball's revolutions: 12 over a ceiling of
    10 raises ball-revolutions-high (the result stands), 9 does not; the floor still voids 2."""
    m360 = Path(__file__).parent / "captures" / "cammegh-m360" / "extended.log"
    evs = events(m360, max_ball_revolutions="10")
    [alarm] = [
        e.data
        for e in evs
        if e.type == "alarm.raised" and e.data["kind"] == "ball-revolutions-high"
    ]
    assert (alarm["figure"], alarm["limit"], alarm["severity"]) == (12.0, 10, "warning")
    assert "the ball made 12 revolutions, more than the house's 10" in alarm["message"]
    assert [e.data["ball_revolutions"] for e in evs if e.type == "spin.result"] == [12, 9]
    assert [e.data["reason"] for e in evs if e.type == "spin.void"] == [
        "ball-direction",
        "ball-revolutions",
    ]
    assert not [
        e
        for e in events(m360, max_ball_revolutions="12")
        if e.type == "alarm.raised" and e.data["kind"] == "ball-revolutions-high"
    ]
