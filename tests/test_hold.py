"""One hold/pause/resume for a piece dealt past a reader (``daemon/procedures/hold.py``).

A shoe's card (Baccarat) and a Pai Gow tile go through the same steps, each game with
its own events: a piece it cannot place pauses the deal with its alarm; pieces read
meanwhile queue in deal order, numbered 1, 2, 3; a supervisor's entry resumes (the
pause's alarm cleared), places the entered piece, then decides the queued ones in
order, so an unreadable one among them pauses again with the rest queued behind it.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from table_harness import Evs, ShoeHarness, TableHarness, of, types

from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
from daemon.games.paigow.table import PaiGowRules, PaiGowTable
from drivers.readings import CardDrawn, CardUnreadable
from drivers.tile_readings import TileDrawn, TileUnreadable


class Cards(ShoeHarness):
    """Baccarat, dealing its first hand; a piece is a card."""

    number = "position"  # card.held's place in line
    entry = "card.enter", "card"

    def __init__(self) -> None:
        super().__init__(BaccaratTable, BaccaratRules, start_burn="none")
        self.new_shoe()
        self.cmd("betting.open")
        self.cmd("betting.close")

    def piece(self, name: str | None) -> Evs:
        if name is None:
            return self.read(CardUnreadable(code="ERR"))
        return self.read(CardDrawn(card=name, frame=name.encode()))


class Tiles(TableHarness):
    """Pai Gow, its dice thrown; a piece is a tile."""

    device = "tiles"
    number = "queued"  # tile.held's place in line
    entry = "tile.enter", "tile"

    def __init__(self) -> None:
        super().__init__(PaiGowTable(msgspec.convert({}, PaiGowRules)), ["tiles"])
        self.cmd("betting.open", role="dealer")
        self.cmd("betting.close", role="dealer")
        self.cmd("dice.enter", role="dealer", faces="2 2 3")

    def piece(self, name: str | None) -> Evs:
        return self.read(TileUnreadable(code="ERR") if name is None else TileDrawn(tile=name))


@pytest.mark.parametrize(
    ("make", "first", "entered", "behind", "placed"),
    [
        (Cards, "9S", "2C", ("KD", "4C"), "card.dealt"),
        (Tiles, "wd", "9p", ("1p", "8p"), "tile.dealt"),
    ],
    ids=["cards", "tiles"],
)
def test_a_piece_held_pauses_the_deal_and_the_ones_behind_it_resume_in_order(
    make: Any, first: str, entered: str, behind: tuple[str, str], placed: str
) -> None:
    h = make()
    names = h.table.game.hold_events
    held, paused, resumed = names.held, names.paused, names.resumed
    assert types(h.piece(first)) == [placed]
    evs = h.piece(None)
    assert types(evs) == ["alarm.raised", paused] and h.g.paused is not None
    alarm = of(evs, "alarm.raised")[0]["id"]
    # the dealer goes on: each piece queues behind the one the deal waits on, numbered
    evs = h.piece(behind[0]) + h.piece(None) + h.piece(behind[1])
    assert types(evs) == [held] * 3
    assert [x[h.number] for x in of(evs, held)] == [2, 3, 4]
    assert [x["reason"] for x in of(evs, held)] == [of(evs, held)[0]["reason"]] * 3
    name, arg = h.entry
    evs = h.cmd(name, **{arg: entered})
    assert types(evs)[:3] == ["operator.command", resumed, "alarm.cleared"]
    assert of(evs, resumed)[0]["alarm"] == alarm and alarm not in h.state.alarms
    # the entered piece, then the first behind it placed; the unreadable one pauses again
    # and the last queues behind it, first in the new line
    assert types(evs)[3:] == [placed, placed, "alarm.raised", paused, held]
    assert [x[arg] for x in of(evs, placed)] == [entered, behind[0]]
    assert of(evs, held)[0][arg] == behind[1] and of(evs, held)[0][h.number] == 2
    assert h.g.paused is not None and len(h.g.held) == 2
    h.assert_rebuilds()
