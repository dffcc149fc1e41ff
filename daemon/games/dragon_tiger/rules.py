"""Dragon Tiger rules: one card each, the higher rank wins (seed 002).

Pure: no I/O, no state. Seed 002 facts, for the backends that settle:
K is high and A is low, suits are ignored for the winner, equal ranks tie;
a win pays 1:1 and on a tie Dragon and Tiger bets lose half. Settlement is
the backend's; this module only states the facts its bets are settled on,
including the common side results (suited tie, colour, odd/even, big/small).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from drivers.cards import CardError, is_card, rank_order

Winner = Literal["dragon", "tiger", "tie"]
Colour = Literal["red", "black"]
Parity = Literal["odd", "even"]
Size = Literal["big", "small"]

_RED = frozenset("HD")


def _colour(card: str) -> Colour:
    return "red" if card[1] in _RED else "black"


def _parity(rank: int) -> Parity:
    return "odd" if rank % 2 else "even"


def _size(rank: int) -> Size | None:
    # 8..K big, A..6 small; a 7 is neither, so Big/Small bets lose on it.
    if rank >= 8:
        return "big"
    if rank <= 6:
        return "small"
    return None


@dataclass(frozen=True, slots=True)
class DragonTigerResult:
    """A settled Dragon Tiger round.

    Ranks are A = 1 … K = 13 (seed 002: K high, A low). On a ``tie`` the
    Dragon and Tiger bets lose half (seed 002); ``suited_tie`` is the same
    card (rank and suit) on both sides.
    """

    dragon: str
    tiger: str
    dragon_rank: int
    tiger_rank: int
    winner: Winner
    suited_tie: bool
    dragon_colour: Colour
    tiger_colour: Colour
    dragon_parity: Parity
    tiger_parity: Parity
    dragon_size: Size | None
    tiger_size: Size | None

    def to_data(self) -> dict[str, Any]:
        """JSON-ready dict for events and the journal."""
        return {
            "dragon": self.dragon,
            "tiger": self.tiger,
            "dragon_rank": self.dragon_rank,
            "tiger_rank": self.tiger_rank,
            "winner": self.winner,
            "suited_tie": self.suited_tie,
            "dragon_colour": self.dragon_colour,
            "tiger_colour": self.tiger_colour,
            "dragon_parity": self.dragon_parity,
            "tiger_parity": self.tiger_parity,
            "dragon_size": self.dragon_size,
            "tiger_size": self.tiger_size,
        }


def result(dragon: str, tiger: str) -> DragonTigerResult:
    """Settle one round from the Dragon card and the Tiger card (seed 002).

    Higher rank wins, suits ignored; equal ranks tie (Dragon/Tiger bets then
    lose half — the backend's settlement).
    """
    return DragonTigerResult(**_settle(dragon, tiger))


def result_data(dragon: str, tiger: str) -> dict[str, Any]:
    """``result(dragon, tiger).to_data()``, without the :class:`DragonTigerResult` between:
    what the table puts in ``hand.result``, every two cards (setting a frozen dataclass's
    12 fields costs more than working them out)."""
    return _settle(dragon, tiger)


def _settle(dragon: str, tiger: str) -> dict[str, Any]:
    """:func:`result`'s fields, in :meth:`DragonTigerResult.to_data`'s order."""
    for c in (dragon, tiger):
        if not is_card(c):
            raise CardError(f"{c!r} is not a card")
    d = rank_order(dragon)
    t = rank_order(tiger)
    winner: Winner = "dragon" if d > t else "tiger" if t > d else "tie"
    return {
        "dragon": dragon,
        "tiger": tiger,
        "dragon_rank": d,
        "tiger_rank": t,
        "winner": winner,
        "suited_tie": dragon == tiger,
        "dragon_colour": _colour(dragon),
        "tiger_colour": _colour(tiger),
        "dragon_parity": _parity(d),
        "tiger_parity": _parity(t),
        "dragon_size": _size(d),
        "tiger_size": _size(t),
    }
