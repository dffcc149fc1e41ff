"""Baccarat rules: card values, the drawing table, dealing order and the hand result.

Pure functions of the cards dealt, no I/O and no state: the table procedures
ask :func:`next_box` where each card from the shoe goes, and settle a finished
hand with :func:`result`. Every seed agrees on these rules (seed 000/001 art.
5, 7, 9, 11-13, 17-18; seed 002 drawing table; seed 003 §1.3.2, §3.4.3, §3.5.1;
seed 004 tables, Super 6 and Big/Small), so nothing here is a house option.

The hot paths (:func:`next_box`, :func:`hand_total`, :func:`banker_draws`) are
table lookups so a card-reading shoe can be followed at well over 100k frames/s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from drivers.cards import DECK, CardError

Box = Literal["player", "banker"]
Winner = Literal["player", "banker", "tie"]

# seed 000/001 art. 5; seed 003 §1.3.2: A = 1, 2-9 face value, 10/J/Q/K = 0.
_RANK_VALUE: Final = {"A": 1, "T": 0, "J": 0, "Q": 0, "K": 0} | {str(n): n for n in range(2, 10)}
_VALUE: Final[dict[str, int]] = {c: _RANK_VALUE[c[0]] for c in DECK}

# The Banker's drawing table (seed 000/001 art. 9; seed 002 table; seed 003
# §3.5.1; seed 004), indexed [banker total][player third-card value], with
# column 10 meaning "Player stood". Totals 8-9 are naturals and never draw.
_STOOD: Final = 10


def _banker_row(total: int) -> tuple[bool, ...]:
    # If Player stood, Banker plays like Player: draw on 0-5.
    stood = total <= 5
    if total <= 2:
        draws = set(range(10))
    elif total == 3:
        draws = set(range(10)) - {8}
    elif total == 4:
        draws = set(range(2, 8))
    elif total == 5:
        draws = set(range(4, 8))
    elif total == 6:
        draws = {6, 7}
    else:  # 7 stands; 8-9 are naturals
        draws = set()
    return (*(p in draws for p in range(10)), stood)


_BANKER_DRAWS: Final = tuple(_banker_row(t) for t in range(10))
_PLAYER_DRAWS: Final = tuple(t <= 5 for t in range(10))

# Dealing order before the third cards (seed 000/001 art. 7; seed 003 §3.4.3):
# cards 1 and 3 to Player, 2 and 4 to Banker. Keyed by (player, banker) counts.
_OPENING: Final[dict[tuple[int, int], Box]] = {
    (0, 0): "player",
    (1, 0): "banker",
    (1, 1): "player",
    (2, 1): "banker",
}


def card_value(card: str) -> int:
    """Baccarat value of one card: A = 1, 2-9 face value, T/J/Q/K = 0 (seed 000/001 art. 5)."""
    try:
        return _VALUE[card]
    except KeyError:
        raise CardError(f"{card!r} is not a card") from None


def hand_total(cards: Sequence[str]) -> int:
    """Total of a hand: the sum of card values modulo 10 (seed 000/001 art. 5)."""
    try:
        return sum(map(_VALUE.__getitem__, cards)) % 10
    except KeyError as e:
        raise CardError(f"{e.args[0]!r} is not a card") from None


def _check_total(total: int) -> None:
    if not 0 <= total <= 9:
        raise ValueError(f"a baccarat total is 0-9, not {total!r}")


def player_draws(player_total: int) -> bool:
    """Whether Player, with ``player_total`` on two cards and no natural, draws: on 0-5.

    Seed 000/001 art. 9; seed 002 table; seed 004. A natural (8-9 on either
    side) stops the hand before this is asked; here 6-9 all stand.
    """
    _check_total(player_total)
    return _PLAYER_DRAWS[player_total]


def banker_draws(banker_total: int, player_third: int | None) -> bool:
    """Whether Banker, with ``banker_total`` on two cards, draws a third card.

    ``player_third`` is the *value* (0-9) of Player's third card, or None when
    Player stood. The full table (seed 000/001 art. 9; seed 002; seed 004):
    Player stood: draw on 0-5. Player drew p: 0-2 draw; 3 draws unless p = 8;
    4 draws on p 2-7; 5 on p 4-7; 6 on p 6-7; 7 stands. Totals 8-9 are
    naturals and never draw (the hand stopped before this question).
    """
    _check_total(banker_total)
    if player_third is None:
        return _BANKER_DRAWS[banker_total][_STOOD]
    if not 0 <= player_third <= 9:
        raise ValueError(f"a card value is 0-9, not {player_third!r}")
    return _BANKER_DRAWS[banker_total][player_third]


def next_box(player: Sequence[str], banker: Sequence[str]) -> Box | None:
    """Which box the next card from the shoe goes to, or None when the hand is complete.

    ``player`` and ``banker`` are the cards dealt so far, in dealing order.
    Order (seed 000/001 art. 7; seed 003 §3.4.3): P, B, P, B, then Player's
    third card if due, then Banker's if due; a natural stops both sides
    (art. 9). A state the rules cannot reach — a card out of order, a third
    card that was not due, a fourth card — raises ValueError, so a caller can
    never carry on from a misdeal as if it were a hand.
    """
    n_player = len(player)
    n_banker = len(banker)
    if n_player < 2 or n_banker < 2:
        box = _OPENING.get((n_player, n_banker))
        if box is None:
            raise ValueError(
                f"impossible deal: {n_player} Player and {n_banker} Banker cards "
                "(first four go P, B, P, B)"
            )
        for c in (*player, *banker):
            if c not in _VALUE:
                raise CardError(f"{c!r} is not a card")
        return box
    if n_player > 3 or n_banker > 3:
        raise ValueError(f"impossible deal: {n_player} Player and {n_banker} Banker cards")
    value = _VALUE
    try:
        p_total = (value[player[0]] + value[player[1]]) % 10
        b_total = (value[banker[0]] + value[banker[1]]) % 10
        if p_total >= 8 or b_total >= 8:
            if n_player == 2 and n_banker == 2:
                return None  # natural: both stand (art. 9)
            raise ValueError("impossible deal: a third card after a natural")
        if p_total <= 5:
            if n_player == 2:
                if n_banker == 2:
                    return "player"
                raise ValueError("impossible deal: Banker's third card before Player's")
            row_index = value[player[2]]
        else:
            if n_player == 3:
                raise ValueError(f"impossible deal: Player stands on {p_total}, has a third card")
            row_index = _STOOD
    except KeyError as e:
        raise CardError(f"{e.args[0]!r} is not a card") from None
    due = _BANKER_DRAWS[b_total][row_index]
    if n_banker == 2:
        return "banker" if due else None
    if due:
        if banker[2] not in value:
            raise CardError(f"{banker[2]!r} is not a card")
        return None
    raise ValueError(f"impossible deal: Banker stands on {b_total} but has a third card")


@dataclass(frozen=True, slots=True)
class HandResult:
    """A settled hand: everything a backend settles main and side bets on.

    Settlement itself (payouts, commission) is the backend's; this only states
    facts: winner (art. 11-12), naturals (art. 9), pairs (art. 13, 17; seed
    004: first two cards same rank, suits ignored), card count for Big/Small
    (seed 004: Small = 4 cards, Big = 5-6) and ``banker_six`` — a Banker win
    with total 6, paid half in no-commission / Super 6 games (seed 004).
    """

    player: tuple[str, ...]
    banker: tuple[str, ...]
    player_total: int
    banker_total: int
    winner: Winner
    natural: bool
    player_natural: bool
    banker_natural: bool
    player_pair: bool
    banker_pair: bool
    cards: int
    big: bool
    small: bool
    banker_six: bool

    def to_data(self) -> dict[str, Any]:
        """JSON-ready dict (card tuples as lists) for events and the journal."""
        return {
            "player": list(self.player),
            "banker": list(self.banker),
            "player_total": self.player_total,
            "banker_total": self.banker_total,
            "winner": self.winner,
            "natural": self.natural,
            "player_natural": self.player_natural,
            "banker_natural": self.banker_natural,
            "player_pair": self.player_pair,
            "banker_pair": self.banker_pair,
            "cards": self.cards,
            "big": self.big,
            "small": self.small,
            "banker_six": self.banker_six,
        }


def result(player: Sequence[str], banker: Sequence[str]) -> HandResult:
    """Settle a complete hand; ValueError if :func:`next_box` says a card is still due.

    Refusing incomplete hands means no caller can settle a hand the shoe has
    not finished dealing.
    """
    return HandResult(**_settle(player, banker))


def result_data(player: Sequence[str], banker: Sequence[str]) -> dict[str, Any]:
    """``result(player, banker).to_data()``, without the :class:`HandResult` between: what the
    table puts in ``hand.result``, once a hand (setting a frozen dataclass's 14 fields costs
    more than working them out)."""
    data = _settle(player, banker)
    data["player"] = list(data["player"])
    data["banker"] = list(data["banker"])
    return data


def _settle(player: Sequence[str], banker: Sequence[str]) -> dict[str, Any]:
    """:func:`result`'s fields, in :meth:`HandResult.to_data`'s order (cards as tuples)."""
    box = next_box(player, banker)
    if box is not None:
        raise ValueError(f"hand not complete: the next card is due to {box}")
    p = tuple(player)
    b = tuple(banker)
    p_total = hand_total(p)
    b_total = hand_total(b)
    winner: Winner
    if p_total > b_total:
        winner = "player"
    elif b_total > p_total:
        winner = "banker"
    else:
        winner = "tie"
    # Two cards totalling 8-9 is always a natural, and a natural always ends
    # the hand on two cards, so this is exact.
    player_natural = len(p) == 2 and p_total >= 8
    banker_natural = len(b) == 2 and b_total >= 8
    n = len(p) + len(b)
    return {
        "player": p,
        "banker": b,
        "player_total": p_total,
        "banker_total": b_total,
        "winner": winner,
        "natural": player_natural or banker_natural,
        "player_natural": player_natural,
        "banker_natural": banker_natural,
        "player_pair": p[0][0] == p[1][0],
        "banker_pair": b[0][0] == b[1][0],
        "cards": n,
        "big": n >= 5,
        "small": n == 4,
        "banker_six": winner == "banker" and b_total == 6,
    }
