"""The Cammegh targets' shared body (``fuzz_cammegh_ss2.py``, ``fuzz_cammegh_m360.py``).

Invariants: never raises, and no decoder raised inside the protocol (its catch-all
would hide that as a "decoder error" Malformed); the line buffer stays within its
bound; no result (WheelStatus or WinningNumber) comes from input that holds neither
a ``*X;``/``*W`` frame nor a bare two-character line, and each result's frame is in
the input; when no line is longer than the bound, any split gives the readings of
the whole; a valid stream decodes to one reading per frame however it is split.
The commands the daemon "sent" before are fuzzed too (``Protocol.sent``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import atheris
from common import cuts, feed, longest_segment, no_decoder_error, pieces

with atheris.instrument_imports(include=["drivers"]):
    from drivers.readings import Malformed, WheelStatus, WinningNumber

RESULTS = (WheelStatus, WinningNumber)
BARE = re.compile(rb"[ 0-9][0-9]")


def could_hold_a_result(data: bytes, mercury: bool) -> bool:
    if b"*X;" in data or (mercury and b"*W" in data):
        return True
    return any(BARE.fullmatch(line) for line in re.split(rb"[\r\n]", data))


def make_target(
    make: Callable[[], Any], valid: Callable[[atheris.FuzzedDataProvider], bytes], mercury: bool
) -> Callable[[bytes], None]:
    def bound(p: Any) -> None:
        assert len(p._framer._buf) <= p.MAX_LINE

    def run(sent: bytes, chunks: list[bytes]) -> list:
        p = make()
        p.sent(sent, 0.0)
        return feed(p, chunks, 0.5, bound)

    def target(data: bytes) -> None:
        fdp = atheris.FuzzedDataProvider(data)
        sent = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 40))
        if fdp.ConsumeBool():
            at = cuts(fdp)
            raw = fdp.ConsumeBytes(fdp.remaining_bytes())
            out = run(sent, pieces(raw, at))
            no_decoder_error(out)
            results = [r for r in out if isinstance(r, RESULTS)]
            if results:
                assert could_hold_a_result(raw, mercury), results
                assert all(r.frame in raw for r in results), results
            if longest_segment(raw) <= make().MAX_LINE:
                assert run(sent, [raw]) == out
            return
        frames = [valid(fdp) + fdp.PickValueInList([b"\r\n", b"\n", b"\r"])]
        while fdp.remaining_bytes() > 4 and len(frames) < 15:
            frames.append(valid(fdp) + fdp.PickValueInList([b"\r\n", b"\n", b"\r"]))
        stream = b"".join(frames)
        whole = run(b"", [stream])
        assert len(whole) == len(frames), whole
        assert not any(isinstance(r, Malformed) for r in whole), whole
        assert run(b"", pieces(stream, cuts(fdp, 30))) == whole

    return target
