"""The readings every card shuffler driver speaks, whatever its wire protocol.

A vendor's shuffler is a new protocol producing these same readings, so the
table's shuffle procedure never changes with the machine. What a shuffler
says is untrusted (``docs/protocols/sources.md``:
CVE-2025-34500, CVE-2025-34503): these readings carry counts and states only,
never a deck order, and the table checks the counts itself.

Identity, status and self-test answers are the generic
:class:`~drivers.readings.DeviceReply`, with ``command`` ``"version"``,
``"status"``, ``"self-test"`` or ``"start-shuffle"``; the daemon shows the
``"version"`` reply as the device's identity.
"""

from __future__ import annotations

from drivers.readings import DeviceReply, Reading

__all__ = [
    "DeviceReply",
    "ShuffleCountMismatch",
    "ShuffleDone",
    "ShuffleStarted",
    "ShufflerDoorClosed",
    "ShufflerDoorOpen",
    "ShufflerFault",
    "ShufflerJam",
]


class ShuffleStarted(Reading, frozen=True, kw_only=True):
    """The shuffler began shuffling ``decks`` decks."""

    shuffle_id: int
    decks: int


class ShuffleDone(Reading, frozen=True, kw_only=True):
    """A shuffle completed and the cards are ready to go into the shoe.

    ``cards`` is what the machine counted; ``rank_counts`` (``{"A": 32, …,
    "K": 32}``) only from machines that recognise cards, else None. Whether
    the count is right for ``decks`` is the table's decision, not the driver's.
    """

    shuffle_id: int
    decks: int
    cards: int
    rank_counts: dict[str, int] | None = None


class ShuffleCountMismatch(Reading, frozen=True, kw_only=True):
    """The machine counted a different number of cards than it expected: the
    shuffle is finished but those cards must not be played."""

    shuffle_id: int
    expected: int
    counted: int


class ShufflerJam(Reading, frozen=True, kw_only=True):
    """Cards jammed; ``where`` is the machine's own word for the place (may be empty)."""

    where: str = ""


class ShufflerDoorOpen(Reading, frozen=True, kw_only=True):
    """A door or cover of the machine was opened (cards are reachable)."""


class ShufflerDoorClosed(Reading, frozen=True, kw_only=True):
    """The door or cover was closed again."""


class ShufflerFault(Reading, frozen=True, kw_only=True):
    """A fault code the machine reported, with its meaning."""

    code: int
    meaning: str
