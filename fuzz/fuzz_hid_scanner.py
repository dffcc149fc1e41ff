"""Fuzz the USB HID scanner's keyboard-report protocol (``hid-scanner``).

The input is cut into reports (mostly the 8 bytes of a boot keyboard report, at
fuzzer-chosen points some other length). Invariants: never raises; a reading other
than Malformed is exactly what the shoe's line decoder makes of a code of at most
MAX_CODE characters a US keyboard can type, and none comes without an Enter key in
the input; the code being typed never exceeds MAX_CODE; sending every report twice
(a keyboard repeating its state) changes nothing.
"""

from __future__ import annotations

import sys

import atheris
from common import valid_kind

with atheris.instrument_imports(include=["drivers"]):
    import msgspec

    from drivers.hid_scanner import (
        ENTER,
        MAX_CODE,
        REPORT_SIZE,
        HidKeyboardProtocol,
        HidScannerOptions,
        key_char,
    )
    from drivers.readings import Malformed
    from drivers.shoe_line import line_reading

ALPHABET = {key_char(u, s) for u in range(256) for s in (False, True)} - {None}


def run(o: HidScannerOptions, reports: list[bytes]) -> list:
    p = HidKeyboardProtocol(o)
    out = []
    for i, r in enumerate(reports):
        out += p.feed(r, i * 0.01)
        assert len(p._code) <= MAX_CODE
    return out + p.eof()


def TestOneInput(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    o = msgspec.convert(
        {
            "vendor_id": 1,
            "product_id": 2,
            "encoding": fdp.PickValueInList(["rank-suit", "suit-rank", "boxed"]),
            "drop_repeats": fdp.ConsumeBool(),
        },
        HidScannerOptions,
    )
    odd = set(fdp.ConsumeIntListInRange(fdp.ConsumeIntInRange(0, 3), 0, 64))
    raw = fdp.ConsumeBytes(fdp.remaining_bytes())
    reports, i, n = [], 0, 0
    while i < len(raw):
        size = (raw[i] % 13) if n in odd else REPORT_SIZE
        reports.append(raw[i : i + size] if size else b"")
        i += size or 1
        n += 1
    out = run(o, reports)
    entered = any(len(r) == REPORT_SIZE and any(k in ENTER for k in r[2:]) for r in reports)
    for r in out:
        if valid_kind(r):
            assert entered, r
            text = r.frame.decode("ascii")
            assert 0 < len(text) <= MAX_CODE and set(text) <= ALPHABET, r
            assert r == line_reading(r.frame, o), r
    if not o.drop_repeats and not any(isinstance(r, Malformed) for r in out):
        # without time rules and rejected reports, a repeated state types nothing new
        assert run(o, [r for r in reports for _ in (0, 1)]) == out


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
