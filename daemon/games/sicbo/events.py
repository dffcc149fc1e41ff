"""Sic Bo's own event types: the shaker shaking and the result (``dice.result``); re-shakes,
rejected throws and the round's pauses and voids are the round procedure's.

Imports only msgspec and the client's base types: the client distribution carries this module
(``docs/decisions.md``, "Each game's event types live in its folder").
"""

from __future__ import annotations

from msgspec import UNSET, UnsetType
from tabled_client.base import Data, ResultData


class DiceShakingData(Data):
    round: int
    shake: int
    device: str


class DiceResultData(ResultData):
    round: int
    device: str
    faces: list[int]
    total: int
    size: str | None
    parity: str
    triple: bool
    triple_face: int | None
    doubles: list[int]
    combinations: list[str]
    face_counts: dict[str, int]
    shakes: int
    reshakes: int
    #: the paytable in force (``[game] paytable``): what a backend pays this result by
    paytable: str | UnsetType = UNSET


#: this game's event types (its class's ``events``): the daemon checks its events against them
#: and the client carries them for every backend (``docs/architecture.md``, "Events")
EVENTS = {"dice.shaking": DiceShakingData, "dice.result": DiceResultData}
