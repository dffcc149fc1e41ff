"""Blackjack rules (seed 003 part III): pure functions of cards, no I/O, no table state.

Card values (seed 003 part III §1.5): 2–10 face value, J/Q/K ten, an ace one
or eleven — eleven unless that takes the hand over 21. A hand is *soft*
while one ace counts eleven. A blackjack is an ace and a ten-value card as
the first two cards of a hand that was not split (§1.1, §2.7). The dealer
draws to 16 and stands on every 17, hard or soft (§1.2.3, §4.4.2).
Settlement follows §2.1–2.3 and §2.5.3; legality of hit, double and split
follows §2.6, §2.7 and §4.4.1, with the house options §1.3 allows.

:func:`dealer_distribution` computes the dealer's final totals exactly
(fractions) for an infinite deck or a finite shoe: the rules' own check
against published dealer-outcome tables (``tests/test_blackjack_rules.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any, Literal

from drivers.cards import CardError, is_card

#: seed 003 part III §1.5: J, Q, K are worth ten, like the ten.
TEN_VALUE = frozenset("TJQK")

Outcome = Literal["blackjack", "win", "push", "lose", "bust"]


def value(card: str) -> int:
    """A card's value with an ace as one (§1.5)."""
    if not is_card(card):
        raise CardError(f"{card!r} is not a card")
    r = card[0]
    if r == "A":
        return 1
    if r in TEN_VALUE:
        return 10
    return int(r)


@dataclass(frozen=True, slots=True)
class Total:
    """A hand's best total: ``soft`` when an ace counts eleven (§1.1 "soft total")."""

    total: int
    soft: bool

    @property
    def bust(self) -> bool:
        return self.total > 21

    def text(self) -> str:
        if self.bust:
            return f"{self.total} bust"
        return f"soft {self.total}" if self.soft else str(self.total)


def total_of_values(values: Iterable[int]) -> Total:
    hard = 0
    ace = False
    for v in values:
        hard += v
        ace = ace or v == 1
    if ace and hard + 10 <= 21:
        return Total(hard + 10, True)
    return Total(hard, False)


def total(cards: Sequence[str]) -> Total:
    """§1.5.3: an ace is eleven unless that would take the hand over 21."""
    return total_of_values(value(c) for c in cards)


def is_blackjack(cards: Sequence[str], *, split: bool = False) -> bool:
    """An ace and a ten-value card as the first two cards (§1.1); after a split it is 21 (§2.7)."""
    if split or len(cards) != 2:
        return False
    vs = sorted(value(c) for c in cards)
    return vs == [1, 10]


def dealer_draws(cards: Sequence[str]) -> bool:
    """§4.4.2: the dealer draws until a hard or soft 17, 18, 19, 20 or 21."""
    return total(cards).total < 17


def dealer_draws_values(values: Sequence[int]) -> bool:
    return total_of_values(values).total < 17


# -- ratios ------------------------------------------------------------------------------


def ratio(text: str) -> Fraction:
    """``"3:2"`` → 3/2: payout ratios are written as the table's sign says them (§1.2.3)."""
    a, sep, b = text.partition(":")
    if not sep or not a.isdigit() or not b.isdigit() or int(b) == 0:
        raise ValueError(f"{text!r} is not a payout ratio like 3:2")
    return Fraction(int(a), int(b))


# -- legality ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HandView:
    """What legality depends on: the hand's cards and how it came to be."""

    cards: tuple[str, ...]
    split: bool = False  # one of the two hands of a split
    split_aces: bool = False  # a split ace hand
    doubled: bool = False


def can_hit(h: HandView, *, split_aces_one_card: bool) -> str | None:
    """None if a hit is allowed, else why not (§4.4.1, §2.6, §2.7)."""
    t = total(h.cards)
    if is_blackjack(h.cards, split=h.split):
        return "the hand is a blackjack: it gets no more cards (§4.4.1)"
    if t.bust:
        return f"the hand is bust ({t.total})"
    if t.total == 21:
        return "the hand has 21: it gets no more cards (§4.4.1)"
    if h.doubled:
        return "a doubled hand gets one card only (§2.6)"
    if h.split_aces and split_aces_one_card and len(h.cards) >= 2:
        return "split aces get one card each (house rule, §2.7)"
    return None


