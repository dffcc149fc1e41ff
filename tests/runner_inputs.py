"""What a DeviceRunner submits, recorded: tests await what they expect instead of sleeping."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from daemon.table import DeviceHealth, DeviceReading
from drivers.readings import CardDrawn, Reading


class Inputs(list):
    """The runner's ``submit``; ``guard`` bounds a wait that only a hang ever reaches."""

    def __init__(self, guard: float = 5.0) -> None:
        super().__init__()
        self.guard = guard
        self.changed = asyncio.Event()

    def __call__(self, item: Any) -> None:
        self.append(item)
        self.changed.set()

    async def until(self, pred: Callable[[], bool]) -> None:
        async def loop() -> None:
            while not pred():
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(loop(), self.guard)

    def readings(self, kind: type[Reading] = Reading) -> list[Any]:
        return [
            i.reading for i in self if isinstance(i, DeviceReading) and isinstance(i.reading, kind)
        ]

    def cards(self) -> list[str]:
        return [r.card for r in self.readings(CardDrawn)]

    def health(self) -> list[tuple[str, str | None]]:
        return [(i.health, i.info.get("port")) for i in self if isinstance(i, DeviceHealth)]
