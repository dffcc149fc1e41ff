"""Roulette pockets: what a backend settles on, for single- and double-zero wheels. Pure.

The bets and their payouts are seed 003 part IV (European roulette, 37 pockets,
18 red, 18 black, 0 green); this module only says what each pocket *is* —
color, dozen, column, parity, range — so every bet can be settled from one
``spin.result``. A double-zero (American) wheel is a house option; its ``00``
is the number :data:`~drivers.readings.DOUBLE_ZERO` (37), as every wheel
driver's readings carry it, and is green like 0.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from drivers.readings import DOUBLE_ZERO

Layout = Literal["single-zero", "double-zero"]

#: the red numbers of the standard layout (seed 003 part IV: 18 red, 18 black, 0 green);
#: the same on the European and the American table.
RED: Final = frozenset({1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36})
BLACK: Final = frozenset(range(1, 37)) - RED

#: the pockets in wheel order, clockwise from 0 (the European single-zero wheel).
SINGLE_ZERO_ORDER: Final = (
    0, 32, 15, 19, 4, 21, 2, 25, 17, 34, 6, 27, 13, 36, 11, 30, 8, 23, 10,
    5, 24, 16, 33, 1, 20, 14, 31, 9, 22, 18, 29, 7, 28, 12, 35, 3, 26,
)  # fmt: skip
#: the American double-zero wheel, clockwise from 0; 00 is :data:`DOUBLE_ZERO`.
DOUBLE_ZERO_ORDER: Final = (
    0, 28, 9, 26, 30, 11, 7, 20, 32, 17, 5, 22, 34, 15, 3, 24, 36, 13, 1,
    DOUBLE_ZERO, 27, 10, 25, 29, 12, 8, 19, 31, 18, 6, 21, 33, 16, 4, 23, 35, 14, 2,
)  # fmt: skip


def layout(double_zero: bool) -> Layout:
    return "double-zero" if double_zero else "single-zero"


def wheel_order(double_zero: bool) -> tuple[int, ...]:
    """The pockets in the order they sit on the wheel (for displays and neighbour bets)."""
    return DOUBLE_ZERO_ORDER if double_zero else SINGLE_ZERO_ORDER


def is_pocket(number: int, double_zero: bool) -> bool:
    """Whether ``number`` is a pocket of this wheel (0–36, and 00 as 37 on a double-zero wheel)."""
    return 0 <= number <= 36 or (double_zero and number == DOUBLE_ZERO)


def label(number: int) -> str:
    """How the pocket is written on the layout: ``0``…``36``, ``00``."""
    return "00" if number == DOUBLE_ZERO else str(number)


def color(number: int) -> Literal["red", "black", "green"]:
    return "red" if number in RED else "black" if number in BLACK else "green"


def dozen(number: int) -> int | None:
    """1 (1–12), 2 (13–24), 3 (25–36); none for the zeros (seed 003 part IV: dozen pays 2)."""
    return (number - 1) // 12 + 1 if 1 <= number <= 36 else None


def column(number: int) -> int | None:
    """1 (1, 4, … 34), 2 (2, 5, … 35), 3 (3, 6, … 36); none for the zeros."""
    return (number - 1) % 3 + 1 if 1 <= number <= 36 else None


def parity(number: int) -> Literal["odd", "even"] | None:
    """Odd or even; the zeros are neither (even-money bets lose on them)."""
    if not 1 <= number <= 36:
        return None
    return "even" if number % 2 == 0 else "odd"


def number_range(number: int) -> Literal["low", "high"] | None:
    """Low 1–18, high 19–36; none for the zeros."""
    if not 1 <= number <= 36:
        return None
    return "low" if number <= 18 else "high"


def result_data(number: int, double_zero: bool) -> dict[str, Any]:
    """The fields of a ``spin.result`` that describe the pocket; ValueError if not a pocket."""
    if not is_pocket(number, double_zero):
        raise ValueError(f"{number} is not a pocket of a {layout(double_zero)} wheel")
    return {
        "number": number,
        "pocket": label(number),
        "color": color(number),
        "dozen": dozen(number),
        "column": column(number),
        "parity": parity(number),
        "range": number_range(number),
        "layout": layout(double_zero),
    }