def can_double(
    h: HandView, *, double_on: str, double_after_split: bool, split_aces_one_card: bool
) -> str | None:
    """§2.6: one extra bet on the first two cards, one more card only; house limits per §1.3.2."""
    why = can_hit(h, split_aces_one_card=split_aces_one_card)
    if why is not None:
        return why
    if len(h.cards) != 2:
        return f"double only on the first two cards; the hand has {len(h.cards)} (§2.6)"
    if h.split and not double_after_split:
        return "no double after a split at this table (house rule, §1.3.2)"
    t = total(h.cards)
    if double_on == "9-11" and (t.soft or t.total not in (9, 10, 11)):
        return f"this table doubles on hard 9, 10 or 11 only; the hand is {t.text()} (house rule, §1.3.2)"
    if double_on == "10-11" and (t.soft or t.total not in (10, 11)):
        return (
            f"this table doubles on hard 10 or 11 only; the hand is {t.text()} (house rule, §1.3.2)"
        )
    return None


def can_split(hands: Sequence[HandView]) -> str | None:
    """§2.7: two first cards of identical value, once per box (no re-split, aces included)."""
    if len(hands) != 1:
        return "a box splits once only: no re-split (§2.7)"
    h = hands[0]
    if len(h.cards) != 2:
        return f"split only the first two cards; the hand has {len(h.cards)} (§2.7)"
    a, b = (value(c) for c in h.cards)
    if a != b:
        return f"{h.cards[0]} and {h.cards[1]} are not of identical value (§2.7)"
    if is_blackjack(h.cards):
        return "the hand is a blackjack"
    return None


# -- settlement ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HandResult:
    cards: tuple[str, ...]
    total: int
    soft: bool
    blackjack: bool
    bet: int  # multiples of the box's bet on this hand: 2 when doubled
    outcome: Outcome
    ratio: str  # the payout ratio applied: "3:2", "1:1", "0:1" (push) or "-1:1" (lost)
    net: Fraction  # what the hand wins (+) or loses (−), in units of the box's bet

    def to_data(self) -> dict[str, Any]:
        return {
            "cards": list(self.cards),
            "total": self.total,
            "soft": self.soft,
            "blackjack": self.blackjack,
            "bet": self.bet,
            "outcome": self.outcome,
            "ratio": self.ratio,
            "net": _num(self.net),
        }


def _num(f: Fraction) -> int | float:
    return int(f) if f.denominator == 1 else float(f)


def settle_hand(
    cards: Sequence[str],
    dealer: Sequence[str],
    *,
    split: bool = False,
    doubled: bool = False,
    blackjack_pays: str = "3:2",
    dealer_blackjack_takes: str = "all",
) -> HandResult:
    """One hand against the dealer's final hand (§2.1.1, §2.2, §2.3).

    A busted player loses even when the dealer busts; a player's 21 that is
    not a blackjack loses to a dealer blackjack; equal totals and blackjack
    against blackjack push. ``dealer_blackjack_takes="original"`` is the house
    option of returning doubled stakes to a dealer blackjack (§1.3.4).
    """
    t = total(cards)
    d = total(dealer)
    bj = is_blackjack(cards, split=split)
    dbj = is_blackjack(dealer)
    bet = 2 if doubled else 1
    if t.bust:
        return HandResult(tuple(cards), t.total, t.soft, False, bet, "bust", "-1:1", Fraction(-bet))
    if bj and not dbj:
        r = ratio(blackjack_pays)
        return HandResult(
            tuple(cards), t.total, t.soft, True, bet, "blackjack", blackjack_pays, r * bet
        )
    if bj and dbj:
        return HandResult(tuple(cards), t.total, t.soft, True, bet, "push", "0:1", Fraction(0))
    if dbj:
        lost = 1 if dealer_blackjack_takes == "original" else bet
        return HandResult(
            tuple(cards), t.total, t.soft, False, bet, "lose", "-1:1", Fraction(-lost)
        )
    if d.bust or t.total > d.total:
        return HandResult(tuple(cards), t.total, t.soft, False, bet, "win", "1:1", Fraction(bet))
    if t.total == d.total:
        return HandResult(tuple(cards), t.total, t.soft, False, bet, "push", "0:1", Fraction(0))
    return HandResult(tuple(cards), t.total, t.soft, False, bet, "lose", "-1:1", Fraction(-bet))


