"""The Cammegh SlingShot 2 (automatic wheel): its protocol, options, commands and driver [dev]."""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec

from drivers.base import Driver, SerialDefaults
from drivers.cammegh.commands import command, identify, poll, restart, set_mode, status_output
from drivers.cammegh.facts import LOG_PAGE_BYTES, log_page_checksum
from drivers.cammegh.frames import DIGITS, HEX, Bad, fault_reading
from drivers.cammegh.protocol import CammeghProtocol
from drivers.cammegh.tools import DIAGNOSTICS, RESULT_LOG
from drivers.readings import (
    BALL_REVOLUTIONS,
    DeviceReply,
    Reading,
    Unknown,
)

# Replies the SS2 sends [dev]; other letters are Unknown unless a command with that
# letter is waiting (the wheel answered a command we do not know, e.g. ``*v``).
_SS2_REPLY_LETTERS = frozenset("oOPRKuSVFTAdIqWMs")


class SS2Protocol(CammeghProtocol):
    """The SlingShot 2 protocol: status, winning-number line, bonus, replies, faults.

    Readings: ``*X;…`` → WheelStatus; bare line → WinningNumber; ``*Y;…`` →
    BonusValue; replies → DeviceReply naming the asking command; ``*F <code>``
    during play → WheelFault; ``*s r`` pages verified by checksum.
    """

    def __init__(self, double_zero: bool = False) -> None:
        # *X polls are answered by status frames, which are readings of their own.
        super().__init__(double_zero, untracked=frozenset("X"))

    def _reply(self, letter: str, text: str, frame: bytes, now: float) -> list[Reading]:
        if letter == "X":
            raise Bad("'*X' without ';' is not a status frame")
        if letter == "F":
            return self._fault(text, frame, now)
        if letter == "s" and len(text) > 32:
            return [self._log_page(text, frame, now)]
        if letter in _SS2_REPLY_LETTERS or self._asked.waiting(letter, now):
            return [self._matched(letter, text, frame, now)]
        return [Unknown(frame=frame, reason=f"unknown frame '*{letter}'")]

    def _fault(self, text: str, frame: bytes, now: float) -> list[Reading]:
        """``*F BUSY`` / ``*F <code>``: a self-test answer or, unasked, a fault in play [dev]."""
        if text != "BUSY" and (not DIGITS.fullmatch(text) or len(text) > 3):
            raise Bad(f"*F {text!r} is neither BUSY nor a fault code")
        if self._asked.self_test_running(now):
            # Self-test answer: the reply for the technician, plus a fault for the alarm [ours].
            out: list[Reading] = [self._matched("F", text, frame, now)]
            if text != "BUSY" and int(text) != 0:
                out.append(fault_reading(int(text), frame))
            return out
        if text == "BUSY" or int(text) == 0:
            return [self._matched("F", text, frame, now)]
        # *F during play (mode bit 256) [dev]: a fault, not a reply [ours].
        return [fault_reading(int(text), frame)]

    def _log_page(self, text: str, frame: bytes, now: float) -> DeviceReply:
        """A ``*s r`` page: 256 bytes (value + 0x21) and a checksum of their sum mod 256 [dev].

        The vendor text does not fix what precedes the data; an echo of ``r <page>``
        is accepted [ours]. The reply's ``text`` is the 256 verified data characters.
        """
        body = text
        m = re.match(r"r [0-9]+ ", body)
        if m:
            body = body[m.end() :]
        if len(body) != LOG_PAGE_BYTES + 2:
            raise Bad(
                f"log page has {len(body) - 2} data bytes before its 2-digit checksum, "
                f"expected {LOG_PAGE_BYTES}"
            )
        data, check = body[:LOG_PAGE_BYTES], body[LOG_PAGE_BYTES:]
        if any(not 0x21 <= ord(c) <= 0x7E for c in data):
            raise Bad("log page data byte outside 0x21-0x7E")
        if not HEX.fullmatch(check):
            raise Bad(f"log page checksum {check!r} is not 2 hex digits")
        computed = log_page_checksum(data.encode("ascii"))
        if computed != int(check, 16):
            raise Bad(f"log page checksum {check} does not match the data ({computed:02X})")
        asked = self._asked.take("s", text, now)
        return DeviceReply(frame=frame, command=asked or "?s", text=data)


