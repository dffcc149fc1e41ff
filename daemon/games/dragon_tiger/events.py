"""Dragon Tiger's own event type: its result, ``hand.result`` (and ``hand.demo``).

Imports only msgspec and the client's base types: the client distribution carries this module
(``docs/decisions.md``, "Each game's event types live in its folder").
"""

from __future__ import annotations

from msgspec import UNSET, UnsetType
from tabled_client.base import ResultData
from tabled_client.shoe_events import RoadsData


class DragonTigerResultData(ResultData):
    """``hand.result`` and ``hand.demo`` of Dragon Tiger: the two cards and their side-bet facts;
    ``roads`` and ``paytable`` on ``hand.result`` only."""

    shoe: int
    hand: int
    demo: bool
    winner: str
    dragon: str
    tiger: str
    dragon_rank: int | UnsetType = UNSET
    tiger_rank: int | UnsetType = UNSET
    suited_tie: bool | UnsetType = UNSET
    dragon_colour: str | UnsetType = UNSET
    tiger_colour: str | UnsetType = UNSET
    dragon_parity: str | UnsetType = UNSET
    tiger_parity: str | UnsetType = UNSET
    dragon_size: str | UnsetType | None = UNSET
    tiger_size: str | UnsetType | None = UNSET
    #: the scoreboards (never on ``hand.demo``)
    roads: RoadsData | UnsetType = UNSET
    #: the paytable in force (``[game] paytable``): what a backend pays this result by
    paytable: str | UnsetType = UNSET


#: this game's event types (its class's ``events``): the daemon checks its events against them
#: and the client carries them for every backend (``docs/architecture.md``, "Events")
EVENTS = {"hand.result": DragonTigerResultData, "hand.demo": DragonTigerResultData}
