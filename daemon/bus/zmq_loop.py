"""A plain pyzmq socket served by the asyncio loop's reader, without ``zmq.asyncio``'s futures.

``zmq.asyncio`` makes a future, a deque entry, a done-callback and several
``enum.Flag`` operations for every ``recv`` and every ``send``, and wakes the loop
once more to hand the result over: about 0.5 ms of profiled CPU per control
command on the daemon's loop (docs/performance-history.md, Round 3, "control socket").
A server socket that only reacts to what arrives needs none of that: the loop
watches the socket's ``ZMQ_FD``, and each wake reads every waiting message with
``NOBLOCK`` and hands it to a callback; replies go out with ``NOBLOCK`` at once.

libzmq's ``ZMQ_FD`` is edge-triggered and says only "look at ``ZMQ_EVENTS``":

* it does not fire for messages already queued when it is first watched, so
  :meth:`LoopSocket.start` looks once at once;
* any call on the socket (``recv``, ``send``, reading ``ZMQ_EVENTS``) may take
  the signal of a message that arrived meanwhile, after which the fd stays
  quiet with that message queued. So a wake reads until ``ZMQ_EVENTS`` has no
  ``POLLIN``, and every :meth:`LoopSocket.send` outside a wake looks at
  ``ZMQ_EVENTS`` afterwards and schedules a read if there is one. Every send
  on the socket must therefore go through :meth:`LoopSocket.send`;
* a wake reads at most ``batch`` messages and then schedules itself again
  (the fd will not fire for the rest), so one flood does not hold the loop;
* an error other than ``EAGAIN`` while reading (``ETERM``: the context is
  being terminated with the socket still open) stops the watch before it is
  raised to the loop's exception handler: the fd would stay readable.

Option numbers and flags are plain ints here: pyzmq's ``IntFlag`` constants
make an ``enum`` object on every ``&`` and ``|``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Final

import zmq

_EVENTS: Final = int(zmq.EVENTS)
_RCVMORE: Final = int(zmq.RCVMORE)
_POLLIN: Final = int(zmq.POLLIN)
_NOBLOCK: Final = int(zmq.NOBLOCK)
_SNDMORE: Final = int(zmq.SNDMORE)

#: a message as received: bytes frames, or ``zmq.Frame`` with ``copy=False``
Message = list[Any]


class LoopSocket:
    """``sock`` read by the running loop: each message goes to ``on_message`` as it comes.

    ``on_message`` runs in the loop's thread, inside the reader callback, and
    should not raise (if it does, the rest is read on the next round and the
    exception goes to the loop's handler). ``copy=False`` gives ``zmq.Frame``
    objects (for per-connection properties such as a CURVE key's ``User-Id``).
    """

    def __init__(
        self,
        sock: zmq.Socket[Any],
        on_message: Callable[[Message], None],
        *,
        copy: bool = True,
        batch: int = 64,
    ) -> None:
        self.sock = sock
        self.on_message = on_message
        self.copy = copy
        self.batch = batch
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fd = -1
        self._scheduled = False  # a read is due by call_soon
        self._reading = False  # inside _read: it looks at ZMQ_EVENTS again itself

    def start(self) -> None:
        """Watch the socket from the running loop (call in the loop's thread)."""
        if self._loop is not None:
            raise RuntimeError("LoopSocket already started")
        self._loop = asyncio.get_running_loop()
        self._fd = self.sock.getsockopt(zmq.FD)
        self._loop.add_reader(self._fd, self._read)
        self._schedule()  # queued before the watch began: the fd will not say so

    def stop(self) -> None:
        """Read nothing more (the socket stays open for replies still to go); idempotent."""
        if self._loop is not None and self._fd >= 0 and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
        self._fd = -1
        self._loop = None  # a round already scheduled finds this and returns

    def close(self, linger: int | None = None) -> None:
        """:meth:`stop`, then close the socket (idempotent)."""
        self.stop()
        if not self.sock.closed:
            self.sock.close(linger=linger)

    @property
    def closed(self) -> bool:
        return self.sock.closed

    @property
    def watching(self) -> bool:
        """Whether the loop reads the socket (started, not stopped)."""
        return self._loop is not None

    def send(self, frames: Sequence[bytes]) -> None:
        """Send one multipart message without blocking; raises what libzmq raises
        (``zmq.Again``: no room; ``EHOSTUNREACH``: a ROUTER's peer is gone)."""
        sock = self.sock
        last = len(frames) - 1
        try:
            for i, frame in enumerate(frames):
                sock.send(frame, _NOBLOCK | _SNDMORE if i < last else _NOBLOCK)
        finally:
            if not self._reading and not self._scheduled and not sock.closed:
                # the send may have taken the fd's signal of a message that came meanwhile
                if sock.getsockopt(_EVENTS) & _POLLIN:
                    self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled and self._loop is not None:
            self._scheduled = True
            self._loop.call_soon(self._read)

    def _read(self) -> None:
        """Every message waiting, up to ``batch``; then the fd (or a scheduled round) again."""
        self._scheduled = False
        sock = self.sock
        if sock.closed or self._loop is None:
            return
        recv, getsockopt, copy, on_message = sock.recv, sock.getsockopt, self.copy, self.on_message
        self._reading = True
        try:
            for _ in range(self.batch):
                try:
                    if not getsockopt(_EVENTS) & _POLLIN:
                        return
                    msg = [recv(_NOBLOCK, copy=copy)]
                    while getsockopt(_RCVMORE):
                        msg.append(recv(_NOBLOCK, copy=copy))
                except zmq.Again:
                    return
                except zmq.ZMQError:  # ETERM: the context is going; its fd would call again forever
                    self.stop()
                    raise
                try:
                    on_message(msg)
                except BaseException:
                    self._schedule()  # the rest is still queued and the fd will not fire for it
                    raise
                if sock.closed or self._loop is None:  # on_message closed it
                    return
            self._schedule()  # more may wait: after the loop's other callbacks
        finally:
            self._reading = False
