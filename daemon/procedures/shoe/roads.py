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

import msgspec

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


class _Placer:
    """Lays a road's cells one at a time, as casinos draw them (dragon tails, nothing cut)."""

    __slots__ = ("col", "row", "rows", "start", "taken", "turned")

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.taken: set[tuple[int, int]] = set()
        self.start = -1  # the column the newest streak began in
        self.col = self.row = 0  # the newest cell
        self.turned = False  # the newest streak runs right along its row

    def streak(self) -> tuple[int, int]:
        """The first cell of a new streak."""
        self.start += 1
        while (self.start, 0) in self.taken:  # an older tail runs along the top row
            self.start += 1
        self.col, self.row, self.turned = self.start, 0, False
        self.taken.add((self.start, 0))
        return self.start, 0

    def extend(self) -> tuple[int, int]:
        """The next cell of the newest streak: down, or right once it cannot go down."""
        col, row = self.col, self.row
        if not self.turned and row + 1 < self.rows and (col, row + 1) not in self.taken:
            row += 1
        else:
            self.turned = True
            col += 1
            while (col, row) in self.taken:
                col += 1
        self.col, self.row = col, row
        self.taken.add((col, row))
        return col, row


def place(lengths: Sequence[int], rows: int = ROWS) -> list[list[tuple[int, int]]]:
    """Grid (column, row) of every cell of each streak, with dragon tails; nothing is cut."""
    p = _Placer(rows)
    return [[p.streak(), *(p.extend() for _ in range(n - 1))] for n in lengths]


def mark(lengths: Sequence[int], c: int, r: int, k: int) -> str | None:
    """The mark of the big-road cell in streak ``c``, row ``r`` on the road with offset ``k``
    (None: the road has not begun there); the rule of this module's docstring."""
    if c < k or (c == k and r == 0):
        return None
    if r == 0:
        return "red" if lengths[c - 1] == lengths[c - 1 - k] else "blue"
    return "blue" if lengths[c - k] == r else "red"


def derived(lengths: Sequence[int], k: int) -> list[str]:
    """The marks (``red``/``blue``) of the derived road with offset ``k``, in order."""
    marks: list[str] = []
    for c, n in enumerate(lengths):
        for r in range(n):
            m = mark(lengths, c, r, k)
            if m is not None:
                marks.append(m)
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
    last = runs[-1][0] if runs else None
    out["next"] = {side: next_marks(lengths, last, side) for side in sides}
    return out


def update(winners: Sequence[str], sides: Sequence[str], rows: int = ROWS) -> dict[str, Any]:
    """What the latest result (``winners[-1]``) sets on each road: one square each, or None.

    By definition the squares that differ between :func:`roads` before and after the result
    (``tests/test_roads.py`` holds it to that). Drawing both boards cost ~0.4 ms a hand late
    in a long board; but nothing already drawn ever moves (a cell's place and mark depend
    only on what came before it), so the board the previous hand left is extended by one
    result, in place (a copy of it was ~40 µs a hand late in a board), and what each
    board answered is kept beside it: decide may ask again for the same results. Asked for
    another result after the same ones (a decision not taken), the board is drawn afresh.
    """
    # the sides name the answer's "next" (a baccarat and a Dragon Tiger shoe may begin alike)
    key = (rows, tuple(sides), tuple(winners))
    done = _boards.get(key)
    if done is not None:
        return msgspec.msgpack.decode(done[1])  # type: ignore[no-any-return]
    before = _boards.pop((*key[:2], key[2][:-1]), None)
    if before is not None:
        board = before[0]  # taken: the board moves on to this result
    else:
        board = _Board(rows)
        for w in key[2][:-1]:
            board.add(w)
    out: dict[str, Any] = {"rows": rows, "hands": len(winners)}
    i = len(winners) - 1
    out["bead_plate"] = [i // rows, i % rows, winners[-1]]
    out.update(board.add(winners[-1]))
    out["next"] = {side: next_marks(board.lengths, board.side, side) for side in sides}
    _boards[key] = (board, msgspec.msgpack.encode(out))  # a copy of the answer, kept
    while len(_boards) > _KEEP_BOARDS:
        del _boards[next(iter(_boards))]
    return out


class _Board:
    """One board drawn result by result: the streaks, and where each road's last cell is."""

    __slots__ = ("big", "derived", "lengths", "opening", "side", "ties")

    def __init__(self, rows: int) -> None:
        self.lengths: list[int] = []
        self.side: str | None = None  # the side of the newest streak
        self.opening = 0  # ties before the first side win
        self.ties = 0  # ties on the newest cell
        self.big = _Placer(rows)
        #: per derived road: its placer and its newest mark
        self.derived = {k: (_Placer(rows), None) for k in DERIVED.values()}

    def add(self, w: str) -> dict[str, Any]:
        """Draw one result; returns the square it sets on each road (None: none)."""
        out: dict[str, Any] = dict.fromkeys(DERIVED)
        if w == "tie":  # a slash on the newest cell, nothing else
            if self.side is None:
                self.opening += 1
                out["big_road"] = [0, 0, None, self.opening]
            else:
                self.ties += 1
                out["big_road"] = [self.big.col, self.big.row, self.side, self._ties()]
            return out
        if w == self.side:
            self.lengths[-1] += 1
            col, row = self.big.extend()
        else:
            self.lengths.append(1)
            self.side = w
            col, row = self.big.streak()
        self.ties = 0
        out["big_road"] = [col, row, w, self._ties()]
        c, r = len(self.lengths) - 1, self.lengths[-1] - 1
        for name, k in DERIVED.items():
            m = mark(self.lengths, c, r, k)
            if m is None:
                continue
            p, last = self.derived[k]
            col, row = p.extend() if m == last else p.streak()
            self.derived[k] = (p, m)
            out[name] = [col, row, m]
        return out

    def _ties(self) -> int:
        first = len(self.lengths) == 1 and self.lengths[0] == 1
        return self.ties + (self.opening if first else 0)


#: the boards the latest results left, by (rows, sides, results), each with what it answered:
#: the next hand's starting point
_boards: dict[tuple[int, tuple[str, ...], tuple[str, ...]], tuple[_Board, bytes]] = {}
_KEEP_BOARDS = 8


def next_marks(lengths: Sequence[int], last: str | None, side: str) -> dict[str, str | None]:
    """The mark each derived road would get if ``side`` won next (None: that road has not begun);
    ``last`` is the side of the newest streak."""
    # The next cell is streak c, row r of the big road with that result added. ``mark`` reads
    # only the streaks before c (c - k; c - 1 and c - 1 - k on a first row), which the result
    # leaves as they are: so it is asked on ``lengths`` itself, without a copy grown by one.
    n = len(lengths)
    c, r = (n - 1, lengths[-1]) if last == side else (n, 0)
    return {name: mark(lengths, c, r, k) for name, k in DERIVED.items()}
