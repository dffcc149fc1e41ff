"""Key files: the CURVE certificates and who may connect.

CURVE keys use ZeroMQ's certificate format (``zmq.auth.create_certificates``:
``NAME.key`` public, ``NAME.key_secret`` secret, both text). A secret file
that anyone but its owner may read or write is refused at start, naming the
file, its mode and the fix: a key others can read is a key others hold. A
client key directory anyone may write is refused too: it decides who gets in.
"""

from __future__ import annotations

import re
import stat
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import zmq
from zmq.utils import z85

ROLES: Final = ("viewer", "dealer", "supervisor", "technician")


class SecurityError(OSError):
    """Keys or the authenticator are not usable: the daemon refuses to start.

    An OSError, so the daemon's "cannot run" handler reports it like a bind failure.
    """


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
    directory: str | Path,
    *,
    roles: Mapping[str, str] | None = None,
    need_role: bool = False,
    problems: list[str] | None = None,
) -> dict[bytes, ClientKey]:
    """Every ``*.key`` in ``directory``, keyed by z85 public key.

    ``roles`` (name → role) overrides a certificate's ``role`` metadata; with
    ``need_role`` a key without a role is an error (a control client must
    have one). At start every problem refuses the daemon; a live reload
    (``problems`` given) skips a bad file instead and lists why, so that one
    half-copied key neither admits anyone nor keeps a removed key admitted.
    A directory that is gone or anyone may write always raises.
    """
    d = Path(directory)
    if not d.is_dir():
        raise SecurityError(f"client key directory {d} does not exist")
    check_not_world_writable(d, "client key directory")
    roles = dict(roles or {})
    out: dict[bytes, ClientKey] = {}
    for f in sorted(d.glob("*.key")):
        try:
            key = _client_key(f, roles, need_role, out)
        except SecurityError as e:
            if problems is None:
                raise
            problems.append(str(e))
            continue
        out[key.public] = key
    if roles and problems is None:
        raise SecurityError(
            f"security.roles names {', '.join(sorted(roles))}, but {d} has no "
            f"{', '.join(n + '.key' for n in sorted(roles))}"
        )
    return out


def _client_key(
    f: Path, roles: dict[str, str], need_role: bool, seen: Mapping[bytes, ClientKey]
) -> ClientKey:
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
    if cert.public in seen:
        raise SecurityError(f"{f}: the same public key as {seen[cert.public].name}.key")
    return ClientKey(cert.name, cert.public, role)


def public_of_secret_path(path: Path) -> Path:
    """``table.key_secret`` → ``table.key``: where a client finds the server's public key."""
    if path.name.endswith(".key_secret"):
        return path.with_name(path.name[: -len("_secret")])
    return path.with_name(path.name + ".pub")


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
