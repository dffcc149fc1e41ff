"""What the table waits for next (``table.expects``): published by the procedure, answered by the game.

A game whose table waits for something no device reports by itself (a player's
decision, the dealer's peek, a card to one box rather than the next in shoe order)
answers its ``expects(state)`` hook with one dict, e.g.
``{"expects": "card", "to": "3", "text": "card to box 3"}`` or
``{"expects": "decision", "box": 1, "allowed": ["stand", "hit"], "seconds": 15.0,
"text": "decision from box 1"}`` (``docs/events.md``, ``table.expects``). After every
input the procedure asks it before and after; when the answer changed it publishes a
``table.expects`` with the answer, so a dealer display, the shoe simulator and
``tablectl monitor`` follow one event, and ``tablectl status`` shows the answer's text.

A *wait* — an answer whose kind the game lists in ``numbered`` — is numbered: the
event carries ``turn``, one more than the game's ``turn(state)`` (the number it folded
from the last one), so the decision clock (:mod:`daemon.procedures.clock`) can time
it and a late ``decision.timeout turn=K`` finds nothing to do.
"""

from __future__ import annotations

from typing import Any, Protocol

from daemon.table import Decision


class Expecting(Protocol):
    """The hooks a game answers (the shoe procedure's defaults expect nothing)."""

    numbered: frozenset[str]

    def expects(self, s: Any) -> dict[str, Any] | None: ...

    def turn(self, s: Any) -> int: ...


def publish(game: Expecting, before: dict[str, Any] | None, d: Decision) -> None:
    """``table.expects`` when the answer after the decision's events is not ``before``'s."""
    s = d.state().game
    after = game.expects(s)
    if after is None or after == before:
        return
    if after["expects"] in game.numbered:
        after = {**after, "turn": game.turn(s) + 1}
    d.add("table.expects", shoe=s.shoe, hand=s.hand, **after)
