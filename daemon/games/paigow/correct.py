"""Mahjong Pai Gow's result corrections: the tiles (and the dice) read wrong, corrected.

The twelve tiles are given in dealing order, as ``round.result`` lists them; the dice,
when corrected too, say again who is dealt first (:func:`rules.first_position`). Each
tile must be one the house's set holds, no more often than the set has it (an
impossible tile set is refused); the verdict is :func:`rules.verdict`'s
(``daemon/table/corrections.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from daemon.games.paigow import rules
from daemon.table import corrections
from daemon.table.corrections import CorrectionError


class PaiGowCorrections:
    """``correct``: the table's hook for ``result.correct``."""

    rules: Any

    def correct(
        self, g: Any, type_: str, original: Mapping[str, Any], words: Any, later: int
    ) -> dict[str, Any]:
        names = {
            "tiles": f"the {rules.ROUND_TILES} tiles in dealing order: 1p,wd,…",
            "dice": "the three dice, 1–6 each: 2,5,6",
        }
        given = corrections.inputs(words, names)
        dice = list(original["dice"])
        if "dice" in given:
            dice = corrections.numbers(given["dice"], "dice")
            why = rules.dice_problem(dice)
            if why is not None:
                raise CorrectionError(f"dice {given['dice']}: {why}")
        tiles = list(original["tiles"])
        if "tiles" in given:
            tiles = [t.lower() for t in corrections.split(given["tiles"])]
        if len(tiles) != rules.ROUND_TILES:
            raise CorrectionError(f"{len(tiles)} tiles: a round deals {rules.ROUND_TILES}")
        house: dict[str, int] = self.rules.tiles
        unknown = sorted({t for t in tiles if house.get(t, 0) == 0})
        if unknown:
            raise CorrectionError(
                f"tile(s) {', '.join(unknown)} not in this table's set "
                f"({', '.join(t for t, n in house.items() if n)})"
            )
        over = sorted({t for t in tiles if tiles.count(t) > house[t]})
        if over:
            raise CorrectionError(
                "an impossible tile set: "
                + ", ".join(f"{t} {tiles.count(t)} times (the set has {house[t]})" for t in over)
            )
        first = rules.first_position(dice)
        order = rules.deal_order(first, self.rules.deal)
        hands: dict[str, list[str]] = {p: [] for p in rules.POSITIONS}
        for pos, tile in zip(order, tiles, strict=True):
            hands[pos].append(tile)
        derived = {
            "dice": dice,
            "total": sum(dice),
            "first": first,
            "tiles": tiles,
            **rules.verdict(hands, self.rules.zero_hands),
        }
        return {
            "inputs": {"tiles": tiles, "dice": dice},
            "result": corrections.merged(original, derived),
        }
