"""tabled-client: typed tabled events, hash-chain checks, and followers for backends.

Depends only on pyzmq and msgspec (nats-py for :class:`FloorFollower`), not on the daemon.
:func:`settle` pays one bet on one result by the paytable it names (``docs/settlement.md``).
"""

from tabled_client.chain import GENESIS, Chain, ChainBroken
from tabled_client.events import DATA, EVENTS, AnyEvent, Event, UnknownEventType, decode
from tabled_client.settle import SettleError, settle, spots

__all__ = [
    "DATA",
    "EVENTS",
    "GENESIS",
    "AnyEvent",
    "Chain",
    "ChainBroken",
    "Event",
    "SettleError",
    "UnknownEventType",
    "decode",
    "settle",
    "spots",
]
