"""Keys, CURVE encryption with a ZAP allow-list, and signed checkpoints (``docs/security.md``).

For the bus and the control socket. One module per job:

* :mod:`daemon.security.keyfiles`: the certificate files, their modes, the
  client allow-lists, a client's CURVE keys;
* :mod:`daemon.security.zap`: the ZAP authenticator and the handshake monitors;
* :mod:`daemon.security.checkpoints`: signing and proving the journal head.

This module turns ``[security]`` into those parts (:class:`Security`) and
finds the keys a client (``tablectl``, a subscriber) uses; it re-exports the
names callers use, so ``from daemon.security import ClientCurve`` keeps working.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
import zmq.asyncio

from daemon.security.checkpoints import (
    CHECKPOINT_VERSION,
    Checkpointer,
    checkpoint_message,
    key_id,
    load_public_key,
    prove_events,
    verify_checkpoint,
)
from daemon.security.keyfiles import (
    ROLES,
    Cert,
    ClientCurve,
    ClientKey,
    SecurityError,
    check_not_world_writable,
    check_secret_file,
    load_clients,
    load_secret_cert,
    public_of_secret_path,
    read_cert,
)
from daemon.security.revoke import KeySource, Revocation
from daemon.security.zap import (
    BUS_DOMAIN,
    CONTROL_DOMAIN,
    ZAP_ENDPOINT,
    Authenticator,
    ServerCurve,
)

log = structlog.get_logger()


@dataclass
class Security:
    """Everything ``[security]`` turns on, loaded and checked before any socket exists."""

    server: Cert | None = None
    bus_clients: dict[bytes, ClientKey] = field(default_factory=dict)
    control_clients: dict[bytes, ClientKey] | None = None  # None: control is not CURVE
    signer: Checkpointer | None = None
    auth: Authenticator | None = None
    sources: dict[str, KeySource] = field(default_factory=dict)  # ZAP domain → its key directory
    revocation: Revocation | None = None

    @classmethod
    def from_settings(cls, settings: Any) -> Security:
        """Load and check every key the config names; raises :class:`SecurityError`."""
        sec = getattr(settings.config, "security", None)
        out = cls()
        control_tcp = not settings.control_endpoint.startswith("ipc://")
        if sec is None:
            return out
        base = Path(settings.source).resolve().parent
        named = [sec.server_key, sec.checkpoint_key, sec.clients, sec.control_clients]
        if any(v is not None for v in named):
            check_not_world_writable(settings.source, "config file")
        if sec.server_key is not None:
            out.server = load_secret_cert(resolve(base, sec.server_key))
            assert sec.clients is not None  # the config demands it
            out.sources[BUS_DOMAIN] = KeySource(resolve(base, sec.clients))
            out.bus_clients = load_clients(out.sources[BUS_DOMAIN].directory)
            if control_tcp:
                if sec.control_clients is None:
                    raise SecurityError(
                        f"control endpoint {settings.control_endpoint} is tcp and CURVE is on: "
                        "security.control_clients must list who may connect (and as what role)"
                    )
                src = KeySource(resolve(base, sec.control_clients), dict(sec.roles), True)
                out.sources[CONTROL_DOMAIN] = src
                out.control_clients = load_clients(src.directory, roles=src.roles, need_role=True)
            elif sec.control_clients is not None:
                log.warning(
                    "security.control_clients is ignored: the control endpoint is ipc, "
                    "where the socket file's mode and group decide who may connect",
                    endpoint=settings.control_endpoint,
                )
        elif control_tcp:
            log.warning(
                "control endpoint is tcp without CURVE: anyone who reaches it has the role "
                f"{settings.config.control.role}; set security.server_key",
                endpoint=settings.control_endpoint,
            )
        if sec.checkpoint_key is not None:
            out.signer = Checkpointer.load(resolve(base, sec.checkpoint_key))
        if out.server is not None:
            domains: dict[str, Mapping[bytes, ClientKey]] = {BUS_DOMAIN: out.bus_clients}
            if out.control_clients is not None:
                domains[CONTROL_DOMAIN] = out.control_clients
            out.auth = Authenticator(domains)
        return out

    def start(self, ctx: zmq.asyncio.Context) -> None:
        """Start the authenticator (when CURVE is on): before any server socket binds.

        Then watch the client key directories: a key removed while the daemon
        runs is refused from then on, and its connections are cut.
        """
        if self.auth is not None:
            self.auth.start(ctx)
            self.revocation = Revocation(self.auth, self.sources)
            self.revocation.start()

    def curve(self, domain: str) -> ServerCurve | None:
        """The CURVE set-up for a socket in ``domain``, or None when that socket stays plain.

        Its :meth:`ServerCurve.apply` refuses to work until :meth:`start` ran.
        """
        if self.server is None or self.auth is None:
            return None
        if domain == CONTROL_DOMAIN and self.control_clients is None:
            return None
        assert self.server.secret is not None
        return ServerCurve(self.server.public, self.server.secret, domain, self.auth)

    @property
    def bus_curve(self) -> ServerCurve | None:
        return self.curve(BUS_DOMAIN)

    @property
    def control_curve(self) -> ServerCurve | None:
        return self.curve(CONTROL_DOMAIN)

    async def close(self) -> None:
        if self.revocation is not None:
            self.revocation.close()
        if self.auth is not None:
            await self.auth.close()

    def status(self) -> dict[str, Any]:
        """For ``tablectl status``: what is on, and the refusal counters."""
        counters = dict(self.auth.counters) if self.auth is not None else {}
        if self.revocation is not None:
            counters.update({f"keys.{k}": v for k, v in self.revocation.counters.items()})
        return {
            "curve": self.server is not None,
            "control_curve": self.control_clients is not None,
            "checkpoints": self.signer.key_id if self.signer is not None else None,
            "auth_failures": self.auth.failures if self.auth is not None else 0,
            "counters": counters,
        }


def resolve(base: Path, value: str) -> Path:
    """A config path: relative ones are relative to the config file's directory."""
    q = Path(value).expanduser()
    return q if q.is_absolute() else (base / q).resolve()


