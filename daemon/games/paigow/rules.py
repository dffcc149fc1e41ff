"""Mahjong Pai Gow rules (seed 002, 麻雀排九): tiles, hands, ranks, verdicts. Pure.

The seed's ranking table (大小) is the authority and is encoded below as
data, row for row, in the seed's order (:data:`SEED_TABLE`). Two kinds of
hand are not in it and are placed by stated rules:

- 3-5 (8 points) is missing. The table's own rule within equal points is
  "the hand holding a white tile first, then by the higher tile", which puts
  3-5 (higher tile 5) right after 2-6 (higher tile 6): :data:`ORDER` does.
- 1-9, 2-8, 3-7 and 4-6 (0 points) are missing. They rank below every
  listed hand; among themselves they are equal by default (the seed gives
  them no order; house rule ``zero_hands = "by-high-tile"`` orders them by
  the table's rule instead).

A player position beats the banker only with a strictly higher rank;
identical hands (and equal ranks) go to the banker (seed 002:
闲家两张牌跟庄家两张牌一样, 牌例庄胜).

Tiles are written ``1p``–``9p`` (一筒–九筒, the dot suit) and ``wd``
(白板, the white dragon); other mahjong tiles have names too
(``drivers/tile_readings.py``), so a reader that reads a tile from another suit is
told apart from one that reads nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

import msgspec

WHITE: Final = "wd"
DOTS: Final[tuple[str, ...]] = tuple(f"{n}p" for n in range(1, 10))
#: the tiles the seed's table ranks: the dot suit and the white dragon.
GAME_TILES: Final[tuple[str, ...]] = (*DOTS, WHITE)
#: the Chinese names the seed uses, for docs and views.
TILE_NAMES: Final = {**{f"{n}p": f"{n}筒" for n in range(1, 10)}, WHITE: "白板"}

#: seed 002, 麻雀排九: 20 tiles — read as two of each dot tile plus two white tiles
#: (the seed's "four of each, 36 tiles" describes a whole mahjong dot suit).
DEFAULT_SET: Final[dict[str, int]] = {t: 2 for t in GAME_TILES}

POSITIONS: Final[tuple[str, ...]] = (
    "banker",
    "player1",
    "player2",
    "player3",
    "player4",
    "player5",
)
PLAYERS: Final = POSITIONS[1:]
TILES_PER_HAND: Final = 2
ROUND_TILES: Final = TILES_PER_HAND * len(POSITIONS)

ZeroHands = Literal["equal", "by-high-tile"]
DealMode = Literal["stacks", "rotation"]


def value(tile: str) -> int:
    """A tile's points: its dots; the white tile counts 0 (seed 002, 牌面点数)."""
    return 0 if tile == WHITE else int(tile[0])


