"""The five scoreboards drawn in a terminal, from the roads a ``hand.result`` carries.

Nothing here applies a road rule: the daemon publishes where every mark goes
(:mod:`daemon.procedures.shoe.roads`) and this only draws it, with each game's own marks
(its ``describe.py``: baccarat's B/P/T, Dragon Tiger's D/T and ``=`` for a tie),
letters as well as colours so a terminal without colour still reads. A streak
longer than the board is not cut: the board shows its latest columns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.table import Table
from rich.text import Text

from daemon.games.describe import Mark

#: a winner's mark on the boards (the game's describer)
MarkOf = Callable[[str], Mark | None]

ROAD_MARKS = {"red": ("R", "bold red"), "blue": ("B", "bold blue")}


class Board:
    """A shoe's roads built from the squares each ``hand.result`` sets (no road rule here)."""

    ROADS = ("bead_plate", "big_road", "big_eye_boy", "small_road", "cockroach_pig")

    def __init__(self) -> None:
        self.rows = 6
        self.squares: dict[str, dict[tuple[int, int], list[Any]]] = {r: {} for r in self.ROADS}
        self.next: dict[str, Any] = {}

    def set(self, update: dict[str, Any]) -> None:
        if update["hands"] == 1:
            self.__init__()  # type: ignore[misc]
        self.rows, self.next = update["rows"], update["next"]
        for name in self.ROADS:
            sq = update.get(name)
            if sq is not None:
                self.squares[name][(sq[0], sq[1])] = sq

    def roads(self) -> dict[str, Any]:
        """The board in :func:`daemon.procedures.shoe.roads.roads`' form."""
        out: dict[str, Any] = {"rows": self.rows, "next": self.next}
        for name in self.ROADS:
            out[name] = list(self.squares[name].values())
        out["bead_plate"] = [sq[2] for _, sq in sorted(self.squares["bead_plate"].items())]
        return out


def _window(cells: list[list[Any]], cols: int) -> tuple[int, dict[tuple[int, int], list[Any]]]:
    at = {(c[0], c[1]): c for c in cells}
    last = max((c[0] for c in cells), default=-1)
    return max(0, last - cols + 1), at


def _road(style: str) -> str:
    """A bead's style on the road: its background colour as the letter's colour."""
    return "bold " + style.split(" on ")[1] if " on " in style else style


def bead_plate(r: dict[str, Any], mark_of: MarkOf, cols: int = 12) -> Text:
    rows = r["rows"]
    beads: list[str] = r["bead_plate"]
    start = max(0, (len(beads) + rows - 1) // rows - cols) * rows
    out = Text()
    for row in range(rows):
        for col in range(cols):
            i = start + col * rows + row
            m = mark_of(beads[i]) if i < len(beads) else None
            if m is not None:
                out.append(m.text, m.style)
            else:
                out.append("·", "dim")
            out.append(" ")
        out.append("\n")
    out.right_crop(1)  # no newline after the last row: the boards stack without a gap
    return out


def big_road(r: dict[str, Any], mark_of: MarkOf, cols: int = 26) -> Text:
    """Two characters a cell: the side's letter, then ``/`` for a tie on it (a digit for more)."""
    first, at = _window(r["big_road"], cols)
    out = Text()
    for row in range(r["rows"]):
        for col in range(first, first + cols):
            cell = at.get((col, row))
            if cell is None:
                out.append("  ")
                continue
            _, _, side, ties = cell
            m = mark_of(side) if side else None
            if m is not None:
                out.append(m.side or m.text, _road(m.style))
            else:
                out.append(" ")
            out.append("/" if ties == 1 else str(min(ties, 9)) if ties else " ", "bold green")
        out.append("\n")
    out.right_crop(1)  # no newline after the last row: the boards stack without a gap
    return out


def derived_road(cells: list[list[Any]], rows: int, cols: int = 24) -> Text:
    first, at = _window(cells, cols)
    out = Text()
    for row in range(rows):
        for col in range(first, first + cols):
            cell = at.get((col, row))
            out.append(*(ROAD_MARKS[cell[2]] if cell else (" ", "")))
        out.append("\n")
    out.right_crop(1)  # no newline after the last row: the boards stack without a gap
    return out


def boards(r: dict[str, Any] | None, mark_of: MarkOf) -> Table:
    """Bead plate and big road side by side, the three derived roads below: 14 lines, 78 wide."""
    grid = Table.grid(padding=(0, 2))
    if r is None:  # no result on this board yet: the empty boards
        r = {"rows": 6, "bead_plate": [], "big_road": [], "next": {}}
        r |= {name: [] for name in ("big_eye_boy", "small_road", "cockroach_pig")}
    grid.add_row(Text("bead plate", "bold"), Text("big road", "bold"))
    grid.add_row(bead_plate(r, mark_of), big_road(r, mark_of))
    lower = Table.grid(padding=(0, 2))
    lower.add_row(
        Text("big eye boy", "bold"), Text("small road", "bold"), Text("cockroach pig", "bold")
    )
    rows = r["rows"]
    lower.add_row(
        derived_road(r["big_eye_boy"], rows),
        derived_road(r["small_road"], rows),
        derived_road(r["cockroach_pig"], rows),
    )
    outer = Table.grid()
    outer.add_row(grid)
    outer.add_row(lower)
    return outer
