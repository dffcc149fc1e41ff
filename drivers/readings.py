"""The readings every driver speaks: typed values a protocol makes out of bytes.

The table consumes readings, never bytes, so a new shoe model or a new
scanner is a new protocol producing the same readings. Each reading keeps
the raw ``frame`` it came from, for traces and alarms that must quote the
wire.
"""

from __future__ import annotations

import msgspec


class Reading(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag=str.lower):
    """Base of every reading."""

    frame: bytes = b""


class Malformed(Reading, frozen=True, kw_only=True):
    """Bytes that do not form a valid frame. Counted, shown, never a card."""

    reason: str


class Unknown(Reading, frozen=True, kw_only=True):
    """A well-formed frame this protocol does not know. Counted, shown, ignored."""

    reason: str = "unknown frame"


class LineNoise(Reading, frozen=True, kw_only=True):
    """Not a frame: the verdict that a device's line turned noisy (``drivers/noise.py``).

    ``recent`` are the lines among the last ones that did decode: noise may have made them.
    """

    malformed: int
    lines: int
    recent: tuple[str, ...] = ()


# --- card shoes and scanners -------------------------------------------------


class CardDrawn(Reading, frozen=True, kw_only=True):
    """A card left the shoe (or passed the scanner).

    ``box`` is what the device claims (some encodings name the box); the
    table decides from shoe order, not from the device's claim.
    """

    card: str
    box: str | None = None
    face_up: bool = False


class CardUnreadable(Reading, frozen=True, kw_only=True):
    """The device saw a card it could not read, or a code that is no card."""

    code: str = ""


class CutCardOut(Reading, frozen=True, kw_only=True):
    """The cut card came out of the shoe."""


class ShoeRemoved(Reading, frozen=True, kw_only=True):
    """The shoe (or its card stack) was taken away."""


class ShoeInserted(Reading, frozen=True, kw_only=True):
    """A shoe was put in place."""


class BadgeRead(Reading, frozen=True, kw_only=True):
    """A staff badge passed a reader (a scanner with ``reads = "badges"``): its code.

    What it means (a dealer signing in or out) is the table's (``daemon/table/sessions.py``).
    """

    code: str


# --- generic device replies ---------------------------------------------------


class DeviceReply(Reading, frozen=True, kw_only=True):
    """An answer to a command the daemon sent: identity, self-test, settings."""

    command: str
    text: str
    #: a periodic status answer (a poll's, the level a wheel states at connect): health,
    #: not a technician's session, so the table does not journal it as ``device.reply``
    quiet: bool = False


# --- roulette wheels ------------------------------------------------------------


class WheelStatus(Reading, frozen=True, kw_only=True):
    """One status frame (Cammegh ``*X;…``): what the wheel says it is doing.

    ``last_number`` is the wheel's *last* winning number, which in states
    3–4 still belongs to the previous game: the spin procedure takes a
    result only on entering state 5 or from a :class:`WinningNumber`.
    """

    state: int
    spin: int
    last_number: int | None
    flags: int
    rpm: float
    direction: str  # "clockwise" | "anticlockwise"
    # Mercury extended protocol only; None where the wheel does not report it.
    ball_revolutions: int | None = None
    ball_direction: str | None = None  # "clockwise" | "anticlockwise" | "unknown"
    ball_period: float | None = None  # seconds per revolution
    pocket: int | None = None
    extended_flags: int | None = None


#: the capability of reporting :attr:`WheelStatus.ball_revolutions`: what a game's house
#: rule ``needs`` and a driver's ``lacks`` name (``drivers.base.Driver.lacks``)
BALL_REVOLUTIONS = "ball revolutions"


#: how 00 of a double-zero wheel is carried in a :class:`WinningNumber` (and a status's
#: number) [ours]: every wheel driver says 00 this way, and the roulette rules read it so.
DOUBLE_ZERO = 37


class ButtonPressed(Reading, frozen=True, kw_only=True):
    """A dealer's button pressed (and held long enough): what it asks the table is the daemon's
    (``daemon/table/buttons.py``); ``role`` is the one the panel's options give that button."""

    button: str
    role: str
    held: float
    at: float


class WinningNumber(Reading, frozen=True, kw_only=True):
    """A winning number line (the bare ``" 7"`` line or Mercury ``*W nn``); 00 is :data:`DOUBLE_ZERO`."""

    number: int


class GameEvent(Reading, frozen=True, kw_only=True):
    """Mercury basic protocol milestones: ``started`` (``*S``), ``no-more-bets`` (``*N``)."""

    what: str


class WheelFault(Reading, frozen=True, kw_only=True):
    """A component fault the wheel reported (``*F <code>``) with its meaning."""

    code: int
    meaning: str


class BonusValue(Reading, frozen=True, kw_only=True):
    """A licensed bonus output frame (``*Y;k;nnn``)."""

    index: int
    value: int
    licence_days: int | None = None
