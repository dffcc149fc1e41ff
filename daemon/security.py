"""Keys, CURVE encryption with a ZAP allow-list, and signed checkpoints.

For the bus and the control socket (``docs/security.md``). Three things live here:

* **Key files.** CURVE keys use ZeroMQ's certificate format
  (``zmq.auth.create_certificates``: ``NAME.key`` public, ``NAME.key_secret``
  secret, both text); the checkpoint key is Ed25519 in PEM. A secret file
  that anyone but its owner may read or write is refused at start, naming the
  file, its mode and the fix: a key others can read is a key others hold.
* **The authenticator.** libzmq admits *any* client key on a CURVE socket
  when no ZAP handler is bound in its context, so :class:`Authenticator`
  binds ``inproc://zeromq.zap.01`` before any server socket is bound, and
  :meth:`ServerCurve.apply` refuses to configure a socket while it does not
  run (fail closed). It admits only the configured client keys, per ZAP
  domain (``bus`` for publish and replay, ``control`` for a tcp control
  socket), and hands the key's name (ZAP ``User-Id``) and role (ZAP metadata
  ``X-Role``) to the connection: libzmq attaches both to every message the
  peer sends (``frame.get("User-Id")``). Refusals are logged and counted; a
  socket monitor on each server socket counts the handshakes ZAP never sees
  (a plain client, a client with the wrong server key).
* **Signed checkpoints.** With ``security.checkpoint_key`` the heartbeat
  carries the journal head (seq, hash) signed with the table's Ed25519 key,
  so a backend can later prove a stored event came from this table unaltered
  (:func:`verify_checkpoint`; ``docs/events.md``, "Signed checkpoints").

A wrong key on either side shows nowhere in the application: the client
simply receives nothing. That is why the counters and the log lines exist.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import re
import stat
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import structlog
import zmq
import zmq.asyncio
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from zmq.utils import z85
from zmq.utils.monitor import parse_monitor_message

log = structlog.get_logger()

ROLES: Final = ("viewer", "dealer", "supervisor", "technician")
ZAP_ENDPOINT: Final = "inproc://zeromq.zap.01"
BUS_DOMAIN: Final = "bus"
CONTROL_DOMAIN: Final = "control"
CHECKPOINT_VERSION: Final = "v1"
LOG_EVERY: Final = 60.0  # seconds: a repeating failure is logged at most this often


class SecurityError(OSError):
    """Keys or the authenticator are not usable: the daemon refuses to start.

    An OSError, so the daemon's "cannot run" handler reports it like a bind failure.
    """


# -- key files ---------------------------------------------------------------------------------


def check_secret_file(path: str | Path) -> None:
    """Refuse a secret key file that is missing, not a regular file, or not the owner's alone."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise SecurityError(f"secret key file {p} does not exist") from None
    except OSError as e:
        raise SecurityError(f"cannot read secret key file {p}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise SecurityError(f"secret key file {p} is not a regular file")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise SecurityError(
            f"secret key file {p} has mode {mode:04o}: others may read or change it; "
            f"a secret key must be its owner's alone (run `chmod 600 {p}`)"
        )


def check_not_world_writable(path: str | Path, what: str) -> None:
    """Refuse a file or directory anyone may change: it decides who gets in."""
    p = Path(path)
    try:
        mode = stat.S_IMODE(p.stat().st_mode)
    except OSError as e:
        raise SecurityError(f"cannot check {what} {p}: {e.strerror}") from None
    if mode & 0o002:
        raise SecurityError(
            f"{what} {p} has mode {mode:04o}: anyone may change it and so let themselves in "
            f"(run `chmod o-w {p}`)"
        )


_LINE = re.compile(r"^(\s*)([A-Za-z0-9_.-]+)\s*=\s*(.*?)\s*$")


@dataclass(frozen=True)
class Cert:
    """One ZeroMQ certificate: z85 public key, z85 secret key (None in a public file), metadata."""

    path: Path
    public: bytes
    secret: bytes | None
    metadata: dict[str, str]

    @property
    def name(self) -> str:
        """The file's name without ``.key``/``.key_secret``: the client's name in logs and the journal."""
        n = self.path.name
        for suffix in (".key_secret", ".key"):
            if n.endswith(suffix):
                return n[: -len(suffix)]
        return n


