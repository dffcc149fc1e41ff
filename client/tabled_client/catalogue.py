"""The shared catalogue: every event type that is not one game's own, by who owns it.

The table's (``table_events``), the shoe procedure's (``shoe_events``) and the round
procedure's (``round_events``). A game's own types live in its folder and come in through
``registry.register`` (``tabled_client.games`` for the games of this repository).
"""

from __future__ import annotations

from typing import Final

from tabled_client import round_events, shoe_events, table_events
from tabled_client.base import Data

#: event type -> data Struct, for the types no game owns
SHARED: Final[dict[str, type[Data]]] = {
    **table_events.TYPES,
    **shoe_events.TYPES,
    **round_events.TYPES,
}
