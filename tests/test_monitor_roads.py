"""``tablectl monitor`` draws the five roads each game's results publish, in 80 columns.

The results come from the real table (decide/apply); the screen is rich's own
rendering of the monitor's model, so what is asserted is what a terminal shows.
"""

from __future__ import annotations

from typing import Any

import msgspec
from rich.console import Console
from table_harness import ShoeHarness

from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
from daemon.games.dragon_tiger.table import DragonTigerTable
from daemon.journal.events import Event
from daemon.procedures.shoe import ShoeRules
from daemon.tools.monitor import Model, render


def screen(h: ShoeHarness) -> list[str]:
    m = Model("t", h.table.game.describe)
    for seq, (t, data) in enumerate(h.events, 1):
        m.event(
            Event(v=1, table="t", seq=seq, type=t, time="", mono=0.0, data=data, prev="", hash=""),
            0.0,
        )
    console = Console(width=80, height=24, record=True, color_system=None)
    console.print(render(m, 0.0))
    return console.export_text().splitlines()


def rows_after(lines: list[str], title: str) -> list[str]:
    i = next(i for i, x in enumerate(lines) if title in x)
    col = lines[i].index(title)
    return [x[col:] for x in lines[i + 1 : i + 7]]


def test_dragon_tiger_board_tells_tiger_from_tie_and_shows_every_road():
    h = ShoeHarness(DragonTigerTable, ShoeRules, start_burn="none")
    h.new_shoe()
    # dragon, tiger, tie, then tiger ×7: the tiger streak runs past the bottom row
    for dragon, tiger in [("KH", "2C"), ("3C", "9D"), ("5S", "5D")] + [("2H", "JC")] * 7:
        h.hand(dragon, tiger)
    lines = screen(h)
    assert len(lines) <= 24 and all(len(x) <= 80 for x in lines)
    bead = rows_after(lines, "bead plate")
    assert [r.split()[0] for r in bead[:3]] == ["D", "T", "="]  # tie is "=", Tiger is "T"
    big = rows_after(lines, "big road")
    assert big[0].startswith("D T/")  # the tie is a slash on the Tiger before it
    # a dragon tail: 8 Tigers in the second column (2 characters a cell), 6 down then right
    assert [r[2] for r in big] == ["T"] * 6 and big[5].startswith("  T T T ")
    eye = rows_after(lines, "big eye boy")
    assert eye[0].strip() != ""  # the derived roads have begun
    assert "cockroach pig" in "\n".join(lines)


def test_baccarat_board_keeps_an_opening_tie():
    h = ShoeHarness(
        BaccaratTable, BaccaratRules, **msgspec.to_builtins(BaccaratRules(start_burn="none"))
    )
    h.new_shoe()
    tie: tuple[Any, ...] = ("9S", "9C", "KD", "KH")
    banker = ("8S", "9C", "KD", "KC")
    player = ("9S", "8C", "KD", "KC")
    for cards in (tie, banker, banker, player, banker):
        h.hand(*cards)
    lines = screen(h)
    bead = rows_after(lines, "bead plate")
    assert [r.split()[0] for r in bead[:5]] == ["T", "B", "B", "P", "B"]
    big = rows_after(lines, "big road")
    assert big[0].startswith("B/P B")  # the opening tie's slash on the first cell
    assert big[1].startswith("B ")
    # big eye boy: streak 1 row 0 starts nothing; streak 2 (1 ≠ 2): blue
    assert rows_after(lines, "big eye boy")[0].strip() == "B"
