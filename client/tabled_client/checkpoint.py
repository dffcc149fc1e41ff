"""A table's signed checkpoint, checked by a backend: the journal head signed with its key.

A table with ``[security] checkpoint_key`` signs its journal head (table, journal id, seq,
chain hash) with Ed25519 in each heartbeat (``docs/events.md``, Signed checkpoints); the
bridge carries it into the stream on the event after it (header ``Tabled-Checkpoint``,
``docs/floor.md``, Retention). With the table's public key (PEM SubjectPublicKeyInfo, the
``.pub`` that ``tablectl keys --checkpoint`` writes) a backend proves the hash the signed
seq had, so it can verify a table whose oldest events the stream no longer holds. The
signed bytes are the daemon's (``daemon.security.checkpoints``), written out here because
the client does not import the daemon. Needs ``cryptography``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from tabled_client.chain import ChainBroken

VERSION = "v1"


class CheckpointRefused(ChainBroken):
    """A checkpoint that does not prove what it claims: forged, another key, another chain."""


def message(table: str, journal_id: str, seq: int, hash_: str) -> bytes:
    """The exact bytes a checkpoint's signature covers."""
    return f"tabled-checkpoint:{VERSION}:{table}:{journal_id}:{seq}:{hash_}".encode()


def public_key(pem: str | bytes | Any) -> Any:
    """An Ed25519 public key from PEM SubjectPublicKeyInfo (or a key object already)."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError:  # pragma: no cover - an install without it
        raise RuntimeError(
            "checking signed checkpoints needs the cryptography package (pip install cryptography)"
        ) from None
    if isinstance(pem, Ed25519PublicKey):
        return pem
    key = serialization.load_pem_public_key(pem.encode() if isinstance(pem, str) else pem)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("not an Ed25519 public key")
    return key


def key_id(key: Any) -> str:
    """First 16 hex digits of SHA-256 of the raw public key (the checkpoint's ``key_id``)."""
    return hashlib.sha256(key.public_bytes_raw()).hexdigest()[:16]


def check(raw: str | bytes, key: Any, *, table: str, journal_id: str, seq: int) -> str:
    """The hash a checkpoint proves for ``table``'s ``journal_id`` at ``seq``; raises
    :class:`CheckpointRefused` naming what is wrong (the checkpoint JSON ``raw``)."""
    from cryptography.exceptions import InvalidSignature

    where = f"{table}: the signed checkpoint of seq {seq}"
    try:
        cp = json.loads(raw)
    except ValueError:
        raise CheckpointRefused(f"{where} is not JSON") from None
    if not isinstance(cp, dict) or cp.get("v") != VERSION:
        raise CheckpointRefused(f"{where} is not a {VERSION} checkpoint")
    got = (cp.get("table"), cp.get("journal_id"), cp.get("seq"))
    if got != (table, journal_id, seq):
        raise CheckpointRefused(
            f"{where} names table {got[0]!r}, journal {got[1]!r}, seq {got[2]!r}: "
            f"not this event's (journal {journal_id!r})"
        )
    hash_ = cp.get("hash")
    if not isinstance(hash_, str):
        raise CheckpointRefused(f"{where} has no hash")
    if cp.get("key_id") != key_id(key):
        raise CheckpointRefused(
            f"{where} was signed by key {cp.get('key_id')!r}, not the table's key {key_id(key)!r}"
        )
    try:
        key.verify(base64.b64decode(cp.get("sig", ""), validate=True), message(*got, hash_))
    except (InvalidSignature, ValueError, TypeError):
        raise CheckpointRefused(
            f"{where}: the signature does not verify with the table's key (forged or altered)"
        ) from None
    return hash_
