"""The coin's rule, pure: what a landed coin means."""

from __future__ import annotations

SIDES = ("heads", "tails")
#: ours (a toy): a coin standing on its edge settles nothing, the dealer tosses again
R_EDGE = "coin toss rule 1: a coin on its edge is no toss; toss again"


def settles(side: str) -> bool:
    return side in SIDES