def client_curve(settings: Any, key: str | Path | None = None) -> ClientCurve | None:
    """tablectl's CURVE keys for the control endpoint, or None when it is not CURVE.

    ``key`` (``--key``, ``$TABLECTL_KEY``) wins over ``security.client_key``.
    Raises :class:`SecurityError` when CURVE is on and no usable key is given.
    """
    sec = getattr(settings.config, "security", None)
    if sec is None or sec.server_key is None or settings.control_endpoint.startswith("ipc://"):
        return None
    base = Path(settings.source).resolve().parent
    given = key or os.environ.get("TABLECTL_KEY")
    if given:  # from the command line: relative to where tablectl runs
        key_path = Path(given).expanduser()
    elif sec.client_key:  # from the config: relative to the config file
        key_path = resolve(base, sec.client_key)
    else:
        raise SecurityError(
            f"the control endpoint {settings.control_endpoint} needs a CURVE client key: "
            "pass --key PATH.key_secret (or set $TABLECTL_KEY or security.client_key); "
            "make one with `tablectl keys NAME --role ROLE`"
        )
    return ClientCurve.load(key_path, server_public_path(settings))


def server_public_path(settings: Any) -> Path:
    """Where clients read the table's public CURVE key: ``security.server_public``,
    else ``server_key`` without ``_secret``."""
    sec = settings.config.security
    base = Path(settings.source).resolve().parent
    if sec.server_public:
        return resolve(base, sec.server_public)
    return public_of_secret_path(resolve(base, sec.server_key))


def follower_curve(settings: Any, key: str | Path) -> ClientCurve:
    """A subscriber's CURVE keys for this table's bus: its secret cert and the table's public one."""
    return ClientCurve.load(key, server_public_path(settings))


__all__ = [
    "BUS_DOMAIN",
    "CHECKPOINT_VERSION",
    "CONTROL_DOMAIN",
    "ROLES",
    "ZAP_ENDPOINT",
    "Authenticator",
    "Cert",
    "Checkpointer",
    "ClientCurve",
    "ClientKey",
    "Security",
    "SecurityError",
    "ServerCurve",
    "check_not_world_writable",
    "check_secret_file",
    "checkpoint_message",
    "client_curve",
    "follower_curve",
    "key_id",
    "load_clients",
    "load_public_key",
    "load_secret_cert",
    "prove_events",
    "public_of_secret_path",
    "read_cert",
    "resolve",
    "server_public_path",
    "verify_checkpoint",
]
