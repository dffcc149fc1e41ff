"""Every tabled event type as a typed msgspec Struct: one tagged union on ``type``.

The daemon builds each event's ``data`` through these Structs
(``daemon/events.py`` ``draft``), and the JSON Schema in ``events.schema.json``
is generated from them (``python -m tabled_client.schema``), so what a table
publishes, what this module decodes and what the schema says cannot drift.

A field that some events of a type carry and others do not (a game's own
field, a rule only some cards have) is ``UNSET`` when absent: it is not in
the bytes, not ``null``. Unknown fields are ignored when decoding, so a
newer table that adds a field (a compatible change, ``v`` stays) still
decodes. A new event type needs a new Struct here (``docs/events.md``); a third
party's game brings its own and :func:`register` adds them.
This module is long because it is the catalogue of every type; each Struct
is a few lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Union

import msgspec
import msgspec.inspect
from msgspec import UNSET, Meta, UnsetType

SCHEMA_VERSION: Final = 1


class Data(msgspec.Struct, kw_only=True, frozen=True):
    """Base of every event's ``data``.

    ``sealed``: the event holds a value that may be a card still face down (a blackjack
    hole card), shown as ``(sealed)``; this is SHA-256(salt ‖ canonical JSON of the
    original fields), opened by ``secret.opened`` once the card is turned over.
    """

    sealed: Annotated[str, Meta(pattern="^[0-9a-f]{64}$")] | UnsetType = UNSET


# -- table events (every game) ----------------------------------------------------------------


class ResultData(Data, kw_only=True):
    """A round's result (``hand.result``, ``spin.result``, ``dice.result``, ``round.result``).

    ``dealer_on_duty``: the dealer signed in when it was decided (``dealer.signed_in``);
    absent when none was."""

    dealer_on_duty: str | UnsetType = UNSET


class DealerSignedInData(Data):
    dealer: str
    by: str
    source: str


class DealerSignedOutData(Data):
    dealer: str
    by: str
    reason: str
    #: results settled while that dealer was on duty
    rounds: int


class TableOpenedData(Data):
    by: str
    limits: dict[str, Any]


class TableClosedData(Data):
    by: str
    reason: str


class TableLimitsData(Data):
    """The limits in force from now: what is given replaces all of them."""

    by: str
    source: str
    min: int | UnsetType = UNSET
    max: int | UnsetType = UNSET
    spots: dict[str, list[int]] = {}


class ConfigChange(Data):
    key: str
    old: Any
    new: Any


class ConfigChangedData(Data):
    """The audited config differs from the one last journaled (AGCO 4.02(8))."""

    hash: Annotated[str, Meta(pattern="^[0-9a-f]{64}$")]
    previous_hash: Annotated[str, Meta(pattern="^[0-9a-f]{64}$")] | None
    first: bool
    changes: list[ConfigChange]


class DaemonStartedData(Data):
    clean: bool
    version: str
    recovered_seq: int
    pid: int
    #: the machine's boot id: which monotonic clock the saved state's ``mono`` times are on
    boot: str | UnsetType | None = UNSET
    #: the journal's id (its ``meta``), sealed into the chain so an edited id shows
    journal_id: str | UnsetType = UNSET


class DaemonStoppedData(Data):
    reason: str


class JournalSnapshotData(Data):
    """The table state saved with this event, sealed into the chain by its digest."""

    state_version: str
    sha256: Annotated[str, Meta(pattern="^[0-9a-f]{64}$")]
    bytes: Annotated[int, Meta(ge=0)]


class DeviceLinkData(Data):
    """``device.connected``, ``device.stale``, ``device.disconnected``; what the transport opened."""

    device: str
    reason: str
    port: str | UnsetType = UNSET
    spec: str | UnsetType = UNSET
    interface: int | UnsetType = UNSET
    endpoint: int | UnsetType = UNSET
    kernel_driver_detached: bool | UnsetType = UNSET


class DeviceCommandData(Data):
    device: str
    command: str
    by: str


class DeviceReplyData(Data):
    device: str
    command: str
    text: str


class OperatorCommandData(Data):
    name: str
    args: dict[str, Any]
    actor: str
    role: str
    source: str
    #: the control request's id, when it had one, and who sent it (the CURVE key's name, or
    #: the transport and the socket's role): a retry with this id is answered from here
    request: str | int | UnsetType = UNSET
    peer: str | UnsetType = UNSET


class AlarmRaisedData(Data):
    id: str
    kind: str
    message: str
    rule: str
    action: str
    severity: str
    device: str | None
    hand: int | UnsetType | None = UNSET
    card: str | UnsetType | None = UNSET
    round: int | UnsetType | None = UNSET
    faces: list[Any] | UnsetType = UNSET
    tile: str | UnsetType | None = UNSET
    frames: list[str] | UnsetType = UNSET
    code: int | str | UnsetType | None = UNSET
    # line-noise: malformed among the last lines, and what did decode among them
    malformed: int | UnsetType = UNSET
    lines: int | UnsetType = UNSET
    recent: list[str] | UnsetType = UNSET
    # journal-failure
    seconds: float | UnsetType = UNSET
    error: str | UnsetType | None = UNSET
    failures: int | UnsetType = UNSET
    dropped: int | UnsetType = UNSET
    # decide-failed (error above: the exception's type): where in the code it was raised
    where: str | UnsetType = UNSET
    # a roulette procedure check: what was measured and the house's limit it passed
    figure: float | UnsetType = UNSET
    limit: float | UnsetType = UNSET


class AlarmRepeatedData(Data):
    """The cause of an active alarm happened again: counted on it, no second alarm."""

    id: str
    kind: str
    count: int
    message: str


class AlarmClearedData(Data):
    id: str
    by: str
    reason: str


class SealedOpening(Data):
    """One sealed event opened: its ``sealed``, the salt and the fields as decided."""

    sealed: Annotated[str, Meta(pattern="^[0-9a-f]{64}$")]  # type: ignore[assignment]
    salt: Annotated[str, Meta(pattern="^[0-9a-f]{32}$")]
    data: dict[str, Any]


class SecretOpenedData(Data):
    """The secret card is turned over: every event sealed while it was face down, opened."""

    opened: list[SealedOpening]


# -- shoe games (baccarat, dragon tiger) ----------------------------------------------------------


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


class BettingOpenedData(Data):
    """Shoe games: ``shoe``, ``hand``, ``burn_incomplete``; roulette: the wheel fields; Sic Bo: ``round``."""

    #: seconds after the event's time when the croupier closes betting; null: people or the wheel
    closes_in: float | None
    by: str | UnsetType = UNSET
    shoe: int | UnsetType = UNSET
    hand: int | UnsetType = UNSET
    burn_incomplete: bool | UnsetType = UNSET
    round: int | UnsetType = UNSET
    device: str | UnsetType = UNSET
    spin: int | UnsetType = UNSET
    wheel_spin: int | UnsetType | None = UNSET
    wheel_state: int | UnsetType | None = UNSET
    mono: float | UnsetType | None = UNSET
    respin: bool | UnsetType = UNSET


class BettingClosedData(Data):
    """As ``betting.opened``; Sic Bo adds ``source`` (and ``rule`` when the shaker closed it)."""

    by: str | UnsetType = UNSET
    shoe: int | UnsetType = UNSET
    hand: int | UnsetType = UNSET
    round: int | UnsetType = UNSET
    source: str | UnsetType = UNSET
    rule: str | UnsetType = UNSET
    device: str | UnsetType = UNSET
    spin: int | UnsetType = UNSET
    wheel_spin: int | UnsetType | None = UNSET
    wheel_state: int | UnsetType | None = UNSET
    mono: float | UnsetType | None = UNSET
    # blackjack: the boxes that bet
    boxes: list[int] | UnsetType = UNSET


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


class HandOutcomeData(ResultData):
    """``hand.result`` and ``hand.demo``: baccarat's or Dragon Tiger's fields beside ``winner``;
    blackjack's ``dealer`` and ``boxes`` (a blackjack round has no one winner)."""

    shoe: int
    hand: int
    demo: bool
    winner: str | UnsetType = UNSET
    # baccarat
    player: list[str] | UnsetType = UNSET
    banker: list[str] | UnsetType = UNSET
    player_total: int | UnsetType = UNSET
    banker_total: int | UnsetType = UNSET
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
    # dragon tiger
    dragon: str | UnsetType = UNSET
    tiger: str | UnsetType = UNSET
    dragon_rank: int | UnsetType = UNSET
    tiger_rank: int | UnsetType = UNSET
    suited_tie: bool | UnsetType = UNSET
    dragon_colour: str | UnsetType = UNSET
    tiger_colour: str | UnsetType = UNSET
    dragon_parity: str | UnsetType = UNSET
    tiger_parity: str | UnsetType = UNSET
    dragon_size: str | UnsetType | None = UNSET
    tiger_size: str | UnsetType | None = UNSET
    # both games' hand.result (never hand.demo): the scoreboards
    roads: RoadsData | UnsetType = UNSET
    # blackjack
    dealer: BlackjackDealer | UnsetType = UNSET
    boxes: list[BlackjackBox] | UnsetType = UNSET
    blackjack_pays: str | UnsetType = UNSET
    insurance_pays: str | UnsetType = UNSET
    rule: str | UnsetType = UNSET
    #: the paytable in force (``[game] paytable``): what a backend pays this result by
    paytable: str | UnsetType = UNSET


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


