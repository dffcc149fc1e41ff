"""The simulated dealer's hands: what the table made due is dealt one at a time, at the dealer's pace.

The shoe and the tile simulators deal the same way — a card or a tile is
due when the table's events say so, and each goes past the reader ``pace``
seconds after the one before, only while the pty is open, with the faults
asked for (line noise before it, an unreadable read, sent twice) and the same
``[devices.sim]`` keys (:class:`DealerOptions`) — and differ only in what they
deal and when it is due. This is that loop, once: a simulator subclasses
:class:`PacedDealer` (its ``Options`` :class:`DealerOptions`), follows the
table in ``_on`` and calls ``_deal(n)``; its :meth:`PacedDealer.draw` sends
the next one through :meth:`PacedDealer._send`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any, ClassVar

from drivers.sim.base import Simulator
from drivers.sim.faults import FaultQueue, noise
from drivers.sim.options import Count, Seconds, SimOptions, known


class DealerOptions(SimOptions):
    """``[devices.sim]`` of a simulated dealer: a simulator's ``Options`` subclasses it,
    naming the errors it plays (``FAULTS``) and what one is called (``fault_name``)."""

    FAULTS: ClassVar[tuple[str, ...]] = ()
    fault_name: ClassVar[str] = "error"

    seed: Count = 1
    pace: Seconds = 0.5  # seconds between two pieces dealt
    errors: tuple[str, ...] = ()  # errors to play, in this order (FAULTS)
    error_every: Count = 0  # one everyday error every N hands or rounds (0: none)

    def __post_init__(self) -> None:
        known("errors", self.errors, self.FAULTS, self.fault_name)


class PacedDealer(Simulator):
    """A dealer who deals what is due, one at a time ``pace`` seconds apart.

    ``seed`` seeds the line noise and the everyday errors (``rng``; a simulator seeds
    its shuffles from it too), ``errors`` are the faults to play in this order (of its
    ``Options.FAULTS``), ``error_every`` how often (in rounds) the simulator adds an
    everyday one, ``read_error_code`` what the reader sends for a piece it cannot read
    (None: it has none). :meth:`dealer_args` reads them from ``[devices.sim]``."""

    #: its ``[devices.sim]``, which names the errors it plays
    Options: ClassVar[type[DealerOptions]]

    def __init__(
        self,
        *,
        seed: int = 1,
        pace: float = 0.5,
        read_error_code: str | None = "ERR",
        errors: Sequence[str] = (),
        error_every: int = 0,
    ) -> None:
        self.pace = pace
        self.seed = seed
        self.rng = random.Random(seed)
        o = self.Options
        self.pending = FaultQueue(o.FAULTS, o.fault_name, errors, in_order=True)
        self.error_every = error_every
        self.error_code = read_error_code
        self.link: Any = None
        self._want = 0  # what to deal now, one at a time at the dealer's pace
        self._wake = asyncio.Event()

    @staticmethod
    def dealer_args(o: DealerOptions, read_error_code: str | None) -> dict[str, Any]:
        """The dealer's arguments from ``[devices.sim]`` and the driver's read-error code."""
        return {
            "seed": o.seed,
            "pace": o.pace,
            "errors": o.errors,
            "error_every": o.error_every,
            "read_error_code": read_error_code,
        }

    def attach(self, link: Any) -> None:
        self.link = link

    def inject(self, kind: str) -> None:
        """Play the fault ``kind`` at its next chance (after those already asked for)."""
        self.pending.add(kind)

    async def run(self) -> None:
        """Deal while anything is due; the link's ``opened`` gates every write."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._want > 0:
                await self.link.opened.wait()
                await asyncio.sleep(self.pace)
                if self._want <= 0:
                    break  # the table stopped the deal while the dealer's hand moved
                self._want -= 1
                self.draw()

    def _deal(self, n: int = 1) -> None:
        self._want += n
        self._wake.set()

    def _line(self, text: str) -> None:
        if self.link is not None:
            self.link.write(text.encode("ascii") + b"\r\n")

    def _send(self, code: str, own: str, instead: str) -> None:
        """One piece past the reader as ``code``, with the faults due now: line noise
        before it (``garbage``), the reader's error code (``unreadable``) or else the
        simulator's ``own`` fault sending ``instead``, the line twice (``repeat``)."""
        if self.pending.take("garbage"):
            self.link.write(noise(self.rng))
        if self.pending.take("unreadable") and self.error_code:
            code = self.error_code
        elif self.pending.take(own):
            code = instead
        self._line(code)
        if self.pending.take("repeat"):
            self._line(code)

    def draw(self) -> None:
        """Send the next one past the reader (a capture generator calls it on its own clock)."""
        raise NotImplementedError

    # -- following the table -----------------------------------------------------------------

    def on_events(self, events: Sequence[Any]) -> None:
        for ev in events:
            self._on(ev.type, ev.data)

    def _on(self, t: str, data: dict[str, Any]) -> None:
        """What one committed event makes due (or stops)."""
        raise NotImplementedError
