"""Mahjong tiles as readers report them: the notation and the readings.

No tile sensor is named in any public studio code we know; studios read
tiles by barcode or RFID and send a short code per tile. The reader names a
tile, the table decides whether the tile belongs to its game's set, so a
tile from another suit (a reader pointed at the wrong box) is told apart
from one the reader could not read.

Notation (the common mahjong short form): ``1p``–``9p`` dots (筒),
``1m``–``9m`` characters (萬), ``1s``–``9s`` bamboo (索), winds ``ew`` ``sw``
``ww`` ``nw``, dragons ``wd`` (白板, white) ``gd`` ``rd``, flowers ``f1``–``f4``
and seasons ``s1``–``s4``. Tenhou's ``1z``–``7z`` for the honours are read too.
"""

from __future__ import annotations

from typing import Final

from drivers.readings import Reading

HONOURS: Final[tuple[str, ...]] = ("ew", "sw", "ww", "nw", "wd", "gd", "rd")
ALL_TILES: Final[frozenset[str]] = frozenset(
    [f"{n}{s}" for s in "mps" for n in range(1, 10)]
    + list(HONOURS)
    + [f"f{n}" for n in range(1, 5)]
    + [f"s{n}" for n in range(1, 5)]
)
#: Tenhou's honour numbers: 1z east … 5z white … 7z red.
_Z: Final = {f"{i + 1}z": t for i, t in enumerate(HONOURS)}


def tile(code: str) -> str | None:
    """The tile a code names in our notation (any case, ``5z`` for ``wd``), or None."""
    c = code.strip().lower()
    c = _Z.get(c, c)
    return c if c in ALL_TILES else None


class TileDrawn(Reading, frozen=True, kw_only=True):
    """A tile passed the reader: the tile it names (checked against the set by the table)."""

    tile: str


class TileUnreadable(Reading, frozen=True, kw_only=True):
    """The reader saw a tile it could not read, or sent a code that names no tile."""

    code: str = ""
