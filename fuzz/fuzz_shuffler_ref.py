"""Fuzz the reference shuffler protocol (``shuffler-ref``): STX body ETX cc framing.

Invariants: never raises; the framer holds at most one body and a bounded junk
sample; a reading other than Malformed/Unknown is exactly what ``parse_body`` makes
of a body really framed in the input with a matching XOR, and none comes from input
without STX; a deck order frame's bytes never appear in any reading; the framer is a
byte-at-a-time machine, so any split gives the readings of the whole, garbage
included; a valid stream decodes to one reading per frame.
"""

from __future__ import annotations

import sys

import atheris
from common import cuts, feed, pieces, valid_kind

with atheris.instrument_imports(include=["drivers"]):
    from drivers import framing
    from drivers import shuffler_ref as s
    from drivers.readings import Malformed, Reading, Unknown

BODIES = [
    b"V;Acme;RS-1;2.4.1;000123",
    b"Q;IDLE",
    b"T;PASS",
    b"T;FAIL;3",
    b"G;OK",
    b"G;NO;door open",
    b"S;12;8",
    b"C;12;8;416",
    b"M;12;416;415",
    b"J;input",
    b"O;OPEN",
    b"O;CLOSED",
    b"F;3",
    b"D;AS;KH;2C",
]
SECRET = b"AS;KH;2C"


def bound(p: s.ShufflerRefProtocol) -> None:
    f = p.framer
    assert len(f._body) <= f.max_body + 1 and len(f._junk) <= framing.SHOWN and len(f._check) <= 2


def framed(r: Reading, data: bytes) -> bool:
    head = b"\x02" + r.frame + b"\x03"
    i = data.find(head)
    while i >= 0:
        tail = data[i + len(head) : i + len(head) + 2]
        if len(tail) == 2 and all(c in b"0123456789abcdefABCDEF" for c in tail):
            if int(tail, 16) == framing.stx_checksum(r.frame):
                return r == s.parse_body(r.frame)
        i = data.find(head, i + 1)
    return False


def TestOneInput(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    if fdp.ConsumeBool():
        at = cuts(fdp)
        raw = fdp.ConsumeBytes(fdp.remaining_bytes())
        out = feed(s.ShufflerRefProtocol(), pieces(raw, at), bound=bound)
        for r in out:
            if valid_kind(r):
                assert 0x02 in raw and framed(r, raw), r
        assert feed(s.ShufflerRefProtocol(), [raw]) == out
        return
    frames = []
    for _ in range(fdp.ConsumeIntInRange(1, 6)):
        body = fdp.PickValueInList(BODIES)
        check = b"%02X" % framing.stx_checksum(body)
        if fdp.ConsumeBool():
            check = check.lower()
        frames.append(b"\x02" + body + b"\x03" + check + (b"\r\n" if fdp.ConsumeBool() else b""))
    stream = b"".join(frames)
    whole = feed(s.ShufflerRefProtocol(), [stream])
    assert len(whole) == len(frames) and not any(isinstance(r, Malformed) for r in whole), whole
    assert not any(SECRET in r.frame for r in whole)
    assert all(r.frame == b"D" for r in whole if isinstance(r, Unknown))
    assert feed(s.ShufflerRefProtocol(), pieces(stream, cuts(fdp, 20)), bound=bound) == whole


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
