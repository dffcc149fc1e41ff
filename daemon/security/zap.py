"""The ZAP authenticator: who may finish a CURVE handshake, and the handshakes ZAP never sees.

libzmq admits *any* client key on a CURVE socket when no ZAP handler is bound
in its context, so :class:`Authenticator` binds ``inproc://zeromq.zap.01``
before any server socket is bound, and :meth:`ServerCurve.apply` refuses to
configure a socket while it does not run (fail closed). It admits only the
configured client keys, per ZAP domain (``bus`` for publish and replay,
``control`` for a tcp control socket), and hands the key's name (ZAP
``User-Id``) and role (ZAP metadata ``X-Role``) to the connection: libzmq
attaches both to every message the peer sends (``frame.get("User-Id")``).
Refusals are logged and counted; a socket monitor on each server socket counts
the handshakes ZAP never sees (a plain client, a client with the wrong server key).

A wrong key on either side shows nowhere in the application: the client
simply receives nothing. That is why the counters and the log lines exist.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog
import zmq
import zmq.asyncio
from zmq.utils import z85
from zmq.utils.monitor import parse_monitor_message

from daemon.security.keyfiles import ClientKey, SecurityError

log = structlog.get_logger()

ZAP_ENDPOINT: Final = "inproc://zeromq.zap.01"
BUS_DOMAIN: Final = "bus"
CONTROL_DOMAIN: Final = "control"
LOG_EVERY: Final = 60.0  # seconds: a repeating failure is logged at most this often


def _zap_metadata(props: Mapping[str, str]) -> bytes:
    """ZMTP property list (1-byte name length, name, 4-byte value length, value)."""
    out = b""
    for k, v in props.items():
        kb, vb = k.encode(), v.encode()
        out += bytes([len(kb)]) + kb + struct.pack(">I", len(vb)) + vb
    return out


class _Throttle:
    """Log a repeating failure once, then at most every ``LOG_EVERY`` s with how many were not logged."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, ...], tuple[float, int]] = {}

    def __call__(self, key: tuple[str, ...]) -> int | None:
        now = time.monotonic()
        last, skipped = self._last.get(key, (float("-inf"), 0))
        if now - last >= LOG_EVERY:
            self._last[key] = (now, 0)
            if len(self._last) > 1024:  # bounded: forget the oldest
                self._last.pop(next(iter(self._last)))
            return skipped
        self._last[key] = (last, skipped + 1)
        return None


_HANDSHAKE_EVENTS: Final = (
    zmq.EVENT_HANDSHAKE_SUCCEEDED
    | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_AUTH
)


