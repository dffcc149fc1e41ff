"""Fuzz the Cammegh SlingShot 2 protocol (``cammegh-ss2``); invariants in ``cammegh_target.py``."""

from __future__ import annotations

import sys

import atheris
from cammegh_target import make_target

with atheris.instrument_imports(include=["drivers"]):
    from drivers.cammegh import SS2Protocol

REPLIES = ["*u OK", "*P NO", "*T c 8465", "*S V2.50", "*R OK", "*F 5", "*o 1159", "*F BUSY"]


def valid(fdp: atheris.FuzzedDataProvider) -> bytes:
    kind = fdp.ConsumeIntInRange(0, 3)
    if kind == 0:
        win = fdp.PickValueInList(["  "] + [f"{n:>2}" for n in range(37)])
        text = (
            f"*X;{fdp.ConsumeIntInRange(1, 7)};{fdp.ConsumeIntInRange(0, 256):03d};{win};"
            f"{fdp.PickValueInList(list('0123456789abcdefABCDEF'))};"
            f"{fdp.ConsumeIntInRange(0, 999):03d};{fdp.ConsumeIntInRange(0, 1)}"
        )
    elif kind == 1:
        text = f"{fdp.ConsumeIntInRange(0, 36):>2}"
    elif kind == 2:
        text = f"*Y;{fdp.ConsumeIntInRange(1, 6)};{fdp.ConsumeIntInRange(0, 255):03d}"
    else:
        text = fdp.PickValueInList(REPLIES)
    return text.encode()


TestOneInput = make_target(lambda: SS2Protocol(double_zero=False), valid, mercury=False)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
