"""Card notation and shoe composition.

One notation everywhere (events, journal, captures, commands): a rank from
``A23456789TJQK`` then a suit from ``SHDC`` — ``TH`` is the ten of hearts.
Cards are plain two-character strings: cheap to hash, compare and encode.
In ``drivers/`` because card readers speak it and games read it: the ground floor.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

RANKS: Final = "A23456789TJQK"
SUITS: Final = "SHDC"
DECK: Final[tuple[str, ...]] = tuple(r + s for s in SUITS for r in RANKS)


class CardError(ValueError):
    """A string that is not a card in our notation."""


def is_card(code: str) -> bool:
    return len(code) == 2 and code[0] in RANKS and code[1] in SUITS


def card(code: str) -> str:
    """Normalise and check a card typed by a person (``kd`` → ``KD``, ``10h`` → ``TH``)."""
    c = code.strip().upper()
    if len(c) == 3 and c.startswith("10"):
        c = "T" + c[2]
    if not is_card(c):
        raise CardError(
            f"{code!r} is not a card: expected a rank of {RANKS} then a suit of {SUITS}"
        )
    return c


def rank(code: str) -> str:
    return code[0]


def suit(code: str) -> str:
    return code[1]


def rank_order(code: str) -> int:
    """A=1 … K=13: the order Dragon Tiger compares (K high, A low)."""
    return RANKS.index(code[0]) + 1


def shoe_composition(decks: int) -> Counter[str]:
    """How many of each card a shoe of ``decks`` full 52-card decks holds."""
    return Counter({c: decks for c in DECK})
