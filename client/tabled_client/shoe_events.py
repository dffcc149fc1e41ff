"""The shoe procedure's events, shared by every game dealt from a shoe
(``daemon/procedures/shoe/``): the shoe, the shuffler, cards, a hand's start and void, pauses,
what the table expects next, and the scoreboards a result carries (``RoadsData``).

A shoe game's result (``hand.result``, ``hand.demo``) is the game's own Struct, in its folder.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import UNSET, Meta, UnsetType

from tabled_client.base import Data


class ShuffleRef(Data):
    device: str
    shuffle_id: int


class ShoeStartedData(Data):
    shoe: int
    shuffle: ShuffleRef | None
    decks: int
    burn: str
    cut_card: int
    demo_hands: int
    continuous_shuffler: bool
    by: str


class ShoeBurnData(Data):
    shoe: int
    cards: list[str]
    count: int
    rule: str


class ShoeCutCardData(Data):
    shoe: int
    hand: int
    last_hand: int
    source: str
    rule: str
    cards_out: int


class ShoeEndedData(Data):
    shoe: int
    hands: int
    reason: str
    cards_out: int
    rule: str
    by: str | UnsetType = UNSET


class ShoeVoidData(Data):
    shoe: int
    reason: str
    by: str
    rule: str


class ShoeDeviceData(Data):
    """``shoe.removed``, ``shoe.inserted``."""

    shoe: int
    device: str


class ShuffleStartedData(Data):
    device: str
    shuffle_id: int
    decks: int


class ShuffleCompletedData(Data):
    device: str
    shuffle_id: int
    decks: int
    cards: int
    ok: bool
    problems: list[str]


class CardDealtData(Data):
    """A card to a box; ``card`` is null only for a blackjack hole card (``hole``, ``commitment``)."""

    shoe: int
    hand: int
    box: str
    position: int
    card: str | None
    shoe_position: int
    device: str
    face_up: bool
    demo: bool | UnsetType = UNSET
    rule: str | UnsetType = UNSET
    claimed_box: str | UnsetType = UNSET
    order_rule: str | UnsetType = UNSET
    entered_by: str | UnsetType | None = UNSET
    face_up_rule: str | UnsetType = UNSET
    exposed: bool | UnsetType = UNSET
    extra_card: bool | UnsetType = UNSET
    carried: bool | UnsetType = UNSET
    misdeal: bool | UnsetType = UNSET
    alarm: str | UnsetType = UNSET
    # blackjack
    split_hand: int | UnsetType = UNSET
    hole: bool | UnsetType = UNSET
    commitment: str | UnsetType = UNSET
    not_due: bool | UnsetType = UNSET


class HeldCard(Data):
    """A card out of the shoe waiting for a supervisor (``table.paused``'s ``held``)."""

    card: str | None
    device: str
    face_up: bool
    claimed_box: str | None
    code: str


class CardHeldData(Data):
    shoe: int
    hand: int
    card: str | None
    device: str
    face_up: bool
    claimed_box: str | None
    code: str
    position: int
    reason: str


class CardRejectedData(Data):
    shoe: int
    card: str
    device: str
    reason: str
    #: the card-out-of-play alarm this card is counted on
    alarm: str | UnsetType = UNSET


class CardExposedData(Data):
    shoe: int
    hand: int
    card: str | None
    by: str
    during: str
    rule: str
    hole: bool | UnsetType = UNSET  # blackjack: the hole card, face down until then


class CardFaceUpData(Data):
    shoe: int
    hand: int
    by: str
    rule: str


class HandStartedData(Data):
    shoe: int
    hand: int
    demo: bool


#: derived-road marks; see RoadsData
RoadMark = Annotated[str, Meta(pattern="^(red|blue)$")]


#: a scoreboard square: [column, row, …] (a JSON array, so a list here: it round-trips)
Square3 = Annotated[list[int | str | None], Meta(min_length=3, max_length=3)]


Square4 = Annotated[list[int | str | None], Meta(min_length=4, max_length=4)]


class RoadsData(Data):
    """``hand.result`` ``roads``: the square this result sets on each scoreboard (docs/events.md, Roads).

    A square is ``[column, row, …]``, set as given (idempotent); ``hands`` 1 starts a fresh board.
    """

    rows: int
    hands: int
    #: ``[column, row, winner]``
    bead_plate: Square3
    #: ``[column, row, side, ties]``; ``side`` null while only ties have been dealt
    big_road: Square4
    #: ``[column, row, "red"|"blue"]``, null when the road has no mark for this result
    big_eye_boy: Square3 | None
    small_road: Square3 | None
    cockroach_pig: Square3 | None
    #: per side: the mark each derived road would get if that side won next ("ask banker")
    next: dict[str, dict[str, RoadMark | None]]


class HoleCard(Data):
    """A blackjack hole card opened: the card and the salt of its commitment."""

    card: str
    salt: str
    commitment: str


class VoidedBox(Data):
    box: int
    hands: list[list[str]]


class HandVoidData(Data):
    shoe: int
    hand: int
    reason: str
    by: str
    rule: str
    cards: dict[str, list[str]]
    demo: bool
    # blackjack: the round's boxes and dealer; a void opens the hole card's commitment
    boxes: list[VoidedBox] | UnsetType = UNSET
    dealer: list[str] | UnsetType = UNSET
    hole: HoleCard | UnsetType = UNSET


class TablePausedData(Data):
    shoe: int
    hand: int
    reason: str
    alarm: str
    held: list[HeldCard]
    device: str | UnsetType = UNSET


class TableResumedData(Data):
    shoe: int
    hand: int
    by: str
    card: str | None
    entered: bool
    alarm: str | None


class TableExpectsData(Data):
    """What the table waits for next (blackjack): a card, a decision, insurance, the peek, …"""

    shoe: int
    hand: int
    expects: str
    text: str
    to: str | UnsetType = UNSET
    split_hand: int | UnsetType = UNSET
    hole: bool | UnsetType = UNSET
    box: int | UnsetType = UNSET
    boxes: list[int] | UnsetType = UNSET
    allowed: list[str] | UnsetType = UNSET
    seconds: float | UnsetType = UNSET
    turn: int | UnsetType = UNSET


#: the shoe procedure's event types
TYPES: dict[str, type[Data]] = {
    "shoe.started": ShoeStartedData,
    "shoe.burn": ShoeBurnData,
    "shoe.cut_card": ShoeCutCardData,
    "shoe.ended": ShoeEndedData,
    "shoe.void": ShoeVoidData,
    "shoe.removed": ShoeDeviceData,
    "shoe.inserted": ShoeDeviceData,
    "shuffle.started": ShuffleStartedData,
    "shuffle.completed": ShuffleCompletedData,
    "card.dealt": CardDealtData,
    "card.held": CardHeldData,
    "card.rejected": CardRejectedData,
    "card.exposed": CardExposedData,
    "card.face_up": CardFaceUpData,
    "hand.started": HandStartedData,
    "hand.void": HandVoidData,
    "table.paused": TablePausedData,
    "table.resumed": TableResumedData,
    "table.expects": TableExpectsData,
}