class SS2Options(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Options of ``cammegh-ss2``."""

    #: push: the wheel sends status every 500 ms (mode bit 128) [dev];
    #: poll: the driver asks ``*X`` every ``poll_interval``.
    status_mode: Literal["push", "poll"] = "push"
    #: no faster than every 100 ms [dev].
    poll_interval: Annotated[float, msgspec.Meta(ge=0.1)] = 0.5
    #: seconds without a frame before the wheel is stale: 6 missed 500 ms frames.
    stale_after: Annotated[float, msgspec.Meta(gt=0)] = 3.0
    #: send ``*R`` to acknowledge a void the table decided after a miss-spin [dev].
    acknowledge_void: bool = False
    #: an American wheel: ``00`` is reported as 37 [ours].
    double_zero: bool = False
    #: write this operating mode (``*o``) on connect; None leaves the wheel's own.
    operating_mode: Annotated[int, msgspec.Meta(ge=0, le=65535)] | None = None

    def __post_init__(self) -> None:
        if self.status_mode == "poll" and self.stale_after <= self.poll_interval:
            raise ValueError(
                f"stale_after ({self.stale_after}) must be longer than "
                f"poll_interval ({self.poll_interval})"
            )
        mode = self.operating_mode
        if self.status_mode == "push" and mode is not None and not mode & 128:
            raise ValueError(
                f"operating_mode {self.operating_mode} lacks bit 128 (status every 500 ms), "
                'which status_mode "push" needs'
            )


#: a wheel technician's commands by name [dev]; ``tablectl wheel`` runs the longer sessions
SS2_COMMANDS: dict[str, tuple[str, str]] = {
    "version": ("*V", "the firmware's full version text"),
    "firmware": ("*S", "the firmware number"),
    "selftest": ("*F", "self-test, only while idle (state 6): *F BUSY otherwise; up to 5 min"),
    "power-off": ("*P 0", "power the wheel down: idle, state 6 (for a self-test, the log)"),
    "power-on": ("*P 1", "power the wheel up again"),
    "restart": ("*R", "back to state 1; also acknowledges a void after a miss-spin"),
    "log": ("*s r 0", "the newest page of the wheel's own results log (idle only)"),
}


class SS2Driver(Driver):
    """Cammegh SlingShot 2 automatic roulette wheel, RS-232 9600 8N1 [dev]."""

    name = "cammegh-ss2"
    named_commands = SS2_COMMANDS
    diagnostics = DIAGNOSTICS
    result_log = RESULT_LOG
    transport = "serial"
    Options = SS2Options
    serial_defaults = SerialDefaults(baudrate=9600, bytesize=8, parity="N", stopbits=1)
    stale_after = 3.0

    def __init__(self, options: msgspec.Struct) -> None:
        super().__init__(options)
        assert isinstance(options, SS2Options)
        self.stale_after = options.stale_after  # type: ignore[misc]

    def protocol(self) -> SS2Protocol:
        assert isinstance(self.options, SS2Options)
        return SS2Protocol(double_zero=self.options.double_zero)

    def probe_commands(self) -> list[bytes]:
        # a status and the firmware number; the self-test (*F) runs up to 5 minutes and only
        # when the wheel is idle: `tablectl wheel selftest` through the daemon does that
        return [poll(), command("S")]

    def on_connect(self) -> list[bytes]:
        """Identify (``*V``), set the configured mode, and make sure status output is on."""
        o = self.options
        assert isinstance(o, SS2Options)
        out = [identify()]
        if o.operating_mode is not None:
            out.append(set_mode(o.operating_mode))
        if o.status_mode == "push":
            out.append(status_output(True))
        return out

    def poll(self) -> tuple[float, bytes] | None:
        o = self.options
        assert isinstance(o, SS2Options)
        return (o.poll_interval, poll()) if o.status_mode == "poll" else None

    def lacks(self, capability: str) -> str | None:
        """Why this wheel cannot inform ``capability`` (None: it can, or it is not asked)."""
        if capability != BALL_REVOLUTIONS:
            return None
        # vendor SS2 protocol: the status frame is state;spin;win;flags;speed;dir, and no
        # command reads the ball's revolutions (docs/protocols/cammegh.md)
        return (
            "does not report ball revolutions (the SS2 status frame has no such field; "
            "a Mercury 360 at the extended level does)"
        )

    def void_acknowledgement(self) -> bytes | None:
        """``*R`` to send after the table voided a miss-spin, if this table acknowledges voids."""
        assert isinstance(self.options, SS2Options)
        return restart() if self.options.acknowledge_void else None
