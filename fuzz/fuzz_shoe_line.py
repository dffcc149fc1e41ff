"""Fuzz the serial shoe protocol (``shoe-line``) in all three encodings, with and without drop_repeats.

Invariants: never raises; the line buffer stays within its bound; a reading other
than Malformed is exactly what a whole CR/LF line of the input means, and none comes
from input without an ASCII letter or digit; when no line is longer than the bound,
any split gives the readings of the whole; a valid stream (built from the input)
decodes to one reading per line, the same however it is split.
"""

from __future__ import annotations

import sys

import atheris
from common import complete_lines, cuts, feed, longest_segment, pieces, valid_kind

with atheris.instrument_imports(include=["drivers"]):
    from drivers.card_codes import ENCODINGS, encode
    from drivers.cards import DECK
    from drivers.readings import Malformed
    from drivers.shoe_line import ShoeLineOptions, ShoeLineProtocol, line_reading

MAX_LINE = 64


def bound(p: ShoeLineProtocol) -> None:
    assert len(p.framer._buf) <= p.framer.max_line == MAX_LINE, len(p.framer._buf)


def random_bytes(fdp: atheris.FuzzedDataProvider, o: ShoeLineOptions) -> None:
    at = cuts(fdp)
    data = fdp.ConsumeBytes(fdp.remaining_bytes())
    out = feed(ShoeLineProtocol(o), pieces(data, at), bound=bound)
    lines = complete_lines(data)
    alnum = any(c < 128 and chr(c).isalnum() for c in data)
    for r in out:
        if valid_kind(r):
            assert alnum, r
            assert r.frame in lines and r == line_reading(r.frame, o), r
    if longest_segment(data) <= MAX_LINE:
        assert feed(ShoeLineProtocol(o), [data]) == out


def valid_stream(fdp: atheris.FuzzedDataProvider, o: ShoeLineOptions) -> None:
    lines = []
    for _ in range(fdp.ConsumeIntInRange(1, 20)):
        kind = fdp.ConsumeIntInRange(0, 5)
        if kind == 0:
            code = o.cut_card_code or "CUT"
        elif kind == 1:
            code = o.read_error_code or "ERR"
        else:
            card = fdp.PickValueInList(list(DECK))
            code = encode(card, o.encoding, "ABCDE"[fdp.ConsumeIntInRange(0, 4)])
            if kind == 2 and o.face_up_marker:
                code += o.face_up_marker
        lines.append(code.encode() + fdp.PickValueInList([b"\r\n", b"\n", b"\r"]))
        if fdp.ConsumeBool():
            lines.append(lines[-1])  # sent twice, as some shoes do
    stream = b"".join(lines)
    p = ShoeLineProtocol(o)
    whole = feed(p, [stream])
    assert not any(isinstance(r, Malformed) for r in whole), whole
    assert len(whole) + p.repeats_dropped == len(lines)
    q = ShoeLineProtocol(o)
    assert feed(q, pieces(stream, cuts(fdp, 30)), bound=bound) == whole
    assert q.repeats_dropped == p.repeats_dropped


def TestOneInput(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    o = ShoeLineOptions(
        encoding=fdp.PickValueInList(list(ENCODINGS)), drop_repeats=fdp.ConsumeBool()
    )
    if fdp.ConsumeBool():
        random_bytes(fdp, o)
    else:
        valid_stream(fdp, o)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
