"""The simulated dealer's hands: what the table made due is dealt one at a time, at the dealer's pace.

The shoe and the tile simulators deal the same way — a card or a tile is
due when the table's events say so, and each goes past the reader ``pace``
seconds after the one before, only while the pty is open — and differ only
in what they deal and when it is due. This is that loop, once: a simulator
subclasses :class:`PacedDealer`, follows the table in ``_on`` and calls
``_deal(n)``; :meth:`PacedDealer.draw` sends the next one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any


class PacedDealer:
    """A dealer who deals what is due, one at a time ``pace`` seconds apart."""

    def __init__(self, *, pace: float) -> None:
        self.pace = pace
        self.link: Any = None
        self._want = 0  # what to deal now, one at a time at the dealer's pace
        self._wake = asyncio.Event()

    def attach(self, link: Any) -> None:
        self.link = link

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
