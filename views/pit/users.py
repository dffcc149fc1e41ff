"""Who may use the pit view: users with hashed passwords, their roles, and a limit on tries.

The users file is TOML the floor's administrator writes (``tabled-pit hash-password``
makes each hash)::

    [users.maria]
    role = "pitboss"          # or "viewer": a viewer sees everything and acknowledges nothing
    password = "scrypt$16384$8$1$<salt hex>$<hash hex>"

Passwords are checked with scrypt (standard library) and a constant-time compare; a name
with too many wrong passwords in a row is refused for a while, whatever it sends.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import tomllib
from collections import deque
from dataclasses import dataclass
from pathlib import Path

ROLES = ("viewer", "pitboss")
N, R, P = 2**14, 8, 1


class UsersError(Exception):
    """A users file that cannot be used, said in one sentence."""


def hash_password(password: str, salt: bytes | None = None) -> str:
    salt = salt or os.urandom(16)
    h = hashlib.scrypt(password.encode(), salt=salt, n=N, r=R, p=P, dklen=32)
    return f"scrypt${N}${R}${P}${salt.hex()}${h.hex()}"


def check_password(password: str, stored: str) -> bool:
    try:
        kind, n, r, p, salt, want = stored.split("$")
        if kind != "scrypt":
            return False
        got = hashlib.scrypt(
            password.encode(), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p), dklen=32
        )
    except ValueError:
        return False
    return hmac.compare_digest(got, bytes.fromhex(want))


@dataclass(frozen=True, slots=True)
class User:
    name: str
    role: str
    password: str


def load_users(path: Path) -> dict[str, User]:
    try:
        cfg = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise UsersError(f"{path}: {e}") from e
    users: dict[str, User] = {}
    for name, u in cfg.get("users", {}).items():
        role, pw = u.get("role"), u.get("password", "")
        if role not in ROLES:
            raise UsersError(
                f"{path}: users.{name}.role: {role!r} is not one of {', '.join(ROLES)}"
            )
        if not str(pw).startswith("scrypt$") or len(str(pw).split("$")) != 6:
            raise UsersError(
                f"{path}: users.{name}.password: not a hash from `tabled-pit hash-password`"
            )
        users[name] = User(name, role, pw)
    if not users:
        raise UsersError(f"{path}: no [users.NAME] tables")
    return users


class Tries:
    """At most ``limit`` wrong passwords per name within ``window`` seconds."""

    def __init__(self, limit: int = 5, window: float = 300.0) -> None:
        self.limit, self.window = limit, window
        self.failed: dict[str, deque[float]] = {}

    def wait(self, name: str, now: float) -> float:
        """Seconds before ``name`` may try again (0: now)."""
        f = self.failed.get(name)
        while f and now - f[0] >= self.window:
            f.popleft()
        if f is None or len(f) < self.limit:
            return 0.0
        return self.window - (now - f[0])

    def fail(self, name: str, now: float) -> None:
        self.failed.setdefault(name, deque()).append(now)

    def ok(self, name: str) -> None:
        self.failed.pop(name, None)
