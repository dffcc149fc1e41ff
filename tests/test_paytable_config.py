"""[game] paytable and the house's own paytables: checked at start and by tablectl config check."""

from __future__ import annotations

import subprocess
import sys

import pytest
from daemon_harness import ROOT, log_messages, tablectl
from tabled_client.house_paytables import from_config

from daemon.runtime.config import ConfigError, load

BAD = """
[table]
id = "bac-01"
game = "baccarat"

[game]
paytable = "vip"

[game.paytables.house-9]
base = "commission"
tie = 9
tiee = 8
banker = "-0.95"

[game.paytables.commission]
tie = 9

[game.paytables.house-x]
base = "super"
player = "1:0"
on_tie_returns = 0.5

[[devices]]
name = "shoe"
driver = "shoe-line"
port = "usb:0403:6001:A1B2"
[devices.options]
encoding = "suit-rank"
"""

SAID = [
    "game.paytables.house-9.tiee: baccarat has no bet spot tiee (its spots: player, banker, "
    "banker_on_six, tie, player_pair, banker_pair, super6, big, small)",
    'game.paytables.house-9.banker: "-0.95" is not a ratio: write 11, 0.95 or "3:2"',
    'game.paytables.commission: "commission" is a shipped paytable of baccarat; give the '
    "house's own another name",
    'game.paytables.house-x.base: no shipped paytable "super" for baccarat (shipped: commission, '
    "no-commission)",
    'game.paytables.house-x.player: "1:0" divides by zero',
    "game.paytables.house-x.on_tie_returns: baccarat has no bet spot on_tie_returns (its spots: "
    "player, banker, banker_on_six, tie, player_pair, banker_pair, super6, big, small)",
    'game.paytable: unknown paytable "vip" (shipped for baccarat: commission, no-commission; '
    "the house's: house-9, house-x)",
]


def test_every_paytable_problem_is_named_at_once(tmp_path):
    p = tmp_path / "t.toml"
    p.write_text(BAD)
    with pytest.raises(ConfigError) as e:
        load(p)
    assert e.value.problems == SAID


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("tie", "0", "game.paytables.h.tie: 0 is impossible: a win pays more than nothing"),
        ("tie", "true", "game.paytables.h.tie: True is not a ratio"),
    ],
)
def test_an_impossible_ratio_is_refused(tmp_path, key, value, said):
    p = tmp_path / "t.toml"
    p.write_text(
        BAD.split("[game]")[0]
        + f'[game]\npaytable = "h"\n[game.paytables.h]\n{key} = {value}\n'
        + BAD.split("[[devices]]", 1)[1].join(["[[devices]]", ""])
    )
    with pytest.raises(ConfigError) as e:
        load(p)
    assert e.value.problems == [said]


def test_dragon_tigers_tie_return_is_a_part_of_the_stake(tmp_path):
    from tabled_client.house_paytables import config_problems

    got = config_problems(
        "dragon-tiger", {"paytable": "h", "paytables": {"h": {"on_tie_returns": 1.5}}}
    )
    assert got == [
        "game.paytables.h.on_tie_returns: 1.5 is impossible: a part of the stake, 0 to 1"
    ]


def test_a_house_paytable_loads_and_settles(tmp_path):
    p = tmp_path / "t.toml"
    good = (
        BAD.split("[game]")[0]
        + '[game]\npaytable = "tie-9"\n[game.paytables.tie-9]\nbase = "commission"\ntie = 9\n'
    )
    p.write_text(good + "[[devices]]" + BAD.split("[[devices]]", 1)[1])
    s = load(p)
    assert s.game.paytable == "tie-9"
    from tabled_client.settle import settle

    house = from_config("baccarat", {"paytable": "tie-9", "paytables": s.game.paytables})
    hand = {
        "type": "hand.result",
        "data": {"winner": "tie", "banker_total": 5, "paytable": "tie-9"},
    }
    assert settle(hand, "tie", 10, house) == 100 and settle(hand, "banker", 10, house) == 10


def test_tablectl_config_check_and_the_daemon_say_the_same(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(BAD)
    c = tablectl(bad, "config", "check", str(bad))
    assert c.returncode == 2
    for line in SAID:
        assert f"bad.toml: {line}" in c.stderr
    p = subprocess.run(
        [sys.executable, "-m", "daemon.runtime.app", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    assert p.returncode == 2
    said = log_messages(p.stdout + p.stderr)
    for line in SAID:
        assert f"bad.toml: {line}" in said


CAPTURE = ROOT / "tests" / "captures" / "shoe-line" / "full-shoe-first-card-burn.log"


def test_every_result_names_the_paytable_in_force():
    from daemon.pipeline.capture import load as load_capture
    from daemon.pipeline.replay import replay

    default = replay([load_capture(CAPTURE)]).events
    results = [e.data for e in default if e.type == "hand.result"]
    assert results and {d["paytable"] for d in results} == {"commission"}  # the default
    cap = load_capture(CAPTURE)
    cap.headers["game.paytable"] = '"no-commission"'
    chosen = [e.data for e in replay([cap]).events if e.type == "hand.result"]
    assert {d["paytable"] for d in chosen} == {"no-commission"} and len(chosen) == len(results)
    assert not [e for e in default if e.type == "hand.demo" and "paytable" in e.data]


def test_a_replay_checks_the_paytable_as_the_config_does():
    from daemon.pipeline.capture import load as load_capture
    from daemon.pipeline.replay import replay

    cap = load_capture(CAPTURE)
    cap.headers["game.paytable"] = '"vip"'
    with pytest.raises(ConfigError) as e:
        replay([cap])
    assert e.value.problems == [
        'game.paytable: unknown paytable "vip" (shipped for baccarat: commission, no-commission)'
    ]


def test_a_roulette_paytable_must_fit_the_wheels_layout():
    from tabled_client.house_paytables import config_problems
    from tabled_client.paytables import default_for

    assert config_problems("roulette", {"double_zero": True, "paytable": "european"}) == [
        'game.paytable: "european" is a single-zero paytable; this wheel is double-zero '
        "(game.double_zero)"
    ]
    assert config_problems("roulette", {"paytable": "american"}) == [
        'game.paytable: "american" is a double-zero paytable; this wheel is single-zero '
        "(game.double_zero)"
    ]
    assert config_problems("roulette", {"double_zero": True}) == []  # its default: american
    assert default_for("roulette", True) == "american" and default_for("roulette") == "european"
    house = {"double_zero": True, "paytable": "h", "paytables": {"h": {"base": "european"}}}
    assert config_problems("roulette", house)[0].startswith('game.paytable: "h" is a single-zero')
