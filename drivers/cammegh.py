"""Cammegh roulette wheels: SlingShot 2 (automatic) and Mercury 360 (manual, in-rim reader).

Both speak ``*``-framed ASCII lines ended by CR LF at 9600 8N1 with no checksum
on live frames, plus one frame without ``*``: the bare winning-number line
(`` 7``, ``23``). The same letters mean different things on different models
(``*X`` polls the status on an SS2 but returns the protocol level on a
Mercury 360), so each model has its own protocol class.

Sources, cited in comments as:

* [dev] Cammegh *SS2 Series Developers Information* (V2.07; V2.10 page images),
* [int] Cammegh *Mercury 360 Integration Configuration Guide*,
* [cap] real SS2 traffic, ``tests/captures/cammegh-ss2/`` (firmware V2.50),
* [ours] a decision of this driver where the vendor says nothing; each is
  listed in ``docs/protocols/cammegh.md``.

Nothing here raises on received bytes: every line becomes a reading, and
garbage becomes :class:`~drivers.readings.Malformed` with a reason.

Why long: it is one vendor's protocol, read against one vendor's documents — the facts
(state, flag and fault tables), the commands, the reply matcher, the frame grammar and
the two models' protocol and driver classes, each a few dozen lines. The models share the
frame parser and the reply matcher (private to this module); split, they would import
each other's private parts, and a reader checking a fact against [dev] would open four
files.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import Annotated, Literal

import msgspec

from drivers.base import Driver, Protocol, SerialDefaults
from drivers.framing import LineFramer
from drivers.readings import (
    DOUBLE_ZERO,
    BonusValue,
    DeviceReply,
    GameEvent,
    Malformed,
    Reading,
    Unknown,
    WheelFault,
    WheelStatus,
    WinningNumber,
)

# --- protocol facts -------------------------------------------------------------------

#: SS2 game states [dev]; 7 needs firmware V2.52+ and must be enabled.
SS2_STATES: dict[int, str] = {
    1: "before game",
    2: "place your bets",
    3: "ball in rim",
    4: "no more bets",
    5: "winning number",
    6: "table closed / idle",
    7: "ball not detected in track",
}
#: Mercury 360 game states [int].
M360_STATES: dict[int, str] = {
    1: "start game",
    2: "place bets",
    3: "finish betting",
    4: "no more bets",
    5: "winning number",
    6: "table closed",
    7: "dealer lock",
}
#: SS2 status flag bits [dev]; any combination 0-F can occur.
SS2_FLAGS: dict[int, str] = {
    1: "ball removed / not detected",
    2: "ball turning the same way as the rotor",
    4: "sensor stuck, motor or encoder fault",
    8: "ball launch failed, retrying",
}
#: Mercury 360 status flag bits [int].
M360_FLAGS: dict[int, str] = {
    1: "rotor speed out of limits",
    2: "ball spun the same way as the rotor",
    4: "rim sensor failure",
    8: "void: ball left the wheel, launch too slow or rotor tamper",
}
#: Mercury extended flags, in the order the integration guide lists them [int].
#: The guide does not print the bit values; ascending bits from 1 is our reading
#: of the list [ours], so these names are for display, never for decisions.
M360_EXTENDED_FLAGS: dict[int, str] = {
    0x001: "rotor stopped",
    0x002: "speed legal",
    0x004: "too fast",
    0x008: "too slow",
    0x010: "clockwise",
    0x020: "anticlockwise",
    0x040: "direction unknown",
    0x080: "no ball in wheel",
    0x100: "ball in pocket",
}
#: SS2 operating-mode bits for ``*o`` [dev]; bit 8 is seen in the field but undocumented.
MODE_BITS: dict[int, str] = {
    1: "reverse rotor each game",
    2: "wait for a user start",
    4: "random speed change after no more bets",
    16: "no bare winning-number line",
    128: "status every 500 ms",
    256: "send *F errors during play",
    1024: "games-per-hour wait in state 1",
    2048: "wait in state 2",
    4096: "Dragon Roulette",
    8192: "sequential numbers",
    32768: "bonus output",
}
#: SS2 self-test / fault codes of ``*F`` [dev].
FAULT_CODES: dict[int, str] = {
    0: "no fault",
    1: "hardware",
    2: "no ball",
    3: "no ball position",
    4: "wrong ball direction",
    5: "motor",
    6: "encoder failed / not calibrated",
    7: "cannot play clockwise",
    8: "cannot play anticlockwise",
    11: "sensor 0 stuck on",
    12: "sensor 1 stuck on",
    13: "sensor 2 stuck on",
    21: "sensor 0 stuck off",
    22: "sensor 1 stuck off",
    23: "sensor 2 stuck off",
    100: "timed out",
}
#: Mercury protocol levels, set per port with ``*m`` [int].
Level = Literal["basic", "advanced", "extended"]

#: a status field ``dir``: 0 clockwise, 1 anticlockwise [dev].
_DIRECTIONS = {"0": "clockwise", "1": "anticlockwise"}
_BALL_DIRECTIONS = {"0": "clockwise", "1": "anticlockwise", "?": "unknown"}
#: Mercury ball period ticks per second [int].
BALL_PERIOD_HZ = 32768
#: log page layout [dev]: 256 data bytes then a 2-hex-digit checksum.
LOG_PAGE_BYTES = 256
#: ``~`` marks an unused log byte [dev].
LOG_UNUSED = ord("~")

# Replies the SS2 sends [dev]; other letters are Unknown unless a command with that
# letter is waiting (the wheel answered a command we do not know, e.g. ``*v``).
_SS2_REPLY_LETTERS = frozenset("oOPRKuSVFTAdIqWMs")
#: seconds a command waits for its reply before a late reply counts as unmatched [ours]:
#: the captures show replies within 1.5 s.
REPLY_TIMEOUT = 10.0
#: ``*F`` self-test runs up to 5 minutes [dev]; its replies are accepted this long [ours].
SELF_TEST_TIMEOUT = 330.0
#: more lines of the same letter within this window belong to the same command
#: (multi-line tables such as ``*W``/``*M``) [ours].
FOLLOW_ON_WINDOW = 1.0
#: commands remembered at most; the oldest are forgotten first [ours].
MAX_PENDING = 32

_HEX = re.compile(r"[0-9A-Fa-f]+")
_DIGITS = re.compile(r"[0-9]+")
_SENSOR_EVENT = re.compile(r"b[a-z] [ 0-9]{1,2}")
_TWO_CHAR_NUMBER = re.compile(r"[ 0-9][0-9]")


def fault_meaning(code: int) -> str:
    """The vendor's meaning of a ``*F`` code, or a plain 'unknown' for codes it does not list."""
    return FAULT_CODES.get(code, f"unknown fault code {code}")


