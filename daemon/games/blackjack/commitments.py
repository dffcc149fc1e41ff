"""The hole card's commitment, and ``tablectl verify``'s check of the secret rows that open it.

The hole card is journaled in full as a secret part beside its ``card.dealt``
row and published only as ``commitment = SHA-256(salt ‖ card)``
(``docs/decisions.md``, "The blackjack hole card"). The hash chain covers
what was published, so it proves the commitment but not the secret row: an
altered secret row would rebuild the table with another hole card, unseen.
What proves a secret row is that it opens the commitment its event published,
and that it agrees with the reveal (``dealer.hole_card``, or a ``hand.void``'s
``hole``), which the chain proves too. The other values sealed while the hole card
was face down (``daemon/table/secrecy.py``) are checked the same way against their
``sealed`` commitment and the ``secret.opened`` that opens them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

from daemon.table.secrecy import SEALED, SealedRows

_CARD = re.compile(r"^[2-9TJQKA][CDHS]$")
_SALT = re.compile(r"^[0-9a-f]{32}$")


def commitment(card: str, salt: str) -> str:
    """``SHA-256(salt ‖ card)``: what ``card.dealt`` publishes for the hole card."""
    return hashlib.sha256(bytes.fromhex(salt) + card.encode("ascii")).hexdigest()


def _opens(secret: Any, published: str) -> str | None:
    """Why ``secret`` does not open ``published``, or None when it does."""
    if not isinstance(secret, dict):
        return "its secret row is not readable (not a card and a salt)"
    card, salt = secret.get("card"), secret.get("salt")
    if not (isinstance(card, str) and _CARD.match(card)):
        return f"its secret row holds no card ({card!r})"
    if not (isinstance(salt, str) and _SALT.match(salt)):
        return "its secret row holds no 16-byte hex salt"
    if commitment(card, salt) != published:
        return (
            f"its secret row ({card}) does not open the commitment published with it: "
            "the secret row was altered"
        )
    return None


def check_secrets(
    events: Iterator[tuple[int, str, dict[str, Any], Any]],
) -> Iterator[tuple[int, str]]:
    """Every problem with the hole cards' secret rows, as (seq, what), in seq order.

    ``events`` are (seq, type, data, secret part or None) from the first event.
    A hole card dealt face down needs its secret row (the table rebuilds from
    it) and that row must open the commitment; its reveal must show the same
    card and salt. A secret row beside any other event is reported too.
    """
    dealt: dict[str, tuple[int, Any]] = {}  # commitment → (its card.dealt's seq, secret part)
    sealed = SealedRows()  # the other values sealed while the hole card was face down
    for seq, type_, data, secret in events:
        yield from sealed.see(seq, type_, data, secret)
        if isinstance(secret, dict) and SEALED in secret:
            secret = {k: v for k, v in secret.items() if k != SEALED} or None
        published = data.get("commitment") if type_ == "card.dealt" and data.get("hole") else None
        if isinstance(published, str):
            if secret is not None and (why := _opens(secret, published)) is not None:
                yield seq, f"hole card: {why}"
            dealt[published] = (seq, secret)
            continue
        if secret is not None:
            yield seq, f"a secret row beside a {type_}, which publishes no commitment"
            continue
        shown = data if type_ == "dealer.hole_card" else data.get("hole")
        if type_ not in ("dealer.hole_card", "hand.void") or not isinstance(shown, dict):
            continue
        c = shown.get("commitment")
        if not isinstance(c, str) or c not in dealt:
            continue  # a void before the hole card was dealt
        at, kept = dealt.pop(c)
        if kept is None:
            yield (
                at,
                f"hole card: turned over as {shown.get('card')} by the {type_} at seq {seq}, "
                "but it has no secret row (removed: the table could not rebuild this round)",
            )
        elif isinstance(kept, dict) and (kept.get("card"), kept.get("salt")) != (
            shown.get("card"),
            shown.get("salt"),
        ):
            yield (
                at,
                f"hole card: its secret row holds {kept.get('card')}, but the {type_} at seq "
                f"{seq} turned over {shown.get('card')}",
            )
    for at, kept in dealt.values():
        if kept is None:
            yield at, "hole card in play has no secret row: a restart cannot rebuild it"
