"""What the daemon does with a simulator (``daemon/runtime/transports.py``), declared with defaults so
it reads them and never probes: a simulator follows the table's committed events, may resume
where the table is after a restart, and runs until shutdown.

Every simulator of ``drivers/sim/`` subclasses :class:`Simulator`, and so does one a third
party's driver returns from ``Driver.simulator``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Simulator:
    """A simulated device on a link (a pty) or as a transport's backend (USB)."""

    link: Any = None

    def attach(self, link: Any) -> None:
        """The link it writes to, before it resumes (a resumed simulator may have a frame due)."""
        self.link = link

    def on_events(self, events: Sequence[Any]) -> None:
        """Each commit's events, as the table's clients see them. Default: it hears only the
        wire (a wheel runs its own state machine)."""

    def resume(self, table: dict[str, Any]) -> None:
        """Where the table is at start (the game's ``summary``), so a restarted daemon's
        simulator goes on from there. Default: it starts afresh."""

    async def run(self) -> None:
        """Play the device until shutdown (a task of the daemon)."""
        raise NotImplementedError
