"""The control channel's server: a ROUTER that moves requests and replies, safely.

Its client, ``tablectl``'s, is ``daemon/ctl/control_client.py``. This module stays past
400 lines as one job: the wire checks, the replay memory and the bind safety below all
guard the same socket's requests, and split apart each would need the others' state.

Why long: one socket's safety (wire checks, replay memory, bind), see above.

The control socket of ``README.md``'s path of one reading. ``tablectl`` talks to ``tabled`` here (ipc by
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

Hostile input gets an error reply and reaches no handler: a request over
``max_message`` bytes (one over twice that is cut by libzmq before it is
read, so no reply is possible), one that is not JSON or nested too deeply,
wrong types (``id`` must be a string of at most 128 characters or an
integer, ``actor`` a string of at most 128, ``cmd`` at most 64).

Replayed commands change nothing: the server remembers the last
``REMEMBER`` requests that carried an ``id`` (for ``REMEMBER_FOR`` s) and whose
command ``remember`` names (the journaled ones: ``status`` takes no memory), per
peer: the CURVE key's name when there is one, else the connection. This memory
is a shortcut; the one that holds across connections and restarts is the
journal's (``daemon/pipeline/requests.py``). The same
``id`` again with the same ``cmd``/``args``/``actor`` gets the first reply
again without running the handler (also while the first is still running);
with anything else it is refused. :class:`~daemon.ctl.control_client.ControlClient` makes ids unique
(a random prefix and a counter), so only a true repeat is caught.

With ``curve`` (tcp), the ZAP handler admits listed keys only and labels
the connection with the key's name (``User-Id``) and role (``X-Role``);
both reach the handler in :class:`Peer`, and a message without them is
refused. An ipc socket is created owner-only and then given ``ipc_mode``,
so there is no moment in which others could connect.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import msgspec
import structlog
import zmq
import zmq.asyncio

from daemon.bus.ipc import (
    BACKLOG,
    HANDSHAKE_IVL_MS,
    EndpointError,
    bind,
    ipc_path,
    prepare_ipc,
    probe_unix,
)
from daemon.bus.zmq_loop import LoopSocket, Message
from daemon.table.command_args import json_kind

if TYPE_CHECKING:
    from daemon.security import ServerCurve

log = structlog.get_logger()

_REQUEST_KEYS: Final = frozenset({"cmd", "args", "id", "actor"})
MAX_ID: Final = 128
MAX_ACTOR: Final = 128
MAX_CMD: Final = 64
_encoder = msgspec.json.Encoder()
_sorted = msgspec.json.Encoder(order="sorted")


class ControlError(Exception):
    """A command was refused; the message is what the operator reads."""


@dataclass(frozen=True)
class Peer:
    """Who sent a request: the connection's ROUTER identity and transport and, on a
    CURVE socket, the name and role of its client key (None otherwise: then the
    socket's own role applies)."""

    identity: bytes
    transport: str  # "ipc" | "tcp"
    user: str | None = None
    role: str | None = None

    def actor(self, claimed: str | None) -> str:
        """Who to journal: the key's name when authenticated (what the client claims
        follows after a slash, unverified), else the claim or the transport and uid."""
        if self.user is not None:
            return self.user if claimed in (None, "", self.user) else f"{self.user}/{claimed}"
        return str(claimed or f"{self.transport}:{os.getuid()}")


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
    except RecursionError:
        raise _BadRequest("request is nested too deeply") from None
    if not isinstance(req, dict):
        raise _BadRequest(f"request must be a JSON object, not {json_kind(req)}")
    req_id = req.get("id")
    if req_id is not None:
        if isinstance(req_id, bool) or not isinstance(req_id, int | str):
            raise _BadRequest(f'"id" must be a string or an integer, not {json_kind(req_id)}')
        if isinstance(req_id, str) and len(req_id) > MAX_ID:
            raise _BadRequest(f'"id" is longer than {MAX_ID} characters')
        if isinstance(req_id, int) and not -(2**63) <= req_id < 2**63:
            raise _BadRequest('"id" is out of range')
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
        raise _BadRequest(f'"cmd" must be a string, not {json_kind(cmd)}', req_id)
    if not cmd.strip():
        raise _BadRequest('"cmd" is empty', req_id)
    if len(cmd) > MAX_CMD:
        raise _BadRequest(f'"cmd" is longer than {MAX_CMD} characters', req_id)
    args = req.setdefault("args", {})
    if not isinstance(args, dict):
        raise _BadRequest(f'"args" must be an object, not {json_kind(args)}', req_id)
    actor = req.get("actor")
    if actor is not None and not isinstance(actor, str):
        raise _BadRequest(f'"actor" must be a string, not {json_kind(actor)}', req_id)
    if actor is not None and len(actor) > MAX_ACTOR:
        raise _BadRequest(f'"actor" is longer than {MAX_ACTOR} characters', req_id)
    return req


def _transport(endpoint: str) -> str:
    return endpoint.split("://", 1)[0]


@dataclass(slots=True)
class _Seen:
    """A request with an id: what it asked (digest) and its reply, once there is one.

    Up to ``REMEMBER`` of these are kept: the reply's bytes replace the future once it is
    set, and slots, ~0.8 MiB of RSS at 4,096 (``docs/performance-history.md``, memory and start-up)."""

    digest: bytes
    #: the reply's bytes; while the request runs, the future its replays wait on
    reply: asyncio.Future[bytes] | bytes
    at: float


def _frame_property(frame: zmq.Frame, name: str) -> str | None:
    try:
        value = frame.get(name)
    except zmq.ZMQError:  # EINVAL: the connection has no such property
        return None
    return value if isinstance(value, str) and value else None


class ControlServer:
    """ROUTER socket that hands each request to ``handler`` and always replies."""

    MAX_IN_FLIGHT: int = 16  # requests handled at once; more get "busy"
    REMEMBER: int = 4096  # requests with an id remembered against replay
    REMEMBER_FOR: float = 600.0  # seconds

    def __init__(
        self,
        ctx: zmq.asyncio.Context,
        endpoint: str,
        handler: Handler,
        *,
        ipc_mode: int = 0o660,
        max_message: int = 65536,
        linger_ms: int = 200,
        curve: ServerCurve | None = None,
        remember: Callable[[str], bool] | None = None,
    ) -> None:
        self.ctx = ctx
        #: which commands' ids are remembered against replay: read-only ones (``status``)
        #: change nothing, so they must not take the memory (and evict others' ids)
        self.remember = remember or (lambda cmd: True)
        self.endpoint = endpoint
        self.handler = handler
        self.ipc_mode = ipc_mode
        self.max_message = max_message
        self.linger_ms = linger_ms
        self.curve = curve
        self.counters: dict[str, int] = dict.fromkeys(
            ("requests", "bad_requests", "too_large", "replayed", "unauthenticated"), 0
        )
        self._seen: OrderedDict[tuple[Any, ...], _Seen] = OrderedDict()
        self._sock: zmq.Socket[Any] | None = None
        self._reader: LoopSocket | None = None
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
        # a plain socket read by the loop (daemon/bus/zmq_loop.py): zmq.asyncio's futures
        # cost more than the rest of a command's handling
        sock: zmq.Socket[Any] = self.ctx.socket(zmq.ROUTER, socket_class=zmq.Socket)
        try:
            sock.setsockopt(zmq.LINGER, self.linger_ms)
            # up to twice max_message is read and answered "too large"; beyond,
            # libzmq drops the connection without buffering the message
            sock.setsockopt(zmq.MAXMSGSIZE, 2 * self.max_message)
            sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
            sock.setsockopt(zmq.SNDHWM, 1000)
            sock.setsockopt(zmq.RCVHWM, 1000)
            sock.setsockopt(zmq.HANDSHAKE_IVL, HANDSHAKE_IVL_MS)
            sock.setsockopt(zmq.BACKLOG, BACKLOG)
            if self.curve is not None:  # before bind: no moment without CURVE
                self.curve.apply(sock, "control")
            prepare_ipc(self.endpoint)  # directory, stale file (re-checked: no race window)
            if path is not None:
                # created owner-only (a umask can only take bits away, so this is
                # safe for anything else created meanwhile), then given its mode
                old = os.umask(0o177)
                try:
                    bind(sock, self.endpoint, "control")
                finally:
                    os.umask(old)
                os.chmod(path, self.ipc_mode)
            else:
                bind(sock, self.endpoint, "control")
            if path is not None:
                st = os.stat(path)
                self._ipc_inode = (st.st_dev, st.st_ino)
        except BaseException:
            sock.close(linger=0)
            raise
        self._sock = sock
        self._reader = LoopSocket(sock, self._on_request, copy=self.curve is None)
        self._reader.start()

    async def close(self) -> None:
        if self._reader is not None:  # nothing new is read from here on
            self._reader.stop()
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        if self._reader is not None:
            self._reader.close(linger=self.linger_ms)
            self._reader = None
        self._sock = None
        path = ipc_path(self.endpoint)
        if path is not None and self._ipc_inode is not None:
            # only our own file: never one another daemon bound since
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(path)
                if (st.st_dev, st.st_ino) == self._ipc_inode:
                    os.unlink(path)
            self._ipc_inode = None

    @property
    def socket(self) -> zmq.Socket[Any] | None:
        """The bound ROUTER (None before start and after close): whose connections are capped."""
        return self._sock

    def _on_request(self, msg: Message) -> None:
        """One message from the socket (in the reader callback): refused or answered at
        once when no handler is needed, else handed to a task that runs the handler."""
        user = role = None
        if self.curve is not None:  # set by our ZAP handler for this connection
            user = _frame_property(msg[-1], "User-Id")
            role = _frame_property(msg[-1], "X-Role")
            frames: list[bytes] = [f.bytes for f in msg]
        else:
            frames = msg
        identity, rest = frames[0], frames[1:]
        envelope: list[bytes] = []
        if len(rest) >= 2 and rest[0] == b"":  # a REQ client's delimiter
            envelope, rest = [b""], rest[1:]
        try:
            self._dispatch(
                Peer(identity=identity, transport=self._peer_transport, user=user, role=role),
                envelope,
                rest,
            )
        except Exception as e:  # a bug here must not cost the client its reply
            log.exception("control request failed", peer=identity)
            self._reply(
                identity, envelope, {"ok": False, "error": f"internal error: {type(e).__name__}"}
            )

    def _dispatch(self, peer: Peer, envelope: list[bytes], frames: list[bytes]) -> None:
        identity = peer.identity
        if len(self._tasks) >= self.MAX_IN_FLIGHT:
            self._reply(
                identity,
                envelope,
                {"ok": False, "error": "busy: too many requests in progress, try again"},
            )
            return
        self.counters["requests"] += 1
        size = sum(len(f) for f in frames)
        if size > self.max_message:
            self.counters["too_large"] += 1
            self._reply(
                identity,
                envelope,
                {
                    "ok": False,
                    "error": f"request too large: {size} bytes, the limit is {self.max_message}",
                },
            )
            return
        try:
            req = parse_request(frames)
        except _BadRequest as e:
            self.counters["bad_requests"] += 1
            self._reply(identity, envelope, {"ok": False, "error": str(e), "id": e.req_id})
            return
        req_id = req.get("id")
        if self.curve is not None and (peer.user is None or peer.role is None):
            self.counters["unauthenticated"] += 1
            self._reply(
                identity,
                envelope,
                {"ok": False, "error": "not authenticated: no CURVE key name/role", "id": req_id},
            )
            return
        seen: _Seen | None = None
        if req_id is not None and self.remember(req["cmd"]):
            key = (peer.user if peer.user is not None else peer.identity, req_id)
            digest = _sorted.encode([req["cmd"], req["args"], req.get("actor")])
            earlier = self._recall(key)
            if earlier is not None:
                if earlier.digest != digest:
                    self._send(
                        identity,
                        envelope,
                        _encoder.encode(
                            {
                                "ok": False,
                                "error": f"request id {req_id!r} was already used for another "
                                "request: use a new id for each request",
                                "id": req_id,
                            }
                        ),
                    )
                    return
                self.counters["replayed"] += 1
                log.info("replayed control request answered from memory", id=req_id)
                if isinstance(earlier.reply, bytes):
                    self._send(identity, envelope, earlier.reply)
                else:  # the first is still running: its reply, when there is one
                    self._spawn(self._answer_again(identity, envelope, earlier))
                return
            loop = asyncio.get_running_loop()
            seen = _Seen(digest, loop.create_future(), loop.time())
            self._remember(key, seen)
        self._spawn(self._answer(peer, envelope, req, seen))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(
        self, peer: Peer, envelope: list[bytes], req: dict[str, Any], seen: _Seen | None
    ) -> None:
        payload = await self._run(req, peer)
        if seen is not None and not isinstance(seen.reply, bytes):
            seen.reply.set_result(payload)
            seen.reply = payload
        self._send(peer.identity, envelope, payload)

    async def _answer_again(self, identity: bytes, envelope: list[bytes], earlier: _Seen) -> None:
        reply = earlier.reply  # bytes by now if the first finished before this task started
        self._send(
            identity, envelope, reply if isinstance(reply, bytes) else await asyncio.shield(reply)
        )

    def _recall(self, key: tuple[Any, ...]) -> _Seen | None:
        now = asyncio.get_running_loop().time()
        while self._seen:  # forget the expired, oldest first
            first = next(iter(self._seen.values()))
            if now - first.at < self.REMEMBER_FOR:
                break
            self._seen.popitem(last=False)
        return self._seen.get(key)

    def _remember(self, key: tuple[Any, ...], seen: _Seen) -> None:
        self._seen[key] = seen
        while len(self._seen) > self.REMEMBER:  # one still running keeps its waiters
            self._seen.popitem(last=False)

    async def _run(self, req: dict[str, Any], peer: Peer) -> bytes:
        """The handler's answer to one request, as the reply's bytes."""
        req_id = req.get("id")
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
        except asyncio.CancelledError as e:
            task = asyncio.current_task()
            if task is None or task.cancelling():  # this task is cancelled: close()
                raise
            # A future the handler awaited was cancelled, not this request: answered like
            # any other failure, or its client would wait for a reply that never comes.
            payload = self._failed(req, peer, e)
        except Exception as e:
            payload = self._failed(req, peer, e)
        return payload

    def _failed(self, req: dict[str, Any], peer: Peer, e: BaseException) -> bytes:
        log.exception(
            "control command failed", cmd=req.get("cmd"), actor=req.get("actor"), peer=peer
        )
        return _encoder.encode(
            {
                "ok": False,
                "error": f"internal error: {type(e).__name__}: {e}",
                "id": req.get("id"),
            }
        )

    def _reply(self, identity: bytes, envelope: list[bytes], reply: dict[str, Any]) -> None:
        reply.setdefault("id", None)
        self._send(identity, envelope, _encoder.encode(reply))

    def _send(self, identity: bytes, envelope: list[bytes], payload: bytes) -> None:
        reader = self._reader
        if reader is None or reader.closed:
            return
        try:
            reader.send([identity, *envelope, payload])
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
