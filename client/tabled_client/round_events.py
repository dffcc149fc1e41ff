"""The round procedure's events, shared by the dice and tile games (``daemon/procedures/round.py``):
re-shakes, rejected throws, a round paused, resumed or voided.

The round's result (``dice.result``, ``round.result``) is the game's own Struct, in its folder.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, UnsetType

from tabled_client.base import Data


class DiceReshakeData(Data):
    round: int
    reshake: int
    reason: str
    code: int | str | None
    device: str
    rule: str


class DiceRejectedData(Data):
    round: int | None
    device: str
    faces: list[Any]
    reason: str
    detail: str
    alarm: str
    rule: str


class RoundPausedData(Data):
    """Sic Bo and Mahjong Pai Gow (``n``, ``tile``, ``code``: the tile the round waits on)."""

    round: int
    reason: str
    alarm: str
    device: str
    rule: str
    n: int | UnsetType = UNSET
    tile: str | UnsetType | None = UNSET
    code: str | UnsetType = UNSET


class RoundResumedData(Data):
    """Sic Bo and Mahjong Pai Gow (``tile``: the tile a supervisor entered)."""

    round: int
    by: str
    alarm: str | None
    rule: str
    tile: str | UnsetType = UNSET


class RoundVoidData(Data):
    """Sic Bo (``shakes``, ``reshakes``) and Mahjong Pai Gow (``dice``, ``tiles`` so far)."""

    round: int
    reason: str
    by: str
    rule: str
    shakes: int | UnsetType = UNSET
    reshakes: int | UnsetType = UNSET
    dice: list[int] | UnsetType = UNSET
    tiles: list[str] | UnsetType = UNSET


#: the round procedure's event types
TYPES: dict[str, type[Data]] = {
    "dice.reshake": DiceReshakeData,
    "dice.rejected": DiceRejectedData,
    "round.paused": RoundPausedData,
    "round.resumed": RoundResumedData,
    "round.void": RoundVoidData,
}