# -- blackjack ---------------------------------------------------------------------------------------


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


# -- roulette ---------------------------------------------------------------------------------------


class SpinStartedData(Data):
    device: str
    round: int
    spin: int
    rotor_direction: str | None
    rotor_rpm: float | None
    respin: bool
    late: bool
    wheel_spin: int | UnsetType | None = UNSET
    wheel_state: int | UnsetType | None = UNSET
    mono: float | UnsetType | None = UNSET


class WheelNumberData(Data):
    device: str
    round: int
    spin: int
    number: int
    pocket: str
    frame: str


class SpinResultData(ResultData):
    device: str
    round: int
    spin: int
    number: int
    pocket: str
    layout: str
    color: str
    column: int | None
    dozen: int | None
    parity: str | None
    range: str | None
    rotor_direction: str | None
    rotor_rpm: float | None
    ball_direction: str | None
    ball_revolutions: int | None
    source: str
    complete: bool
    respin: bool
    wheel_spin: int | UnsetType | None = UNSET
    wheel_state: int | UnsetType | None = UNSET
    mono: float | UnsetType | None = UNSET
    #: the paytable in force (``[game] paytable``): what a backend pays this result by
    paytable: str | UnsetType = UNSET


class SpinVoidData(Data):
    device: str
    round: int
    spin: int
    reason: str
    rule: str
    message: str
    frames: list[str]
    by: str
    acknowledge: bool
    wheel_spin: int | UnsetType | None = UNSET
    wheel_state: int | UnsetType | None = UNSET
    mono: float | UnsetType | None = UNSET


