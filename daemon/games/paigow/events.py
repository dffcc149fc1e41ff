"""Mahjong Pai Gow's own event types: the dice deciding the first position, the tiles (dealt,
held, rejected) and the result (``round.result``); the round's pauses and voids are the round
procedure's.

Imports only msgspec and the client's base types: the client distribution carries this module
(``docs/decisions.md``, "Each game's event types live in its folder").
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType
from tabled_client.base import Data, ResultData


class RoundDiceData(Data):
    round: int
    faces: list[int]
    total: int
    first: str
    deal_order: list[str]
    device: str | None
    entered_by: str | None
    rule: str


class TileDealtData(Data):
    round: int
    tile: str
    n: int
    position: str
    device: str
    entered_by: str | None


class TileHeldData(Data):
    round: int
    tile: str | None
    code: str
    device: str
    queued: int
    reason: str


class TileRejectedData(Data):
    round: int | None
    tile: str | None
    code: str
    device: str
    reason: str
    alarm: str
    rule: str


class PositionHand(msgspec.Struct, kw_only=True, frozen=True):
    """One position's hand in ``round.result``; ``result`` (win/lose) only for players."""

    position: str
    tiles: list[str]
    name: str
    pair: bool
    points: int
    rank: int
    result: str | UnsetType = UNSET


class RoundResultData(ResultData):
    round: int
    dice: list[int]
    total: int
    first: str
    tiles: list[str]
    positions: list[PositionHand]
    winners: list[str]
    pairs: list[str]
    rule: str
    #: the paytable in force (``[game] paytable``): what a backend pays this result by
    paytable: str | UnsetType = UNSET


#: this game's event types (its class's ``events``): the daemon checks its events against them
#: and the client carries them for every backend (``docs/architecture.md``, "Events")
EVENTS = {
    "round.dice": RoundDiceData,
    "tile.dealt": TileDealtData,
    "tile.held": TileHeldData,
    "tile.rejected": TileRejectedData,
    "round.result": RoundResultData,
}
