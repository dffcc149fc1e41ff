"""Fuzz the reference dice shaker protocol (``dice-ref``): 7A LEN CMD DATA CHK 55 framing.

Invariants: never raises; the framer holds less than one frame plus a bounded junk
sample; a reading other than Malformed/Unknown is exactly what ``parse_frame`` makes
of a whole frame (trailer and checksum good) really in the input, and none comes
from input without 0x7A; a valid stream decodes to one reading per frame, the same
however it is split, with garbage between frames or not. Frames whose data may hold
0x7A are checked for that split-independence only: by design a whole good frame inside
another's data wins (``drivers/dice_ref.py``, ``Framer``), so "one reading per frame"
holds only for data without 0x7A.
"""

from __future__ import annotations

import sys

import atheris
from common import cuts, feed, pieces, valid_kind

with atheris.instrument_imports(include=["drivers"]):
    from drivers import dice_ref as d
    from drivers.readings import Malformed, Reading

FRAME_MAX = d.MAX_DATA + d.OVERHEAD


def bound(p: d.DiceRefProtocol) -> None:
    f = p.framer
    assert len(f._buf) < FRAME_MAX and len(f._junk) <= d.SHOWN, (len(f._buf), len(f._junk))


def whole_frame(r: Reading, raw: bytes) -> bool:
    f = r.frame
    return (
        f in raw
        and len(f) >= d.OVERHEAD
        and f[0] == d.SOF
        and f[-1] == d.EOF
        and len(f) == f[1] + d.OVERHEAD
        and f[-2] == d.checksum(f[2], f[3:-2])
        and r == d.parse_frame(d.Frame(f[2], f[3:-2], f))
    )


def TestOneInput(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    if fdp.ConsumeBool():
        at = cuts(fdp)
        raw = fdp.ConsumeBytes(fdp.remaining_bytes())
        out = feed(d.DiceRefProtocol(), pieces(raw, at), bound=bound)
        for r in out:
            if valid_kind(r):
                assert d.SOF in raw and whole_frame(r, raw), r
        return
    frames = []
    for _ in range(fdp.ConsumeIntInRange(1, 10)):
        cmd = fdp.PickValueInList(list(b"ASRNFVQT"))
        raw_body = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, d.MAX_DATA))
        frames.append(d.encode_frame(cmd, raw_body))
    # any data: the verdict does not depend on how the stream is split
    anything = b"".join(frames)
    assert feed(d.DiceRefProtocol(), pieces(anything, cuts(fdp, 30)), bound=bound) == feed(
        d.DiceRefProtocol(), [anything]
    )
    # data without 0x7A (a whole frame inside another's data wins, by design): one reading each
    frames = [d.encode_frame(f[2:3], f[3:-2].replace(b"\x7a", b"\x7b")) for f in frames]
    stream = b"".join(frames)
    whole = feed(d.DiceRefProtocol(), [stream])
    assert len(whole) == len(frames), whole
    assert feed(d.DiceRefProtocol(), pieces(stream, cuts(fdp, 30)), bound=bound) == whole
    # junk without a start byte between frames costs only Malformed readings
    junk = bytes(b for b in fdp.ConsumeBytes(64) if b != d.SOF)
    noisy = junk.join(frames) + junk
    got = feed(d.DiceRefProtocol(), pieces(noisy, cuts(fdp, 10)), bound=bound)
    assert [r for r in got if not isinstance(r, Malformed)] == [
        r for r in whole if not isinstance(r, Malformed)
    ]


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
