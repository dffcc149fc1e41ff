"""Roulette's own event types: the spin (started, the number, its result, a void) and the
wheel's own reports (state, flags, a resync, the reconcile of its log).

Imports only msgspec and the client's base types: the client distribution carries this module
(``docs/decisions.md``, "Each game's event types live in its folder").
"""

from __future__ import annotations

from msgspec import UNSET, UnsetType
from tabled_client.base import Data, ResultData


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


#: this game's event types (its class's ``events``): the daemon checks its events against them
#: and the client carries them for every backend (``docs/architecture.md``, "Events")
EVENTS = {
    "spin.started": SpinStartedData,
    "wheel.number": WheelNumberData,
    "spin.result": SpinResultData,
    "spin.void": SpinVoidData,
    "wheel.state": WheelStateData,
    "wheel.flags": WheelFlagsData,
    "wheel.resync": WheelResyncData,
    "wheel.reconciled": WheelReconciledData,
}
