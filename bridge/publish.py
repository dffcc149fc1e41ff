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

The wire bytes of a publish (``HPUB``) are built here, a whole batch at once, and handed to
nats-py's pending buffer as one command: its ``publish`` checked and encoded each header of
each message in Python (a loop, a regex and ``str.translate`` per header) and woke its
flusher per message, ~35 µs a message, most of a floor catch-up's cost of publishing once
the replay was read in bulk (issue 31). The bytes are the same as nats-py's
(``tests/test_bridge_catchup.py``); a subject is checked to hold no whitespace and a header
value no line break (a table's event type or journal id cannot inject a header).
"""

from __future__ import annotations

import asyncio
import itertools
import re
from typing import Any

import msgspec
import nats.errors
import nats.js.errors

_decode = msgspec.json.Decoder().decode
#: what a subject may hold on the wire: no whitespace, no line break
_WIRE_SAFE = re.compile(r"[^\s]+")
_NATS_HDR = b"NATS/1.0\r\n"

#: a message as the publisher sends it: subject, payload, and its header lines
#: (``b"Key: value\r\n"`` each, from :func:`header_lines`)
Message = tuple[str, bytes, bytes]


def header_lines(headers: dict[str, str]) -> bytes:
    """``headers`` as wire lines. A value with a line break (from a table's event or
    heartbeat) is refused, not sent: it would end the header block or add one."""
    text = "".join([f"{k}: {v}\r\n" for k, v in headers.items()])
    if text.count("\n") != len(headers) or text.count("\r") != len(headers):
        raise nats.errors.BadHeaderError(f"a line break in a header value: {headers}")
    return text.encode()


def wire(subject: str, payload: bytes, lines: bytes, reply: str = "") -> bytes:
    """One message's protocol bytes: ``HPUB`` with its header block (as nats-py sends it)."""
    if _WIRE_SAFE.fullmatch(subject) is None:
        raise nats.errors.BadSubjectError(subject)
    hdr = _NATS_HDR + lines + b"\r\n"
    n = len(hdr)
    return f"HPUB {subject} {reply} {n} {n + len(payload)}\r\n".encode() + hdr + payload + b"\r\n"


#: JetStream's answer when too many atomic batches are open on the stream (retried)
BATCH_INFLIGHT = 10210
#: at most this many atomic batches in flight from one bridge: the server allows 50 a
#: stream, and two bridges (active-active, or a floor's two halves) must fit in them
BATCH_SLOTS = 24
#: a table's backlog goes as batches from this many events (fewer: one at a time). On a
#: busy floor every table has two or three pending, and batching those made the server's
#: commits hold the stream's other publishes (acks took 0.2 s: measured), so a live
#: table at its normal rate never batches. A floor's catch-up does: 1,000 tables x 120
#: backlogged events took the same time batched from 32 or one at a time (6.8-8.7 s),
#: at 30 against 45 µs of bridge CPU an event (issue 31, after the plumbing was cut)
BATCH_MIN = 32
#: events in one atomic batch, at most: nats-server's default limit (ADR-50; a larger batch is
#: refused whole and goes one event at a time)
BATCH_MAX = 1000


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
        token, fut, timer = self._waiter()
        try:
            await self.nc.publish(subject, payload, reply=self.prefix + token)
            return await fut
        finally:
            timer.cancel()
            del self.waiting[token]

    async def publish(self, msgs: list[Message], timeout: float | None = None) -> Ack:
        """Write ``msgs`` (one, or an atomic batch's) and wait for the answer (``timeout``
        s, else the configured one); raise its error (``nats.js.errors.APIError``) or a
        timeout (``nats.errors.TimeoutError``)."""
        token, fut, timer = self._waiter(timeout)
        try:
            reply = self.prefix + token
            last = len(msgs) - 1
            if any(len(payload) > self.nc.max_payload for _s, payload, _h in msgs):
                raise nats.errors.MaxPayloadError  # as nats-py's publish: never sent
            # a batch's first message is answered at once if it is refused
            buf = b"".join(
                wire(subject, payload, lines, reply if i in (0, last) else "")
                for i, (subject, payload, lines) in enumerate(msgs)
            )
            await self._write(buf)
            resp = _decode((await fut).data)
        finally:
            timer.cancel()
            del self.waiting[token]
        if "error" in resp:
            raise nats.js.errors.APIError.from_error(resp["error"])
        return Ack(int(resp["seq"]), bool(resp.get("duplicate", False)))

    async def _write(self, buf: bytes) -> None:
        """``buf`` into nats-py's pending buffer as one command, as its ``publish`` does
        (the same refusals: closed, draining, its reconnect buffer full), then its
        flusher kicked once."""
        nc = self.nc
        if nc.is_closed:
            raise nats.errors.ConnectionClosedError
        if nc.is_draining_pubs:
            raise nats.errors.ConnectionDrainingError
        if not nc.is_connected and (
            nc._max_pending_size <= 0 or len(buf) + nc._pending_data_size > nc._max_pending_size
        ):
            raise nats.errors.OutboundBufferLimitError
        await nc._send_command(buf)
        if nc._flush_queue is not None and nc._flush_queue.empty():
            await nc._flush_pending()

    def _waiter(
        self, timeout: float | None = None
    ) -> tuple[str, asyncio.Future[Any], asyncio.TimerHandle]:
        token = str(next(self.tokens))
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        self.waiting[token] = fut
        return token, fut, loop.call_later(timeout or self.timeout, _expire, fut)


def _expire(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(nats.errors.TimeoutError())
