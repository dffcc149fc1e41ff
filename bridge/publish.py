"""Publishes into JetStream and their acks, without a request (a task, a timer future) each.

nats-py's ``js.publish`` is a request: a future, ``asyncio.wait_for`` around it and the
JSON turned into a ``PubAck``; it was a large share of the bridge's CPU per event
(issue 31). Here one wildcard inbox takes every ack; a publish is its messages written
to nats-py's pending buffer (its flusher writes whatever the loop's tables published in
one turn with one socket write) and a future resolved by the ack, with one timer. A
list of events goes as one **atomic batch** (nats-server 2.12+, the stream's
``allow_atomic``): all stored or none, so a conditional header on its first message
makes the whole batch conditional (``bridge/store.py``). Direct gets (a table's head)
ride on the same inbox.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import msgspec
import nats.errors
import nats.js.errors

_decode = msgspec.json.Decoder().decode

#: JetStream's answer when too many atomic batches are open on the stream (retried)
BATCH_INFLIGHT = 10210
#: at most this many atomic batches in flight from one bridge (the server allows ~50 a
#: stream; two bridges active-active share them)
BATCH_SLOTS = 8
#: a table's backlog goes as a batch from this many events (fewer: one at a time). A
#: batch's commit costs the server more than a publish and holds the stream's other
#: publishes meanwhile: with every table of a busy floor batching its two or three
#: pending events, acks took 0.2 s and tables fell behind; with 500 tables catching up
#: 120 events each at once, batches of 32 or more took 10.7-26 s against 9.7-10 s one at
#: a time (measured). So a batch is for one table's long outage (hundreds of events),
#: where the round trips it saves are the catch-up's time
BATCH_MIN = 200
#: events in one atomic batch, at most (the server's limit is 1,000)
BATCH_MAX = 500


class Ack:
    """JetStream's answer to a stored publish: the stream seq of its (last) message."""

    __slots__ = ("duplicate", "seq")

    def __init__(self, seq: int, duplicate: bool) -> None:
        self.seq = seq
        self.duplicate = duplicate


class Publisher:
    """Publishes that wait for JetStream's ack, matched by token on one inbox."""

    def __init__(self, nc: Any, timeout: float) -> None:
        self.nc = nc
        self.timeout = timeout
        self.prefix = ""
        self.batches = ""
        self.waiting: dict[str, asyncio.Future[Any]] = {}
        self.tokens = itertools.count(1)
        self.slots = asyncio.Semaphore(BATCH_SLOTS)

    async def start(self) -> None:
        self.prefix = self.nc.new_inbox() + "."
        self.batches = self.prefix.rsplit(".", 2)[-2]  # this connection's own, unique
        await self.nc.subscribe(self.prefix + "*", cb=self._on_reply)

    def batch_id(self) -> str:
        """A new atomic batch's id (a retry is a new batch: the old one is abandoned)."""
        return f"{self.batches}-{next(self.tokens)}"

    async def _on_reply(self, msg: Any) -> None:
        fut = self.waiting.get(msg.subject[len(self.prefix) :])
        if fut is None or fut.done():
            return
        status = msg.headers.get("Status") if msg.headers else None
        if status == "503":
            fut.set_exception(nats.js.errors.NoStreamResponseError())
        elif msg.data or status:
            fut.set_result(msg)
        # else: an atomic batch's first message is acked empty: the commit answers

    async def request(self, subject: str, payload: bytes = b"") -> Any:
        """One request on the shared inbox (a direct get): the answer, or a timeout."""
        return await self._send([(subject, payload, None)])

    async def publish(self, msgs: list[tuple[str, bytes, dict[str, str]]]) -> Ack:
        """Write ``msgs`` (one, or an atomic batch's) and wait for the answer; raise its
        error (``nats.js.errors.APIError``) or a timeout (``nats.errors.TimeoutError``)."""
        resp = _decode((await self._send(msgs)).data)
        if "error" in resp:
            raise nats.js.errors.APIError.from_error(resp["error"])
        return Ack(int(resp["seq"]), bool(resp.get("duplicate", False)))

    async def _send(self, msgs: list[tuple[str, bytes, dict[str, str] | None]]) -> Any:
        token = str(next(self.tokens))
        reply = self.prefix + token
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        self.waiting[token] = fut
        timer = loop.call_later(self.timeout, _expire, fut)
        try:
            last = len(msgs) - 1
            for i, (subject, payload, headers) in enumerate(msgs):
                # a batch's first message is answered at once if it is refused
                await self.nc.publish(
                    subject, payload, reply=reply if i in (0, last) else "", headers=headers
                )
            return await fut
        finally:
            timer.cancel()
            del self.waiting[token]


def _expire(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(nats.errors.TimeoutError())
