"""The bridge's config file: the NATS servers and stream, and every table it follows.

Errors name the file, the key and what is wrong, as the daemon's do (``daemon.runtime.config``).
Key files are relative to the config file's folder.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any

import msgspec

from daemon.runtime.config import ConfigError
from daemon.runtime.validate import check
from daemon.security import SecurityError, check_secret_file

_TableId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")]
_Stream = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
_Positive = Annotated[float, msgspec.Meta(gt=0)]


class Tls(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """``[nats.tls]``: verify the servers' certificates, and show our own if they ask."""

    #: the CA that signed the servers' certificates (PEM); without it, the system's CAs
    ca: str | None = None
    #: our client certificate and its key (PEM), for servers that verify clients
    cert: str | None = None
    key: str | None = None
    #: the name the servers' certificates must carry, when it is not the URL's host
    hostname: str | None = None


class Nats(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    servers: list[str] = msgspec.field(default_factory=lambda: ["nats://127.0.0.1:4222"])
    stream: _Stream = "TABLES"
    #: subjects are ``<prefix>.<table>.<type>``
    prefix: _Stream = "tables"
    #: copies of the stream in a NATS cluster (3 for high availability)
    replicas: Annotated[int, msgspec.Meta(ge=1, le=5)] = 1
    #: seconds JetStream remembers a message id: a re-send within it is dropped
    duplicate_window: _Positive = 120.0
    #: seconds events are kept (0: for ever); a backend that starts after the oldest were
    #: removed verifies each table from a signed checkpoint (docs/floor.md, Retention)
    max_age: Annotated[float, msgspec.Meta(ge=0)] = 0.0
    #: bytes the stream keeps at most, the oldest removed first (0: no bound)
    max_bytes: Annotated[int, msgspec.Meta(ge=0)] = 0
    #: seconds to wait for JetStream's ack of one publish before trying again
    publish_timeout: _Positive = 5.0
    #: seconds to keep trying to reach NATS at start before giving up (systemd restarts)
    connect_timeout: _Positive = 30.0
    #: how the bridge proves who it is, at most one: a NATS credentials file (JWT and
    #: nkey seed, as ``nsc`` writes them), an nkey seed file, a token file, or a user
    #: with a password file. Secrets stay in files, never in this config.
    creds: str | None = None
    nkey_seed: str | None = None
    token_file: str | None = None
    user: str | None = None
    password_file: str | None = None
    tls: Tls | None = None


class Bridge(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    #: HTTP ``host:port`` for ``/metrics`` (Prometheus) and ``/status`` (what ``status`` shows)
    listen: Annotated[
        str, msgspec.Meta(pattern=r"^([A-Za-z0-9_.-]*|\[[0-9a-fA-F:]+\]):\d{1,5}$")
    ] = "127.0.0.1:9464"
    #: a table with no heartbeat for this long is reported down
    stale_after: _Positive = 5.0
    #: a table whose oldest unstored event is this old is reported behind (a warning)
    behind_after: _Positive = 5.0
    replay_timeout: _Positive = 10.0
    #: the largest frame (event, heartbeat) read from a table: a larger one drops the
    #: connection (ZeroMQ's MAXMSGSIZE); the bridge's memory bound (docs/floor.md, Bounded)
    max_event_bytes: Annotated[int, msgspec.Meta(ge=4096, le=64 << 20)] = 1 << 20
    #: the bytes of one replay answer held at once; the rest is asked for again after them
    replay_max_bytes: Annotated[int, msgspec.Meta(ge=65536, le=1 << 30)] = 16 << 20
    #: tables whose backlog (a replay's chunk) is read and stored at once; the others wait
    #: for a slot, so a floor-wide catch-up holds this many chunks, not one per table
    catch_ups: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 64
    #: the bridge's CURVE secret certificate (``tablectl keys``), for tables with ``server_key``
    client_key: str | None = None


class Table(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    id: _TableId
    publish: str
    replay: str
    #: the table's public CURVE certificate: the table runs ``[security] server_key``
    server_key: str | None = None
    #: this table's own client secret certificate, instead of ``[bridge] client_key``
    client_key: str | None = None


class BridgeConfig(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    tables: list[Table]
    nats: Nats = Nats()
    bridge: Bridge = Bridge()


def parse(raw: dict[str, Any], path: Path) -> BridgeConfig:
    errors: list[str] = []
    check(raw, BridgeConfig, "", errors)
    if errors:
        raise ConfigError(path, errors)
    cfg = msgspec.convert(raw, BridgeConfig)
    seen: set[str] = set()
    for i, t in enumerate(cfg.tables):
        where = f"tables[{i}]"
        if t.id in seen:
            errors.append(f"{where}.id: table {t.id!r} is listed twice")
        seen.add(t.id)
        if t.server_key and not (t.client_key or cfg.bridge.client_key):
            errors.append(
                f"{where}.server_key: a CURVE table needs a client key "
                "(tables[].client_key or [bridge] client_key)"
            )
        for key in ("server_key", "client_key"):
            f = getattr(t, key)
            if f and not (path.parent / f).is_file():
                errors.append(f"{where}.{key}: no such file {f!r}")
    errors += _nats_errors(cfg.nats, path)
    errors += _retention_errors(cfg.nats)
    if not cfg.tables:
        errors.append("tables: no [[tables]] listed: nothing to follow")
    if not cfg.nats.servers:
        errors.append("nats.servers: at least one server")
    if errors:
        raise ConfigError(path, errors)
    return cfg


def _retention_errors(n: Nats) -> list[str]:
    """What JetStream would refuse in ``max_age`` / ``max_bytes``, said in the config's terms."""
    errors: list[str] = []
    if 0 < n.max_age < 1:
        errors.append(f"nats.max_age: {n.max_age:g} s is too short to keep anything: 0 or >= 1")
    if n.max_age and n.duplicate_window > n.max_age:
        errors.append(
            f"nats.duplicate_window: {n.duplicate_window:g} s is longer than nats.max_age "
            f"({n.max_age:g} s): JetStream refuses a window longer than what it keeps"
        )
    if 0 < n.max_bytes < 1 << 20:
        errors.append(f"nats.max_bytes: {n.max_bytes} is under 1 MiB: 0 (no bound) or more")
    return errors


#: the [nats] keys that name a file only its owner may read
_SECRETS = ("creds", "nkey_seed", "token_file", "password_file")


def _nats_errors(n: Nats, path: Path) -> list[str]:
    """What is wrong with ``[nats]``'s identity and TLS: conflicts, missing or open files."""
    errors: list[str] = []
    ways = [k for k in ("creds", "nkey_seed", "token_file", "user") if getattr(n, k)]
    if len(ways) > 1:
        errors.append(f"nats: {' and '.join(ways)} both given: choose one way to log in")
    if (n.user is None) != (n.password_file is None):
        have, need = ("user", "password_file") if n.user else ("password_file", "user")
        errors.append(f"nats.{have}: needs nats.{need} too")
    files = [(f"nats.{k}", getattr(n, k), k in _SECRETS) for k in _SECRETS]
    if n.tls is not None:
        if (n.tls.cert is None) != (n.tls.key is None):
            errors.append("nats.tls: cert and key go together: give both or neither")
        files += [("nats.tls.ca", n.tls.ca, False), ("nats.tls.cert", n.tls.cert, False)]
        files.append(("nats.tls.key", n.tls.key, True))
    for key, f, secret in files:
        if f is None:
            continue
        p = path.parent / f
        if not p.is_file():
            errors.append(f"{key}: no such file {f!r}")
        elif secret:
            try:
                check_secret_file(p)
            except SecurityError as e:
                errors.append(f"{key}: {e}")
    return errors


def load(path: str | Path) -> BridgeConfig:
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text("utf-8"))
    except OSError as e:
        raise ConfigError(p, [f"cannot read: {e.strerror}"]) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(p, [f"not valid TOML: {e}"]) from None
    return parse(raw, p)


def curve_of(cfg: BridgeConfig, t: Table, base: Path) -> tuple[bytes, bytes, bytes] | None:
    """The CURVE keys the bridge uses for table ``t`` (key files relative to ``base``)."""
    if not t.server_key:
        return None
    from daemon.security import ClientCurve

    key = t.client_key or cfg.bridge.client_key
    assert key is not None  # config.parse checked
    c = ClientCurve.load(base / key, base / t.server_key)
    return c.public, c.secret, c.server