class WheelStateData(Data):
    device: str
    wheel_state: int
    name: str
    previous: int | None
    wheel_spin: int | None
    mono: float | None
    joined: bool
    frame: str


class WheelFlagsData(Data):
    device: str
    flags: int
    names: list[str]
    state: int
    wheel_spin: int | None
    mono: float | None
    frame: str


class WheelResyncData(Data):
    device: str
    gap: float | None
    frame: str
    mono: float | UnsetType = UNSET


class WheelMismatch(Data):
    """One difference ``tablectl wheel reconcile`` found (docs/events.md, ``wheel.reconciled``)."""

    kind: str  # different-number, voided-by-table, missed-by-table, not-in-wheel-log
    wheel_spin: int | None
    wheel_number: int | None
    table_number: int | None
    seq: int | None
    after_wheel_spin: int | UnsetType | None = UNSET
    reason: str | UnsetType = UNSET


class WheelReconciledData(Data):
    device: str
    by: str
    pages: list[int]
    logged: int
    compared: int
    mismatches: list[WheelMismatch]


class ResultCorrectedData(Data):
    """A published result corrected by a supervisor (docs/events.md, ``result.corrected``):
    ``original`` and ``result`` are the results' data, the settlement facts of both."""

    supersedes: int  # the seq of the result it corrects (which stays in the chain)
    previous: int | None  # the seq of an earlier correction of the same result
    result_type: str  # the corrected result's event type (hand.result, spin.result, ...)
    later: int  # results published after it when it was corrected
    inputs: dict[str, Any]  # the corrected inputs, as the game read them
    original: dict[str, Any]  # the result as it stood (published, or as last corrected)
    result: dict[str, Any]  # the result the game's rules give for the corrected inputs
    roads: dict[str, Any] | None  # a shoe game's whole scoreboard as corrected
    by: str
    role: str
    reason: str
    ref: str  # an incident number or a video time code
    rule: str
    # the corrected game's key fields (the describer's key)
    shoe: int | UnsetType | None = UNSET
    hand: int | UnsetType | None = UNSET
    spin: int | UnsetType | None = UNSET
    round: int | UnsetType | None = UNSET


