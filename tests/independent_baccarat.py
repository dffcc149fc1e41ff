"""A second, independent baccarat implementation, for cross-checking only.

Written straight from docs/rules.md in a deliberately different style
from daemon/games/baccarat/rules.py (no shared code, no lookup tables: explicit
if/elif of the drawing table, a shoe consumed front to back). If both agree
on every hand, a mistake would have to be made twice in two different ways.
Capture checks import this module: keep ``settle`` and ``deal`` stable.
"""

from __future__ import annotations


def points(card: str) -> int:
    r = card[0]
    if r in "TJQK":
        return 0
    if r == "A":
        return 1
    if r in "23456789":
        return int(r)
    raise ValueError(f"not a card: {card!r}")


def score(hand: list[str]) -> int:
    total = 0
    for c in hand:
        total = (total + points(c)) % 10
    return total


def banker_hits(banker_score: int, player_third: int | None) -> bool:
    """docs/rules.md "Dealing and drawing", written out one case at a time."""
    if player_third is None:
        return banker_score <= 5
    p = player_third
    if banker_score in (0, 1, 2):
        return True
    elif banker_score == 3:
        return p != 8
    elif banker_score == 4:
        return 2 <= p <= 7
    elif banker_score == 5:
        return 4 <= p <= 7
    elif banker_score == 6:
        return p in (6, 7)
    else:
        return False


def deal(shoe: list[str]) -> tuple[list[str], list[str], int]:
    """Deal one hand from the front of ``shoe``: (player cards, banker cards, cards used)."""
    pos = 0

    def draw() -> str:
        nonlocal pos
        if pos >= len(shoe):
            raise ValueError("shoe ran out in the middle of a hand")
        c = shoe[pos]
        pos += 1
        return c

    player: list[str] = []
    banker: list[str] = []
    # Cards 1 and 3 to Player, 2 and 4 to Banker.
    player.append(draw())
    banker.append(draw())
    player.append(draw())
    banker.append(draw())
    ps = score(player)
    bs = score(banker)
    if ps in (8, 9) or bs in (8, 9):
        return player, banker, pos
    third: int | None = None
    if ps < 6:
        player.append(draw())
        third = points(player[2])
    if banker_hits(bs, third):
        banker.append(draw())
    return player, banker, pos


def settle(player: list[str], banker: list[str]) -> dict:
    """Facts of a finished hand; trusts the caller that the hand was dealt by the rules."""
    ps = score(player)
    bs = score(banker)
    if ps == bs:
        winner = "tie"
    elif ps > bs:
        winner = "player"
    else:
        winner = "banker"
    natural = (len(player) == 2 and ps >= 8) or (len(banker) == 2 and bs >= 8)
    return {
        "winner": winner,
        "player_total": ps,
        "banker_total": bs,
        "player_pair": player[0][0] == player[1][0],
        "banker_pair": banker[0][0] == banker[1][0],
        "cards": len(player) + len(banker),
        "banker_six": winner == "banker" and bs == 6,
        "natural": natural,
    }
