"""Shoe procedures for card games dealt from a shoe (``game.py``), and how they read (``describe.py``)."""

from daemon.procedures.shoe.game import (
    IN_HAND,
    HandRules,
    Held,
    Phase,
    ShoeGame,
    ShoeRules,
    ShoeState,
    burn_count,
)

__all__ = [
    "IN_HAND",
    "HandRules",
    "Held",
    "Phase",
    "ShoeGame",
    "ShoeRules",
    "ShoeState",
    "burn_count",
]
