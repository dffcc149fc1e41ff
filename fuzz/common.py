"""Helpers shared by the fuzz targets (pure: no driver imports, so atheris instruments those).

Each target is a libFuzzer entry point run by atheris: ``python fuzz/fuzz_<protocol>.py
[libFuzzer flags]``, or all of them through ``python fuzz/run.py``. A target feeds one
protocol the fuzzer's bytes cut at fuzzer-chosen points (sans-I/O, no clock) and
asserts the invariants ``tests/test_protocol_properties.py`` states for it; a broken
invariant is an exception, which libFuzzer reports as a crash with its input.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def pieces(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """``data`` cut at ``cuts`` (taken modulo its length + 1, in order)."""
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for c in points:
        out.append(data[last:c])
        last = c
    return [*out, data[last:]]


def cuts(fdp: Any, most: int = 8) -> list[int]:
    return fdp.ConsumeIntListInRange(fdp.ConsumeIntInRange(0, most), 0, 4096)


def complete_lines(data: bytes) -> set[bytes]:
    """Every whole line of ``data`` (ended by CR or LF), as a line framer cuts them."""
    parts = data.replace(b"\r", b"\n").split(b"\n")
    return {p for p in parts[:-1] if p}


def longest_segment(data: bytes) -> int:
    return max(len(p) for p in data.replace(b"\r", b"\n").split(b"\n"))


def feed(proto: Any, chunks: Iterable[bytes], now: float = 1.0, bound: Any = None) -> list[Any]:
    """Every reading of ``chunks`` then end of link; ``bound(proto)`` checked after each feed."""
    out: list[Any] = []
    for c in chunks:
        out += proto.feed(c, now)
        if bound is not None:
            bound(proto)
    return out + proto.eof()


def valid_kind(r: Any) -> bool:
    """A reading that means something to the table: not Malformed, not Unknown."""
    return type(r).__name__ not in ("Malformed", "Unknown")


def no_decoder_error(out: list[Any]) -> None:
    for r in out:
        reason = getattr(r, "reason", "")
        if type(r).__name__ == "Malformed" and (
            "decoder error" in reason or "protocol error" in reason
        ):
            raise AssertionError(f"a decoder raised inside the protocol: {r!r}")
