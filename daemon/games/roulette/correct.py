"""Roulette's result corrections: a number read wrong, corrected to a pocket of this wheel.

The pocket's facts (colour, dozen, column, parity, range) are re-derived by
:func:`daemon.games.roulette.rules.result_data`; the spin's own facts (the wheel's spin
number, the rotor, the ball) stay as the wheel reported them (``daemon/table/corrections.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from daemon.games.roulette import rules as roulette
from daemon.table import corrections
from daemon.table.corrections import CorrectionError


class RouletteCorrections:
    """``correct``: the table's hook for ``result.correct``."""

    rules: Any

    def correct(
        self, g: Any, type_: str, original: Mapping[str, Any], words: Any, later: int
    ) -> dict[str, Any]:
        double = self.rules.double_zero
        pockets = "0–36 and 00" if double else "0–36"
        given = corrections.inputs(words, {"number": f"the pocket, {pockets}"})
        raw = given["number"].strip()
        if raw == "00":
            number = roulette.DOUBLE_ZERO
        else:
            try:
                number = int(raw)
            except ValueError:
                raise CorrectionError(f"number {raw!r}: not a pocket ({pockets})") from None
        if not roulette.is_pocket(number, double):
            raise CorrectionError(
                f"number {raw}: this wheel ({roulette.layout(double)}) has no such pocket "
                f"({pockets})"
            )
        data = corrections.merged(original, roulette.result_data(number, double))
        return {"inputs": {"number": number}, "result": data}
