"""The faults a simulator was asked to play, each taken at its next chance; line noise."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence


class FaultQueue(list[str]):
    """A list of fault names, checked when added.

    ``in_order``: a fault is taken only when it is first in line, so a test can
    script a sequence (the shoe's dealer errors); otherwise any queued fault is
    taken at its own next chance (the wheel's, the shaker's, the shuffler's).
    """

    def __init__(
        self,
        known: Sequence[str],
        what: str,
        pending: Iterable[str] = (),
        *,
        in_order: bool = False,
    ) -> None:
        super().__init__()
        self.known = tuple(known)
        self.what = what
        self.in_order = in_order
        for kind in pending:
            self.add(kind)

    def add(self, kind: str) -> None:
        if kind not in self.known:
            raise ValueError(f"unknown {self.what} {kind!r} (known: {', '.join(self.known)})")
        self.append(kind)

    def take(self, kind: str) -> bool:
        if self.in_order:
            if self and self[0] == kind:
                del self[0]
                return True
            return False
        if kind in self:
            self.remove(kind)
            return True
        return False


def noise(rng: random.Random) -> bytes:
    """A line of garbage on the wire (a ``garbage`` fault): twelve random bytes, then CR LF."""
    return bytes(rng.randrange(256) for _ in range(12)) + b"\r\n"
