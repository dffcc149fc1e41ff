"""The Dragon Tiger table: the shoe procedures with Dragon Tiger's one-card hands.

The rules live in :mod:`daemon.games.dragon_tiger.rules`; every shoe procedure
(burn, demo hands, cut card, extra card, exposed card, misread, foreign
card, voids) in :mod:`daemon.procedures.shoe`, configured with the same
:class:`~daemon.procedures.shoe.ShoeRules` keys as baccarat. This module
only says what a hand is, so none of those procedures is copied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from tabled_client.base import Data

from daemon.games.describe import Describer
from daemon.games.dragon_tiger import rules as dragon_tiger
from daemon.games.dragon_tiger.describe import DragonTigerDescriber
from daemon.games.dragon_tiger.events import EVENTS
from daemon.procedures.shoe import ShoeGame, ShoeRules


class DragonTigerHands:
    """One card to Dragon, then one to Tiger, in shoe order (seed 002, 龙虎: "发牌到"龙"位置")."""

    boxes: ClassVar[tuple[str, ...]] = ("dragon", "tiger")

    def next_box(self, boxes: Mapping[str, tuple[str, ...]]) -> str | None:
        if not boxes["dragon"]:
            return "dragon"
        if not boxes["tiger"]:
            return "tiger"
        return None

    def result(self, boxes: Mapping[str, tuple[str, ...]], rules: Any, hand: int) -> dict[str, Any]:
        """seed 002, 龙虎: the higher rank wins (K high … A low), suits ignored, equal ranks tie."""
        return dragon_tiger.result_data(boxes["dragon"][0], boxes["tiger"][0])


class DragonTigerTable(ShoeGame):
    name: ClassVar[str] = "dragon-tiger"
    Rules: ClassVar[type[ShoeRules]] = ShoeRules
    hand_rules: ClassVar[DragonTigerHands] = DragonTigerHands()  # type: ignore[assignment]
    describe: ClassVar[Describer] = DragonTigerDescriber()
    #: its own event types (``events.py``: the client carries them for backends)
    events: ClassVar[dict[str, type[Data]]] = EVENTS
