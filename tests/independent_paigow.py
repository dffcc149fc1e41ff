"""A second, independent reading of Mahjong Pai Gow (seed 002, 麻雀排九), for tests only.

Independent of ``daemon/games/paigow`` in method, not only in code:

- ranking by arithmetic, not by the seed's table: a hand's strength is a
  tuple (pair?, pair value or points, holds a white tile?, higher tile),
  white counting 10 in a pair and 0 in points; 3-5 and the four unlisted
  0-point hands fall where that rule puts them (the zeros tie);
- the deal from the raw capture: the dice come from the capture's
  ``dice.enter`` commands, the tiles from its ``rx`` lines as bytes, and the
  first position is counted seat by seat around the table from the banker.

It imports nothing from ``daemon``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

SEATS = ["banker", "player1", "player2", "player3", "player4", "player5"]


def strength(tiles: Sequence[str]) -> tuple[int, int, int, int]:
    a, b = tiles
    if a == b:
        return (1, 10 if a == "wd" else int(a[0]), 0, 0)
    pts = lambda t: 0 if t == "wd" else int(t[0])  # noqa: E731
    points = (pts(a) + pts(b)) % 10
    if points == 0:
        return (0, 0, 0, 0)  # the seed lists no 0-point hand: all equal, below everything
    white = 1 if "wd" in tiles else 0
    return (0, points, white, max(pts(a), pts(b)))


def first_seat(dice: Sequence[int]) -> str:
    seat = 0
    for _ in range(sum(dice) - 1):  # the banker is 1; count on, seat by seat
        seat = (seat + 1) % len(SEATS)
    return SEATS[seat]


def deal(first: str, tiles: Sequence[str], mode: str = "stacks") -> dict[str, list[str]]:
    start = SEATS.index(first)
    hands: dict[str, list[str]] = {s: [] for s in SEATS}
    for i, t in enumerate(tiles):
        step = i // 2 if mode == "stacks" else i % 6
        hands[SEATS[(start + step) % 6]].append(t)
    return hands


def outcome(hands: dict[str, list[str]]) -> dict[str, str]:
    bank = strength(hands["banker"])
    return {s: ("win" if strength(hands[s]) > bank else "lose") for s in SEATS[1:]}


def rounds_of(capture: Path) -> Iterable[tuple[list[int], list[str]]]:
    """(dice, the 12 tiles) of each complete round in a capture of plain tile codes.

    Only for captures made of clean rounds: every rx line is a tile of the
    round whose dice came last.
    """
    dice: list[int] | None = None
    tiles: list[str] = []
    for line in capture.read_text().splitlines():
        if line.startswith("#"):
            continue
        _, kind, rest = line.split(" ", 2)
        if kind == "cmd" and rest.startswith("dice.enter "):
            faces = rest.split("faces=")[1].split()[0]
            dice, tiles = [int(x) for x in faces.split(",")], []
        elif kind.startswith("rx") and dice is not None:
            tiles.append(rest.replace("\\r\\n", "").strip().lower())
            if len(tiles) == 12:
                yield dice, tiles
                dice, tiles = None, []
