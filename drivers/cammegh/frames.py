"""The frame grammar both models share: splitting a line into ``*`` frames and
decoding the status (``*X;…``) and bonus (``*Y;…``) frames' fields.

Every function raises :class:`Bad` with the reason; the protocol turns it into a
Malformed reading, so nothing here decides what a frame means to the table.
"""

from __future__ import annotations

import re

import msgspec

from drivers.cammegh.facts import BALL_PERIOD_HZ, fault_meaning
from drivers.readings import (
    DOUBLE_ZERO,
    BonusValue,
    WheelFault,
    WheelStatus,
)

#: a status field ``dir``: 0 clockwise, 1 anticlockwise [dev].
_DIRECTIONS = {"0": "clockwise", "1": "anticlockwise"}
_BALL_DIRECTIONS = {"0": "clockwise", "1": "anticlockwise", "?": "unknown"}

HEX = re.compile(r"[0-9A-Fa-f]+")
DIGITS = re.compile(r"[0-9]+")
SENSOR_EVENT = re.compile(r"b[a-z] [ 0-9]{1,2}")
TWO_CHAR_NUMBER = re.compile(r"[ 0-9][0-9]")


class Bad(Exception):
    """A frame that is not valid; carries the reason for the Malformed reading."""


def split_line(line: bytes) -> tuple[bytes, list[bytes]]:
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


def ascii_text(frame: bytes) -> str:
    try:
        text = frame.decode("ascii")
    except UnicodeDecodeError:
        raise Bad("not ASCII") from None
    if not text.isprintable():
        raise Bad("control characters in frame")
    return text


def int_field(field: str, width: int, name: str, lo: int, hi: int) -> int:
    if len(field) != width or not DIGITS.fullmatch(field):
        raise Bad(f"{name} {field!r} is not {width} digit{'s' if width > 1 else ''}")
    value = int(field)
    if not lo <= value <= hi:
        raise Bad(f"{name} {value} is outside {lo}-{hi}")
    return value


def hex_field(field: str, width: int, name: str) -> int:
    if len(field) != width or not HEX.fullmatch(field):
        raise Bad(f"{name} {field!r} is not {width} hex digit{'s' if width > 1 else ''}")
    return int(field, 16)


def pocket_number(field: str, double_zero: bool, name: str, zero_padded: bool = False) -> int:
    """A winning number: two characters, right-justified, space-padded [dev].

    ``00`` is double zero, represented as 37, and only on a wheel configured
    ``double_zero`` [ours]; such a wheel may also say 37 for it [ours]. Zero-padded
    numbers (``07``) are refused unless the field is documented as "2 chars"
    without padding (Mercury pocket, ``*W nn``) [ours].
    """
    if not TWO_CHAR_NUMBER.fullmatch(field):
        raise Bad(f"{name} {field!r} is not a two-character number")
    if field == "00":
        if double_zero:
            return DOUBLE_ZERO
        if not zero_padded:
            raise Bad(f"{name} '00' on a wheel not configured double_zero")
        return 0
    if field[0] == "0" and not zero_padded:
        raise Bad(f"{name} {field!r} is zero-padded, the wheel pads with a space")
    value = int(field)
    if value <= 36 or (double_zero and value == DOUBLE_ZERO):
        return value
    raise Bad(f"{name} {value} is not a pocket of a {'38' if double_zero else '37'}-pocket wheel")


def status_frame(
    text: str, frame: bytes, *, count_max: int, mercury: bool, double_zero: bool
) -> WheelStatus:
    """``*X;state;spin;win;flags;speed;dir`` [dev], plus five Mercury extended fields [int]."""
    fields = text[3:].split(";")
    if len(fields) not in ((6, 11) if mercury else (6,)):
        wanted = "6 or 11" if mercury else "6"
        raise Bad(f"status frame has {len(fields)} fields, expected {wanted}")
    state = int_field(fields[0], 1, "state", 1, 7)
    spin = int_field(fields[1], 3, "game count" if mercury else "spin count", 0, count_max)
    win = fields[2]
    last = None if win == "  " else pocket_number(win, double_zero, "last number")
    flags = hex_field(fields[3], 1, "flags")
    speed = int_field(fields[4], 3, "rotor speed", 0, 999)
    if mercury and speed != 0 and not 20 <= speed <= 600:
        # outside 2.0-60.0 rpm the Mercury reads 000 [int]
        raise Bad(f"rotor speed {speed / 10:.1f} rpm is outside 2.0-60.0 and not 000")
    if fields[5] not in _DIRECTIONS:
        raise Bad(f"rotor direction {fields[5]!r} is not 0 or 1")
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
        raise Bad(f"ball direction {bdir!r} is not ?, 0 or 1")
    return msgspec.structs.replace(
        status,
        extended_flags=hex_field(ext, 4, "extended flags"),
        ball_revolutions=hex_field(revs, 2, "ball revolutions"),
        ball_direction=_BALL_DIRECTIONS[bdir],
        ball_period=None
        if period == "?????"
        else hex_field(period, 5, "ball period") / BALL_PERIOD_HZ,
        pocket=None
        if pocket == "??"
        else pocket_number(pocket, double_zero, "pocket", zero_padded=True),
    )


def fault_reading(code: int, frame: bytes) -> WheelFault:
    return WheelFault(frame=frame, code=code, meaning=fault_meaning(code))


def bonus_frame(text: str, frame: bytes) -> BonusValue:
    """``*Y;k;nnn[;dd]`` [dev]: k 1-6, value 000-255, 999 when the licence expired."""
    fields = text[3:].split(";")
    if len(fields) not in (2, 3):
        raise Bad(f"bonus frame has {len(fields)} fields, expected 2 or 3")
    index = int_field(fields[0], 1, "bonus index", 1, 6)
    value = int_field(fields[1], 3, "bonus value", 0, 999)
    if 255 < value < 999:
        raise Bad(f"bonus value {value} is neither 000-255 nor 999")
    days: int | None = None
    if len(fields) == 3:
        if not re.fullmatch(r"[0-9]{1,2}", fields[2]) or int(fields[2]) > 30:
            raise Bad(f"licence days {fields[2]!r} is not 0-30")
        days = int(fields[2])
    elif value == 999:
        days = 0  # expired licence [ours: 0 days left]
    return BonusValue(frame=frame, index=index, value=value, licence_days=days)
