"""Blackjack's own event types: its result (``hand.result``: the dealer and every box), the
players' decisions and insurance, the dealer's peek and hole card.

Imports only msgspec and the client's base types: the client distribution carries this module
(``docs/decisions.md``, "Each game's event types live in its folder").
"""

from __future__ import annotations

from msgspec import UNSET, UnsetType
from tabled_client.base import Data, ResultData


class BlackjackHand(Data):
    """One hand of a blackjack box in ``hand.result``."""

    cards: list[str]
    total: int
    soft: bool
    blackjack: bool
    bet: int
    outcome: str
    ratio: str
    net: float
    stood: str | None


class BlackjackInsurance(Data):
    taken: bool
    stake: float | UnsetType = UNSET
    outcome: str | UnsetType = UNSET
    ratio: str | UnsetType = UNSET
    net: float | UnsetType = UNSET


class BlackjackBox(Data):
    box: int
    split: bool
    hands: list[BlackjackHand]
    insurance: BlackjackInsurance | None
    stake: float
    net: float


class BlackjackDealer(Data):
    cards: list[str]
    total: int
    soft: bool
    blackjack: bool
    bust: bool
    drew: int


class BoxDecisionData(Data):
    shoe: int
    hand: int
    box: int
    split_hand: int
    decision: str
    by: str
    player: str | UnsetType | None = UNSET
    timeout: bool | UnsetType = UNSET
    rule: str | UnsetType = UNSET


class BoxInsuranceData(Data):
    shoe: int
    hand: int
    box: int
    taken: bool
    by: str
    player: str | UnsetType | None = UNSET
    timeout: bool | UnsetType = UNSET
    rule: str | UnsetType = UNSET


class DealerPeekedData(Data):
    shoe: int
    hand: int
    blackjack: bool
    by: str
    rule: str


class DealerHoleCardData(Data):
    shoe: int
    hand: int
    card: str
    salt: str
    commitment: str
    up: str
    total: int
    soft: bool
    blackjack: bool
    rule: str


class BlackjackResultData(ResultData):
    """``hand.result`` of blackjack: the dealer's hand and every box's (a round has no one
    winner)."""

    shoe: int
    hand: int
    demo: bool
    dealer: BlackjackDealer
    boxes: list[BlackjackBox]
    blackjack_pays: str | UnsetType = UNSET
    insurance_pays: str | UnsetType = UNSET
    rule: str | UnsetType = UNSET
    #: the paytable in force (``[game] paytable``): what a backend pays this result by
    paytable: str | UnsetType = UNSET


#: this game's event types (its class's ``events``): the daemon checks its events against them
#: and the client carries them for every backend (``docs/architecture.md``, "Events")
EVENTS = {
    "hand.result": BlackjackResultData,
    "box.decision": BoxDecisionData,
    "box.insurance": BoxInsuranceData,
    "dealer.peeked": DealerPeekedData,
    "dealer.hole_card": DealerHoleCardData,
}
