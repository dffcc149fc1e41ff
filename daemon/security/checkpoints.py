"""Signed checkpoints: the journal head signed with the table's Ed25519 key.

With ``security.checkpoint_key`` the heartbeat carries the journal head (seq,
hash) signed with the table's key (Ed25519 in PEM), so a backend can later
prove a stored event came from this table unaltered (:func:`verify_checkpoint`,
:func:`prove_events`; ``docs/events.md``, "Signed checkpoints").
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # cryptography (~8 MiB resident) is imported only where a checkpoint key is used
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

from daemon.security.keyfiles import SecurityError, check_secret_file

CHECKPOINT_VERSION: Final = "v1"


def checkpoint_message(table: str, journal_id: str, seq: int, hash_: str) -> bytes:
    """The exact bytes a checkpoint signature covers."""
    return f"tabled-checkpoint:{CHECKPOINT_VERSION}:{table}:{journal_id}:{seq}:{hash_}".encode()


def key_id(public: Ed25519PublicKey) -> str:
    """First 16 hex digits of SHA-256 of the raw 32-byte public key: which key signed."""
    return hashlib.sha256(public.public_bytes_raw()).hexdigest()[:16]


#: RFC 8410's PKCS #8 of an Ed25519 private key as cryptography and OpenSSL write it (version
#: 0, no attributes, no public key; ``tablectl keys --checkpoint``): this prefix, the 32-byte seed
_PKCS8_ED25519: Final = bytes.fromhex("302e020100300506032b657004220420")
_PEM_BEGIN: Final = b"-----BEGIN PRIVATE KEY-----"
_PEM_END: Final = b"-----END PRIVATE KEY-----"


def _pem_seed(pem: bytes) -> bytes | None:
    """The seed of an unencrypted Ed25519 PKCS #8 PEM in that one form, else None.

    Read without cryptography's ``serialization`` (its import, with the SSH and cipher
    modules it pulls in, is ~6 ms of a keyed start, more than the rest of the key's load);
    anything else (encrypted, another key type, extra text) goes to cryptography's parser,
    so what is accepted or refused is the same.
    """
    # Byte for byte the form tablectl writes: the header, the 64 characters of its base64
    # (48 bytes of DER) on one line, the footer, one newline; a blank line or spaces that
    # cryptography would refuse go to cryptography (found by the review).
    lines = pem.split(b"\n")
    if len(lines) != 4 or lines[0] != _PEM_BEGIN or lines[2] != _PEM_END or lines[3] != b"":
        return None
    try:
        der = base64.b64decode(lines[1], validate=True)
    except ValueError:
        return None
    if len(der) != len(_PKCS8_ED25519) + 32 or not der.startswith(_PKCS8_ED25519):
        return None
    return der[len(_PKCS8_ED25519) :]


class Checkpointer:
    """Signs the journal head with the table's Ed25519 key (once per head, not per heartbeat)."""

    def __init__(self, key: Ed25519PrivateKey) -> None:
        self._key = key
        self.key_id = key_id(key.public_key())
        self._last: tuple[tuple[str, str, int, str], dict[str, Any]] | None = None

    @classmethod
    def load(cls, path: str | Path) -> Checkpointer:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        check_secret_file(path)
        try:
            pem = Path(path).read_bytes()
            seed = _pem_seed(pem)
            if seed is not None:
                return cls(Ed25519PrivateKey.from_private_bytes(seed))
            from cryptography.hazmat.primitives import serialization

            key = serialization.load_pem_private_key(pem, password=None)
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

    def verify(self, checkpoint: Mapping[str, Any]) -> bool:
        """Whether ``checkpoint`` was signed by this key: a stored proof read back at start-up."""
        return verify_checkpoint(self._key.public_key(), checkpoint)


def load_public_key(public_key: Ed25519PublicKey | bytes | str | Path) -> Ed25519PublicKey:
    """An Ed25519 public key from a key object, raw 32 bytes, PEM text/bytes, base64 text or a .pub file."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if isinstance(public_key, Ed25519PublicKey):  # the daemon's own check of a stored proof
        return public_key
    from cryptography.hazmat.primitives import serialization

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
    from cryptography.exceptions import InvalidSignature

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
    from daemon.journal.events import check

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
