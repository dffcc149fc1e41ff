"""Bytes as a device's line delivers them: cut anywhere, fed to a sans-I/O protocol piece by piece.

Every protocol's property tests share these (a frame must decode the same however the
serial port splits it).
"""

from __future__ import annotations

from typing import Any


def pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at each of ``cuts`` (taken modulo its length + 1; repeats and empty pieces
    allowed): the pieces joined are ``data`` again."""
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def feed_all(protocol: Any, chunks: list[bytes], now: float = 1.0) -> list[Any]:
    """Every reading ``chunks`` give, fed one by one at ``now``, and what the end of the line flushes."""
    out: list[Any] = []
    for c in chunks:
        out += protocol.feed(c, now)
    return out + protocol.eof()