class Authenticator:
    """The ZAP handler for one context, and the handshake monitors of its CURVE sockets.

    ``domains`` maps a ZAP domain to its allowed client keys. A CURVE
    handshake in a known domain passes only with a listed key; anything else
    in a known domain (a NULL or PLAIN client) is refused; a NULL connection
    to some other socket of the context keeps libzmq's default (admitted).
    """

    def __init__(self, domains: Mapping[str, Mapping[bytes, ClientKey]]) -> None:
        self.domains = {d: dict(keys) for d, keys in domains.items()}
        self.counters: dict[str, int] = {"zap.allowed": 0, "zap.denied": 0}
        self._sock: zmq.asyncio.Socket | None = None
        self._task: asyncio.Task[None] | None = None
        #: (monitor, its task, the socket watched, its name); the socket None once taken over
        self._monitors: list[tuple[zmq.asyncio.Socket, asyncio.Task[None], Any, str]] = []
        self._sockets: dict[str, list[tuple[str, zmq.asyncio.Socket]]] = {}
        self.admitted: dict[str, set[bytes]] = {}  # domain → every key it let in since start
        self._throttle = _Throttle()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, ctx: zmq.asyncio.Context) -> None:
        """Bind ``ctx``'s ZAP endpoint; raises :class:`SecurityError` if that fails (then nothing may bind)."""
        if self._sock is not None:
            raise SecurityError("the authenticator is already started")
        sock = ctx.socket(zmq.REP)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            sock.bind(ZAP_ENDPOINT)
        except zmq.ZMQError as e:
            sock.close(linger=0)
            raise SecurityError(
                f"cannot start the ZAP authenticator on {ZAP_ENDPOINT}: {e.strerror} "
                "(another one runs in this context?); refusing to start: without it any "
                "client key would be admitted"
            ) from e
        self._sock = sock
        self._task = asyncio.create_task(self._serve(), name="zap-authenticator")

    async def close(self) -> None:
        tasks = [t for t in (self._task, *(m[1] for m in self._monitors)) if t is not None]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for mon, *_ in self._monitors:
            mon.close(linger=0)
        self._monitors.clear()
        self._sockets.clear()
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
        self._task = None

    # -- ZAP ---------------------------------------------------------------------------

    async def _serve(self) -> None:
        sock = self._sock
        assert sock is not None
        while True:
            msg = await sock.recv_multipart()
            try:
                reply = self.decide(msg)
            except Exception as e:  # never leave a REP without its reply
                log.exception("ZAP handler failed")
                reply = [b"1.0", msg[1] if len(msg) > 1 else b"", b"500", str(e).encode()[:200]]
                reply += [b"", b""]
            await sock.send_multipart(reply)

    def decide(self, msg: list[bytes]) -> list[bytes]:
        """One ZAP request (RFC 27) → its reply frames."""
        if len(msg) < 6 or msg[0] != b"1.0":
            return [b"1.0", msg[1] if len(msg) > 1 else b"", b"400", b"bad ZAP request", b"", b""]
        _, request_id, domain_b, address_b, _identity, mechanism, *credentials = msg
        domain = domain_b.decode("utf-8", "replace")
        address = address_b.decode("utf-8", "replace")
        keys = self.domains.get(domain)

        def deny(reason: str, key: str = "") -> list[bytes]:
            self.counters["zap.denied"] += 1
            name = f"{domain or '-'}.denied"
            self.counters[name] = self.counters.get(name, 0) + 1
            skipped = self._throttle(("zap", domain, address, key, reason))
            if skipped is not None:
                log.warning(
                    "client refused",
                    domain=domain,
                    address=address,
                    mechanism=mechanism.decode("ascii", "replace"),
                    client_key=key or None,
                    reason=reason,
                    not_logged_since=skipped,
                )
            return [b"1.0", request_id, b"400", reason.encode(), b"", b""]

        if keys is None:
            if mechanism == b"NULL":
                return [b"1.0", request_id, b"200", b"OK", b"", b""]
            return deny(f"no keys configured for ZAP domain {domain!r}")
        if mechanism != b"CURVE" or len(credentials) != 1 or len(credentials[0]) != 32:
            return deny(f"{mechanism.decode('ascii', 'replace')} client on a CURVE socket")
        public = z85.encode(credentials[0])
        client = keys.get(public)
        if client is None:
            return deny("unknown client key", public.decode())
        self.counters["zap.allowed"] += 1
        self.admitted.setdefault(domain, set()).add(public)
        props = {"X-Role": client.role} if client.role else {}
        log.debug("client admitted", domain=domain, address=address, client=client.name)
        return [b"1.0", request_id, b"200", b"OK", client.name.encode(), _zap_metadata(props)]

    # -- handshake monitors -----------------------------------------------------------------

    def replace(self, domain: str, keys: Mapping[bytes, ClientKey]) -> list[ClientKey]:
        """Make ``keys`` the allow-list of ``domain`` from the next handshake on.

        Returns the clients it no longer admits as they were: a key gone, or
        its name or role changed (both were handed to the connection at its
        handshake, so a connection made under the old ones is stale too).
        """
        old = self.domains.get(domain, {})
        self.domains[domain] = dict(keys)
        return [c for pub, c in old.items() if keys.get(pub) != c]

    def sockets(self, domain: str) -> list[tuple[str, zmq.asyncio.Socket]]:
        """The server sockets configured for ``domain`` (name, socket): whose peers a revocation cuts."""
        return list(self._sockets.get(domain, ()))

    def watch(self, sock: zmq.asyncio.Socket, name: str, domain: str | None = None) -> None:
        """Count ``sock``'s handshakes under ``name``: failures ZAP never sees show here."""
        if domain is not None:
            self._sockets.setdefault(domain, []).append((name, sock))
        for k in ("handshakes", "failed_auth", "failed_protocol", "failed_other"):
            self.counters.setdefault(f"{name}.{k}", 0)
        mon = sock.get_monitor_socket(_HANDSHAKE_EVENTS)
        task = asyncio.create_task(self._monitor(mon, name), name=f"monitor {name}")
        self._monitors.append((mon, task, sock, name))

    def take_monitor(self, sock: Any) -> Callable[[dict[str, Any]], None] | None:
        """Hand ``sock``'s handshake events over to another monitor (libzmq keeps one a
        socket: the connection caps', ``daemon/bus/connections.py``); returns what it calls with
        each event, on the loop, or None when ``sock`` is not watched here."""
        for i, (mon, task, watched, name) in enumerate(self._monitors):
            if watched is sock:
                task.cancel()
                mon.close(linger=0)
                self._monitors[i] = (mon, task, None, name)
                return lambda ev, n=name: self.handshake_event(n, ev)
        return None

    async def _monitor(self, mon: zmq.asyncio.Socket, name: str) -> None:
        while True:
            try:
                ev = parse_monitor_message(await mon.recv_multipart())
            except zmq.ZMQError:
                return  # the context is going away
            if ev["event"] == zmq.EVENT_MONITOR_STOPPED:
                return
            self.handshake_event(name, ev)

    def handshake_event(self, name: str, ev: dict[str, Any]) -> None:
        """One handshake event of the socket ``name``: counted, a failure logged."""
        kind = ev["event"]
        if kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            self.counters[f"{name}.handshakes"] += 1
            return
        what = {
            zmq.EVENT_HANDSHAKE_FAILED_AUTH: "failed_auth",
            zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "failed_protocol",
        }.get(kind, "failed_other")
        self.counters[f"{name}.{what}"] += 1
        if what == "failed_auth":
            return  # ZAP logged it, with the address and key
        skipped = self._throttle(("handshake", name, what))
        if skipped is not None:
            log.warning(
                "handshake failed",
                socket=name,
                endpoint=ev["endpoint"].decode("utf-8", "replace"),
                reason="protocol error (a plain client, or a wrong server key?)"
                if what == "failed_protocol"
                else "no detail (the peer left mid-handshake?)",
                code=int(ev["value"]),
                not_logged_since=skipped,
            )

    @property
    def failures(self) -> int:
        """Every refused handshake: ZAP refusals plus those that failed before ZAP."""
        return sum(
            v
            for k, v in self.counters.items()
            if k.endswith((".failed_auth", ".failed_protocol", ".failed_other"))
        )


@dataclass
class ServerCurve:
    """What one server socket needs for CURVE: the daemon's key pair, its ZAP domain, the authenticator."""

    public: bytes
    secret: bytes
    domain: str
    auth: Authenticator

    def apply(self, sock: zmq.asyncio.Socket, name: str) -> None:
        """Make ``sock`` a CURVE server in ``domain``; call before ``bind``."""
        if not self.auth.running:
            raise SecurityError(
                f"refusing to bind the {name} socket with CURVE: the ZAP authenticator is not "
                "running, and without it libzmq admits any client key"
            )
        sock.setsockopt(zmq.CURVE_SERVER, 1)
        sock.setsockopt(zmq.CURVE_SECRETKEY, self.secret)
        sock.setsockopt(zmq.CURVE_PUBLICKEY, self.public)
        sock.setsockopt(zmq.ZAP_DOMAIN, self.domain.encode())
        self.auth.watch(sock, name, self.domain)