def flag_names(flags: int, table: dict[int, str] = SS2_FLAGS) -> list[str]:
    """The names of the bits set in ``flags``, for alarms and the technician's panel."""
    return [name for bit, name in table.items() if flags & bit]


def log_page_checksum(data: bytes) -> int:
    """Sum of the 256 data bytes as sent (value + 0x21) mod 256 [dev]."""
    return sum(data) & 0xFF


def decode_log_page(text: str) -> list[int | None]:
    """The 256 values of a verified ``*s r`` page: byte - 0x21, ``None`` for ``~`` (unused)."""
    return [None if ord(c) == LOG_UNUSED else ord(c) - 0x21 for c in text]


# --- commands -------------------------------------------------------------------------


def command(letter: str, *args: str | int) -> bytes:
    """``*<letter> <args…>`` CR LF [dev]; raises ValueError on something the wheel could misread.

    Commands come from our own code and operators' tablectl input, so a bad one is
    refused here rather than put on the wire.
    """
    if len(letter) != 1 or not ("A" <= letter <= "Z" or "a" <= letter <= "z"):
        raise ValueError(f"command letter must be one ASCII letter, got {letter!r}")
    parts = ["*" + letter]
    for arg in args:
        if isinstance(arg, bool) or not isinstance(arg, int | str):
            raise ValueError(f"command argument must be a str or an int, got {arg!r}")
        text = str(arg)
        if isinstance(arg, int) and arg < 0:
            raise ValueError(f"command argument must not be negative, got {arg}")
        if not text or not text.isascii() or not text.isprintable() or " " in text or "*" in text:
            raise ValueError(
                f"command argument must be printable ASCII without spaces or '*', got {text!r}"
            )
        parts.append(text)
    return (" ".join(parts) + "\r\n").encode("ascii")


