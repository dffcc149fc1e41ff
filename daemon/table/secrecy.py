"""Secrecy: the one way a value that may be a secret card leaves the table before its reveal.

A game that keeps a card face down (the blackjack hole card) names, for each decision,
the *sealed words*: the values of every reading that may be that card, however it
reached the table (read, held behind an earlier card, entered by a supervisor, held as
suspect or beyond the shoe's inventory), and the table adds every raw frame it quotes
while a card is secret (a line-noise alarm's ``recent``). The words are chosen by where
a value came from, never by what it is, so which events are sealed says nothing about
the card. :func:`seal_drafts` then runs over every draft of the decision, whatever
decided it: each string holding a word is published with the word replaced by
:data:`MASK`, the original fields go to the draft's secret part (journaled beside the
row, never hashed nor published), and the published data carries ``sealed`` =
SHA-256(salt ‖ canonical JSON of the original fields). A card placed face up
(``card.dealt``'s ``card``) is the one publication a word may not mask: it is public
on the table.

When the game's secret ends (the reveal, a void), the table lists every sealed event's
opening (:func:`opened`: its salt and original fields) in one ``secret.opened`` event,
so anyone can open each commitment. ``docs/decisions.md``, "The blackjack hole card".
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from typing import Any, Final

from daemon.journal.events import SECRET, Draft, canonical, draft

#: what a sealed word reads in the published event
MASK: Final = "(sealed)"
#: the key of a draft's secret part that holds its sealed fields (beside a hole card's own)
SEALED: Final = "sealed"
#: fields a word never masks: a card placed face up is public where it lies
_PUBLIC: Final = {"card.dealt": frozenset({"card"})}


def _pattern(words: Iterable[str]) -> re.Pattern[str] | None:
    """Card codes and frames as whole tokens (a code inside a longer word or number is not
    that code); a word with a lower-case letter or a space (a card as a person typed it,
    ``qd``, ``as``) only as a whole value, never as a word of a sentence."""
    ws = sorted({w for w in words if w}, key=len, reverse=True)
    if not ws:
        return None
    alts = [rf"^{re.escape(w)}$" if w != w.upper() or " " in w else re.escape(w) for w in ws]
    return re.compile(rf"(?<![0-9A-Za-z])(?:{'|'.join(alts)})(?![0-9A-Za-z])")


def _mask(value: Any, pat: re.Pattern[str]) -> Any:
    """``value`` with every word masked (strings inside lists and mappings too)."""
    if isinstance(value, str):
        return pat.sub(MASK, value)
    if isinstance(value, list):
        return [_mask(v, pat) for v in value]
    if isinstance(value, tuple):
        return tuple(_mask(v, pat) for v in value)
    if isinstance(value, dict):
        return {k: _mask(v, pat) for k, v in value.items()}
    return value


def commitment(salt: str, fields: dict[str, Any]) -> str:
    """``SHA-256(salt ‖ canonical JSON of the original fields)``: what ``sealed`` publishes."""
    return hashlib.sha256(bytes.fromhex(salt) + canonical(fields)).hexdigest()


def seal_drafts(drafts: list[Draft], words: Iterable[str], key: bytes, nonce: str) -> bool:
    """Seal, in place, every draft holding a word; True when any was sealed.

    The salt is HMAC-SHA256(``key``, ``nonce``, the draft's place and public data): the
    daemon's key is random per process, an offline replay's is fixed, so a replay is
    reproducible (``daemon/pipeline/replay.py``).
    """
    pat = _pattern(words)
    if pat is None:
        return False
    sealed = False
    for i, x in enumerate(drafts):
        keep = _PUBLIC.get(x.type, frozenset())
        public: dict[str, Any] = {}
        original: dict[str, Any] = {}
        for k, v in x.data.items():
            if k == SECRET or k in keep:
                public[k] = v
                continue
            m = _mask(v, pat)
            public[k] = m
            if m != v:
                original[k] = v
        if not original:
            continue
        secret = public.pop(SECRET, None)
        salt = hmac.new(key, canonical([nonce, i, x.type, public]), "sha256").hexdigest()[:32]
        public["sealed"] = commitment(salt, original)
        part = {**(secret or {}), SEALED: {"salt": salt, "data": original}}
        drafts[i] = draft(x.type, {**public, SECRET: part})
        sealed = True
    return sealed


def unsealed(data: dict[str, Any]) -> dict[str, Any]:
    """The data as it was decided: the sealed fields back in place (what a game folds)."""
    part = data.get(SECRET)
    if not isinstance(part, dict) or SEALED not in part:
        return data
    return {**data, **part[SEALED]["data"]}


def opened(data: dict[str, Any]) -> dict[str, Any] | None:
    """The opening of one sealed event (``secret.opened``'s item), or None when not sealed."""
    part = data.get(SECRET)
    if not isinstance(part, dict) or SEALED not in part:
        return None
    s = part[SEALED]
    return {"sealed": data["sealed"], "salt": s["salt"], "data": s["data"]}


class SealedRows:
    """The check of sealed rows, one event at a time, in seq order (``tablectl verify``, the
    start): each sealed row must open the ``sealed`` commitment published beside it, and a
    ``secret.opened`` must show what the rows hold."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[int, dict[str, Any]]] = {}

    def see(self, seq: int, type_: str, data: dict[str, Any], secret: Any) -> list[tuple[int, str]]:
        """The problems this event shows, as (seq, what)."""
        if type_ == "secret.opened":
            out = []
            for o in data.get("opened") or ():
                kept = self._rows.pop(str(o.get("sealed")), None)
                if kept is not None and kept[1] != {"salt": o.get("salt"), "data": o.get("data")}:
                    out.append(
                        (
                            kept[0],
                            f"its sealed row differs from what secret.opened at seq {seq} shows",
                        )
                    )
            return out
        published = data.get("sealed")
        part = secret.get(SEALED) if isinstance(secret, dict) else None
        if published is None and part is None:
            return []
        if not isinstance(published, str) or not isinstance(part, dict):
            return [
                (
                    seq,
                    "a sealed event without its sealed row, or a sealed row beside an event "
                    "that publishes no seal",
                )
            ]
        salt, fields = part.get("salt"), part.get("data")
        if not (
            isinstance(salt, str)
            and re.fullmatch(r"[0-9a-f]{32}", salt)
            and isinstance(fields, dict)
            and commitment(salt, fields) == published
        ):
            return [(seq, "its sealed row does not open the seal published beside it: altered")]
        self._rows[published] = (seq, part)
        return []
