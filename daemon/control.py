"""The control channel's socket mechanics: a ROUTER server and a small sync client.

Layer 6 of ``DESIGN.md``. ``tablectl`` talks to ``tabled`` here (ipc by
default). What the commands do, and who may issue them, is the handler's
business; this module only moves requests and replies and keeps the socket
safe to bind and to leave.

Wire format, one frame each way (a DEALER sends just the frame; a REQ
socket's empty delimiter frame is accepted and echoed back):

* request: ``{"cmd": "status", "args": {...}, "id": <any>, "actor": "<name>"}``
  (``args``, ``id`` and ``actor`` optional);
* reply: ``{"ok": true, "result": {...}, "id": ...}`` or
  ``{"ok": false, "error": "<what is wrong>", "id": ...}``; ``id`` echoes the
  request's (null when it had none or could not be read).

A handler raises :class:`ControlError` to refuse a command; any other
exception becomes ``internal error: <type>: <message>`` and is logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec
import structlog
import zmq
import zmq.asyncio

from daemon.bus import EndpointError, bind, ipc_path, prepare_ipc, probe_unix

log = structlog.get_logger()

_REQUEST_KEYS: Final = frozenset({"cmd", "args", "id", "actor"})
_encoder = msgspec.json.Encoder()


class ControlError(Exception):
    """A command was refused; the message is what the operator reads."""


class DaemonUnreachable(Exception):
    """No tabled answered on the control endpoint."""


@dataclass(frozen=True)
class Peer:
    """Who sent a request: the ROUTER identity of the connection and its transport."""

    identity: bytes
    transport: str  # "ipc" | "tcp"


Handler = Callable[[dict[str, Any], Peer], Awaitable[dict[str, Any]]]


class _BadRequest(Exception):
    def __init__(self, what: str, req_id: Any = None) -> None:
        super().__init__(what)
        self.req_id = req_id


def parse_request(frames: list[bytes]) -> dict[str, Any]:
    """Check one request's frames; returns the request object or raises with what is wrong."""
    if len(frames) != 1:
        raise _BadRequest(f"a request is one frame, this one has {len(frames)}")
    try:
        req = msgspec.json.decode(frames[0])
    except msgspec.DecodeError as e:
        raise _BadRequest(f"request is not JSON ({e})") from None
    if not isinstance(req, dict):
        raise _BadRequest(f"request must be a JSON object, not {_json_type(req)}")
    req_id = req.get("id")
    unknown = sorted(set(req) - _REQUEST_KEYS)
    if unknown:
        raise _BadRequest(
            f"unknown key(s) in request: {', '.join(unknown)} (allowed: cmd, args, id, actor)",
            req_id,
        )
    if "cmd" not in req:
        raise _BadRequest('missing "cmd"', req_id)
    cmd = req["cmd"]
    if not isinstance(cmd, str):
        raise _BadRequest(f'"cmd" must be a string, not {_json_type(cmd)}', req_id)
    if not cmd.strip():
        raise _BadRequest('"cmd" is empty', req_id)
    args = req.setdefault("args", {})
    if not isinstance(args, dict):
        raise _BadRequest(f'"args" must be an object, not {_json_type(args)}', req_id)
    actor = req.get("actor")
    if actor is not None and not isinstance(actor, str):
        raise _BadRequest(f'"actor" must be a string, not {_json_type(actor)}', req_id)
    return req


