"""Baccarat's own event type: its result, ``hand.result`` (and ``hand.demo``, a demo hand's).

Imports only msgspec and the client's base types: the client distribution carries this module
(``docs/decisions.md``, "Each game's event types live in its folder").
"""

from __future__ import annotations

from msgspec import UNSET, UnsetType
from tabled_client.base import ResultData
from tabled_client.shoe_events import RoadsData


class BaccaratResultData(ResultData):
    """``hand.result`` and ``hand.demo`` of baccarat: the two sides' cards, totals and side-bet
    facts; ``roads`` and ``paytable`` on ``hand.result`` only."""

    shoe: int
    hand: int
    demo: bool
    winner: str
    player: list[str]
    banker: list[str]
    player_total: int
    banker_total: int
    natural: bool | UnsetType = UNSET
    player_natural: bool | UnsetType = UNSET
    banker_natural: bool | UnsetType = UNSET
    player_pair: bool | UnsetType = UNSET
    banker_pair: bool | UnsetType = UNSET
    cards: int | UnsetType = UNSET
    big: bool | UnsetType = UNSET
    small: bool | UnsetType = UNSET
    banker_six: bool | UnsetType = UNSET
    big_small_open: bool | UnsetType = UNSET
    #: the scoreboards (never on ``hand.demo``)
    roads: RoadsData | UnsetType = UNSET
    #: the paytable in force (``[game] paytable``): what a backend pays this result by
    paytable: str | UnsetType = UNSET


#: this game's event types (its class's ``events``): the daemon checks its events against them
#: and the client carries them for every backend (``docs/architecture.md``, "Events")
EVENTS = {"hand.result": BaccaratResultData, "hand.demo": BaccaratResultData}