# seed 002, 麻雀排九, 大小: the ranking table, highest first, exactly as the seed lists it.
# Each row: (what the seed says the hand is — "pair" or its points —, tile, tile).
SEED_TABLE: Final[tuple[tuple[str | int, str, str], ...]] = (
    ("pair", "wd", "wd"),
    ("pair", "9p", "9p"),
    ("pair", "8p", "8p"),
    ("pair", "7p", "7p"),
    ("pair", "6p", "6p"),
    ("pair", "5p", "5p"),
    ("pair", "4p", "4p"),
    ("pair", "3p", "3p"),
    ("pair", "2p", "2p"),
    ("pair", "1p", "1p"),
    (9, "wd", "9p"),
    (9, "1p", "8p"),
    (9, "2p", "7p"),
    (9, "3p", "6p"),
    (9, "4p", "5p"),
    (8, "wd", "8p"),
    (8, "1p", "7p"),
    (8, "2p", "6p"),
    (7, "wd", "7p"),
    (7, "8p", "9p"),
    (7, "1p", "6p"),
    (7, "2p", "5p"),
    (7, "3p", "4p"),
    (6, "wd", "6p"),
    (6, "7p", "9p"),
    (6, "1p", "5p"),
    (6, "2p", "4p"),
    (5, "wd", "5p"),
    (5, "6p", "9p"),
    (5, "7p", "8p"),
    (5, "1p", "4p"),
    (5, "2p", "3p"),
    (4, "wd", "4p"),
    (4, "5p", "9p"),
    (4, "6p", "8p"),
    (4, "1p", "3p"),
    (3, "wd", "3p"),
    (3, "4p", "9p"),
    (3, "5p", "8p"),
    (3, "6p", "7p"),
    (3, "1p", "2p"),
    (2, "wd", "2p"),
    (2, "3p", "9p"),
    (2, "4p", "8p"),
    (2, "5p", "7p"),
    (1, "wd", "1p"),
    (1, "2p", "9p"),
    (1, "3p", "8p"),
    (1, "4p", "7p"),
    (1, "5p", "6p"),
)
#: the 8-point hand the table leaves out, placed by the table's own rule after 2-6.
MISSING_EIGHT: Final = ("3p", "5p")
#: the 0-point hands the table does not list, by the table's rule (higher tile first).
ZERO_HANDS: Final[tuple[tuple[str, str], ...]] = (
    ("1p", "9p"),
    ("2p", "8p"),
    ("3p", "7p"),
    ("4p", "6p"),
)


def key(tiles: Sequence[str]) -> tuple[str, str]:
    """A hand's two tiles in table order (white first, then the lower dot)."""
    a, b = tiles
    order = GAME_TILES.index
    return (a, b) if (a == WHITE or (b != WHITE and order(a) <= order(b))) else (b, a)


def _order() -> tuple[tuple[str, str], ...]:
    rows = [key((a, b)) for _, a, b in SEED_TABLE]
    at = rows.index(("2p", "6p")) + 1
    return (*rows[:at], MISSING_EIGHT, *rows[at:])


#: every listed hand, highest first: the seed's table with 3-5 placed after 2-6.
ORDER: Final[tuple[tuple[str, str], ...]] = _order()


class Hand(msgspec.Struct, frozen=True):
    """Two tiles and where they stand: ``rank`` 1 is the white pair; a higher rank loses."""

    tiles: tuple[str, str]
    pair: bool
    points: int
    rank: int
    name: str


def _name(tiles: tuple[str, str], pair: bool, points: int) -> str:
    shown = "-".join("white" if t == WHITE else t[0] for t in tiles)
    if pair:
        return "pair of whites" if tiles[0] == WHITE else f"pair of {tiles[0][0]}s"
    return f"{points} point{'' if points == 1 else 's'} ({shown})"


def hand(tiles: Sequence[str], zero_hands: ZeroHands = "equal") -> Hand:
    """The rank of two tiles of the game (seed 002, 大小); ValueError for anything else."""
    if len(tiles) != TILES_PER_HAND:
        raise ValueError(f"a hand is two tiles, got {len(tiles)}")
    bad = [t for t in tiles if t not in GAME_TILES]
    if bad:
        raise ValueError(f"not a tile of this game: {', '.join(bad)}")
    k = key(tiles)
    pair = k[0] == k[1]
    points = (value(k[0]) + value(k[1])) % 10  # 取其个位数字
    if k in ORDER:
        rank = ORDER.index(k) + 1
    else:
        # 0 points, not in the seed's table: below every listed hand.
        rank = len(ORDER) + 1
        if zero_hands == "by-high-tile":
            rank += ZERO_HANDS.index(k)
    return Hand(tiles=k, pair=pair, points=points, rank=rank, name=_name(k, pair, points))


def player_wins(player: Hand, banker: Hand) -> bool:
    """A player position wins only with a higher rank: ties go to the banker (牌例庄胜)."""
    return player.rank < banker.rank


# -- the deal (seed 002, 游戏玩法) ----------------------------------------------------------


