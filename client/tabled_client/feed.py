"""Where a :class:`~tabled_client.table.TableFollower`'s live messages come from.

By default the follower's own SUB on the table's PUB (:class:`SocketFeed`). A process that
follows many tables (the bridge) passes its own feed instead: one socket read for many
tables, each message handed to its table without I/O, so a table costs no wake-up of its
own per message (``bridge/feed.py``). The follower's recipe (replay, gaps, chain) is the
same whatever the feed.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

import zmq

if TYPE_CHECKING:
    from tabled_client.table import TableFollower


class Feed(Protocol):
    """Where a follower's live messages (``[topic, body]``) come from: its own SUB socket
    (:class:`SocketFeed`, the default), or a reader that serves many tables (a bridge's
    grouped sockets: one wake-up for many tables instead of one per table per message)."""

    async def first(self, idle: float | None) -> list[bytes] | None:
        """The next message, waited for; None after ``idle`` s of silence."""

    def more(self) -> list[bytes] | None:
        """The next message if one is there now, without waiting."""

    def close(self) -> None: ...


class SocketFeed:
    """A follower's own SUB on the table's PUB: the first message of a wake-up through
    the event loop (one future, no Poller), the rest read at once while they are there."""

    def __init__(self, follower: TableFollower) -> None:
        self.sub = follower._open()
        # the same socket, read without the event loop once it said it is readable
        self.raw = zmq.Socket.shadow(self.sub.underlying)

    async def first(self, idle: float | None) -> list[bytes] | None:
        try:
            return await asyncio.wait_for(self.sub.recv_multipart(), idle)
        except TimeoutError:
            return None

    def more(self) -> list[bytes] | None:
        try:
            return self.raw.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return None

    def close(self) -> None:
        self.sub.close()
