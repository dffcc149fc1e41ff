"""Casino War's own event types, as ``tabled_client.events`` Structs (the class's ``events``):
the daemon checks every event it builds against them, as it does tabled's own. The shoe's
events (``card.dealt``, ``betting.opened``, ``table.expects``, ``hand.void``, …) are the
shoe procedure's."""

from __future__ import annotations

from tabled_client.events import Data, ResultData


class WarDecisionData(Data):
    """The player's choice after a tie: ``war`` or ``surrender`` (``timeout``: the clock's)."""

    shoe: int
    hand: int
    decision: str
    by: str
    timeout: bool
    rule: str


class WarResultData(ResultData):
    """A hand settled: the winner, both sides' cards, whether it went to war or was surrendered,
    and the player's net per unit bet."""

    shoe: int
    hand: int
    winner: str
    player: list[str]
    dealer: list[str]
    war: bool
    surrendered: bool
    net: float
    rule: str


EVENTS = {"war.decision": WarDecisionData, "war.result": WarResultData}