def first_position(dice: Sequence[int]) -> str:
    """Who receives tiles first: the dice total counted around the table from the banker as 1.

    The seed's sentence counts 庄家 1, 闲家一 2, 闲家二 3, 闲家三 4 and then
    庄家 5 again, leaving out 闲家四 and 闲家五; with six positions the count
    goes on through 闲家四 5 and 闲家五 6, and comes back to the banker at 7.
    We read the 5 as a slip: the count runs through all six positions.
    """
    total = sum(dice)
    return POSITIONS[(total - 1) % len(POSITIONS)]


def deal_order(first: str, mode: DealMode = "stacks") -> tuple[str, ...]:
    """The position each of the 12 tiles goes to, in deal order, from ``first`` around.

    ``stacks`` (default): each position takes its two tiles in turn, a stack
    (一墩) at a time; ``rotation``: one tile each, then a second round.
    """
    i = POSITIONS.index(first)
    ring = POSITIONS[i:] + POSITIONS[:i]
    if mode == "stacks":
        return tuple(p for p in ring for _ in range(TILES_PER_HAND))
    return ring * TILES_PER_HAND


# -- a round's verdict -----------------------------------------------------------------------

#: seed 002, 派彩: what each bet pays; the backend settles, the result states the facts.
PAYOUTS: Final = {
    "win": "1:1 less 5% commission",  # 下注开N赢, 1赔1, 但扣除5%佣金
    "lose": "1:1 less 5% commission",  # 下注开N输, 1赔1, 但扣除5%佣金
    "pair": "6:1",  # 下注开N对子赢, 1赔6
}
COMMISSION: Final = 0.05


def verdict(
    hands: Mapping[str, Sequence[str]], zero_hands: ZeroHands = "equal"
) -> dict[str, object]:
    """Every fact a round's bets are settled on, JSON-ready, from each position's two tiles.

    For position N: ``win`` (the bet "position N wins" wins; otherwise "position N loses"
    wins) and ``pair`` (the bet "position N pair" wins: the position holds a pair).
    """
    missing = [p for p in POSITIONS if p not in hands]
    if missing:
        raise ValueError(f"no tiles for {', '.join(missing)}")
    ranked = {p: hand(hands[p], zero_hands) for p in POSITIONS}
    banker = ranked["banker"]
    positions: list[dict[str, object]] = []
    for p in POSITIONS:
        h = ranked[p]
        row: dict[str, object] = {
            "position": p,
            "tiles": list(h.tiles),
            "name": h.name,
            "pair": h.pair,
            "points": h.points,
            "rank": h.rank,
        }
        if p != "banker":
            row["result"] = "win" if player_wins(h, banker) else "lose"
        positions.append(row)
    return {
        "positions": positions,
        "winners": [p for p in PLAYERS if player_wins(ranked[p], banker)],
        "pairs": [p for p in PLAYERS if ranked[p].pair],
    }


def tile_set_problem(tiles: Mapping[str, int]) -> str | None:
    """Why a house's tile set cannot be played, or None."""
    bad = [t for t in tiles if t not in GAME_TILES]
    if bad:
        return (
            f"tiles {', '.join(sorted(bad))} are not ranked by the seed's table "
            f"(known: {', '.join(GAME_TILES)})"
        )
    wrong = [f"{t} = {n}" for t, n in tiles.items() if not 0 <= n <= 4]
    if wrong:
        return f"each tile appears 0 to 4 times in a set: {', '.join(wrong)}"
    if sum(tiles.values()) < ROUND_TILES:
        return f"the set has {sum(tiles.values())} tiles; a round deals {ROUND_TILES}"
    return None


def dice_problem(faces: Sequence[object]) -> str | None:
    """Why ``faces`` is not a throw of three dice 1–6, or None (a shaker's claim is checked)."""
    if len(faces) != 3:
        return f"{len(faces)} face(s), expected 3"
    bad = [f for f in faces if isinstance(f, bool) or not isinstance(f, int) or not 1 <= f <= 6]
    if bad:
        return f"face(s) {', '.join(map(str, bad))} not in 1–6"
    return None