def read_cert(path: str | Path) -> Cert:
    """Parse a certificate in the czmq/pyzmq text format; errors name the file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SecurityError(f"key file {p} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SecurityError(f"cannot read key file {p}: {e}") from None
    section = ""
    values: dict[str, dict[str, str]] = {"metadata": {}, "curve": {}}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            section = line.strip()
            continue
        m = _LINE.match(line)
        if m and section in values:
            values[section][m.group(2)] = m.group(3).strip("'\"")
    public = values["curve"].get("public-key", "").encode()
    secret_text = values["curve"].get("secret-key")
    secret = secret_text.encode() if secret_text is not None else None
    for what, key in (("public-key", public), ("secret-key", secret)):
        if key is None:
            continue
        if not _valid_z85_key(key):
            raise SecurityError(f"key file {p}: {what} is not a 40-character Z85 CURVE key")
    if secret is not None and zmq.curve_public(secret) != public:
        raise SecurityError(f"key file {p}: the public key does not belong to the secret key")
    return Cert(p, public, secret, values["metadata"])


def _valid_z85_key(key: bytes) -> bool:
    if len(key) != 40:
        return False
    try:
        return len(z85.decode(key)) == 32
    except (ValueError, KeyError, struct.error):
        return False


def load_secret_cert(path: str | Path) -> Cert:
    """A secret certificate, after checking that only its owner can read it."""
    check_secret_file(path)
    cert = read_cert(path)
    if cert.secret is None:
        raise SecurityError(f"key file {path} holds no secret-key: give the .key_secret file")
    return cert


@dataclass(frozen=True)
class ClientKey:
    """An allowed client: its name (the ZAP User-Id), its public key and, for control, its role."""

    name: str
    public: bytes
    role: str | None = None


def load_clients(
    directory: str | Path, *, roles: Mapping[str, str] | None = None, need_role: bool = False
) -> dict[bytes, ClientKey]:
    """Every ``*.key`` in ``directory``, keyed by z85 public key.

    ``roles`` (name → role) overrides a certificate's ``role`` metadata; with
    ``need_role`` a key without a role is an error (a control client must
    have one).
    """
    d = Path(directory)
    if not d.is_dir():
        raise SecurityError(f"client key directory {d} does not exist")
    check_not_world_writable(d, "client key directory")
    roles = dict(roles or {})
    out: dict[bytes, ClientKey] = {}
    for f in sorted(d.glob("*.key")):
        check_not_world_writable(f, "client key file")
        cert = read_cert(f)
        role = roles.pop(cert.name, None) or cert.metadata.get("role")
        if role is not None and role not in ROLES:
            raise SecurityError(f"{f}: role {role!r} is not one of {', '.join(ROLES)}")
        if need_role and role is None:
            raise SecurityError(
                f"{f}: no role for control client {cert.name!r}: add "
                f'`{cert.name} = "viewer"` (or dealer, supervisor, technician) to '
                "security.roles, or generate it with `tablectl keys --role`"
            )
        if cert.public in out:
            raise SecurityError(f"{f}: the same public key as {out[cert.public].name}.key")
        out[cert.public] = ClientKey(cert.name, cert.public, role)
    if roles:
        raise SecurityError(
            f"security.roles names {', '.join(sorted(roles))}, but {d} has no "
            f"{', '.join(n + '.key' for n in sorted(roles))}"
        )
    return out


def public_of_secret_path(path: Path) -> Path:
    """``table.key_secret`` → ``table.key``: where a client finds the server's public key."""
    if path.name.endswith(".key_secret"):
        return path.with_name(path.name[: -len("_secret")])
    return path.with_name(path.name + ".pub")


# -- the authenticator -------------------------------------------------------------------------


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
        self._monitors: list[tuple[zmq.asyncio.Socket, asyncio.Task[None]]] = []
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
        tasks = [t for t in (self._task, *(t for _, t in self._monitors)) if t is not None]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for mon, _ in self._monitors:
            mon.close(linger=0)
        self._monitors.clear()
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
        props = {"X-Role": client.role} if client.role else {}
        log.debug("client admitted", domain=domain, address=address, client=client.name)
        return [b"1.0", request_id, b"200", b"OK", client.name.encode(), _zap_metadata(props)]

    # -- handshake monitors -----------------------------------------------------------------

    def watch(self, sock: zmq.asyncio.Socket, name: str) -> None:
        """Count ``sock``'s handshakes under ``name``: failures ZAP never sees show here."""
        for k in ("handshakes", "failed_auth", "failed_protocol", "failed_other"):
            self.counters.setdefault(f"{name}.{k}", 0)
        mon = sock.get_monitor_socket(_HANDSHAKE_EVENTS)
        task = asyncio.create_task(self._monitor(mon, name), name=f"monitor {name}")
        self._monitors.append((mon, task))

    async def _monitor(self, mon: zmq.asyncio.Socket, name: str) -> None:
        while True:
            try:
                ev = parse_monitor_message(await mon.recv_multipart())
            except zmq.ZMQError:
                return  # the context is going away
            kind = ev["event"]
            if kind == zmq.EVENT_MONITOR_STOPPED:
                return
            if kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.counters[f"{name}.handshakes"] += 1
                continue
            what = {
                zmq.EVENT_HANDSHAKE_FAILED_AUTH: "failed_auth",
                zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "failed_protocol",
            }.get(kind, "failed_other")
            self.counters[f"{name}.{what}"] += 1
            if what == "failed_auth":
                continue  # ZAP logged it, with the address and key
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
        self.auth.watch(sock, name)


