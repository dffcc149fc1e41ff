"""The stack light's meaning (``daemon/table/stack_light.py``), pure, and in every game.

What the light says is decided daemon-side from the committed table state and sent to
the panel as a ``SetLights``; the panel's own tests (``tests/test_gpio_panel.py``) show
the lamps follow it on gpiozero's mock pins. Here: the mapping, that only changes are
sent, and that each game's phases light the lamps the same way (a new game without a
script below fails ``test_every_game_has_a_script``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from daemon.games import load_games
from daemon.table import Command, DeviceHealth, DeviceReading, Table
from daemon.table.stack_light import StackLight, light_for, light_of
from drivers.gpio.lights import SetLights
from drivers.readings import LineNoise, WheelStatus

# == the mapping (pure) ===========================================================================


class A(msgspec.Struct):
    severity: str


@pytest.mark.parametrize(
    ("phase", "alarms", "devices", "want"),
    [
        ("betting", [], {"shoe": "ok"}, ("on", "off", "off")),
        ("dealing", [], {"shoe": "ok"}, ("off", "on", "off")),
        ("settling", [], {"shoe": "ok"}, ("off", "on", "off")),
        ("no-shoe", [], {}, ("off", "on", "off")),
        ("betting", [], {"shoe": "disconnected"}, ("on", "off", "on")),
        ("dealing", [], {"shoe": "stale"}, ("off", "on", "on")),
        ("dealing", [A("warning")], {"shoe": "ok"}, ("off", "on", "on")),
        ("paused", [A("warning"), A("supervisor")], {"shoe": "ok"}, ("off", "on", "blink")),
        ("betting", [{"severity": "supervisor"}], {}, ("on", "off", "blink")),
        (None, [], {}, ("off", "off", "off")),
    ],
)
def test_light_for(phase, alarms, devices, want):
    got = light_for(phase, alarms, devices)
    assert (got.green, got.red, got.amber) == want


class _State(msgspec.Struct):
    game: Any
    alarms: dict[str, Any] = {}
    devices: dict[str, str] = {}


class _Game(msgspec.Struct):
    phase: str


def test_the_panel_is_told_only_when_a_lamp_changes():
    told: list[SetLights] = []
    state = _State(_Game("betting"))
    light = StackLight(told.append, lambda: state)
    light.refresh()
    light.on_events(["a commit"])
    assert told == [SetLights(green="on")]
    light.on_events([])  # nothing committed: nothing asked
    state = _State(_Game("dealing"), alarms={"1": A("supervisor")})
    light.on_events(["a commit"])
    assert told[-1] == SetLights(green="off", red="on", amber="blink") and len(told) == 2


# == every game =====================================================================================


def _cmd(name: str, **args: Any) -> Command:
    return Command(name, args, "pit", "supervisor")


def _wheel(state: int) -> list[Any]:
    """Three status frames of a Cammegh wheel in ``state`` (2: bets, 4: no more bets)."""
    return [
        DeviceReading(
            "dev",
            WheelStatus(
                state=state,
                spin=1,
                last_number=None,
                flags=0,
                rpm=17.0,
                direction="anticlockwise",
                frame=b"*X",
            ),
            float(i),
        )
        for i in range(3)
    ]


#: game → (the inputs that open betting, the inputs that close it), as its operators and
#: devices would send them
SCRIPTS: dict[str, tuple[list[Any], list[Any]]] = {
    "baccarat": ([_cmd("shoe.new"), _cmd("betting.open")], [_cmd("betting.close")]),
    "dragon-tiger": ([_cmd("shoe.new"), _cmd("betting.open")], [_cmd("betting.close")]),
    "blackjack": ([_cmd("shoe.new"), _cmd("betting.open")], [_cmd("betting.close", boxes=[1])]),
    "sicbo": ([_cmd("betting.open")], [_cmd("betting.close")]),
    "paigow": ([_cmd("betting.open")], [_cmd("betting.close")]),
    "roulette": ([*_wheel(6), *_wheel(1), *_wheel(2)], [*_wheel(3), *_wheel(4)]),
}


def test_every_game_has_a_script():
    assert set(SCRIPTS) == set(load_games())


class _Table:
    """One game's table moved by decide/apply, as the pipeline moves it."""

    def __init__(self, game: str) -> None:
        cls = load_games()[game]
        self.table = Table(cls(cls.Rules()), ["dev"])
        self.state = self.table.initial()

    def run(self, inputs: list[Any]) -> None:
        for inp in inputs:
            d = self.table.decide(self.state, inp)
            assert d.refused is None, d.refused
            for x in d.drafts:
                self.state = self.table.apply(self.state, x.type, x.data)


@pytest.mark.parametrize("game", sorted(SCRIPTS))
def test_the_light_follows_the_phase_and_the_alarms_in_every_game(game: str):
    t = _Table(game)
    told: list[SetLights] = []
    light = StackLight(told.append, lambda: t.state)
    now: Callable[[], SetLights] = light.refresh
    assert now() == SetLights(red="on", amber="on")  # not betting; the device not up yet
    t.run([DeviceHealth("dev", "ok", "test", 0.0)])
    assert now() == SetLights(red="on")
    opens, closes = SCRIPTS[game]
    t.run(opens)
    assert now() == SetLights(green="on"), t.state.game.phase
    t.run(closes)
    assert now() == SetLights(red="on"), t.state.game.phase
    t.run([DeviceReading("dev", LineNoise(malformed=9, lines=10, frame=b""), 9.0)])
    assert [a.severity for a in t.state.alarms.values()] == ["supervisor"]
    assert now() == SetLights(red="on", amber="blink")
    assert light_of(t.state) == told[-1]
