"""The event bus of one table: the PUB socket (:mod:`daemon.bus.publisher`) and the replay
server (:mod:`daemon.bus.replay_server`) started, counted and closed together.

The bus of the path of one reading (``README.md``; the zguide's Clone pattern):
committed events and heartbeats go out on PUB, and a subscriber that sees a gap
asks the replay socket for what it missed. The two sockets share one set of
counters (``tablectl status`` and the metrics read them as one) and one start-up:
both sockets get CURVE before either is bound, so there is no moment without it.
The ipc endpoint helpers are :mod:`daemon.bus.ipc`; the replay client is
:func:`daemon.bus.subscriber.replay`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import zmq.asyncio

from daemon.bus.publisher import BusError, Publisher, Signer
from daemon.bus.replay_server import ReplayServer
from daemon.journal.events import Event

if TYPE_CHECKING:
    from daemon.security import ServerCurve

__all__ = ["Bus", "BusError", "Signer"]


class Bus:
    """PUB socket for committed events and heartbeats, ROUTER socket for replay."""

    def __init__(
        self,
        ctx: zmq.asyncio.Context,
        *,
        table: str,
        publish: str,
        replay: str,
        journal_path: str,
        sndhwm: int = 10000,
        replay_hwm: int = 1000,
        replay_max: int = 1_000_000,
        journal_id: str = "",
        linger_ms: int = 200,
        nodrop: bool = False,
        replay_concurrency: int = 8,
        replay_stall: float = 30.0,
        replay_idle: float = 1.0,
        curve: ServerCurve | None = None,
        signer: Signer | None = None,
    ) -> None:
        self.table = table
        self.counters: dict[str, int] = dict.fromkeys(
            (
                "published",
                "dropped",
                "heartbeats",
                "replay_requests",
                "replay_errors",
                "replayed_events",
                "replay_evicted",
            ),
            0,
        )
        self.pub = Publisher(
            ctx,
            table=table,
            endpoint=publish,
            counters=self.counters,
            sndhwm=sndhwm,
            linger_ms=linger_ms,
            nodrop=nodrop,
            curve=curve,
            signer=signer,
            journal_id=journal_id,
        )
        self.replay = ReplayServer(
            ctx,
            table=table,
            endpoint=replay,
            journal_path=journal_path,
            counters=self.counters,
            replay_hwm=replay_hwm,
            replay_max=replay_max,
            journal_id=journal_id,
            linger_ms=linger_ms,
            replay_concurrency=replay_concurrency,
            replay_stall=replay_stall,
            replay_idle=replay_idle,
            curve=curve,
        )

    @property
    def publish_endpoint(self) -> str:
        return self.pub.endpoint

    @property
    def replay_endpoint(self) -> str:
        return self.replay.endpoint

    @property
    def journal_id(self) -> str:
        return self.replay.journal_id

    async def start(self) -> None:
        if self.replay.started:
            raise BusError("bus already started")
        self.replay.open_journal()
        self.pub.journal_id = self.replay.journal_id
        try:
            self.pub.open()
            self.replay.open()
            self.pub.bind()
            self.replay.bind()
        except BaseException:
            self._close_sockets()
            self.replay.close_journal()
            raise
        self.replay.serve()

    async def close(self) -> None:
        await self.replay.stop()
        self._close_sockets()
        self.replay.close_journal()

    def _close_sockets(self) -> None:
        self.pub.close()
        self.replay.close_socket()

    def listeners(self) -> list[tuple[str, Any]]:
        """The bound server sockets by name (publish, replay): whose connections are capped."""
        return [
            (n, s) for n, s in (("publish", self.pub._pub), ("replay", self.replay._router)) if s
        ]

    @property
    def head(self) -> tuple[int, str] | None:
        """``(seq, hash)`` of the last event published (:attr:`Publisher.published`)."""
        return self.pub.published

    def resume(self, head: tuple[int, str]) -> None:
        """Before the first publish: the journal's head at start, all of it published or
        replayable already, is what a heartbeat names until the next event goes out."""
        self.pub.published = head

    def publish(self, events: Sequence[Event], raw: Sequence[bytes] | None = None) -> None:
        """Send committed events, one message each; never blocks (:meth:`Publisher.publish`)."""
        self.pub.publish(events, raw)

    def heartbeat(self, data: dict[str, Any], time: str, mono: float) -> None:
        """Publish ``<table>.heartbeat`` (:meth:`Publisher.heartbeat`)."""
        self.pub.heartbeat(data, time, mono)

    def send(self, topic: bytes, body: bytes) -> bool:
        """Publish a message that is not an event (a technician's trace); never blocks."""
        return self.pub.send(topic, body)