@dataclass(frozen=True)
class ClientCurve:
    """A client's CURVE keys: its own pair (z85) and the server's public key (z85)."""

    public: bytes
    secret: bytes
    server: bytes

    @classmethod
    def of(cls, value: ClientCurve | tuple[bytes, bytes, bytes]) -> ClientCurve:
        """From ``(client_public, client_secret, server_public)`` or a ClientCurve."""
        if isinstance(value, ClientCurve):
            return value
        public, secret, server = (v.encode() if isinstance(v, str) else v for v in value)
        return cls(public, secret, server)

    @classmethod
    def load(cls, client_key: str | Path, server_public: str | Path) -> ClientCurve:
        """From the client's secret certificate (mode-checked) and the server's public one."""
        cert = load_secret_cert(client_key)
        assert cert.secret is not None
        return cls(cert.public, cert.secret, read_cert(server_public).public)

    def apply(self, sock: zmq.Socket[Any]) -> None:
        """Make ``sock`` a CURVE client; call before ``connect``."""
        sock.setsockopt(zmq.CURVE_PUBLICKEY, self.public)
        sock.setsockopt(zmq.CURVE_SECRETKEY, self.secret)
        sock.setsockopt(zmq.CURVE_SERVERKEY, self.server)


# -- signed checkpoints ------------------------------------------------------------------------


def checkpoint_message(table: str, journal_id: str, seq: int, hash_: str) -> bytes:
    """The exact bytes a checkpoint signature covers."""
    return f"tabled-checkpoint:{CHECKPOINT_VERSION}:{table}:{journal_id}:{seq}:{hash_}".encode()


def key_id(public: Ed25519PublicKey) -> str:
    """First 16 hex digits of SHA-256 of the raw 32-byte public key: which key signed."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


class Checkpointer:
    """Signs the journal head with the table's Ed25519 key (once per head, not per heartbeat)."""

    def __init__(self, key: Ed25519PrivateKey) -> None:
        self._key = key
        self.key_id = key_id(key.public_key())
        self._last: tuple[tuple[str, str, int, str], dict[str, Any]] | None = None

    @classmethod
    def load(cls, path: str | Path) -> Checkpointer:
        check_secret_file(path)
        try:
            key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
        except (ValueError, TypeError, OSError) as e:
            raise SecurityError(f"checkpoint key {path}: not a PEM private key ({e})") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise SecurityError(f"checkpoint key {path}: not an Ed25519 key")
        return cls(key)

    def __call__(self, table: str, journal_id: str, seq: int, hash_: str) -> dict[str, Any]:
        """``{v, table, journal_id, seq, hash, key_id, sig}`` for the heartbeat's ``checkpoint``."""
        head = (table, journal_id, seq, hash_)
        if self._last is not None and self._last[0] == head:
            return self._last[1]
        sig = self._key.sign(checkpoint_message(*head))
        cp = {
            "v": CHECKPOINT_VERSION,
            "table": table,
            "journal_id": journal_id,
            "seq": seq,
            "hash": hash_,
            "key_id": self.key_id,
            "sig": base64.b64encode(sig).decode(),
        }
        self._last = (head, cp)
        return cp


def load_public_key(public_key: Ed25519PublicKey | bytes | str | Path) -> Ed25519PublicKey:
    """An Ed25519 public key from a key object, raw 32 bytes, PEM text/bytes, base64 text or a .pub file."""
    if isinstance(public_key, Ed25519PublicKey):
        return public_key
    if isinstance(public_key, Path):
        public_key = public_key.read_bytes()
    if isinstance(public_key, str):
        text = public_key.strip()
        if text.startswith("-----BEGIN"):
            public_key = text.encode()
        elif os.path.isfile(text):  # a .pub file's path
            public_key = Path(text).read_bytes()
        else:
            public_key = base64.b64decode(text, validate=True)
    if len(public_key) == 32:
        return Ed25519PublicKey.from_public_bytes(public_key)
    key = serialization.load_pem_public_key(public_key)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("not an Ed25519 public key")
    return key


