"""``tablectl keys``: make the key pairs ``[security]`` names, in the formats it reads.

CURVE pairs are ZeroMQ certificates (what ``zmq.auth.create_certificates``
writes, and ``zmq.auth.load_certificate`` reads): ``NAME.key`` is public,
``NAME.key_secret`` is secret. pyzmq's own writer creates the secret file
with the process umask and overwrites what is there, so this one creates
both files exclusively and the secret one with mode 0600 from the first
byte. The checkpoint pair is Ed25519 in PEM (``NAME.ed25519``, secret;
``NAME.ed25519.pub``), which OpenSSL and every language's crypto library read.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import os
import re
import sys
from pathlib import Path
from typing import Any

import zmq
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.security.checkpoints import key_id
from daemon.security.keyfiles import ROLES

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class KeyExists(Exception):
    """A key file is already there: keys are never overwritten."""


def _cert_text(public: str, secret: str | None, metadata: dict[str, str]) -> str:
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    kind = "**Secret** Certificate" if secret else "Public Certificate"
    lines = [f"#   ****  Generated on {now} by tablectl keys  ****", f"#   ZeroMQ CURVE {kind}"]
    if secret:
        lines.append("#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.")
    lines += ["", "metadata"]
    lines += [f'    {k} = "{v}"' for k, v in metadata.items()]
    lines += ["curve", f'    public-key = "{public}"']
    if secret:
        lines.append(f'    secret-key = "{secret}"')
    return "\n".join(lines) + "\n"


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` with exactly ``mode``; never replaces an existing file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # the umask may have taken bits away; set exactly what we mean
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _check_free(*paths: Path) -> None:
    there = [str(p) for p in paths if p.exists() or p.is_symlink()]
    if there:
        raise KeyExists(
            f"refusing to overwrite {', '.join(there)}: remove it first or pick a new name"
        )


def create_curve(directory: str | Path, name: str, role: str | None = None) -> tuple[Path, Path]:
    """Write ``NAME.key`` (0644) and ``NAME.key_secret`` (0600); returns (public, secret) paths."""
    if not _NAME.match(name):
        raise ValueError(f"key name {name!r}: letters, digits, '.', '_' and '-' only")
    if role is not None and role not in ROLES:
        raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    public_path, secret_path = d / f"{name}.key", d / f"{name}.key_secret"
    _check_free(public_path, secret_path)
    public, secret = (k.decode("ascii") for k in zmq.curve_keypair())
    meta = {"role": role} if role else {}
    _write_new(secret_path, _cert_text(public, secret, meta).encode(), 0o600)
    try:
        _write_new(public_path, _cert_text(public, None, meta).encode(), 0o644)
    except BaseException:
        secret_path.unlink(missing_ok=True)
        raise
    return public_path, secret_path


def create_checkpoint(directory: str | Path, name: str) -> tuple[Path, Path, str]:
    """Write ``NAME.ed25519`` (PEM PKCS#8, 0600) and ``NAME.ed25519.pub`` (PEM); returns them and the key id."""
    if not _NAME.match(name):
        raise ValueError(f"key name {name!r}: letters, digits, '.', '_' and '-' only")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    secret_path, public_path = d / f"{name}.ed25519", d / f"{name}.ed25519.pub"
    _check_free(secret_path, public_path)
    key = Ed25519PrivateKey.generate()
    secret_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    _write_new(secret_path, secret_pem, 0o600)
    try:
        _write_new(public_path, public_pem, 0o644)
    except BaseException:
        secret_path.unlink(missing_ok=True)
        raise
    return public_path, secret_path, key_id(key.public_key())


# -- tablectl keys -------------------------------------------------------------------------------


def cmd_keys(a: argparse.Namespace) -> int:
    try:
        if a.checkpoint:
            if a.key_role:
                raise ValueError("--role is for CURVE control clients, not --checkpoint keys")
            return _checkpoint(a)
        return _curve(a)
    except (KeyExists, ValueError, OSError) as e:
        print(f"tablectl keys: {e}", file=sys.stderr)
        return 2


def _curve(a: argparse.Namespace) -> int:
    public_path, secret_path = create_curve(a.dir, a.name, a.key_role)
    public = public_path.read_text().split('public-key = "', 1)[1].split('"', 1)[0]
    if getattr(a, "json", False):
        _json({"public_key": public, "public": str(public_path), "secret": str(secret_path)})
        return 0
    print(f"public key: {public}")
    print(f"wrote {public_path} (public: hand it out) and {secret_path} (secret, mode 0600)")
    print()
    if a.key_role:
        print(f"# a control client ({a.key_role}): copy {public_path.name} into the table's")
        print("# security.control_clients directory; on the client's machine:")
        print("[security]")
        print(f'client_key = "{secret_path.resolve()}"')
        return 0
    print("# as the table's own key, in its config:")
    print("[security]")
    print(f'server_key = "{secret_path.resolve()}"')
    print('clients = "keys/clients"            # allowed subscribers: their NAME.key files')
    print('control_clients = "keys/control"    # tcp control only: tablectl keys, with roles')
    print(f"# as a subscriber's key: copy {public_path.name} into the table's security.clients")
    print(f"# directory and give the subscriber {secret_path.name} and the table's public key")
    return 0


def _checkpoint(a: argparse.Namespace) -> int:
    public_path, secret_path, kid = create_checkpoint(a.dir, a.name)
    raw = serialization.load_pem_public_key(public_path.read_bytes()).public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    b64 = base64.b64encode(raw).decode()
    if getattr(a, "json", False):
        _json(
            {
                "key_id": kid,
                "public_key": b64,
                "public": str(public_path),
                "secret": str(secret_path),
            }
        )
        return 0
    print(f"checkpoint key id: {kid}")
    print(f"public key (raw, base64): {b64}")
    print(
        f"wrote {public_path} (public: give it to the backends) and {secret_path} (secret, mode 0600)"
    )
    print()
    print("[security]")
    print(f'checkpoint_key = "{secret_path.resolve()}"')
    return 0


def _json(obj: dict[str, Any]) -> None:
    import json

    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")
