"""The readings every dice shaker driver speaks, whatever its wire protocol.

Dice shakers publish no common protocol
(``docs/protocols/sources.md``); a vendor's shaker is a
new protocol producing these readings, so the Sic Bo round
(``daemon/games/sicbo/table.py``) never changes with the machine.

A result is a *claim*: :class:`DiceResult` carries whatever faces the machine
said, and the table — not the driver — decides whether they are a throw, so
a bad claim is journaled and alarmed with the faces it named instead of
vanishing as a silent ``Malformed``.

Identity, status, self-test and command acknowledgements are the generic
:class:`~drivers.readings.DeviceReply` (``command`` ``"version"``,
``"status"``, ``"self-test"``, ``"shake"``).
"""

from __future__ import annotations

from drivers.readings import DeviceReply, Reading

__all__ = ["DeviceReply", "DiceNotFlat", "DiceResult", "DiceShaking", "ShakerFault"]


class DiceShaking(Reading, frozen=True, kw_only=True):
    """The shaker started shaking the dice (no more bets from here)."""


class DiceResult(Reading, frozen=True, kw_only=True):
    """The faces the shaker's recognition read, as claimed (validated by the table)."""

    faces: tuple[int, ...]


class DiceNotFlat(Reading, frozen=True, kw_only=True):
    """The dice came to rest stacked or leaning, or could not be read: they must be re-shaken.

    ``reason`` is ``stacked``, ``leaning`` or ``unreadable`` (``unknown`` for a
    code the driver does not know); ``code`` is the machine's own.
    """

    reason: str
    code: int = 0


class ShakerFault(Reading, frozen=True, kw_only=True):
    """A fault code the shaker reported, with its meaning."""

    code: int
    meaning: str
