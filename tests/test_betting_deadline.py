"""``betting.opened`` says when betting closes, for an overlay's countdown — in every game.

Decided through each game's real table (pure decide/apply). The croupier closes
betting ``betting_seconds`` after it sees ``betting.opened`` (``daemon/runtime/croupier.py``),
so that is what the event carries; where people or the wheel close it, null.
"""

from __future__ import annotations

import msgspec
import pytest
from table_harness import ShoeHarness, TableHarness, of
from wheel_harness import WheelHarness

from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
from daemon.games.dragon_tiger.table import DragonTigerTable
from daemon.games.sicbo.table import SicBoGame, SicBoRules
from daemon.procedures.shoe import ShoeRules


@pytest.mark.parametrize(
    ("game", "rules"), [(BaccaratTable, BaccaratRules), (DragonTigerTable, ShoeRules)]
)
@pytest.mark.parametrize("seconds", [None, 12.5])
def test_shoe_games(game, rules, seconds):
    h = ShoeHarness(game, rules, start_burn="none", betting_seconds=seconds)
    h.new_shoe()
    [opened] = of(h.cmd("betting.open", role="dealer"), "betting.opened")
    assert opened["closes_in"] == seconds


@pytest.mark.parametrize("seconds", [None, 20.0])
def test_sicbo(seconds):
    h = TableHarness(SicBoGame(msgspec.convert({"betting_seconds": seconds}, SicBoRules)), [])
    [opened] = of(h.cmd("betting.open", role="dealer"), "betting.opened")
    assert opened["closes_in"] == seconds


def test_roulette_the_wheel_closes_betting():
    h = WheelHarness()
    evs = h.table_closed() + h.before_game() + h.place_bets()
    [opened] = [d for t, d in evs if t == "betting.opened"]
    assert "closes_in" in opened and opened["closes_in"] is None
