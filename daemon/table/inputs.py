"""What the table decides on: a device's reading, a device's health, a command.

Every input reaches the table through the pipeline's queue, in order; time comes in on
the inputs (``mono``), never from a clock, so a replay decides exactly as the table did.
"""

from __future__ import annotations

from typing import Any

import msgspec

from drivers.readings import Reading


class DeviceReading(msgspec.Struct, frozen=True):
    device: str
    reading: Reading
    mono: float


class DeviceHealth(msgspec.Struct, frozen=True):
    """A transport or staleness change: ``ok``, ``stale`` or ``disconnected``."""

    device: str
    health: str
    reason: str
    mono: float
    info: dict[str, Any] = {}


class Command(msgspec.Struct, frozen=True):
    """An operator or backend command, or a dealer's button: the table treats them alike."""

    name: str
    args: dict[str, Any]
    actor: str
    role: str
    source: str = "control"
    mono: float | None = None
    #: a control request's id and its sender (``daemon/pipeline/requests.py``), journaled with it
    request: str | int | None = None
    peer: str | None = None


Input = DeviceReading | DeviceHealth | Command
