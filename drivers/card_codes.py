"""Card codes as card readers send them, decoded into our notation.

The encoding is a property of the device, not of the game, so it is a
device option shared by the serial shoe and the USB scanner
(`docs/protocols/sources.md`):

- ``rank-suit``: ``TH``, ``10H``, ``AS`` (the common electronic-shoe form);
- ``suit-rank``: ``HT``, ``H10``, ``SA`` (keyboard-wedge scanners);
- ``boxed``: a box letter A–E, a suit digit (1 spades, 2 hearts, 3 clubs,
  4 diamonds), a two-digit rank 01–13 and a 0 — ``A3020`` is the Player's
  first card, the two of clubs.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from drivers.cards import RANKS, SUITS

Encoding = Literal["rank-suit", "suit-rank", "boxed"]
ENCODINGS: Final[tuple[str, ...]] = ("rank-suit", "suit-rank", "boxed")

#: the box a ``boxed`` code names (the device's claim; shoe order decides).
BOX_LETTERS: Final = {"A": "player", "B": "player", "C": "banker", "D": "banker", "E": "third"}
_SUIT_DIGITS: Final = {"1": "S", "2": "H", "3": "C", "4": "D"}
_RANK_WORDS: Final = {"10": "T", "1": "A", "11": "J", "12": "Q", "13": "K"}


def _rank(text: str) -> str | None:
    r = _RANK_WORDS.get(text, text)
    return r if len(r) == 1 and r in RANKS else None


def decode(code: str, encoding: Encoding) -> tuple[str, str | None] | None:
    """``(card, claimed box)`` for a valid code, None for anything else."""
    c = code.strip().upper()
    if encoding == "rank-suit":
        if 2 <= len(c) <= 3 and c[-1] in SUITS and (r := _rank(c[:-1])):
            return r + c[-1], None
        return None
    if encoding == "suit-rank":
        if 2 <= len(c) <= 3 and c[0] in SUITS and (r := _rank(c[1:])):
            return r + c[0], None
        return None
    if len(c) == 5 and c[0] in BOX_LETTERS and c[1] in _SUIT_DIGITS and c[4] == "0":
        if c[2:4].isdigit() and 1 <= int(c[2:4]) <= 13:
            return RANKS[int(c[2:4]) - 1] + _SUIT_DIGITS[c[1]], BOX_LETTERS[c[0]]
    return None


def encode(card: str, encoding: Encoding, box_letter: str = "A") -> str:
    """The code a device of this encoding sends for ``card`` (simulators use it)."""
    rank, suit = card[0], card[1]
    if encoding == "rank-suit":
        return card
    if encoding == "suit-rank":
        return suit + rank
    digit = {v: k for k, v in _SUIT_DIGITS.items()}[suit]
    return f"{box_letter}{digit}{RANKS.index(rank) + 1:02d}0"


class CardCodeOptions(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """What a card reader's codes mean: the options a serial shoe and a USB scanner share."""

    encoding: Encoding = "rank-suit"
    cut_card_code: str | None = "CUT"
    read_error_code: str | None = "ERR"
    face_up_marker: str | None = "!"
    shoe_removed_code: str | None = None
    shoe_inserted_code: str | None = None
    #: drop a code equal to the previous one within ``repeat_window`` seconds: some shoes
    #: send each draw twice, and a scanner in continuous mode reads a card again while it
    #: lies under it. A real second copy of a card (several decks) comes a dealer's hand
    #: movement later, outside the window.
    drop_repeats: bool = False
    repeat_window: Annotated[float, msgspec.Meta(ge=0)] = 0.3


class RepeatFilter:
    """Repeat suppression by a time window, for any reader of codes."""

    __slots__ = ("_last", "_last_at", "dropped", "options")

    def __init__(self, options: CardCodeOptions) -> None:
        self.options = options
        self._last: object = None
        self._last_at = float("-inf")
        self.dropped = 0

    def repeat(self, code: object, now: float) -> bool:
        """True when ``code`` is the same draw sent again (and is to be dropped)."""
        o = self.options
        if not o.drop_repeats:
            return False
        if code == self._last and now - self._last_at <= o.repeat_window:
            self.dropped += 1
            self._last_at = now
            return True
        self._last, self._last_at = code, now
        return False

    def reset(self) -> None:
        self._last = None
