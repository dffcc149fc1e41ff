"""Sic Bo's result corrections: the three dice read wrong, corrected to three faces 1–6.

Every fact of the throw is re-derived by :func:`daemon.games.sicbo.rules.result`; the
round's own facts (the shaker, its shakes) stay as they were (``daemon/table/corrections.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from daemon.games.sicbo import rules as sicbo
from daemon.table import corrections
from daemon.table.corrections import CorrectionError


class SicBoCorrections:
    """``correct``: the table's hook for ``result.correct``."""

    def correct(
        self, g: Any, type_: str, original: Mapping[str, Any], words: Any, later: int
    ) -> dict[str, Any]:
        given = corrections.inputs(words, {"faces": "the three dice, 1–6 each: 3,5,6"})
        faces = corrections.numbers(given["faces"], "faces")
        why = sicbo.problem(faces)
        if why is not None:
            raise CorrectionError(f"faces {given['faces']}: not a throw of three dice: {why}")
        data = corrections.merged(original, sicbo.result(faces))
        return {"inputs": {"faces": faces}, "result": data}
