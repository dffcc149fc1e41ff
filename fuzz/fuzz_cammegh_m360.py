"""Fuzz the Cammegh Mercury 360 protocol (``cammegh-m360``, extended level); invariants in ``cammegh_target.py``."""

from __future__ import annotations

import sys

import atheris
from cammegh_target import make_target

with atheris.instrument_imports(include=["drivers"]):
    from drivers.cammegh import M360Protocol


def valid(fdp: atheris.FuzzedDataProvider) -> bytes:
    kind = fdp.ConsumeIntInRange(0, 5)
    if kind < 2:
        return b"*S" if kind == 0 else b"*N"
    if kind == 2:
        return f"*W {fdp.ConsumeIntInRange(0, 36):>2}".encode()
    if kind == 3:
        return f"{fdp.ConsumeIntInRange(0, 36):>2}".encode()
    win = fdp.PickValueInList(["  "] + [f"{n:>2}" for n in range(37)])
    rpm = fdp.PickValueInList([0, *range(20, 601)])
    text = (
        f"*X;{fdp.ConsumeIntInRange(1, 7)};{fdp.ConsumeIntInRange(0, 255):03d};{win};"
        f"{fdp.PickValueInList(list('0123456789abcdefABCDEF'))};{rpm:03d};"
        f"{fdp.ConsumeIntInRange(0, 1)}"
    )
    if kind == 5:
        pocket = fdp.PickValueInList(["??", *(f"{n:02d}" for n in range(37))])
        period = fdp.PickValueInList(["?????", f"{fdp.ConsumeIntInRange(0, 0xFFFFF):05X}"])
        text += (
            f";{fdp.ConsumeIntInRange(0, 0xFFFF):04X};{fdp.ConsumeIntInRange(0, 255):02x};"
            f"{fdp.PickValueInList(list('01?'))};{period};{pocket}"
        )
    return text.encode()


TestOneInput = make_target(lambda: M360Protocol("extended"), valid, mercury=True)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
