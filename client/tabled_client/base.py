"""What every event's ``data`` Struct builds on: a game's own types (in its folder, named by
its class's ``events``) import these and nothing else of the client."""

from __future__ import annotations

from typing import Annotated, Final

import msgspec
from msgspec import UNSET, Meta, UnsetType

SCHEMA_VERSION: Final = 1

#: a SHA-256 in hex (hashes, commitments)
Hex64 = Annotated[str, Meta(pattern="^[0-9a-f]{64}$")]


class Data(msgspec.Struct, kw_only=True, frozen=True):
    """Base of every event's ``data``.

    ``sealed``: the event holds a value that may be a card still face down (a blackjack
    hole card), shown as ``(sealed)``; this is SHA-256(salt ‖ canonical JSON of the
    original fields), opened by ``secret.opened`` once the card is turned over.
    """

    sealed: Annotated[str, Meta(pattern="^[0-9a-f]{64}$")] | UnsetType = UNSET


class ResultData(Data, kw_only=True):
    """A round's result (``hand.result``, ``spin.result``, ``dice.result``, ``round.result``).

    ``dealer_on_duty``: the dealer signed in when it was decided (``dealer.signed_in``);
    absent when none was."""

    dealer_on_duty: str | UnsetType = UNSET
