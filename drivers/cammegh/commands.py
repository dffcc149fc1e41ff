"""Command builders: the bytes the daemon and ``tablectl`` write to a Cammegh wheel [dev]."""

from __future__ import annotations


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
