"""A shoe game's result corrections: the hand's cards corrected, the hand re-derived.

The corrected cards go to their boxes in dealing order and are dealt again by the game's
own drawing rules (``hand_rules.next_box``), so a hand the rules cannot have produced
(a sixth card in a baccarat hand, a third card the rules do not draw, a hand the rules
would go on drawing to) is refused with the reason; the result is ``hand_rules.result``'s
(``daemon/table/corrections.py`` has the limits; ``docs/procedures.md``, Result corrections).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import msgspec

from daemon.procedures.shoe import roads
from daemon.procedures.shoe.state import ShoeParts, ShoeState
from daemon.table import corrections
from daemon.table.corrections import CorrectionError
from drivers.cards import CardError, card


class ShoeCorrections(ShoeParts):
    """``correct``: the table's hook for ``result.correct`` (``daemon/table/corrections.py``)."""

    #: a void, a voided or ended shoe and a new shoe end the corrections' window
    correction_closers: ClassVar[frozenset[str]] = frozenset(
        {"hand.void", "shoe.void", "shoe.ended", "shoe.started"}
    )

    def correct(
        self, s: ShoeState, type_: str, original: Mapping[str, Any], words: Any, later: int
    ) -> dict[str, Any]:
        hands = self.hand_rules
        given = corrections.inputs(words, corrections.names_of(hands.boxes, "cards"))
        boxes: dict[str, tuple[str, ...]] = {}
        for b in hands.boxes:
            was = original.get(b) or []
            raw = (
                corrections.split(given[b])
                if b in given
                else [was]
                if isinstance(was, str)
                else list(was)
            )
            try:
                boxes[b] = tuple(card(c) for c in raw)
            except CardError as e:
                raise CorrectionError(f"{b}: {e}") from None
        too_many = [c for c, n in _counts(boxes).items() if n > self.full.get(c, 0)]
        if too_many:
            raise CorrectionError(
                f"{', '.join(too_many)}: more than a {self.rules.decks}-deck shoe holds"
            )
        dealt = _redeal(hands, boxes)
        data = corrections.merged(original, hands.result(dealt, self.rules, original["hand"]))
        data.pop("roads", None)
        board = list(s.board())
        at = len(board) - 1 - later
        shown = None
        if "winner" in data and 0 <= at < len(board):
            board[at] = data["winner"]
            shown = roads.roads(board, hands.boxes)
        return {"inputs": {b: list(v) for b, v in dealt.items()}, "result": data, "roads": shown}


def _counts(boxes: Mapping[str, tuple[str, ...]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for cards in boxes.values():
        for c in cards:
            out[c] = out.get(c, 0) + 1
    return out


def _redeal(hands: Any, boxes: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The hand dealt again, card by card, as the rules call for each: the cards given."""
    left = {b: list(v) for b, v in boxes.items()}
    dealt: dict[str, tuple[str, ...]] = {b: () for b in boxes}
    while (box := hands.next_box(dealt)) is not None:
        if not left[box]:
            n = len(dealt[box]) + 1
            raise CorrectionError(
                f"the rules deal a card {n} to {box} after "
                + _shown(dealt)
                + f": the corrected {box} has {len(boxes[box])} card(s)"
            )
        dealt[box] = (*dealt[box], left[box].pop(0))
    extra = {b: v for b, v in left.items() if v}
    if extra:
        b, v = next(iter(extra.items()))
        raise CorrectionError(
            f"the rules deal no more cards after {_shown(dealt)}: "
            f"{' '.join(v)} cannot be in {b}'s hand (card {len(dealt[b]) + 1} of {b}, "
            f"{sum(map(len, boxes.values()))} cards in all)"
        )
    return dealt


def _shown(boxes: Mapping[str, tuple[str, ...]]) -> str:
    return ", ".join(f"{b} {' '.join(v) or '-'}" for b, v in boxes.items())


def corrected(s: ShoeState, data: Mapping[str, Any]) -> ShoeState:
    """``result.corrected`` folded: the corrected winner on the shoe's scoreboard."""
    winner = data["result"].get("winner")
    board = list(s.board())
    at = len(board) - 1 - int(data.get("later", 0))
    if winner is None or not 0 <= at < len(board) or board != list(s.winners):
        return s
    board[at] = winner
    return msgspec.structs.replace(s, winners=tuple(board))
