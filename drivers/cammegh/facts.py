"""The vendors' facts about Cammegh wheels: states, flags, fault codes, modes, log pages.

Tables as [dev] and [int] print them, so a reader checks a fact against one file; the
sources' tags are listed in the package docstring.
"""

from __future__ import annotations

from typing import Literal

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


#: Mercury ball period ticks per second [int].
BALL_PERIOD_HZ = 32768
#: log page layout [dev]: 256 data bytes then a 2-hex-digit checksum.
LOG_PAGE_BYTES = 256
#: ``~`` marks an unused log byte [dev].
LOG_UNUSED = ord("~")


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
