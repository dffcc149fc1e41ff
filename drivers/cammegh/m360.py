"""The Cammegh Mercury 360 / Mercury II (manual wheel, in-rim reader): protocol,
options and driver [int].
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from drivers.base import Driver, SerialDefaults
from drivers.cammegh.facts import Level
from drivers.cammegh.frames import Bad, pocket_number
from drivers.cammegh.protocol import CammeghProtocol
from drivers.cammegh.tools import DIAGNOSTICS, RESULT_LOG
from drivers.readings import (
    BALL_REVOLUTIONS,
    GameEvent,
    Reading,
    Unknown,
    WinningNumber,
)


class M360Protocol(CammeghProtocol):
    """The Mercury 360 / Mercury II protocol at one of its three levels [int].

    basic: ``*S`` → GameEvent("started"), ``*N`` → GameEvent("no-more-bets"),
    ``*W nn`` → WinningNumber; advanced: ``*X;…`` (count = games played 0-255);
    extended: five more fields. Frames are decoded by their shape whatever the
    configured level, so a level set differently on the wheel never loses a
    result [ours]; ``*X`` as a command returns the level [int], as a DeviceReply.
    """

    _mercury = True

    def __init__(self, level: Level = "advanced", double_zero: bool = False) -> None:
        super().__init__(double_zero, untracked=frozenset())
        self.level = level

    def _reply(self, letter: str, text: str, frame: bytes, now: float) -> list[Reading]:
        if letter == "S" and not text:
            return [GameEvent(frame=frame, what="started")]
        if letter == "N" and not text:
            return [GameEvent(frame=frame, what="no-more-bets")]
        if letter == "W":
            # "*W nn" [int]: padding not stated; " 7", "07" and "7" are accepted [ours].
            field = text.rjust(2) if len(text) == 1 else text
            number = pocket_number(field, self.double_zero, "*W number", zero_padded=True)
            return [WinningNumber(frame=frame, number=number)]
        if self._asked.waiting(letter, now):
            return [self._matched(letter, text, frame, now)]
        if letter == "X":
            raise Bad("'*X' without ';' and no '*X' asked: not a status frame")
        return [Unknown(frame=frame, reason=f"unknown frame '*{letter}'")]


class M360Options(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Options of ``cammegh-m360``.

    No ``status_mode``: ``*X`` returns the level on a Mercury 360, not the status [int].
    """

    #: the protocol level the wheel's port is set to (``*m``) [int]: required, never guessed.
    level: Level
    #: seconds without a frame before the wheel is stale; None: never (basic level
    #: is silent between games, and the status rate of the other levels is not documented).
    stale_after: Annotated[float, msgspec.Meta(gt=0)] | None = None
    double_zero: bool = False


class M360Driver(Driver):
    """Cammegh Mercury 360 / Mercury II manual wheel with in-rim reader, 9600 8N1 [int]."""

    name = "cammegh-m360"
    #: the SlingShot 2's sessions, as tablectl always sent them to any wheel: the integration
    #: guide documents none of them for the Mercury; its simulator answers them [ours]
    diagnostics = DIAGNOSTICS
    result_log = RESULT_LOG
    transport = "serial"
    Options = M360Options
    serial_defaults = SerialDefaults(baudrate=9600, bytesize=8, parity="N", stopbits=1)

    def __init__(self, options: msgspec.Struct) -> None:
        super().__init__(options)
        assert isinstance(options, M360Options)
        self.stale_after = options.stale_after  # type: ignore[misc]

    def protocol(self) -> M360Protocol:
        assert isinstance(self.options, M360Options)
        return M360Protocol(level=self.options.level, double_zero=self.options.double_zero)

    def on_connect(self) -> list[bytes]:
        """Ask the level (``*X`` on a Mercury 360 [int]) so a mismatch shows in the trace."""
        return [b"*X\r\n"]

    def lacks(self, capability: str) -> str | None:
        """Only the extended level's frames carry the ball's revolutions [int]."""
        assert isinstance(self.options, M360Options)
        if capability != BALL_REVOLUTIONS or self.options.level == "extended":
            return None
        return (
            "reports ball revolutions only at the extended level "
            f'(it is set to "{self.options.level}")'
        )