def poll() -> bytes:
    """SS2 status poll ``*X`` [dev] (no faster than every 100 ms)."""
    return b"*X\r\n"


def identify() -> bytes:
    """``*V``: the full firmware version string [dev]."""
    return command("V")


def set_mode(mode: int) -> bytes:
    """``*o <mode>``: operating mode bit sum, kept in the wheel's non-volatile memory [dev]."""
    if not 0 <= mode <= 0xFFFF:
        raise ValueError(f"operating mode must be 0-65535, got {mode}")
    return command("o", mode)


def power(on: bool) -> bytes:
    """``*P 1`` / ``*P 0``: power on / off (off is idle, state 6) [dev]."""
    return command("P", 1 if on else 0)


def restart() -> bytes:
    """``*R``: back to state 1; also acknowledges a void after a miss-spin [dev]."""
    return command("R")


def user_start(anticlockwise: bool = False) -> bytes:
    """``*u 1`` starts the next game in user-start mode; ``*u 3`` anticlockwise (V2.52) [dev]."""
    return command("u", 3 if anticlockwise else 1)


def self_test() -> bytes:
    """``*F``: self-test, idle only, up to 5 minutes [dev]."""
    return command("F")


def status_output(on: bool) -> bytes:
    """``*q 1`` / ``*q 0``: all status output on / off [dev]."""
    return command("q", 1 if on else 0)


def sensor_events(on: bool) -> bytes:
    """``*I 4`` / ``*I 0``: raw sensor event lines on / off [dev]."""
    return command("I", 4 if on else 0)


def read_tuning(param: str) -> bytes:
    """``*T <X>``: read a tuning parameter (upper case); replies name it lower case [dev][cap]."""
    if len(param) != 1 or not param.isascii() or not param.isalpha():
        raise ValueError(f"tuning parameter must be one letter, got {param!r}")
    return command("T", param.upper())


def set_tuning(param: str, *values: str | int) -> bytes:
    """``*T <x> <values>``: set a tuning parameter (lower case); reply ``*T OK`` [dev]."""
    if len(param) != 1 or not param.isascii() or not param.isalpha():
        raise ValueError(f"tuning parameter must be one letter, got {param!r}")
    if not values:
        raise ValueError("setting a tuning parameter needs at least one value")
    return command("T", param.lower(), *values)


def read_log_page(page: int) -> bytes:
    """``*s r <page>``: one page of the wheel's own game log, state 6 only [dev]."""
    if isinstance(page, bool) or not isinstance(page, int) or page < 0:
        raise ValueError(f"log page must be a non-negative integer, got {page!r}")
    return command("s", "r", page)


# --- replies matched to the command that asked -----------------------------------------


