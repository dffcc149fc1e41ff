"""tabled-client: typed tabled events, hash-chain checks, and followers for backends.

Depends only on pyzmq and msgspec (nats-py for :class:`FloorFollower`), not on the daemon.
"""

from tabled_client.chain import GENESIS, Chain, ChainBroken
from tabled_client.events import DATA, EVENTS, AnyEvent, Event, UnknownEventType, decode

__all__ = [
    "DATA",
    "EVENTS",
    "GENESIS",
    "AnyEvent",
    "Chain",
    "ChainBroken",
    "Event",
    "UnknownEventType",
    "decode",
]
