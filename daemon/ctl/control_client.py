"""``tablectl``'s side of the control channel: a synchronous DEALER with bounded waits.

The wire format and the server are ``daemon/bus/control.py``'s; this is what a tool
links to talk to a running daemon (``daemon/ctl``, ``tablectl gpio``, the fault
campaign): it says why no daemon answered (no socket, a stale one, no permission,
no reply in time) rather than hang, and never answers a call with a late reply.
"""

from __future__ import annotations

import itertools
import secrets
import time
from typing import TYPE_CHECKING, Any

import msgspec
import zmq

from daemon.bus.control import ControlError
from daemon.bus.ipc import ipc_path, probe_unix

if TYPE_CHECKING:
    from daemon.security import ClientCurve

_encoder = msgspec.json.Encoder()


class DaemonUnreachable(Exception):
    """No tabled answered on the control endpoint."""


class ControlClient:
    """Synchronous client for ``tablectl``: one DEALER, bounded waits, no linger.

    Request ids are a random prefix and a counter, unique across clients and
    runs, so the server's replay memory never mistakes a new request for a
    repeat. ``curve`` is ``(client_public, client_secret, server_public)``
    (z85) or a :class:`daemon.security.ClientCurve`, for a CURVE endpoint.
    """

    def __init__(
        self,
        endpoint: str,
        timeout: float = 3.0,
        *,
        actor: str | None = None,
        curve: ClientCurve | tuple[bytes, bytes, bytes] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.actor = actor
        self.curve = curve
        self._ctx = zmq.Context()
        self._sock: zmq.Socket | None = None
        self._prefix = secrets.token_hex(8)
        self._ids = itertools.count(1)

    def _socket(self) -> zmq.Socket:
        if self._sock is None:
            path = ipc_path(self.endpoint)
            if path is not None:
                state = probe_unix(path)
                if state == "absent":
                    raise DaemonUnreachable(f"no control socket at {path}: is tabled running?")
                if state == "stale":
                    raise DaemonUnreachable(
                        f"control socket {path} exists but nothing listens on it: "
                        "is tabled running?"
                    )
                if state == "denied":
                    raise DaemonUnreachable(
                        f"permission denied on control socket {path}: "
                        "is this user in the group that owns it?"
                    )
                if state == "not-socket":
                    raise DaemonUnreachable(f"{path} is not a socket: check the control endpoint")
            sock = self._ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            ms = max(1, int(self.timeout * 1000))
            sock.setsockopt(zmq.SNDTIMEO, ms)
            sock.setsockopt(zmq.RCVTIMEO, ms)
            if self.curve is not None:
                from daemon.security import ClientCurve

                ClientCurve.of(self.curve).apply(sock)
            sock.connect(self.endpoint)
            self._sock = sock
        return self._sock

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        """Run ``cmd`` in the daemon; returns its result or raises :class:`ControlError`."""
        sock = self._socket()
        req_id = f"{self._prefix}-{next(self._ids)}"
        req: dict[str, Any] = {"cmd": cmd, "args": args, "id": req_id}
        if self.actor is not None:
            req["actor"] = self.actor
        hint = (
            " (CURVE: a refused key gets no answer either: is this key in the table's "
            "security.control_clients, and the server key the table's?)"
            if self.curve is not None
            else ""
        )
        unreachable = DaemonUnreachable(
            f"no answer from tabled at {self.endpoint} within {self.timeout}s: is it running?{hint}"
            # the loop commits on its own thread: a disk that stopped answering silences it
            " (a daemon whose journal disk stopped answering does not answer either: its log "
            "says 'a journal write does not return')"
        )
        try:
            sock.send(_encoder.encode(req))
        except zmq.Again:
            self._reset()
            raise unreachable from None
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                self._reset()  # a late reply must not answer the next call
                raise unreachable
            frame = sock.recv()
            try:
                reply = msgspec.json.decode(frame)
            except msgspec.DecodeError:
                raise ControlError(
                    f"tabled sent a reply that is not JSON: {frame[:80]!r}"
                ) from None
            if not isinstance(reply, dict):
                raise ControlError(f"tabled sent a reply that is not an object: {frame[:80]!r}")
            if reply.get("id") not in (req_id, None):
                continue  # the answer to an earlier call that timed out
            if reply.get("ok") is True:
                result = reply.get("result")
                return result if isinstance(result, dict) else {}
            raise ControlError(str(reply.get("error", "request refused (no reason given)")))

    def _reset(self) -> None:
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None

    def close(self) -> None:
        self._reset()
        self._ctx.term()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