class _Asked:
    """The commands the daemon wrote, oldest first, so each reply names what asked.

    A reply starts with its command's letter [dev]; the oldest waiting command of
    that letter takes it. ``*o BUSY`` may answer ``*O`` [dev]; ``*T D`` is answered
    ``*T d 15`` [cap], so ``*T`` replies are matched on the parameter letter too.
    """

    __slots__ = ("_framer", "_pending", "_recent", "_untracked")

    def __init__(self, untracked: frozenset[str]) -> None:
        self._framer = LineFramer(max_line=128)
        # [letter, command text, first argument, deadline]
        self._pending: deque[tuple[str, str, str, float]] = deque()
        self._recent: dict[str, tuple[str, float]] = {}
        self._untracked = untracked

    def sent(self, data: bytes, now: float) -> None:
        for line in self._framer.feed(data):
            if isinstance(line, Malformed):
                continue
            text = line.decode("ascii", "replace").strip()
            if len(text) < 2 or text[0] != "*" or not text[1].isalpha():
                continue
            if text[1] in self._untracked:
                continue
            letter = text[1]
            args = text[2:].split()
            timeout = SELF_TEST_TIMEOUT if letter == "F" else REPLY_TIMEOUT
            self._pending.append((letter, text, args[0] if args else "", now + timeout))
            while len(self._pending) > MAX_PENDING:
                self._pending.popleft()

    def waiting(self, letter: str, now: float) -> bool:
        self._expire(now)
        return any(p[0] == letter for p in self._pending)

    def self_test_running(self, now: float) -> bool:
        return self.waiting("F", now)

    def take(self, letter: str, text: str, now: float) -> str | None:
        """The command this reply answers, or None when nothing asked for it."""
        self._expire(now)
        pick = self._choose(letter, text)
        if pick is None:
            recent = self._recent.get(letter)
            if recent is not None and now <= recent[1]:
                return recent[0]
            return None
        entry = self._pending[pick]
        # A self-test answers one line per fault and ends with "0" or "BUSY" [dev]:
        # keep it waiting until then (or until it times out).
        if not (entry[0] == "F" and text not in ("0", "BUSY")):
            del self._pending[pick]
        self._recent[letter] = (entry[1], now + FOLLOW_ON_WINDOW)
        return entry[1]

    def _choose(self, letter: str, text: str) -> int | None:
        same = [i for i, p in enumerate(self._pending) if p[0] == letter]
        if not same and letter == "o":
            same = [i for i, p in enumerate(self._pending) if p[0] == "O"]
        if not same:
            return None
        if letter == "T":
            first = text.split(" ", 1)[0]
            if first == "OK":  # answers a set: lower-case parameter
                better = [i for i in same if self._pending[i][2].islower()]
            else:
                better = [i for i in same if self._pending[i][2].lower() == first.lower()]
            if better:
                return better[0]
        return same[0]

    def _expire(self, now: float) -> None:
        if self._pending and any(p[3] < now for p in self._pending):
            self._pending = deque(p for p in self._pending if not p[3] < now)

    def clear(self) -> None:
        self._pending.clear()
        self._recent.clear()
        self._framer.eof()


# --- frame parsing ----------------------------------------------------------------------


class _Bad(Exception):
    """A frame that is not valid; carries the reason for the Malformed reading."""


def _split_line(line: bytes) -> tuple[bytes, list[bytes]]:
    """Split a received line into (garbage before the first ``*``, ``*`` frames).

    Every frame starts with ``*`` [dev], so a ``*`` inside a line starts a new frame
    whose predecessor lost its line end: the capture has ``*X;4;14*X;*X;4;146; 9;0;158;0``
    [cap]. A log page's data may contain ``*`` (value 9 + 0x21), so a ``*s`` frame takes
    the rest of the line [ours].
    """
    start = line.find(b"*")
    if start < 0:
        return line, []
    frames: list[bytes] = []
    i = start
    while i >= 0:
        if line.startswith(b"*s", i):
            frames.append(line[i:])
            break
        j = line.find(b"*", i + 1)
        frames.append(line[i : j if j >= 0 else len(line)])
        i = j
    return line[:start], frames


def _ascii(frame: bytes) -> str:
    try:
        text = frame.decode("ascii")
    except UnicodeDecodeError:
        raise _Bad("not ASCII") from None
    if not text.isprintable():
        raise _Bad("control characters in frame")
    return text


def _int(field: str, width: int, name: str, lo: int, hi: int) -> int:
    if len(field) != width or not _DIGITS.fullmatch(field):
        raise _Bad(f"{name} {field!r} is not {width} digit{'s' if width > 1 else ''}")
    value = int(field)
    if not lo <= value <= hi:
        raise _Bad(f"{name} {value} is outside {lo}-{hi}")
    return value


