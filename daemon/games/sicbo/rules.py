"""Sic Bo rules: three dice, and every fact its bets are settled on (seed 002, 骰寳).

Pure: no I/O, no state. Settlement (odds, which bets a house offers) is the
backend's; this module states the facts of one throw and validates what a
shaker claims. Seed 002's bets and the facts they need:

=========  =================================================  ==================
bet        seed 002                                           fact
=========  =================================================  ==================
小 small   total 4–10; loses on any triple                    ``size``
大 big     total 11–17; loses on any triple                   ``size``
三军       a chosen face on one, two or three dice (1/2/3:1)  ``face_counts``
围骰       a chosen triple (150:1)                            ``triple_face``
全骰       any triple (24:1)                                  ``triple``
点数       total 4–17                                         ``total``
长牌       two chosen different faces on any two dice (5:1)   ``combinations``
短牌       a chosen face on two dice (8:1)                    ``doubles``
=========  =================================================  ==================

Odd/even is not a seed 002 bet; ``parity`` is given as a fact for houses that
offer it (where they do, it commonly loses on a triple: settle it with ``triple``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations as _pairs
from typing import Any, Final, Literal

FACES: Final = (1, 2, 3, 4, 5, 6)
DICE: Final = 3
#: seed 002, 长牌: any two dice showing two chosen *different* faces — the 15 pairs.
COMBINATIONS: Final[tuple[str, ...]] = tuple(f"{a}-{b}" for a, b in _pairs(FACES, 2))
#: seed 002, 点数: the totals that can be bet on (3 and 18 are triples only).
TOTALS: Final = range(4, 18)

Size = Literal["big", "small"]
Parity = Literal["odd", "even"]


class DiceError(ValueError):
    """A claimed throw that is not three faces 1–6."""


def problem(faces: Sequence[object]) -> str | None:
    """Why ``faces`` is not a valid throw (exactly three integers 1–6), or None.

    A shaker's camera can miss a die or misread one; such a claim is never a
    result (``docs/protocols/sources.md``: a result that is
    not exactly three dice 1–6 is rejected).
    """
    if len(faces) != DICE:
        return f"{len(faces)} face(s), expected {DICE}"
    bad = [f for f in faces if isinstance(f, bool) or not isinstance(f, int) or f not in FACES]
    if bad:
        return f"face(s) {', '.join(map(str, bad))} not in 1–6"
    return None


def result(faces: Sequence[int]) -> dict[str, Any]:
    """Every fact of one throw, JSON-ready for ``dice.result`` (seed 002, 骰寳).

    Raises :class:`DiceError` for anything but three faces 1–6.
    """
    why = problem(faces)
    if why is not None:
        raise DiceError(f"not a throw of three dice: {list(faces)!r}: {why}")
    total = sum(faces)
    counts = {str(f): faces.count(f) for f in FACES}
    triple = len(set(faces)) == 1
    size: Size | None = None
    if not triple:  # seed 002: 若三粒骰子平面点数相同, 通吃"大", "小"各注
        size = "small" if total <= 10 else "big"
    present = sorted(set(faces))
    return {
        "faces": list(faces),
        "total": total,
        "size": size,
        "parity": "odd" if total % 2 else "even",
        "triple": triple,
        "triple_face": faces[0] if triple else None,
        # 短牌: at least two dice show the face (a triple shows it on two dice too).
        "doubles": [f for f in FACES if faces.count(f) >= 2],
        # 长牌: two different faces, each on a die.
        "combinations": [f"{a}-{b}" for a, b in _pairs(present, 2)],
        "face_counts": counts,
    }
