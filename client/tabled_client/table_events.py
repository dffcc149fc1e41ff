"""The table's own events, every game's: the daemon, the journal, devices, operators, alarms,
sessions, the config's audit, secrets, betting and corrections (``docs/events.md``).

These are the plumbing's types: no game redefines one (``registry.register`` refuses).
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, Meta, UnsetType

from tabled_client.base import Data


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
    spots: dict[str, list[int]] = {}  # noqa: RUF012 (a msgspec Struct copies its defaults)


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


class DeviceFaultData(Data):
    """Roulette (``frames``) and Sic Bo (``round``)."""

    device: str
    code: int | str | None
    meaning: str
    alarm: str
    frames: list[str] | UnsetType = UNSET
    round: int | UnsetType | None = UNSET


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


#: the table's event types (``device.connected`` … share one Struct)
TYPES: dict[str, type[Data]] = {
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
    "secret.opened": SecretOpenedData,
    "betting.opened": BettingOpenedData,
    "betting.closed": BettingClosedData,
    "result.corrected": ResultCorrectedData,
}