def _hex(field: str, width: int, name: str) -> int:
    if len(field) != width or not _HEX.fullmatch(field):
        raise _Bad(f"{name} {field!r} is not {width} hex digit{'s' if width > 1 else ''}")
    return int(field, 16)


def _number(field: str, double_zero: bool, name: str, zero_padded: bool = False) -> int:
    """A winning number: two characters, right-justified, space-padded [dev].

    ``00`` is double zero, represented as 37, and only on a wheel configured
    ``double_zero`` [ours]; such a wheel may also say 37 for it [ours]. Zero-padded
    numbers (``07``) are refused unless the field is documented as "2 chars"
    without padding (Mercury pocket, ``*W nn``) [ours].
    """
    if not _TWO_CHAR_NUMBER.fullmatch(field):
        raise _Bad(f"{name} {field!r} is not a two-character number")
    if field == "00":
        if double_zero:
            return DOUBLE_ZERO
        if not zero_padded:
            raise _Bad(f"{name} '00' on a wheel not configured double_zero")
        return 0
    if field[0] == "0" and not zero_padded:
        raise _Bad(f"{name} {field!r} is zero-padded, the wheel pads with a space")
    value = int(field)
    if value <= 36 or (double_zero and value == DOUBLE_ZERO):
        return value
    raise _Bad(f"{name} {value} is not a pocket of a {'38' if double_zero else '37'}-pocket wheel")


def _status(
    text: str, frame: bytes, *, count_max: int, mercury: bool, double_zero: bool
) -> WheelStatus:
    """``*X;state;spin;win;flags;speed;dir`` [dev], plus five Mercury extended fields [int]."""
    fields = text[3:].split(";")
    if len(fields) not in ((6, 11) if mercury else (6,)):
        wanted = "6 or 11" if mercury else "6"
        raise _Bad(f"status frame has {len(fields)} fields, expected {wanted}")
    state = _int(fields[0], 1, "state", 1, 7)
    spin = _int(fields[1], 3, "game count" if mercury else "spin count", 0, count_max)
    win = fields[2]
    last = None if win == "  " else _number(win, double_zero, "last number")
    flags = _hex(fields[3], 1, "flags")
    speed = _int(fields[4], 3, "rotor speed", 0, 999)
    if mercury and speed != 0 and not 20 <= speed <= 600:
        # outside 2.0-60.0 rpm the Mercury reads 000 [int]
        raise _Bad(f"rotor speed {speed / 10:.1f} rpm is outside 2.0-60.0 and not 000")
    if fields[5] not in _DIRECTIONS:
        raise _Bad(f"rotor direction {fields[5]!r} is not 0 or 1")
    status = WheelStatus(
        frame=frame,
        state=state,
        spin=spin,
        last_number=last,
        flags=flags,
        rpm=speed / 10,
        direction=_DIRECTIONS[fields[5]],
    )
    if len(fields) == 6:
        return status
    ext, revs, bdir, period, pocket = fields[6:]
    if bdir not in _BALL_DIRECTIONS:
        raise _Bad(f"ball direction {bdir!r} is not ?, 0 or 1")
    return msgspec.structs.replace(
        status,
        extended_flags=_hex(ext, 4, "extended flags"),
        ball_revolutions=_hex(revs, 2, "ball revolutions"),
        ball_direction=_BALL_DIRECTIONS[bdir],
        ball_period=None if period == "?????" else _hex(period, 5, "ball period") / BALL_PERIOD_HZ,
        pocket=None if pocket == "??" else _number(pocket, double_zero, "pocket", zero_padded=True),
    )


def _fault_reading(code: int, frame: bytes) -> WheelFault:
    return WheelFault(frame=frame, code=code, meaning=fault_meaning(code))