def _json_type(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _transport(endpoint: str) -> str:
    return endpoint.split("://", 1)[0]


class ControlServer:
    """ROUTER socket that hands each request to ``handler`` and always replies."""

    MAX_IN_FLIGHT: int = 16  # requests handled at once; more get "busy"

    def __init__(
        self,
        ctx: zmq.asyncio.Context,
        endpoint: str,
        handler: Handler,
        *,
        ipc_mode: int = 0o660,
        max_message: int = 65536,
        linger_ms: int = 200,
    ) -> None:
        self.ctx = ctx
        self.endpoint = endpoint
        self.handler = handler
        self.ipc_mode = ipc_mode
        self.max_message = max_message
        self.linger_ms = linger_ms
        self._sock: zmq.asyncio.Socket | None = None
        self._server: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._ipc_inode: tuple[int, int] | None = None
        self._peer_transport = _transport(endpoint)

    async def start(self) -> None:
        if self._sock is not None:
            raise EndpointError(f"control server on {self.endpoint} already started")
        path = ipc_path(self.endpoint)
        if path is not None and probe_unix(path) == "live":
            if await _answers(self.ctx, self.endpoint):
                raise EndpointError(f"another tabled already serves {self.endpoint}")
            raise EndpointError(
                f"another process listens on {self.endpoint} and does not answer as tabled"
            )
        sock = self.ctx.socket(zmq.ROUTER)
        try:
            sock.setsockopt(zmq.LINGER, self.linger_ms)
            sock.setsockopt(zmq.MAXMSGSIZE, self.max_message)
            sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
            sock.setsockopt(zmq.SNDHWM, 1000)
            sock.setsockopt(zmq.RCVHWM, 1000)
            prepare_ipc(self.endpoint)  # directory, stale file (re-checked: no race window)
            bind(sock, self.endpoint, "control")
            if path is not None:
                os.chmod(path, self.ipc_mode)
                st = os.stat(path)
                self._ipc_inode = (st.st_dev, st.st_ino)
        except BaseException:
            sock.close(linger=0)
            raise
        self._sock = sock
        self._server = asyncio.create_task(self._serve(), name=f"control {self.endpoint}")

    async def close(self) -> None:
        tasks = [t for t in (self._server, *self._tasks) if t is not None]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._server = None
        self._tasks.clear()
        if self._sock is not None:
            self._sock.close(linger=self.linger_ms)
            self._sock = None
        path = ipc_path(self.endpoint)
        if path is not None and self._ipc_inode is not None:
            # only our own file: never one another daemon bound since
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(path)
                if (st.st_dev, st.st_ino) == self._ipc_inode:
                    os.unlink(path)
            self._ipc_inode = None

    async def _serve(self) -> None:
        sock = self._sock
        assert sock is not None
        while True:
            frames = await sock.recv_multipart()
            identity, rest = frames[0], frames[1:]
            envelope: list[bytes] = []
            if len(rest) >= 2 and rest[0] == b"":  # a REQ client's delimiter
                envelope, rest = [b""], rest[1:]
            if len(self._tasks) >= self.MAX_IN_FLIGHT:
                await self._reply(
                    identity,
                    envelope,
                    {"ok": False, "error": "busy: too many requests in progress, try again"},
                )
                continue
            task = asyncio.create_task(self._answer(identity, envelope, rest))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _answer(self, identity: bytes, envelope: list[bytes], frames: list[bytes]) -> None:
        try:
            req = parse_request(frames)
        except _BadRequest as e:
            await self._reply(identity, envelope, {"ok": False, "error": str(e), "id": e.req_id})
            return
        req_id = req.get("id")
        peer = Peer(identity=identity, transport=self._peer_transport)
        try:
            result = await self.handler(req, peer)
            if result is None:
                result = {}
            if not isinstance(result, dict):
                raise TypeError(f"handler returned {type(result).__name__}, not a dict")
            reply: dict[str, Any] = {"ok": True, "result": result, "id": req_id}
            payload = _encoder.encode(reply)
        except ControlError as e:
            payload = _encoder.encode({"ok": False, "error": str(e), "id": req_id})
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.exception(
                "control command failed", cmd=req.get("cmd"), actor=req.get("actor"), peer=peer
            )
            payload = _encoder.encode(
                {"ok": False, "error": f"internal error: {type(e).__name__}: {e}", "id": req_id}
            )
        await self._send(identity, envelope, payload)

    async def _reply(self, identity: bytes, envelope: list[bytes], reply: dict[str, Any]) -> None:
        reply.setdefault("id", None)
        await self._send(identity, envelope, _encoder.encode(reply))

    async def _send(self, identity: bytes, envelope: list[bytes], payload: bytes) -> None:
        sock = self._sock
        if sock is None:
            return
        try:
            await sock.send_multipart([identity, *envelope, payload], flags=zmq.NOBLOCK)
        except zmq.ZMQError as e:  # EHOSTUNREACH: client gone; EAGAIN: it doesn't read
            log.warning("control reply undeliverable", reason=e.strerror)


async def _answers(ctx: zmq.asyncio.Context, endpoint: str, timeout: float = 0.5) -> bool:
    """Whether a tabled answers a request on ``endpoint`` within ``timeout`` (any reply counts)."""
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
        await sock.send(_encoder.encode({"cmd": "ping", "id": "tabled-probe"}))
        return bool(await sock.poll(timeout * 1000, zmq.POLLIN))
    finally:
        sock.close(linger=0)


class ControlClient:
    """Synchronous client for ``tablectl``: one DEALER, bounded waits, no linger."""

    def __init__(self, endpoint: str, timeout: float = 3.0, *, actor: str | None = None) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.actor = actor
        self._ctx = zmq.Context()
        self._sock: zmq.Socket | None = None
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
            sock.connect(self.endpoint)
            self._sock = sock
        return self._sock

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        """Run ``cmd`` in the daemon; returns its result or raises :class:`ControlError`."""
        sock = self._socket()
        req_id = next(self._ids)
        req: dict[str, Any] = {"cmd": cmd, "args": args, "id": req_id}
        if self.actor is not None:
            req["actor"] = self.actor
        unreachable = DaemonUnreachable(
            f"no answer from tabled at {self.endpoint} within {self.timeout}s: is it running?"
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