class DeviceFaultData(Data):
    """Roulette (``frames``) and Sic Bo (``round``)."""

    device: str
    code: int | str | None
    meaning: str
    alarm: str
    frames: list[str] | UnsetType = UNSET
    round: int | UnsetType | None = UNSET


# -- Sic Bo -----------------------------------------------------------------------------------------


class DiceShakingData(Data):
    round: int
    shake: int
    device: str


class DiceReshakeData(Data):
    round: int
    reshake: int
    reason: str
    code: int | str | None
    device: str
    rule: str


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


# -- Mahjong Pai Gow ---------------------------------------------------------------------------------


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


# -- the envelope and the union -----------------------------------------------------------------------


Hex64 = Annotated[str, Meta(pattern="^[0-9a-f]{64}$")]


class Event(msgspec.Struct, kw_only=True, frozen=True, tag_field="type"):
    """The envelope every event shares; ``type`` is the tag (``docs/events.md``)."""

    v: Annotated[int, Meta(ge=1)]
    table: Annotated[str, Meta(pattern="^[A-Za-z0-9_-]+$")]
    seq: Annotated[int, Meta(ge=1)]
    time: Annotated[str, Meta(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")]
    mono: float | None
    data: Any
    prev: Hex64
    hash: Hex64

    @property
    def type(self) -> str:
        """The event type (the union's tag)."""
        return self.__struct_config__.tag  # type: ignore[return-value]


#: event type -> data Struct: the one catalogue the daemon, the union and the schema use
DATA: Final[dict[str, type[Data]]] = {
    "daemon.started": DaemonStartedData,
    "daemon.stopped": DaemonStoppedData,
    "journal.snapshot": JournalSnapshotData,
    "device.connected": DeviceLinkData,
    "device.stale": DeviceLinkData,
    "device.disconnected": DeviceLinkData,
    "device.command": DeviceCommandData,
    "device.reply": DeviceReplyData,
    "device.fault": DeviceFaultData,
    "operator.command": OperatorCommandData,
    "alarm.raised": AlarmRaisedData,
    "alarm.repeated": AlarmRepeatedData,
    "alarm.cleared": AlarmClearedData,
    "config.changed": ConfigChangedData,
    "dealer.signed_in": DealerSignedInData,
    "dealer.signed_out": DealerSignedOutData,
    "table.opened": TableOpenedData,
    "table.closed": TableClosedData,
    "table.limits": TableLimitsData,
    "shoe.started": ShoeStartedData,
    "shoe.burn": ShoeBurnData,
    "shoe.cut_card": ShoeCutCardData,
    "shoe.ended": ShoeEndedData,
    "shoe.void": ShoeVoidData,
    "shoe.removed": ShoeDeviceData,
    "shoe.inserted": ShoeDeviceData,
    "shuffle.started": ShuffleStartedData,
    "shuffle.completed": ShuffleCompletedData,
    "betting.opened": BettingOpenedData,
    "betting.closed": BettingClosedData,
    "card.dealt": CardDealtData,
    "card.held": CardHeldData,
    "card.rejected": CardRejectedData,
    "card.exposed": CardExposedData,
    "card.face_up": CardFaceUpData,
    "hand.started": HandStartedData,
    "hand.result": HandOutcomeData,
    "hand.demo": HandOutcomeData,
    "hand.void": HandVoidData,
    "table.paused": TablePausedData,
    "secret.opened": SecretOpenedData,
    "table.resumed": TableResumedData,
    "spin.started": SpinStartedData,
    "wheel.number": WheelNumberData,
    "spin.result": SpinResultData,
    "spin.void": SpinVoidData,
    "wheel.state": WheelStateData,
    "wheel.flags": WheelFlagsData,
    "wheel.resync": WheelResyncData,
    "wheel.reconciled": WheelReconciledData,
    "result.corrected": ResultCorrectedData,
    "dice.shaking": DiceShakingData,
    "dice.reshake": DiceReshakeData,
    "dice.result": DiceResultData,
    "dice.rejected": DiceRejectedData,
    "round.paused": RoundPausedData,
    "round.resumed": RoundResumedData,
    "round.void": RoundVoidData,
    "table.expects": TableExpectsData,
    "box.decision": BoxDecisionData,
    "box.insurance": BoxInsuranceData,
    "dealer.peeked": DealerPeekedData,
    "dealer.hole_card": DealerHoleCardData,
    "round.dice": RoundDiceData,
    "tile.dealt": TileDealtData,
    "tile.held": TileHeldData,
    "tile.rejected": TileRejectedData,
    "round.result": RoundResultData,
}


def _class_name(type_: str) -> str:
    return "".join(p.capitalize() for p in type_.replace("_", ".").split("."))


def _event_class(type_: str, data: type[Data]) -> type[Event]:
    doc = f"Event type ``{type_}`` (docs/events.md)."
    ns = {"__annotations__": {"data": data}, "__doc__": doc, "__module__": __name__}
    return msgspec.defstruct(  # type: ignore[no-any-return]
        _class_name(type_),
        [("data", data)],
        bases=(Event,),
        tag=type_,
        kw_only=True,
        frozen=True,
        namespace=ns,
    )


#: event type -> its envelope class (``EVENTS["card.dealt"]`` is ``CardDealt``)
EVENTS: Final[dict[str, type[Event]]] = {t: _event_class(t, d) for t, d in DATA.items()}
globals().update({cls.__name__: cls for cls in EVENTS.values()})

#: the tagged union of every event type: ``msgspec.json.decode(raw, type=AnyEvent)``
AnyEvent = Union[tuple(EVENTS.values())]  # type: ignore[valid-type]  # noqa: UP007

_decoder = msgspec.json.Decoder(AnyEvent)


def register(types: Mapping[str, type[Data]]) -> None:
    """Add a third party's game's own event types (its class's ``events``), as the daemon does
    when it loads the game (``daemon/games/__init__.py``); a backend that wants them typed
    calls this with the same Structs (it imports the game's package).

    The types shipped here stay tabled's: a game naming one of them with another Struct is
    refused. Registered types are checked and decoded like tabled's own, but are not in the
    shipped schema (``events.schema.json``): that catalogue is tabled's
    (``docs/decisions.md``, "A third party's game brings its own event types").
    """
    global AnyEvent, _decoder
    for type_, data in types.items():
        have = DATA.get(type_)
        if have is data:
            continue
        if have is not None:
            raise ValueError(
                f"event type {type_!r} is tabled's own ({have.__name__}): a game cannot redefine it"
            )
        if not (isinstance(data, type) and issubclass(data, Data)):
            raise TypeError(f"event type {type_!r}: {data!r} is not a tabled_client.events.Data")
        DATA[type_] = data
        EVENTS[type_] = _event_class(type_, data)
    AnyEvent = Union[tuple(EVENTS.values())]  # type: ignore[valid-type]  # noqa: UP007
    _decoder = msgspec.json.Decoder(AnyEvent)


class UnknownEventType(ValueError):
    """An event type this client does not know (a newer table): upgrade tabled-client."""


def decode(raw: bytes) -> Event:
    """One event's canonical bytes as its typed Struct (``CardDealt``, ``HandResult``, …)."""
    try:
        return _decoder.decode(raw)  # type: ignore[no-any-return]
    except msgspec.ValidationError as e:
        if "Invalid value" in str(e) and "$.type" in str(e):
            t = msgspec.json.decode(raw).get("type")
            raise UnknownEventType(f"event type {t!r} is not known to this tabled-client") from e
        raise


def check_data(type_: str, data: dict[str, Any]) -> Data:
    """``data`` as the type's Struct; raises ``TypeError``/``ValidationError`` naming what is wrong.

    Strict: an unknown or missing field, or a value of the wrong type, is an error (the daemon
    calls this for every event it builds, so it can only publish what the schema says).
    """
    cls = DATA.get(type_)
    if cls is None:
        raise UnknownEventType(
            f"event type {type_!r} has no Struct in tabled_client.events (add one: docs/events.md)"
        )
    quick = _quick.get(cls)
    if quick is None:
        quick = _quick[cls] = _quick_fields(cls)
    fields, guarded = quick
    if fields and data.keys() <= fields and (not guarded or _admits(data, guarded)):
        # The data's builtins (as the steps and the seal's encoder make them) converted
        # strictly into the Struct: for the fields ``_quick_fields`` admits, holding the
        # kinds of value it admits, it passes exactly when the steps below do (at about half
        # their CPU; the daemon pays this per event). ``to_builtins`` first refuses what the
        # seal's encoder refuses (a subclass of int or str, a read-only mapping), which a
        # bare ``convert`` of the data took (round 4's review); a JSON round trip instead
        # would turn a NaN into null. Any failure takes the steps, which say what is wrong.
        try:
            return msgspec.convert(msgspec.to_builtins(data), cls)
        except (TypeError, ValueError, OverflowError):
            pass
    return _in_steps(cls, type_, data)


def _admits(data: dict[str, Any], guarded: tuple[tuple[str, tuple[type, ...]], ...]) -> bool:
    """Each guarded field the data names holds a value of a type its guard admits."""
    for k, ok in guarded:
        if k in data and type(data[k]) not in ok:
            return False
    return True


def _in_steps(cls: type[Data], type_: str, data: dict[str, Any]) -> Data:
    """The Struct built from the data (unknown or missing fields), then its builtins
    converted back (each value's type)."""
    try:
        obj = cls(**data)
    except TypeError as e:
        raise TypeError(f"{type_}: {e}") from None
    try:
        return msgspec.convert(msgspec.to_builtins(obj), cls)
    except msgspec.ValidationError as e:
        raise msgspec.ValidationError(f"{type_}: {e}") from None


#: per Data class: the fields :func:`check_data` may check in one conversion, and those of
#: them taken there only when their value is of one of the given Python types
_quick: dict[type[Data], tuple[frozenset[str], tuple[tuple[str, tuple[type, ...]], ...]]] = {}


def _quick_fields(
    cls: type[Data],
) -> tuple[frozenset[str], tuple[tuple[str, tuple[type, ...]], ...]]:
    """The class's fields one conversion of the data checks as the full steps do, and which
    of them only for some kinds of value; none (the steps run) when a default other than UNSET
    or a ``__post_init__`` makes the Struct more than its data.

    A field whose type takes a Python object that is not what its JSON says is loose: an
    ``Any`` (a value ``to_builtins`` refuses, an object JSON cannot carry), a ``float``
    (``convert`` takes a ``Decimal`` for it, which would be sealed as a string), a nested
    Struct (``convert`` passes an instance of it through without checking its fields). Two
    kinds are kept, for values that are their own JSON form, where both paths convert the
    same value and so agree: a ``float`` (``| None``) holding a ``float``, an ``int`` or
    None; a flat Struct directly in the field (``hand.result``'s ``roads``) holding a plain
    dict. Any other value there takes the steps. Another loose field is left out: data naming
    it takes the steps, and data without it is the same to both paths (its default is
    UNSET); a required one leaves the class none (every event of it takes the steps)."""
    if any(x is not UNSET for x in cls.__struct_defaults__) or hasattr(cls, "__post_init__"):
        return frozenset(), ()
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    plain: list[str] = []
    guarded: list[tuple[str, tuple[type, ...]]] = []
    for f in info.fields:
        if not _loose(f.type):
            plain.append(f.name)
        elif (ok := _guard(f.type)) is not None:
            guarded.append((f.name, ok))
        elif f.required:  # all data names it, so all data takes the steps: no test first
            return frozenset(), ()
    return frozenset((*plain, *(name for name, _ in guarded))), tuple(guarded)


_NUMBER: Final = (float, int, type(None))


def _guard(t: Any) -> tuple[type, ...] | None:
    """The Python types a loose field may hold and still take the one conversion (None: none).

    A float (``| int``, ``| None``): ``float``, ``int``, None, each its own JSON form (not
    ``bool``, a ``Decimal`` or a float's subclass: the steps judge those). A flat Struct (``|
    None``; UNSET is not in the type info), none of whose fields is loose: a plain ``dict``,
    which both paths convert as it is."""
    kinds = msgspec.inspect
    members = t.types if isinstance(t, kinds.UnionType) else (t,)
    if any(isinstance(m, kinds.FloatType) for m in members) and all(
        isinstance(m, kinds.FloatType | kinds.IntType | kinds.NoneType) for m in members
    ):
        return _NUMBER
    structs = [m for m in members if isinstance(m, kinds.StructType)]
    if (
        len(structs) == 1
        and all(isinstance(m, kinds.StructType | kinds.NoneType) for m in members)
        and not any(_loose(f.type) for f in structs[0].fields)
    ):
        return (dict,)
    return None


#: types whose Python values ``convert`` takes beyond what their JSON form would pass
_LOOSE = (msgspec.inspect.AnyType, msgspec.inspect.FloatType, msgspec.inspect.StructType)


def _loose(t: Any) -> bool:
    if isinstance(t, _LOOSE):
        return True
    for name in ("types", "item_types", "item_type", "key_type", "value_type"):
        v = getattr(t, name, None)
        if v is not None and any(_loose(x) for x in (v if isinstance(v, tuple) else (v,))):
            return True
    return False