def verify_checkpoint(
    public_key: Ed25519PublicKey | bytes | str | Path, heartbeat: Mapping[str, Any]
) -> bool:
    """Whether a heartbeat's checkpoint was signed by ``public_key``; never raises on bad input.

    ``heartbeat`` is the whole heartbeat message, its ``data``, or the
    ``checkpoint`` object itself. True means: the table holding that key had,
    in the journal ``journal_id``, event ``seq`` with chain hash ``hash``.
    """
    try:
        key = load_public_key(public_key)
        cp: Any = heartbeat
        if isinstance(cp, Mapping) and isinstance(cp.get("data"), Mapping):
            cp = cp["data"]
        if isinstance(cp, Mapping) and isinstance(cp.get("checkpoint"), Mapping):
            cp = cp["checkpoint"]
        if not isinstance(cp, Mapping) or cp.get("v") != CHECKPOINT_VERSION:
            return False
        table, journal_id, seq, hash_ = cp["table"], cp["journal_id"], cp["seq"], cp["hash"]
        if not (isinstance(table, str) and isinstance(journal_id, str) and isinstance(hash_, str)):
            return False
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            return False
        if cp.get("key_id") not in (None, key_id(key)):
            return False
        sig = base64.b64decode(cp["sig"], validate=True)
        key.verify(sig, checkpoint_message(table, journal_id, seq, hash_))
        return True
    except (InvalidSignature, KeyError, TypeError, ValueError, OSError):
        return False


def prove_events(
    public_key: Ed25519PublicKey | bytes | str | Path,
    checkpoint: Mapping[str, Any],
    events: Sequence[bytes],
) -> str | None:
    """None if stored ``events`` provably came unaltered from the checkpoint's table; else why not.

    ``events`` are stored event bytes with consecutive seqs, the last one at
    the checkpoint's ``seq`` (a backend keeps what it received and any later
    checkpoint). Each hash covers its event and the one before, so a chain
    that ends in the signed hash proves every event on it; the first one's
    ``prev`` needs no trust.
    """
    from daemon.events import check

    if not verify_checkpoint(public_key, checkpoint):
        return "the checkpoint's signature does not verify with this key"
    cp = checkpoint.get("data", checkpoint) if isinstance(checkpoint, Mapping) else checkpoint
    cp = cp.get("checkpoint", cp)
    if not events:
        return "no events"
    fields, _ = check(events[0], "")
    if not fields:
        return "event 1 is not an event envelope"
    prev = str(fields.get("prev", ""))
    seq = fields.get("seq")
    for i, raw in enumerate(events):
        fields, problem = check(raw, prev)
        if problem is not None:
            return f"event {i + 1} (seq {fields.get('seq', '?')}): {problem}"
        if i and fields.get("seq") != seq + 1:
            return f"event {i + 1}: seq {fields.get('seq')} does not follow {seq}"
        if fields.get("table") != cp["table"]:
            return (
                f"event {i + 1}: table {fields.get('table')!r}, the checkpoint's is {cp['table']!r}"
            )
        seq, prev = fields.get("seq"), fields["hash"]
    if seq != cp["seq"]:
        return f"the events end at seq {seq}, the checkpoint is at {cp['seq']}"
    if prev != cp["hash"]:
        return "the chain does not end in the signed hash: an event was altered"
    return None


# -- the daemon's security, from its config ------------------------------------------------------


@dataclass
class Security:
    """Everything ``[security]`` turns on, loaded and checked before any socket exists."""

    server: Cert | None = None
    bus_clients: dict[bytes, ClientKey] = field(default_factory=dict)
    control_clients: dict[bytes, ClientKey] | None = None  # None: control is not CURVE
    signer: Checkpointer | None = None
    auth: Authenticator | None = None

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
            out.bus_clients = load_clients(resolve(base, sec.clients))
            if control_tcp:
                if sec.control_clients is None:
                    raise SecurityError(
                        f"control endpoint {settings.control_endpoint} is tcp and CURVE is on: "
                        "security.control_clients must list who may connect (and as what role)"
                    )
                out.control_clients = load_clients(
                    resolve(base, sec.control_clients), roles=sec.roles, need_role=True
                )
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
        """Start the authenticator (when CURVE is on): before any server socket binds."""
        if self.auth is not None:
            self.auth.start(ctx)

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
        if self.auth is not None:
            await self.auth.close()

    def status(self) -> dict[str, Any]:
        """For ``tablectl status``: what is on, and the refusal counters."""
        counters = dict(self.auth.counters) if self.auth is not None else {}
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
    "Authenticator",
    "Cert",
    "Checkpointer",
    "ClientCurve",
    "ClientKey",
    "Security",
    "SecurityError",
    "ServerCurve",
    "check_secret_file",
    "checkpoint_message",
    "client_curve",
    "load_clients",
    "prove_events",
    "read_cert",
    "verify_checkpoint",
]