def _bonus(text: str, frame: bytes) -> BonusValue:
    """``*Y;k;nnn[;dd]`` [dev]: k 1-6, value 000-255, 999 when the licence expired."""
    fields = text[3:].split(";")
    if len(fields) not in (2, 3):
        raise _Bad(f"bonus frame has {len(fields)} fields, expected 2 or 3")
    index = _int(fields[0], 1, "bonus index", 1, 6)
    value = _int(fields[1], 3, "bonus value", 0, 999)
    if 255 < value < 999:
        raise _Bad(f"bonus value {value} is neither 000-255 nor 999")
    days: int | None = None
    if len(fields) == 3:
        if not re.fullmatch(r"[0-9]{1,2}", fields[2]) or int(fields[2]) > 30:
            raise _Bad(f"licence days {fields[2]!r} is not 0-30")
        days = int(fields[2])
    elif value == 999:
        days = 0  # expired licence [ours: 0 days left]
    return BonusValue(frame=frame, index=index, value=value, licence_days=days)


class _CammeghProtocol(Protocol):
    """What the two models share: line framing, resync on ``*``, bare lines, replies."""

    #: longest line: a log page is ~270 bytes [dev].
    MAX_LINE = 512
    _mercury = False

    def __init__(self, double_zero: bool, untracked: frozenset[str]) -> None:
        self.double_zero = double_zero
        self._framer = LineFramer(max_line=self.MAX_LINE)
        self._asked = _Asked(untracked)

    def feed(self, data: bytes, now: float) -> list[Reading]:
        out: list[Reading] = []
        for line in self._framer.feed(data):
            if isinstance(line, Malformed):
                out.append(line)
                continue
            garbage, frames = _split_line(line)
            if garbage and frames:
                out.append(Malformed(frame=garbage, reason="bytes before the '*' of a frame"))
            elif garbage:
                out.extend(self._safe(self._bare, garbage, now))
            for frame in frames:
                out.extend(self._safe(self._frame, frame, now))
        return out

    def sent(self, data: bytes, now: float) -> list[Reading]:
        try:
            self._asked.sent(data, now)
        except Exception:  # pragma: no cover - our own bytes; never let them break a link
            pass
        return []

    def eof(self) -> list[Reading]:
        self._asked.clear()
        return list(self._framer.eof())

    def _safe(
        self, parse: Callable[[bytes, float], list[Reading]], frame: bytes, now: float
    ) -> list[Reading]:
        try:
            return parse(frame, now)
        except _Bad as e:
            return [Malformed(frame=frame, reason=str(e))]
        except Exception as e:  # a decoder bug must cost one frame, not the link
            return [Malformed(frame=frame, reason=f"decoder error: {e!r}")]

    def _bare(self, frame: bytes, now: float) -> list[Reading]:
        """A whole line without ``*``: the winning-number line [dev] or a sensor event [dev]."""
        text = _ascii(frame)
        if len(text) == 2:
            number = _number(text, self.double_zero, "winning number")
            return [WinningNumber(frame=frame, number=number)]
        if _SENSOR_EVENT.fullmatch(text):
            return [Unknown(frame=frame, reason="sensor event line (*I 4 output)")]
        raise _Bad("not a '*' frame nor a two-character winning-number line")

    def _frame(self, frame: bytes, now: float) -> list[Reading]:
        text = _ascii(frame)
        if len(text) < 2 or not text[1].isalpha():
            raise _Bad("'*' not followed by a letter")
        letter = text[1]
        if letter == "X" and text[2:3] == ";":
            return [
                _status(
                    text,
                    frame,
                    count_max=255 if self._mercury else 256,
                    mercury=self._mercury,
                    double_zero=self.double_zero,
                )
            ]
        if letter == "Y" and text[2:3] == ";":
            return [_bonus(text, frame)]
        if len(text) > 2 and text[2] != " ":
            raise _Bad(f"'*{letter}' followed by {text[2]!r}, expected a space or the line end")
        return self._reply(letter, text[3:], frame, now)

    def _reply(self, letter: str, text: str, frame: bytes, now: float) -> list[Reading]:
        raise NotImplementedError

    def _matched(self, letter: str, text: str, frame: bytes, now: float) -> DeviceReply:
        asked = self._asked.take(letter, text, now)
        # An unmatched reply is kept, named "?<letter>" [ours].
        return DeviceReply(frame=frame, command=asked or f"?{letter}", text=text)