def settle_insurance(dealer: Sequence[str], *, insurance_pays: str = "2:1") -> tuple[str, Fraction]:
    """§2.5: half the bet; wins 2:1 when the hole card makes a blackjack, else lost."""
    if is_blackjack(dealer):
        return "win", ratio(insurance_pays) / 2
    return "lose", Fraction(-1, 2)


def dealer_plays(hands_in_play: Iterable[bool]) -> bool:
    """§4.4.3: the dealer draws only if some hand still in play could be changed by it."""
    return any(hands_in_play)


# -- the exact check ----------------------------------------------------------------------------

FINALS = ("17", "18", "19", "20", "21", "blackjack", "bust")
_INFINITE: Mapping[int, Fraction] = {v: Fraction(1, 13) for v in range(1, 10)} | {
    10: Fraction(4, 13)
}


def dealer_distribution(
    up: int, *, decks: int | None = None, blackjack_apart: bool = False
) -> dict[str, Fraction]:
    """The dealer's final total from up card value ``up`` (1 = ace), before any peek.

    ``decks=None`` is an infinite deck (every card 1/13, ten-values 4/13);
    otherwise a shoe of ``decks`` full decks less the up card, dealt without
    replacement. The dealer follows :func:`dealer_draws`, nothing else, so this
    checks the table's own rule. A dealer blackjack is counted under ``21``
    unless ``blackjack_apart``.
    """
    if decks is None:
        counts: tuple[int, ...] | None = None
    else:
        c = [4 * decks] * 9 + [16 * decks]
        c[up - 1] -= 1
        counts = tuple(c)
    out = _dist((up,), counts)
    result = {k: Fraction(0) for k in FINALS}
    for k, p in out.items():
        result[k] += p
    if not blackjack_apart:
        result["21"] += result.pop("blackjack")
    return result


@cache
def _dist(values: tuple[int, ...], counts: tuple[int, ...] | None) -> dict[str, Fraction]:
    t = total_of_values(values)
    if t.bust:
        return {"bust": Fraction(1)}
    if not dealer_draws_values(values):
        if len(values) == 2 and sorted(values) == [1, 10]:
            return {"blackjack": Fraction(1)}
        return {str(t.total): Fraction(1)}
    out: dict[str, Fraction] = {}
    if counts is None:
        probs = [(v, _INFINITE[v], None) for v in range(1, 11)]
    else:
        n = sum(counts)
        probs = []
        for v in range(1, 11):
            k = counts[v - 1]
            if k:
                nxt = list(counts)
                nxt[v - 1] -= 1
                probs.append((v, Fraction(k, n), tuple(nxt)))
    for v, p, nxt in probs:
        # an infinite deck depends only on the total; keep the key small
        key = tuple(sorted((*values, v))) if nxt is not None else _canon((*values, v))
        for k, q in _dist(key, nxt).items():
            out[k] = out.get(k, Fraction(0)) + p * q
    return out


def _canon(values: tuple[int, ...]) -> tuple[int, ...]:
    """An infinite deck's state is the hard total, the ace, and whether it is still two cards."""
    if len(values) <= 2:
        return values
    hard = sum(values)
    return (hard - 1, 1, 0) if 1 in values else (hard, 0)
