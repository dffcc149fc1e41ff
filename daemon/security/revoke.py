"""CURVE revocation while the daemon runs: the allow-list follows the key directory.

ZAP judges a client once, at its handshake; libzmq never asks again, and it
has no call that closes one peer of a PUB or ROUTER socket. So a revocation
is two steps (``docs/security.md``, "Revoking a client"):

1. **The allow-list follows the directory.** An inotify watch on each client
   key directory (:mod:`daemon.security.watch`) reloads it on every change,
   and the authenticator judges the next handshake by the new list. A file
   that does not load is skipped with a warning (never admitted, and never
   keeping a removed key admitted); a directory that goes away or becomes
   world-writable empties the list (fail closed) with an error, and one that
   comes back (made again, renamed or symlinked into place) is read again.
2. **Connections made under a revoked key are cut.** A ZAP reply carries no
   connection handle, and libzmq's per-message ``Peer-Address`` is the IP
   alone, so no connection can be tied to its key from outside libzmq. When a
   revocation takes away a key that was admitted since start, every
   established connection of that domain's server sockets is shut down (``shutdown(2)`` on the accepted TCP or ipc
   socket: libzmq sees the peer leave and frees it). Every client reconnects on
   its own (libzmq's reconnect), and ZAP judges each again: the revoked one is
   refused, the others are back within a reconnect interval. A subscriber may
   miss what was published in that interval; it sees the gap in ``seq`` and
   replays it, as after any reconnect. Adding a key cuts nothing.

The accepted sockets are found by their local address: a socket whose own
address is a server socket's bound endpoint, and which has a peer, can only be
a connection that listener accepted.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
import zmq

from daemon.bus.fd_budget import FD_DIR, accepted_by, address, sockets
from daemon.security.keyfiles import ClientKey, SecurityError, load_clients
from daemon.security.watch import DirWatch
from daemon.security.zap import Authenticator

log = structlog.get_logger()


@dataclass
class KeySource:
    """Where one ZAP domain's allow-list comes from: the directory and how its keys load."""

    directory: Path
    roles: Mapping[str, str] = field(default_factory=dict)
    need_role: bool = False


def cut_connections(endpoints: Iterable[str]) -> int:
    """Shut down every connection accepted on ``endpoints``; returns how many.

    ``shutdown`` (not ``close``) on a duplicate of libzmq's descriptor: the
    connection ends for both, and libzmq closes its own descriptor when it
    sees the end, so no descriptor of libzmq's is ever closed under it.
    """
    addrs = [a for a in map(address, endpoints) if a is not None]
    if not addrs:
        return 0
    cut = 0
    for s in sockets():
        if any(accepted_by(s, a) for a in addrs):
            try:
                s.shutdown(socket.SHUT_RDWR)
                cut += 1
            except OSError:
                pass  # it ended on its own meanwhile
    return cut


def _endpoint(sock: Any) -> str | None:
    try:
        ep = sock.getsockopt(zmq.LAST_ENDPOINT)
    except zmq.ZMQError:
        return None  # closed already (the daemon is stopping)
    return ep.decode() if isinstance(ep, bytes) and ep else None


class Revocation:
    """Keeps each ZAP domain's allow-list equal to its key directory while the daemon runs."""

    def __init__(self, auth: Authenticator, sources: Mapping[str, KeySource]) -> None:
        self.auth = auth
        self.sources = dict(sources)
        self.counters: dict[str, int] = {"reloads": 0, "revoked": 0, "connections_cut": 0}
        self._watches: dict[str, DirWatch] = {}  # ZAP domain → the watch on its directory
        self._waiters: list[asyncio.Future[str]] = []

    def next_reload(self) -> asyncio.Future[str]:
        """Resolves (with the domain) when the next reload is done: what a caller can await."""
        f = asyncio.get_running_loop().create_future()
        self._waiters.append(f)
        return f

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Watch every directory, then reload once: a change since the keys were read counts too."""
        loop = loop or asyncio.get_running_loop()
        if self.sources and not os.path.isdir(FD_DIR):
            raise SecurityError(
                f"{FD_DIR} is not there: a revoked client's connections could not be cut; "
                "refusing to start"
            )
        try:
            for domain, src in self.sources.items():
                w = DirWatch(src.directory, lambda d=domain: self._changed(d), ".key")
                w.start(loop)
                self._watches[domain] = w
        except OSError as e:
            self.close()
            raise SecurityError(
                f"{e}: a removed client key would stay admitted until a restart; refusing to start"
            ) from None
        for domain in self.sources:
            self.reload(domain)

    def close(self) -> None:
        for w in self._watches.values():
            w.close()
        self._watches.clear()

    def _changed(self, domain: str) -> None:
        """From the loop's reader: never let a failure end the watch unseen."""
        try:
            self.reload(domain)
        except Exception:
            log.exception("client key reload failed: revocations may not have taken effect")

    def reload(self, domain: str) -> list[ClientKey]:
        """Read ``domain``'s directory again, admit by it, and cut what it revoked; returns those."""
        src = self.sources[domain]
        problems: list[str] = []
        try:
            keys = load_clients(
                src.directory, roles=src.roles, need_role=src.need_role, problems=problems
            )
        except SecurityError as e:
            keys = {}
            log.error(
                "client key directory unusable: no client of this domain is admitted until "
                "it is fixed",
                domain=domain,
                error=str(e),
            )
        for p in problems:
            log.warning("client key skipped", domain=domain, problem=p)
        before = {c.public for c in self.auth.domains.get(domain, {}).values()}
        revoked = self.auth.replace(domain, keys)
        self.counters["reloads"] += 1
        added = sorted(c.name for pub, c in keys.items() if pub not in before)
        if revoked:
            self._cut(domain, revoked, added)
        elif added:
            log.info("client keys added", domain=domain, clients=added)
        waiters, self._waiters = self._waiters, []
        for f in waiters:
            if not f.done():
                f.set_result(domain)
        return revoked

    def _cut(self, domain: str, revoked: list[ClientKey], added: list[str]) -> None:
        socks = self.auth.sockets(domain)
        ever = self.auth.admitted.get(domain, set())
        if any(c.public in ever for c in revoked):  # else none of them can be connected
            n = cut_connections(ep for ep in (_endpoint(s) for _, s in socks) if ep is not None)
        else:
            n = 0
        self.counters["revoked"] += len(revoked)
        self.counters["connections_cut"] += n
        log.warning(
            "client keys revoked: their connections are cut, their handshakes refused",
            domain=domain,
            revoked=sorted(c.name for c in revoked),
            added=added or None,
            sockets=[name for name, _ in socks],
            connections_cut=n,
        )
