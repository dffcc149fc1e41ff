"""The scoreboards ("roads") of the baccarat-family games, pure: a shoe's winners in, roads out.

Baccarat and Dragon Tiger pits draw the same five roads; only the side names differ
(``banker``/``player`` or ``dragon``/``tiger``, with ``tie``). Drawn as casinos draw them:

* **bead plate** — every result, ties included, down columns of six, left to right;
* **big road** — one column per streak of the same side. A streak that reaches the bottom
  row, or runs into the tail of an older streak, turns right and runs along that row (the
  *dragon tail*): nothing is cut, a 12-hand streak shows 12 cells. A tie is not a cell: it
  is a slash on the cell before it (``ties`` counts them); ties before the shoe's first
  side win are kept as slashes on the first cell (``winner`` is None until a side wins);
* **big eye boy**, **small road**, **cockroach pig** — the derived roads, red or blue, for
  the big road compared with itself one, two and three columns back. They read the big
  road's streaks as logical columns (a dragon tail still counts as the streak's length),
  and are laid out like the big road (new column on a colour change, dragon tail).

The derived-road rule, for a big-road cell in streak ``c``, row ``r`` and road offset ``k``
(1 big eye boy, 2 small road, 3 cockroach pig): the road starts at the cell in streak ``k``
row 1, or, if that streak has one cell, at the first cell of streak ``k + 1``. A cell that
opens a streak (``r == 0``) is red when streaks ``c - 1`` and ``c - 1 - k`` are the same
length, blue when not. Any other cell looks at streak ``c - k``: red if it has a cell in
row ``r`` or has none in row ``r - 1`` either, blue if it ends exactly at row ``r - 1``.
(The common rule as dealers and the trade's guides state it, e.g. the Wizard of Odds'
"Baccarat Scoreboards"; ``docs/events.md`` repeats it with the published form.)

``next`` answers the pit's "ask banker / ask player": the mark each derived road would
get if the next result were each side.

What the bus carries is :func:`update`: the one square each road gains or changes with a
result, as an idempotent "set this square" — O(1) a hand, where a whole board in every
result would grow the journal with the square of a shoe's length (a Dragon Tiger shoe
deals 200 hands). An overlay sets the squares from the shoe's start (``hands`` 1 starts a
fresh board); :func:`roads` is the whole board, for tests and a viewer that reads history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ROWS = 6
#: road offset of each derived road
DERIVED = {"big_eye_boy": 1, "small_road": 2, "cockroach_pig": 3}


def streaks(winners: Sequence[str]) -> tuple[int, list[tuple[str, list[int]]]]:
    """(ties before the first side win, [(side, [ties after each cell])]) — the logical big road."""
    opening = 0
    out: list[tuple[str, list[int]]] = []
    for w in winners:
        if w == "tie":
            if out:
                out[-1][1][-1] += 1
            else:
                opening += 1
        elif out and out[-1][0] == w:
            out[-1][1].append(0)
        else:
            out.append((w, [0]))
    return opening, out


def place(lengths: Sequence[int], rows: int = ROWS) -> list[list[tuple[int, int]]]:
    """Grid (column, row) of every cell of each streak, with dragon tails; nothing is cut."""
    taken: set[tuple[int, int]] = set()
    out: list[list[tuple[int, int]]] = []
    start = -1
    for n in lengths:
        start += 1
        while (start, 0) in taken:  # an older tail runs along the top row
            start += 1
        col, row, turned = start, 0, False
        cells = [(col, row)]
        taken.add((col, row))
        for _ in range(n - 1):
            if not turned and row + 1 < rows and (col, row + 1) not in taken:
                row += 1
            else:
                turned = True
                col += 1
                while (col, row) in taken:
                    col += 1
            cells.append((col, row))
            taken.add((col, row))
        out.append(cells)
    return out


def derived(lengths: Sequence[int], k: int) -> list[str]:
    """The marks (``red``/``blue``) of the derived road with offset ``k``, in order."""
    marks: list[str] = []
    for c, n in enumerate(lengths):
        for r in range(n):
            if c < k or (c == k and r == 0):
                continue
            if r == 0:
                marks.append("red" if lengths[c - 1] == lengths[c - 1 - k] else "blue")
            else:
                marks.append("blue" if lengths[c - k] == r else "red")
    return marks


def _marks_grid(marks: Sequence[str], rows: int) -> list[list[Any]]:
    runs: list[tuple[str, int]] = []
    for m in marks:
        if runs and runs[-1][0] == m:
            runs[-1] = (m, runs[-1][1] + 1)
        else:
            runs.append((m, 1))
    grid = place([n for _, n in runs], rows)
    return [[c, r, m] for (m, _), cells in zip(runs, grid, strict=True) for c, r in cells]


def roads(winners: Sequence[str], sides: Sequence[str], rows: int = ROWS) -> dict[str, Any]:
    """Every road of a shoe so far, in the form ``hand.result`` publishes (``docs/events.md``).

    ``sides`` are the game's two sides (``player``, ``banker``), for ``next``.
    ``bead_plate`` is the winners in order (cell ``i`` is column ``i // rows``, row
    ``i % rows``); ``big_road`` cells are ``[column, row, winner, ties]``; derived-road
    cells are ``[column, row, "red"|"blue"]``.
    """
    opening, runs = streaks(winners)
    lengths = [len(t) for _, t in runs]
    big: list[list[Any]] = []
    for (side, ties), cells in zip(runs, place(lengths, rows), strict=True):
        big.extend([c, r, side, t] for (c, r), t in zip(cells, ties, strict=True))
    if opening:
        if big:
            big[0][3] += opening
        else:
            big.append([0, 0, None, opening])
    out: dict[str, Any] = {"rows": rows, "bead_plate": list(winners), "big_road": big}
    for name, k in DERIVED.items():
        out[name] = _marks_grid(derived(lengths, k), rows)
    out["next"] = {side: next_marks(lengths, runs, side) for side in sides}
    return out


def update(winners: Sequence[str], sides: Sequence[str], rows: int = ROWS) -> dict[str, Any]:
    """What the latest result (``winners[-1]``) sets on each road: one square each, or None."""
    before, after = roads(winners[:-1], sides, rows), roads(winners, sides, rows)
    out: dict[str, Any] = {"rows": rows, "hands": len(winners)}
    i = len(winners) - 1
    out["bead_plate"] = [i // rows, i % rows, winners[-1]]
    for name in ("big_road", *DERIVED):
        old = {(c[0], c[1]): c for c in before[name]}
        changed = [c for c in after[name] if old.get((c[0], c[1])) != c]
        assert len(changed) <= 1, (name, changed)  # a result moves one square of a road
        out[name] = changed[0] if changed else None
    out["next"] = after["next"]
    return out


def next_marks(
    lengths: Sequence[int], runs: list[tuple[str, list[int]]], side: str
) -> dict[str, str | None]:
    """The mark each derived road would get if ``side`` won next (None: that road has not begun)."""
    if runs and runs[-1][0] == side:
        after = [*lengths[:-1], lengths[-1] + 1]
    else:
        after = [*lengths, 1]
    out: dict[str, str | None] = {}
    for name, k in DERIVED.items():
        before, now = derived(lengths, k), derived(after, k)
        out[name] = now[-1] if len(now) > len(before) else None
    return out
