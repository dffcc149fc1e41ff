"""The baccarat table: the shoe procedures with baccarat's hands.

The drawing rules live in :mod:`daemon.games.baccarat.rules`; every shoe procedure
(burn, cut card, misdeals, voids) in :mod:`daemon.procedures.shoe`. This
module only joins them and adds baccarat's own house rule, Big/Small.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import msgspec
from tabled_client.base import Data

from daemon.games.baccarat import rules as baccarat
from daemon.games.baccarat.describe import BaccaratDescriber
from daemon.games.baccarat.events import EVENTS
from daemon.games.describe import Describer
from daemon.procedures.shoe import ShoeGame, ShoeRules


class BaccaratRules(ShoeRules, forbid_unknown_fields=True, frozen=True):
    #: seed 004: Big/Small is offered only in the first N hands of a shoe.
    big_small_hands: Annotated[int, msgspec.Meta(ge=0)] = 35


class BaccaratHands:
    boxes: ClassVar[tuple[str, ...]] = ("player", "banker")

    def next_box(self, boxes: Mapping[str, tuple[str, ...]]) -> str | None:
        return baccarat.next_box(boxes["player"], boxes["banker"])

    def result(self, boxes: Mapping[str, tuple[str, ...]], rules: Any, hand: int) -> dict[str, Any]:
        data = baccarat.result_data(boxes["player"], boxes["banker"])
        data["big_small_open"] = hand <= rules.big_small_hands
        return data


class BaccaratTable(ShoeGame):
    name: ClassVar[str] = "baccarat"
    Rules: ClassVar[type[ShoeRules]] = BaccaratRules
    hand_rules: ClassVar[BaccaratHands] = BaccaratHands()  # type: ignore[assignment]
    describe: ClassVar[Describer] = BaccaratDescriber()
    #: its own event types (``events.py``: the client carries them for backends)
    events: ClassVar[dict[str, type[Data]]] = EVENTS
