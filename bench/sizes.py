"""How big a benchmark run is: the full run, ``--quick``, or ``--smoke``.

``--smoke`` exists so the test suite can run every benchmark end to end on a
few hundred events (tests/test_bench_smoke.py): code that nothing runs rots,
and the benchmarks broke once when a function they import moved.
"""

from __future__ import annotations

from typing import Literal, TypeVar

Size = Literal["full", "quick", "smoke"]
SIZES: tuple[Size, ...] = ("full", "quick", "smoke")

T = TypeVar("T")


def pick(size: Size, full: T, quick: T, smoke: T) -> T:
    """The count for this size of run."""
    return {"full": full, "quick": quick, "smoke": smoke}[size]