class SS2Protocol(_CammeghProtocol):
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
            raise _Bad("'*X' without ';' is not a status frame")
        if letter == "F":
            return self._fault(text, frame, now)
        if letter == "s" and len(text) > 32:
            return [self._log_page(text, frame, now)]
        if letter in _SS2_REPLY_LETTERS or self._asked.waiting(letter, now):
            return [self._matched(letter, text, frame, now)]
        return [Unknown(frame=frame, reason=f"unknown frame '*{letter}'")]

    def _fault(self, text: str, frame: bytes, now: float) -> list[Reading]:
        """``*F BUSY`` / ``*F <code>``: a self-test answer or, unasked, a fault in play [dev]."""
        if text != "BUSY" and (not _DIGITS.fullmatch(text) or len(text) > 3):
            raise _Bad(f"*F {text!r} is neither BUSY nor a fault code")
        if self._asked.self_test_running(now):
            # Self-test answer: the reply for the technician, plus a fault for the alarm [ours].
            out: list[Reading] = [self._matched("F", text, frame, now)]
            if text != "BUSY" and int(text) != 0:
                out.append(_fault_reading(int(text), frame))
            return out
        if text == "BUSY" or int(text) == 0:
            return [self._matched("F", text, frame, now)]
        # *F during play (mode bit 256) [dev]: a fault, not a reply [ours].
        return [_fault_reading(int(text), frame)]

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
            raise _Bad(
                f"log page has {len(body) - 2} data bytes before its 2-digit checksum, "
                f"expected {LOG_PAGE_BYTES}"
            )
        data, check = body[:LOG_PAGE_BYTES], body[LOG_PAGE_BYTES:]
        if any(not 0x21 <= ord(c) <= 0x7E for c in data):
            raise _Bad("log page data byte outside 0x21-0x7E")
        if not _HEX.fullmatch(check):
            raise _Bad(f"log page checksum {check!r} is not 2 hex digits")
        computed = log_page_checksum(data.encode("ascii"))
        if computed != int(check, 16):
            raise _Bad(f"log page checksum {check} does not match the data ({computed:02X})")
        asked = self._asked.take("s", text, now)
        return DeviceReply(frame=frame, command=asked or "?s", text=data)


class M360Protocol(_CammeghProtocol):
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
            number = _number(field, self.double_zero, "*W number", zero_padded=True)
            return [WinningNumber(frame=frame, number=number)]
        if self._asked.waiting(letter, now):
            return [self._matched(letter, text, frame, now)]
        if letter == "X":
            raise _Bad("'*X' without ';' and no '*X' asked: not a status frame")
        return [Unknown(frame=frame, reason=f"unknown frame '*{letter}'")]


# --- drivers --------------------------------------------------------------------------


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
    default_game = "roulette"
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

    def reports_ball_revolutions(self) -> str | None:
        """Why this wheel cannot inform ``min_ball_revolutions`` (None: it can)."""
        # vendor SS2 protocol: the status frame is state;spin;win;flags;speed;dir, and no
        # command reads the ball's revolutions (docs/protocols/cammegh.md)
        return "does not report ball revolutions (the SS2 status frame has no such field)"

    def void_acknowledgement(self) -> bytes | None:
        """``*R`` to send after the table voided a miss-spin, if this table acknowledges voids."""
        assert isinstance(self.options, SS2Options)
        return restart() if self.options.acknowledge_void else None


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
    default_game = "roulette"
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

    def reports_ball_revolutions(self) -> str | None:
        """Only the extended level's frames carry the ball's revolutions [int]."""
        assert isinstance(self.options, M360Options)
        if self.options.level == "extended":
            return None
        return f'reports ball revolutions only at the extended level (it is set to "{self.options.level}")'
